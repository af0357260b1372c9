// A compiled model's inputs and outputs (driver::Port): made from IR values,
// and checked against the tensors a caller binds. Shared by every driver and
// by HETERO, so a wrong input reads the same whatever runs the model.
#pragma once

#include <vector>

#include "core/driver.h"
#include "core/graph.h"
#include "core/tensor.h"

namespace hetero::core {

driver::Port port_of(const Value& value);
// port_of() of each value: a graph's inputs or outputs.
std::vector<driver::Port> ports_of(const std::vector<Value*>& values);

// Fails with INVALID_ARGUMENT naming the input when `tensor`'s dtype, rank or
// a known dimension differs from `port`.
void check_input(const driver::Port& port, const Tensor& tensor);

}  // namespace hetero::core
