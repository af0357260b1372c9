#include "daemon/server.h"

#if HETEROD_KSERVE
#include "daemon/kserve/front_end.h"
#endif

namespace hetero::daemon {

void start_front_ends([[maybe_unused]] Server& server, [[maybe_unused]] uv_loop_t* loop,
                      [[maybe_unused]] std::vector<std::unique_ptr<FrontEnd>>& into) {
  // A build without gRPC refuses a kserve section when it reads the config.
#if HETEROD_KSERVE
  if (server.config().kserve.enabled()) kserve::start_front_end(server, loop, into);
#endif
}

}  // namespace hetero::daemon
