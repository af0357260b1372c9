#include "core/ports.h"

#include "core/error.h"

namespace hetero::core {

driver::Port port_of(const Value& value) {
  driver::Port p;
  p.name = value.name;
  p.dtype = value.dtype;
  p.has_rank = value.shape.has_value();
  if (value.shape) p.shape = *value.shape;
  return p;
}

std::vector<driver::Port> ports_of(const std::vector<Value*>& values) {
  std::vector<driver::Port> ports;
  for (const Value* v : values) ports.push_back(port_of(*v));
  return ports;
}

void check_input(const driver::Port& port, const Tensor& t) {
  if (t.dtype() != port.dtype)
    fail(HETERO_INVALID_ARGUMENT, "input '" + port.name + "' must be " + dtype_name(port.dtype) + ", got " +
                                      dtype_name(t.dtype()));
  if (!port.has_rank) return;
  if (t.rank() != port.shape.size())
    fail(HETERO_INVALID_ARGUMENT, "input '" + port.name + "' must have rank " + std::to_string(port.shape.size()) +
                                      ", got shape " + shape_to_string(t.shape()));
  for (size_t d = 0; d < t.rank(); ++d) {
    if (port.shape[d].known() && port.shape[d].size != t.dim(d))
      fail(HETERO_INVALID_ARGUMENT, "input '" + port.name + "' dimension " + std::to_string(d) + " must be " +
                                        std::to_string(port.shape[d].size) + ", got shape " +
                                        shape_to_string(t.shape()));
  }
}

}  // namespace hetero::core
