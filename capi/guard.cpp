#include "capi/guard.h"

#include <cstdlib>
#include <cstring>
#include <new>

namespace hetero::capi {

namespace {
// Per thread, like errno: a failure on one thread never overwrites the reason
// another thread is about to print.
thread_local std::string tl_last_error;
}  // namespace

void set_last_error(std::string message) {
  try {
    tl_last_error = std::move(message);
  } catch (...) {
    // Out of memory while recording an error: keep a message that needs no
    // allocation rather than a stale one.
    tl_last_error.clear();
  }
}

const char* last_error() noexcept { return tl_last_error.c_str(); }

std::pair<hetero_status, std::string> translate(std::exception_ptr error) noexcept {
  try {
    try {
      std::rethrow_exception(error);
    } catch (const Failure& e) {
      return {e.status(), e.what()};
    } catch (const std::bad_alloc&) {
      return {HETERO_OUT_OF_MEMORY, "out of memory"};
    } catch (const std::exception& e) {
      return {HETERO_INTERNAL, std::string("internal error: ") + e.what()};
    } catch (...) {
      return {HETERO_INTERNAL, "internal error: unknown exception"};
    }
  } catch (...) {
    // Building the message itself failed (no memory for the string).
    return {HETERO_OUT_OF_MEMORY, {}};
  }
}

Config config_from_pairs(const char* fn, const char* const* keys, const char* const* values, size_t count) {
  Config config;
  if (count == 0) return config;
  require(keys, fn, "config_keys");
  require(values, fn, "config_values");
  for (size_t i = 0; i < count; ++i) {
    if (!keys[i] || !values[i])
      fail(HETERO_INVALID_ARGUMENT, std::string(fn) + ": config entry " + std::to_string(i) + " has a NULL " +
                                        (keys[i] ? "value" : "key"));
    if (!config.emplace(keys[i], values[i]).second)
      fail(HETERO_INVALID_ARGUMENT, std::string(fn) + ": config key '" + keys[i] + "' is given twice");
  }
  return config;
}

core::Shape shape_from_array(const char* fn, const int64_t* dims, size_t rank) {
  if (rank == 0) return {};
  require(dims, fn, "dims");
  return core::Shape(dims, dims + rank);
}

Backend::InputShapes shapes_from_arrays(const char* fn, const char* const* names, const int64_t* const* dims,
                                        const size_t* ranks, size_t count) {
  Backend::InputShapes shapes;
  if (count == 0) return shapes;
  require(names, fn, "shape_names");
  require(dims, fn, "shape_dims");
  require(ranks, fn, "shape_ranks");
  for (size_t i = 0; i < count; ++i) {
    if (!names[i])
      fail(HETERO_INVALID_ARGUMENT, std::string(fn) + ": shape entry " + std::to_string(i) + " has a NULL name");
    core::Shape shape = shape_from_array(fn, dims[i], ranks[i]);
    for (int64_t d : shape)
      if (d < 0)
        fail(HETERO_INVALID_ARGUMENT, std::string(fn) + ": the shape given for input '" + names[i] +
                                          "' has a negative dimension (" + core::shape_to_string(shape) + ")");
    if (!shapes.emplace(names[i], std::move(shape)).second)
      fail(HETERO_INVALID_ARGUMENT, std::string(fn) + ": a shape for input '" + names[i] + "' is given twice");
  }
  return shapes;
}

const Port& port_at(const std::vector<Port>& ports, size_t index, const char* what) {
  if (index >= ports.size())
    fail(HETERO_INVALID_ARGUMENT, std::string(what) + " index " + std::to_string(index) + " is out of range (there " +
                                      (ports.size() == 1 ? "is 1 " : "are " + std::to_string(ports.size()) + " ") +
                                      what + (ports.size() == 1 ? ")" : "s)"));
  return ports[index];
}

void write_port_shape(const Port& port, const int64_t** out_dims, int64_t* out_rank) noexcept {
  *out_rank = port.shape ? static_cast<int64_t>(port.shape->size()) : -1;
  *out_dims = !port.shape || port.shape->empty() ? nullptr : port.shape->data();
}

char* malloc_string(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (!p) fail(HETERO_OUT_OF_MEMORY, "cannot allocate " + std::to_string(s.size() + 1) + " bytes for a string");
  std::memcpy(p, s.data(), s.size());
  p[s.size()] = '\0';
  return p;
}

}  // namespace hetero::capi
