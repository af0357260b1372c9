#include "core/error.h"

#include <cerrno>
#include <cstring>

namespace hetero {

void fail_errno(int err, const std::string& what) {
  const hetero_status status = err == ENOENT || err == ENOTDIR ? HETERO_NOT_FOUND
                               : err == EACCES || err == EPERM ? HETERO_PERMISSION_DENIED
                                                               : HETERO_IO_ERROR;
  fail(status, what + ": " + std::strerror(err));
}

const char* status_name(hetero_status status) noexcept {
  switch (status) {
#define HETERO_STATUS_NAME_(name, value, message) \
  case HETERO_##name:                             \
    return "HETERO_" #name;
    HETERO_STATUS_MAP(HETERO_STATUS_NAME_)
#undef HETERO_STATUS_NAME_
  }
  return "HETERO_UNKNOWN_STATUS";
}

const char* status_message(hetero_status status) noexcept {
  switch (status) {
#define HETERO_STATUS_MESSAGE_(name, value, message) \
  case HETERO_##name:                                \
    return message;
    HETERO_STATUS_MAP(HETERO_STATUS_MESSAGE_)
#undef HETERO_STATUS_MESSAGE_
  }
  return "unknown status";
}

}  // namespace hetero
