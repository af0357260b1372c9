// What one client's models may hold for their inferences' values, all of
// them together: limits.max_client_memory_mb per owner (a uid, or every TCP
// client of the v2 listener together). One inference of a client's model is
// bounded already (limits.max_client_inference_mb), but a client may load
// 16 models with several infer requests each, and each request keeps its
// last inference's buffers for a while: without a sum, one uid could make
// the daemon hold models x requests x the bound.
//
// So each infer request of a client's model is charged that bound while it
// runs and while it keeps its buffers, here. A request that cannot be
// charged first has the client's idle requests give their buffers back, and
// failing that leaves its job queued (under the model's queue limit and the
// request's deadline, as a busy model does) until a charge ends. Only the
// client's own models wait: the config's are never charged.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "daemon/loop_post.h"

namespace hetero::daemon {

class ServedModel;

class ClientMemory : public std::enable_shared_from_this<ClientMemory> {
 public:
  ClientMemory(uint64_t budget_bytes, std::shared_ptr<LoopPost> loop)
      : budget_(budget_bytes), loop_(std::move(loop)) {}

  // Loop thread: a model of this client, asked for its idle buffers when
  // another needs room and woken when a charge ends.
  void join(const std::shared_ptr<ServedModel>& model);
  // Loop thread: charges `bytes` when they fit (or when nothing is charged:
  // one inference larger than the budget still runs, alone), after asking
  // the client's models to give back what their idle requests keep. False:
  // not charged; the caller's model is woken when a charge ends.
  bool charge(uint64_t bytes);
  // Any thread: a charge ends; the client's models waiting for memory try again.
  void uncharge(uint64_t bytes);
  // Any thread: a request of the client's has become idle and may give its
  // buffers to a model waiting for memory: the models try again.
  void wake_soon();

 private:
  bool try_charge(uint64_t bytes);
  // Loop thread: the client's models with jobs waiting try again.
  void wake();

  const uint64_t budget_;
  const std::shared_ptr<LoopPost> loop_;
  std::mutex mutex_;  // guards charged_ and wake_posted_
  uint64_t charged_ = 0;
  bool wake_posted_ = false;
  std::vector<std::weak_ptr<ServedModel>> models_;  // loop thread
};

}  // namespace hetero::daemon
