// One model the daemon serves: its compiled model, a fixed set of infer
// requests ("parallel" in the config), a bounded queue in front of them and
// the statistics the Stats request reports.
//
// Threads: load() runs on the loader thread; everything else on the loop
// thread, except the completion callback, which runs on a driver thread: it
// has the job take its outputs, drops the inputs, has the job answer at once
// where its front end can (InferJob::try_answer_now), and posts the rest back
// to the loop.
#pragma once

#include <sys/stat.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/worker_thread.h"
#include "daemon/c_api.h"
#include "daemon/config.h"
#include "daemon/loop_post.h"
#include "daemon/sequences.h"
#include "hetero/hetero.hpp"
#include "protocol/tensor_view.h"

namespace hetero::daemon {

class ClientMemory;
using Clock = std::chrono::steady_clock;

// What a ready model is, as every front end describes it. Ports are the
// public C++ header's (include/hetero/hetero.hpp).
struct ModelDescription {
  std::string name, device, source;  // source: its path, or "upload"
  std::string priority;              // realtime, normal or background
  uint32_t parallel = 0;
  std::vector<Port> inputs, outputs;
  std::vector<std::string> submodel_devices;
  std::vector<std::pair<std::string, std::string>> state;  // output, input: what a sequence carries
  std::vector<std::string> defaults;  // inputs its config gives values, which a call may leave out
};

// A served model's counters since it was loaded, and its latencies (receipt
// to answer) over its last 1024 requests that reached it.
struct ModelStatistics {
  std::string name;
  uint64_t requests = 0;  // answered, successes and failures
  uint64_t errors = 0;    // failed inferences, timeouts and busy replies
  uint64_t busy = 0, timeouts = 0;
  uint64_t runs = 0;        // requests that left the queue for an infer request
  uint64_t success_ns = 0;  // receipt to answer, summed over successful requests
  uint64_t failure_ns = 0;  // ... and over failed ones
  uint64_t queue_ns = 0;    // receipt to start, summed over runs
  uint64_t compute_ns = 0;  // start to outputs ready, summed over runs
  uint64_t last_request_ms = 0;  // the last answer, ms since the Unix epoch; 0: never
  uint32_t queue_depth = 0, in_flight = 0;
  float latency_p50_us = 0, latency_p90_us = 0, latency_p99_us = 0;  // 0: no request yet
};

// One inference a client asked for, from receipt to answer, as the serving
// core sees it: inputs placed by index (ServedModel::place_inputs), a
// deadline, and how the front end that made it answers (the native socket's
// frames, a v2 call's response). The core never sees a protocol's message.
class InferJob {
 public:
  virtual ~InferJob() = default;
  // Loop thread: false once the client has gone: its queued job is dropped
  // unrun, a running one is cancelled.
  virtual bool client_open() const = 0;
  // Driver thread, once the inference has run: reads the outputs
  // (`outputs[k]` is the model's output k, borrowed from its infer request
  // for the call) into the answer. Throws Failure.
  virtual void take_outputs(std::span<const wire::OutgoingTensor> outputs) = 0;
  // Driver thread, after take_outputs(): sends the answer at once if the
  // front end can without the loop thread, which then skips a thread hop;
  // answer_sent() follows on the loop thread. False (the default) leaves it
  // to answer().
  virtual bool try_answer_now() { return false; }
  virtual void answer_sent() {}
  // Loop thread: the answer, with what take_outputs() read.
  virtual void answer() = 0;
  // Loop thread: refused or failed (busy, timed out, cancelled, a bad input,
  // the inference's own error).
  virtual void answer_error(hetero_status status, const std::string& message) = 0;
  // Driver thread, once the inference has run: drops what the inputs point
  // into. Done there rather than on the loop thread, where unmapping a large
  // tensor would delay every other client's requests.
  virtual void release_inputs() { inputs.clear(); }

  // Who asked, as its front end knows it, and the request's id there: a
  // Cancel names a job by both.
  const void* client = nullptr;
  uint64_t id = 0;
  std::vector<wire::TensorView> inputs;  // borrowed from what the job owns
  std::vector<size_t> input_index;  // the model input each of `inputs` is (ServedModel::place_inputs)
  Clock::time_point received;
  // Still queued then: answered TIMEOUT, never run; still running: cancelled
  // and answered TIMEOUT.
  Clock::time_point deadline;
  Clock::time_point started;   // given to an infer request (statistics)
  // The sequence the call belongs to (daemon/sequences.h), held until the
  // job is destroyed; null for a call of no sequence. Its state inputs come
  // from it (place_inputs), and its state outputs go back to it.
  std::unique_ptr<SequenceCall> sequence;
};

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
    // Loop thread: the loop is to expire jobs at this time (Server arms a
    // timer for it), so that a deadline is kept to the millisecond, not to
    // the next sweep.
    std::function<void(Clock::time_point)> keep_deadline;
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
  ModelDescription describe() const;
  ModelStatistics statistics() const;
  // Input and output names, in compiled-model order.
  const std::vector<std::string>& input_names() const noexcept { return input_names_; }
  const std::vector<std::string>& output_names() const noexcept { return output_names_; }
  // What a sequence of this model carries from call to call (daemon/sequences.h).
  const std::vector<StatePair>& state_pairs() const noexcept { return state_pairs_; }

  // Loop thread: where each of `job`'s inputs goes among the model's
  // (job.input_index), checked as every front end's requests are: each of
  // the model's inputs given once, and no other; a sequence's call gets the
  // state inputs it does not give from its sequence, and any call the inputs
  // its config gives values (`defaults:`). INVALID_ARGUMENT saying
  // which is not (`why`), or the sequence's refusal; else OK.
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
  // Loop thread: the soonest deadline of its queued and running jobs not yet
  // answered; Clock::time_point::max() when there is none.
  Clock::time_point next_deadline() const;
  // Loop thread: cancels the running jobs of clients that have gone, so that
  // their slots free at the next node boundary instead of after a whole
  // inference (their queued jobs are dropped when they come up).
  void cancel_orphans();
  // Loop thread: the client's Cancel of its request `id`: a queued job is
  // answered CANCELLED at once, a running one is cancelled. False when the
  // client has no such job here.
  bool cancel(const void* client, uint64_t id);
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
  // How a job that ran ended: its outputs taken, or why it failed.
  struct Outcome {
    hetero_status status = HETERO_OK;
    std::string message;
    bool sent = false;  // by the driver thread (InferJob::try_answer_now)
  };

  ServedModel(const ModelSpec& spec, CompiledModel compiled, Threads threads);
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
  // Driver thread: the job takes the request's outputs.
  void take_outputs(Slot& slot) const;
  void answer(InferJob& job);
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
  CompiledModel compiled_;  // include/hetero/hetero.hpp's handle
  std::shared_ptr<LoopPost> post_;
  std::shared_ptr<core::WorkerThread> releaser_;
  std::function<void(Clock::time_point)> keep_deadline_;
  std::vector<std::string> input_names_, output_names_;
  std::vector<StatePair> state_pairs_;
  // The values its config gives inputs (ModelSpec::defaults), for the calls
  // that leave them out.
  struct DefaultInput {
    std::string name;
    core::DType dtype = core::DType::Undefined;
    std::vector<int64_t> dims;
    std::vector<uint64_t> words;  // the bytes, 8-aligned
    size_t bytes = 0;
  };
  std::vector<DefaultInput> defaults_;
  void make_defaults(const std::vector<Port>& inputs);
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
