// A model's state pairs found by their names: an output that is the next
// call's value of an input (Silero VAD's `stateN` of `state`). heterod's
// sequences (daemon/sequences.h) and libhetero's in process
// (capi/local_sequences.h) find them by the same rule (docs/streams.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace hetero::core {

// The names an output holding input `x`'s next value may have, tried in
// this order: `xN`, `xn`, `x_out`, `x_next`, `next_x`, `new_x`.
inline std::vector<std::string> state_output_names(const std::string& x) {
  return {x + "N", x + "n", x + "_out", x + "_next", "next_" + x, "new_" + x};
}

// (input index, output index) of each input whose next value an output of
// the same element type holds by state_output_names(). `PortT` has `name`
// and `dtype` (the C ABI's ports, the C++ header's).
template <typename PortT>
std::vector<std::pair<size_t, size_t>> state_pairs_by_name(const std::vector<PortT>& inputs,
                                                           const std::vector<PortT>& outputs) {
  std::vector<std::pair<size_t, size_t>> pairs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    bool found = false;
    for (const std::string& candidate : state_output_names(inputs[i].name)) {
      for (size_t o = 0; o < outputs.size() && !found; ++o)
        if (outputs[o].name == candidate && outputs[o].dtype == inputs[i].dtype) {
          pairs.emplace_back(i, o);
          found = true;
        }
      if (found) break;
    }
  }
  return pairs;
}

// The dims a sequence's state starts with, zeros: its port's, each dynamic
// dim 1 (a state's dynamic dim is its batch, for a stream of one).
inline std::vector<int64_t> initial_state_dims(std::vector<int64_t> port_dims) {
  for (int64_t& d : port_dims)
    if (d < 0) d = 1;
  return port_dims;
}

}  // namespace hetero::core
