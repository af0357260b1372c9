// Sequences in process: hetero_infer_request_set_sequence() on a core of
// hetero_core_create(). A compiled model keeps each sequence's state by its
// id, as heterod keeps it for its clients (docs/streams.md): the state pairs
// found by their names (core/state_pairs.h), a start with zeros of each state
// input's shape (its dynamic dims 1) or the state the call gives, one call of
// a sequence at a time, and a call that fails leaving the state as it was.
// The state is the process's own memory: no limits, no idle timeout; the
// caller ends its sequences (hetero_compiled_model_end_sequence), or they go
// with the compiled model.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "capi/backend.h"
#include "core/tensor.h"

namespace hetero::capi {

class LocalSequences {
 public:
  LocalSequences(const std::vector<Port>& inputs, const std::vector<Port>& outputs);

  // (output, input) names, for hetero_compiled_model_get_state_pair().
  const std::vector<std::pair<std::string, std::string>>& names() const noexcept { return names_; }
  // (input index, output index) of each pair.
  const std::vector<std::pair<size_t, size_t>>& pairs() const noexcept { return pairs_; }
  bool is_state_output(size_t output) const;
  // INVALID_ARGUMENT when the model has no state pairs: no sequence of it.
  void require_state() const;

  // Takes sequence `id`'s turn for one call, `start` making it (or starting
  // it again) with zero state: the state to bind to each pair's input, empty
  // for one whose shape is unknown (the call must give it). NOT_FOUND (no
  // such sequence, and no start), BUSY (a call of it runs), or
  // require_state()'s refusal.
  std::vector<core::Tensor> begin(uint64_t id, bool start);
  // Gives the turn back after the call: `state` holds each pair's output, or
  // is empty when the call failed (the state stays as it was); `end` ends
  // the sequence.
  void finish(uint64_t id, std::vector<core::Tensor> state, bool end);
  // hetero_compiled_model_end_sequence(): NOT_FOUND when there is no such
  // sequence; one whose call runs ends when it has run.
  void end(uint64_t id);

 private:
  struct Sequence {
    std::vector<core::Tensor> state;
    bool busy = false;
    bool ended = false;  // by end() while a call ran
  };
  std::vector<core::Tensor> zero_state() const;

  const std::vector<Port> inputs_;
  std::vector<std::pair<size_t, size_t>> pairs_;
  std::vector<std::pair<std::string, std::string>> names_;
  std::vector<bool> state_outputs_;
  std::mutex mutex_;
  std::map<uint64_t, Sequence> sequences_;
};

}  // namespace hetero::capi
