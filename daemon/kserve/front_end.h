// The Open Inference Protocol's front end: a gRPC server with no port of
// its own for the Unix socket. The daemon binds that socket (mode and group
// as the config says), accepts on its loop, checks each peer's credentials
// (SO_PEERCRED against access.allowed_uids / allowed_gids, as the native
// socket does) and hands the connection to gRPC: an allowed peer to the v2
// service, a refused one to a server that answers every call
// PERMISSION_DENIED and closes. An optional TCP port, TLS unless the config
// explicitly allows otherwise, is gRPC's own.
#pragma once

#include <uv.h>

#include <memory>
#include <vector>

#include "daemon/front_end.h"

namespace hetero::daemon::kserve {

// Starts the front end of registry.config().kserve (see start_front_ends()).
void start_front_end(ModelRegistry& registry, uv_loop_t* loop, std::vector<std::unique_ptr<FrontEnd>>& into);

}  // namespace hetero::daemon::kserve
