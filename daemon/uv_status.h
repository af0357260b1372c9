// libuv calls return 0 or a negative error code. The daemon checks every one:
// at start-up a failure is a start-up error, later it ends what it belongs to
// (a connection) or is logged. Both name the call and give uv_strerror's
// reason, so that the log says which handle failed and why.
#pragma once

#include <uv.h>

#include <string>

#include "core/error.h"
#include "core/log.h"

namespace hetero::daemon {

// "what: reason" for a failed libuv call.
inline std::string uv_failure(const std::string& what, int rc) { return what + ": " + uv_strerror(rc); }

// Throws Failure(HETERO_INTERNAL) when `rc` is a libuv error.
inline void uv_check(int rc, const std::string& what) {
  if (rc < 0) fail(HETERO_INTERNAL, uv_failure(what, rc));
}

// Logs `rc` at `level` when it is a libuv error; true when it is not.
inline bool uv_ok(int rc, const std::string& what, core::LogLevel level = core::LogLevel::Warning) {
  if (rc >= 0) return true;
  core::log(level, uv_failure(what, rc));
  return false;
}

}  // namespace hetero::daemon
