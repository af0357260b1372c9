#include "capi/local_sequences.h"

#include "core/error.h"
#include "core/state_pairs.h"

namespace hetero::capi {

LocalSequences::LocalSequences(const std::vector<Port>& inputs, const std::vector<Port>& outputs)
    : inputs_(inputs), pairs_(core::state_pairs_by_name(inputs, outputs)), state_outputs_(outputs.size()) {
  for (const auto& [input, output] : pairs_) {
    names_.emplace_back(outputs[output].name, inputs[input].name);
    state_outputs_[output] = true;
  }
}

bool LocalSequences::is_state_output(size_t output) const {
  return output < state_outputs_.size() && state_outputs_[output];
}

std::vector<core::Tensor> LocalSequences::zero_state() const {
  std::vector<core::Tensor> state;
  for (const auto& [input, output] : pairs_) {
    const Port& port = inputs_[input];
    if (!port.shape) {
      state.emplace_back();  // rank unknown: the first call gives it
      continue;
    }
    state.push_back(
        core::Tensor::allocate(static_cast<core::DType>(port.dtype), core::initial_state_dims(*port.shape)));
  }
  return state;
}

void LocalSequences::require_state() const {
  if (pairs_.empty())
    fail(HETERO_INVALID_ARGUMENT, "the model has no state pairs (an input and an output named as its next value, "
                                  "such as 'state' and 'stateN'): it has no state a sequence could keep");
}

std::vector<core::Tensor> LocalSequences::begin(uint64_t id, bool start) {
  require_state();
  std::lock_guard lock(mutex_);
  auto it = sequences_.find(id);
  if (it == sequences_.end() && !start)
    fail(HETERO_NOT_FOUND, "sequence " + std::to_string(id) + " is not open: its first call starts it "
                           "(HETERO_SEQUENCE_START)");
  if (it != sequences_.end() && it->second.busy)
    fail(HETERO_BUSY, "sequence " + std::to_string(id) + " has a call running; its calls run one at a time");
  if (it == sequences_.end()) it = sequences_.emplace(id, Sequence{}).first;
  if (start) it->second = Sequence{zero_state()};
  it->second.busy = true;
  return it->second.state;
}

void LocalSequences::finish(uint64_t id, std::vector<core::Tensor> state, bool end) {
  std::lock_guard lock(mutex_);
  const auto it = sequences_.find(id);
  if (it == sequences_.end()) return;
  if (!state.empty()) it->second.state = std::move(state);
  if (end || it->second.ended)
    sequences_.erase(it);
  else
    it->second.busy = false;
}

void LocalSequences::end(uint64_t id) {
  std::lock_guard lock(mutex_);
  const auto it = sequences_.find(id);
  if (it == sequences_.end())
    fail(HETERO_NOT_FOUND, "sequence " + std::to_string(id) + " is not open (ended already, or never started)");
  if (it->second.busy)
    it->second.ended = true;
  else
    sequences_.erase(it);
}

}  // namespace hetero::capi
