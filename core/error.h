// Errors inside the core and the drivers: one exception type, Failure,
// carrying a public status code and a message that names the thing that was
// wrong. It is not hetero::Error, the public C++ header's exception
// (include/hetero/hetero.hpp), so that code of this tree which is also a client
// of the C ABI (the daemon) can include both.
// Exceptions never cross the C ABI (capi/ converts them) nor a driver module
// boundary built by another compiler (modules are built with the core).
#pragma once

#include <stdexcept>
#include <string>

#include "hetero/status.h"

namespace hetero {

class Failure : public std::runtime_error {
 public:
  Failure(hetero_status status, const std::string& message)
      : std::runtime_error(message), status_(status) {}
  hetero_status status() const noexcept { return status_; }

 private:
  hetero_status status_;
};

[[noreturn]] inline void fail(hetero_status status, const std::string& message) {
  throw Failure(status, message);
}

// Fails with the status that fits errno value `err` (NOT_FOUND,
// PERMISSION_DENIED, else IO_ERROR), message "<what>: <strerror>".
[[noreturn]] void fail_errno(int err, const std::string& what);

// Name and message of a status code, from the one table in hetero/status.h.
const char* status_name(hetero_status status) noexcept;
const char* status_message(hetero_status status) noexcept;

}  // namespace hetero
