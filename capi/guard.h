// The C ABI's boundary: every hetero_* entry point runs its body inside
// guard(), which turns any exception into a status and the thread's last-error
// message, so that nothing thrown in the core or a driver reaches C callers.
// Also the argument checks every entry point shares.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "capi/backend.h"
#include "core/error.h"
#include "hetero/hetero.h"

namespace hetero::capi {

void set_last_error(std::string message);
// This thread's last message ("" when none); valid until the next failure here.
const char* last_error() noexcept;

// The status and message an exception stands for: hetero::Failure keeps its
// own, std::bad_alloc is OUT_OF_MEMORY, anything else INTERNAL.
std::pair<hetero_status, std::string> translate(std::exception_ptr error) noexcept;

// Runs `body` (which returns void), returning HETERO_OK or the failure.
// Bodies write their out-params last, after everything that can throw, so
// that out-params stay untouched on error.
template <typename Body>
hetero_status guard(Body&& body) noexcept {
  try {
    body();
    return HETERO_OK;
  } catch (...) {
    auto [status, message] = translate(std::current_exception());
    set_last_error(std::move(message));
    return status;
  }
}

// Fails with INVALID_ARGUMENT "FUNCTION: ARG is NULL" when `ptr` is null.
// `fn` and `arg` are string literals naming the entry point and parameter.
inline void require(const void* ptr, const char* fn, const char* arg) {
  if (!ptr) fail(HETERO_INVALID_ARGUMENT, std::string(fn) + ": " + arg + " is NULL");
}

// The key/value pairs of a config argument; duplicate keys and NULL strings
// are INVALID_ARGUMENT naming `fn`.
Config config_from_pairs(const char* fn, const char* const* keys, const char* const* values, size_t count);

// The input shapes of hetero_model_read_*; negative dims, duplicate names and
// NULLs are INVALID_ARGUMENT naming `fn`.
Backend::InputShapes shapes_from_arrays(const char* fn, const char* const* names, const int64_t* const* dims,
                                        const size_t* ranks, size_t count);

// Dims and rank as given by a C caller, checked: a NULL `dims` with a
// non-zero rank is INVALID_ARGUMENT naming `fn`.
core::Shape shape_from_array(const char* fn, const int64_t* dims, size_t rank);

// Port `index` of `ports`, or INVALID_ARGUMENT naming `what` ("input",
// "output") and the count.
const Port& port_at(const std::vector<Port>& ports, size_t index, const char* what);

// Writes a port's shape in the C form: rank -1 and null dims when unknown.
void write_port_shape(const Port& port, const int64_t** out_dims, int64_t* out_rank) noexcept;

// A malloc'ed copy (hetero_free() frees it); OUT_OF_MEMORY on failure.
char* malloc_string(const std::string& s);

}  // namespace hetero::capi
