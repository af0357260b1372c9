// A protocol heterod serves next to its native one (daemon/kserve/: the Open
// Inference Protocol over gRPC). A front end reaches the models through the
// registry (daemon/model_registry.h) and ServedModel::submit, as the native
// requests do, and nothing of the native protocol's; the server starts it
// after its own socket and tells it when the daemon stops.
#pragma once

#include <uv.h>

#include <memory>
#include <vector>

namespace hetero::daemon {

class ModelRegistry;

class FrontEnd {
 public:
  virtual ~FrontEnd() = default;
  // SIGTERM (loop thread): no new connections; calls already made are
  // answered as the native requests in flight are.
  virtual void stop_accepting() = 0;
  // Teardown, once the loop has stopped and no inference runs: answers what
  // is still unanswered (UNAVAILABLE) and closes every connection.
  virtual void shutdown() = 0;
};

// Starts the front ends the config asks for (none when it asks for none)
// and appends them to `into`, before they first touch the loop: a failed
// start leaves every loop handle with an owner that outlives the loop's
// teardown. Loop thread, during start-up; throws Failure (a socket it cannot
// bind, a certificate it cannot read).
void start_front_ends(ModelRegistry& registry, uv_loop_t* loop, std::vector<std::unique_ptr<FrontEnd>>& into);

}  // namespace hetero::daemon
