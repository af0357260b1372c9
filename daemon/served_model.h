// One model the daemon serves: its compiled model, a fixed set of infer
// requests ("parallel" in the config), a bounded queue in front of them and
// the statistics the Stats request reports.
//
// Threads: load() runs on the loader thread; everything else on the loop
// thread, except the completion callback, which runs on a driver thread: it
// encodes the reply, drops the inputs, sends the reply itself when the
// connection has nothing queued (Replier::try_reply_now), and posts the rest
// back to the loop.
#pragma once

#include <sys/stat.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/worker_thread.h"
#include "daemon/c_api.h"
#include "daemon/config.h"
#include "daemon/loop_post.h"
#include "protocol/frame.h"
#include "protocol/heterod.pb.h"
#include "protocol/tensor_codec.h"

namespace hetero::daemon {

class ClientMemory;
using Clock = std::chrono::steady_clock;

// Where a job's reply goes: the connection that asked (see Connection), or
// a call of another protocol (daemon/kserve/).
class Replier {
 public:
  virtual ~Replier() = default;
  // False once the client has gone: its queued jobs are dropped unrun.
  virtual bool open() const = 0;
  // A reply to one of its infer requests, as its job encoded it (loop thread).
  virtual void reply_infer(wire::EncodedFrame frame) = 0;
  // One of its infer requests failed or was refused: busy, timed out, a bad
  // input (loop thread). The native protocol's error frame by default.
  virtual void reply_infer_error(uint64_t id, hetero_status status, const std::string& message);
  // Any thread (the driver's, as the inference completes): sends the reply
  // at once if it can without the loop thread, taking the frame. A reply
  // then skips a thread hop; reply_sent() follows on the loop thread. False
  // (the default) leaves it to reply_infer().
  virtual bool try_reply_now(wire::EncodedFrame& /*frame*/) { return false; }
  virtual void reply_sent() {}
};

// One Infer request, from receipt to reply. It owns what its inputs point into.
struct InferJob {
  virtual ~InferJob() = default;
  // Driver thread, once the inference has run: the reply, read from the
  // request's outputs (valid until the request runs again). The native
  // protocol's frame here (inline, or one memfd from memfd_threshold bytes);
  // another protocol encodes its own (daemon/kserve/). Throws Failure.
  virtual wire::EncodedFrame encode_outputs(hetero_infer_request_t* request,
                                            std::span<const std::string> output_names) const;

  // Driver thread, once the inference has run: drops the inputs (unmaps and
  // closes the frame's memfds, frees its inline data). Done there rather than
  // on the loop thread, where unmapping a large tensor would delay every
  // other client's requests.
  void release_inputs();

  std::weak_ptr<Replier> replier;
  uint64_t id = 0;
  std::unique_ptr<wire::Request> request;  // inline input data
  std::vector<wire::UniqueFd> fds;         // the frame's memfds
  wire::TensorMappings mappings;           // ... mapped
  std::vector<wire::TensorView> inputs;
  std::vector<size_t> input_index;  // the model input each of `inputs` is (ServedModel::place_inputs)
  std::vector<std::vector<uint64_t>> realigned;  // inline inputs not aligned to their element size
  uint64_t memfd_threshold = 0;
  Clock::time_point received;
  // Still queued then: answered TIMEOUT, never run; still running: cancelled
  // and answered TIMEOUT.
  Clock::time_point deadline;
  Clock::time_point started;   // given to an infer request (statistics)
};

// An error reply for request `id`.
wire::EncodedFrame error_frame(uint64_t id, hetero_status status, const std::string& message);

class ServedModel : public std::enable_shared_from_this<ServedModel> {
 public:
  // The threads a served model hands work to.
  struct Threads {
    std::shared_ptr<LoopPost> loop;  // its completions, to the loop thread
    // Its compiled model and infer requests, to be destroyed: that frees
    // every kernel and weight of it, 20 ms and more for a model of 2^16
    // nodes, during which the loop thread (where a model is usually let go
    // of) would answer nobody.
    std::shared_ptr<core::WorkerThread> releaser;
  };

  // Imports (a blob) or compiles (an ONNX file, through the core's cache) the
  // model of `spec`, and creates its infer requests. Blocking; throws Failure.
  static std::shared_ptr<ServedModel> load(hetero_core_t* core, const ModelSpec& spec, Threads threads);
  // The same for uploaded bytes (an ONNX model or a blob); not cached.
  static std::shared_ptr<ServedModel> load_bytes(hetero_core_t* core, const ModelSpec& spec,
                                                 std::span<const uint8_t> bytes, Threads threads);
  // On whichever thread lets go of the model last; the compiled model is
  // destroyed on the releaser.
  ~ServedModel();
  ServedModel(const ServedModel&) = delete;
  ServedModel& operator=(const ServedModel&) = delete;

  const ModelSpec& spec() const noexcept { return spec_; }
  // The model file as it was when loaded; a reload recompiles when it changed.
  bool file_changed() const;
  void describe(wire::ModelInfo& info) const;
  void fill_stats(wire::ModelStats& stats) const;
  // Input and output names, in compiled-model order.
  const std::vector<std::string>& input_names() const noexcept { return input_names_; }
  const std::vector<std::string>& output_names() const noexcept { return output_names_; }

  // Loop thread: where each of `job`'s inputs goes among the model's
  // (job.input_index), checked as every front end's requests are: each of
  // the model's inputs given once, and no other. INVALID_ARGUMENT saying
  // which is not (`why`), else OK.
  hetero_status place_inputs(InferJob& job, std::string& why) const;

  // Loop thread: a request for this model that its front end refused before
  // it reached the queue (an input the model does not have, one missing or
  // given twice, contents that do not match their shape, a client over its
  // limit), answered `status` by the front end: counted with this model's
  // failures, as a request the queue or the inference fails is, so that both
  // protocols' statistics count every failed request.
  void count_refused(Clock::time_point received, hetero_status status);

  // Loop thread. Runs the job now if a request is free, queues it if the
  // queue has room, and otherwise replies "busy" at once. `self` is this
  // model, kept alive while it has jobs even after it is unloaded.
  static void submit(const std::shared_ptr<ServedModel>& self, std::unique_ptr<InferJob> job);
  // Loop thread, every sweep: answers queued jobs past their deadline with
  // TIMEOUT, cancels running ones past it or past the model's
  // max_inference_ms (they answer TIMEOUT at their next node boundary), and
  // has requests idle for a second give back their memory.
  void expire();
  // Loop thread: cancels the running jobs of clients that have gone, so that
  // their slots free at the next node boundary instead of after a whole
  // inference (their queued jobs are dropped when they come up).
  void cancel_orphans();
  // Loop thread: the client's Cancel of its request `id`: a queued job is
  // answered CANCELLED at once, a running one is cancelled. False when the
  // client has no such job here.
  bool cancel(const Replier& replier, uint64_t id);
  // Loop thread, at unload: every job queued or running is answered
  // CANCELLED saying `why`.
  void cancel_all(const std::string& why);
  // Jobs queued or running.
  size_t pending() const noexcept { return queue_.size() + running_; }

  // Loop thread, once loaded: a client's model, each of whose infer
  // requests is charged `bytes` to the client's `account` while it runs and
  // while it keeps its last inference's buffers (daemon/client_memory.h).
  void charge_to(std::shared_ptr<ClientMemory> account, uint64_t bytes);
  // Loop thread: requests not running give back the buffers they keep.
  void release_idle_memory();
  // Loop thread: runs queued jobs that waited for memory, if it is there now.
  void resume() { pump(); }
  // At exit, once the loop has stopped for good: blocks until every running
  // inference has finished, and lets go of the references to this model
  // that their completions held until finish(), which will not run now (a
  // closed LoopPost never runs its tasks): without that, a model whose
  // inference outlived the grace period would keep itself alive.
  void wait_idle();

 private:
  struct Slot {
    ServedModel* model = nullptr;
    RequestPtr request;
    std::unique_ptr<InferJob> job;
    std::shared_ptr<ServedModel> keep_alive;  // while a job runs
    Clock::time_point done;                   // outputs encoded (statistics)
    // Why the running job was cancelled, which its answer says: TIMEOUT, or
    // CANCELLED with `cancel_message`; OK while it was not.
    hetero_status cancelled_as = HETERO_OK;
    std::string cancel_message;
    // Its reply has gone from the driver thread; finish() has not run yet.
    std::atomic<bool> replied = false;
    // Who answers the running job: set by the driver thread when the
    // inference ends (its outcome is the answer), or by the loop thread when
    // the job's deadline passes first (TIMEOUT at once, while a long node
    // runs on until its end; answered_early then says so to finish()).
    std::atomic<bool> claimed = false;
    bool answered_early = false;
    // Free since `idle_since`, still holding the memory of its last
    // inference (expire() gives it back after a while).
    Clock::time_point idle_since;
    bool holds_memory = false;
    // Charged to the client's ClientMemory (from its start until it gives
    // its memory back).
    bool charged = false;
  };
  // How a job that ran ended: its encoded reply, or why it failed.
  struct Outcome {
    hetero_status status = HETERO_OK;
    std::string message;
    wire::EncodedFrame frame;
    bool sent = false;  // by the driver thread (Replier::try_reply_now)
  };

  ServedModel(const ModelSpec& spec, CompiledPtr compiled, Threads threads);
  // A free request that may run a job now: one charged already, or one the
  // client's memory can be charged for; null when none.
  Slot* take_slot();
  // A free request gives back the buffers it keeps, and its charge.
  void release_memory(Slot& slot);
  void pump();
  void start(Slot& slot, std::unique_ptr<InferJob> job);
  // A slot whose job could not start goes back to the free ones.
  void give_back(Slot& slot);
  static void on_done(void* slot, hetero_status status);
  void finish(Slot& slot, Outcome outcome);
  void answer(InferJob& job, wire::EncodedFrame frame);
  void fail(InferJob& job, hetero_status status, const std::string& message);
  // Answers TIMEOUT saying `why`, or that the deadline passed.
  void time_out(InferJob& job, const std::string& why = {});
  void cancel_running(Slot& slot, hetero_status as, std::string message);
  // A request answered, with or without outputs: the counters, and its time
  // from receipt to now (returned, in ns).
  uint64_t count(Clock::time_point received, bool ok);
  // ... and the latency of a job that reached the queue.
  void record(const InferJob& job, bool ok);

  ModelSpec spec_;
  struct stat file_stat_ {};
  CompiledPtr compiled_;
  std::shared_ptr<LoopPost> post_;
  std::shared_ptr<core::WorkerThread> releaser_;
  std::vector<std::string> input_names_, output_names_;
  std::vector<std::unique_ptr<Slot>> slots_;
  std::vector<Slot*> free_slots_;
  std::deque<std::unique_ptr<InferJob>> queue_;
  size_t running_ = 0;
  // A client's model: what it charges, and to whom (null: the config's).
  std::shared_ptr<ClientMemory> memory_;
  uint64_t charge_bytes_ = 0;

  // Statistics (loop thread).
  uint64_t requests_ = 0, errors_ = 0, busy_ = 0, timeouts_ = 0, runs_ = 0;
  uint64_t success_ns_ = 0, failure_ns_ = 0, queue_ns_ = 0, compute_ns_ = 0;
  uint64_t last_request_ms_ = 0;  // Unix time
  std::array<float, 1024> latencies_us_{};
  size_t latency_count_ = 0;
};

}  // namespace hetero::daemon
