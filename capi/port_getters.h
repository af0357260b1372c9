// The port getters a model and a compiled model share: the count, name,
// dtype and shape of an input or output. Each hetero_model_get_* and
// hetero_compiled_model_get_* entry point is one call here, with `ports`
// finding its handle's inputs or outputs (checking the handle, and naming
// the entry point `fn` when it fails), so the checks and the order they run
// in (the handle, then the out-params, then the index) are written once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "capi/guard.h"

namespace hetero::capi {

// `Ports`: callable as ports(fn), returning const std::vector<Port>&.
template <typename Ports>
hetero_status get_port_count(const char* fn, Ports ports, size_t* out_count) noexcept {
  return guard([&] {
    const std::vector<Port>& all = ports(fn);
    require(out_count, fn, "out_count");
    *out_count = all.size();
  });
}

// `what`: "input" or "output", for the index's error.
template <typename Ports>
hetero_status get_port_name(const char* fn, Ports ports, const char* what, const char** out_name,
                            size_t index) noexcept {
  return guard([&] {
    const std::vector<Port>& all = ports(fn);
    require(out_name, fn, "out_name");
    *out_name = port_at(all, index, what).name.c_str();
  });
}

template <typename Ports>
hetero_status get_port_dtype(const char* fn, Ports ports, const char* what, hetero_dtype* out_dtype,
                             size_t index) noexcept {
  return guard([&] {
    const std::vector<Port>& all = ports(fn);
    require(out_dtype, fn, "out_dtype");
    *out_dtype = port_at(all, index, what).dtype;
  });
}

template <typename Ports>
hetero_status get_port_shape(const char* fn, Ports ports, const char* what, const int64_t** out_dims,
                             int64_t* out_rank, size_t index) noexcept {
  return guard([&] {
    const std::vector<Port>& all = ports(fn);
    require(out_dims, fn, "out_dims");
    require(out_rank, fn, "out_rank");
    write_port_shape(port_at(all, index, what), out_dims, out_rank);
  });
}

}  // namespace hetero::capi
