#include "daemon/front_end.h"
#include "daemon/model_registry.h"

#if HETEROD_KSERVE
#include "daemon/kserve/front_end.h"
#endif

namespace hetero::daemon {

void start_front_ends([[maybe_unused]] ModelRegistry& registry, [[maybe_unused]] uv_loop_t* loop,
                      [[maybe_unused]] std::vector<std::unique_ptr<FrontEnd>>& into) {
  // A build without gRPC refuses a kserve section when it reads the config.
#if HETEROD_KSERVE
  if (registry.config().kserve.enabled()) kserve::start_front_end(registry, loop, into);
#endif
}

}  // namespace hetero::daemon
