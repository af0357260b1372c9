// Sequences: a stateful model served as a stream (docs/streams.md). A model
// whose outputs include its next call's state (Silero VAD's `stateN`, fed
// back as `state`) is called by a client as a sequence: the client sends the
// other inputs only, and the daemon keeps each state output and feeds it back
// as the state input of the sequence's next call. A sequence is named by its
// client (the connection on the native socket, the uid on the v2 listener),
// the model and an id of the client's choosing; it starts with zeros or the
// state its first call gives, ends when its client says so, when its client
// disconnects, or after limits.sequence_idle_ms without a call, and its state
// is charged to its client (limits.max_sequences_per_client,
// max_sequence_state_mb).
//
// Threads: the table and the sequences' bookkeeping are the loop thread's.
// A sequence's state is written by the driver thread that ran its call, while
// the call holds the sequence's turn (one call of a sequence at a time), and
// the turn is given back (an atomic) before the call is answered, so that the
// client's next call, which may arrive before the loop thread hears the
// first one finish, finds the sequence free and its state written.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "daemon/config.h"
#include "hetero/hetero.hpp"
#include "protocol/tensor_view.h"

namespace hetero::daemon {

class InferJob;
class ServedModel;
class SequenceTable;
using Clock = std::chrono::steady_clock;

// One state pair of a model: what output `output` holds after a call is
// input `input` of the next. Indices in compiled-model order.
struct StatePair {
  size_t input = 0, output = 0;
};

// The state pairs of a model: the config's `state:` (output: input) when it
// has one, else the pairs its names show: an input `x` and an output of the
// same element type named `xN`, `xn`, `x_out`, `x_next`, `next_x` or
// `new_x`. Throws Failure (INVALID_MODEL) for a configured pair the model
// lacks, or whose two ports differ in element type.
std::vector<StatePair> find_state_pairs(const ModelSpec& spec, const std::vector<Port>& inputs,
                                        const std::vector<Port>& outputs);

// Who a sequence belongs to and its name there.
struct SequenceKey {
  int64_t owner = 0;                  // the uid charged (kOwnedByTcpClients for the v2 TCP clients)
  const void* connection = nullptr;   // the native connection it lives on; null on the v2 listener
  std::string model, id;
  auto operator<=>(const SequenceKey&) const = default;
};

// A sequence's state between calls.
class Sequence {
 public:
  struct State {
    core::DType dtype = core::DType::Undefined;
    std::vector<int64_t> dims;
    // The bytes, zeroed when made: calloc'ed, so that a large state's start
    // costs the loop thread no page faults (fresh pages come zeroed).
    std::unique_ptr<uint8_t, decltype(&std::free)> data{nullptr, &std::free};
    size_t capacity = 0;  // bytes data holds
    size_t bytes = 0;     // bytes of the state now
    bool known = false;  // false until a call gives it, for a state input of unknown shape
  };

  SequenceKey key;
  std::weak_ptr<ServedModel> model;  // the model it was started on: a reload that changes it ends the sequence
  std::vector<State> state;          // one per state pair of the model
  uint64_t charged = 0;              // bytes charged to the owner
  Clock::time_point last_call;
  std::string ended;                 // why it ended under its client (the model changed); empty while it lives
  // The call holding the turn (0: none). Taken on the loop thread, given
  // back by the driver thread that stored the state, or on the loop thread
  // by a call that failed.
  std::atomic<uint64_t> turn = 0;
  // Set with the turn given back by a call that ended the sequence: the
  // client's next call finds it gone even before the loop thread removes it.
  std::atomic<bool> closed = false;
};

// One call's hold on its sequence, from the front end's check until the job
// is destroyed (loop thread).
class SequenceCall {
 public:
  SequenceCall(SequenceTable& table, std::shared_ptr<Sequence> sequence, uint64_t turn, bool end,
               std::vector<StatePair> pairs);
  ~SequenceCall();
  SequenceCall(const SequenceCall&) = delete;
  SequenceCall& operator=(const SequenceCall&) = delete;

  // Loop thread, from ServedModel::place_inputs: adds to `job` the state
  // inputs it does not give, read from the sequence; one it gives replaces
  // the state (charged to the client). INVALID_ARGUMENT when the state's
  // shape is not known yet and the call does not give it, BUSY when the
  // client's state bytes would pass their limit; `why` says which.
  hetero_status bind(InferJob& job, const std::vector<std::string>& input_names, std::string& why);
  // Driver thread, once the call's inference has run: keeps the state
  // outputs for the next call and gives the turn back. Throws Failure when
  // a state output's size differs from its input's (the sequence then ends).
  void store(std::span<const wire::OutgoingTensor> outputs);
  // Output `k` is a state output, which the client is not sent unless it asks.
  bool is_state_output(size_t k) const;

 private:
  SequenceTable& table_;
  std::shared_ptr<Sequence> sequence_;
  uint64_t turn_;
  bool end_;
  std::vector<StatePair> pairs_;
};

class SequenceTable {
 public:
  explicit SequenceTable(const Limits& limits) : limits_(limits) {}

  // Loop thread: the hold of one call to `model` on the sequence `key`,
  // which `start` creates (or resets, with zero state) and `end` ends once
  // the call has run. Null, with status and why: NOT_FOUND (no such
  // sequence and no start), BUSY (a call of it is running, or the client
  // has limits.max_sequences_per_client open), CANCELLED (its model was
  // reloaded with changes or unloaded), INVALID_ARGUMENT (the model has no
  // state pairs).
  std::unique_ptr<SequenceCall> begin_call(const std::shared_ptr<ServedModel>& model, const SequenceKey& key,
                                           bool start, bool end, hetero_status& status, std::string& why);
  // Loop thread: ends `key` now (NOT_FOUND: no such sequence). One whose
  // call is running ends when that call has run.
  hetero_status end(const SequenceKey& key, std::string& why);
  // Loop thread: a native connection has gone, and its sequences with it.
  void end_connection(const void* connection);
  // Loop thread, every sweep: sequences idle longer than
  // limits.sequence_idle_ms end; those whose model is no longer the one
  // `serving` gives by their model's name (unloaded, or reloaded with
  // changes) give back their state, and each one's next call is told why.
  void expire(Clock::time_point now, const std::function<const ServedModel*(const std::string&)>& serving);

  size_t size() const noexcept { return sequences_.size(); }

 private:
  friend class SequenceCall;
  struct Account {
    uint32_t sequences = 0;
    uint64_t bytes = 0;
  };
  // Charges `bytes` more (or fewer) to the sequence's owner; false, charging
  // nothing, past limits.max_sequence_state_mb.
  bool recharge(Sequence& sequence, uint64_t bytes, std::string& why);
  void erase(std::map<SequenceKey, std::shared_ptr<Sequence>>::iterator it);
  // A call ended its sequence: it goes if it is still the one in the table.
  void remove(const std::shared_ptr<Sequence>& sequence);
  // The state its start gives: zeros of each state input's shape, its
  // dynamic dims 1 (or as the model's `shapes` fix them).
  static std::vector<Sequence::State> initial_state(const ServedModel& model);

  const Limits& limits_;
  std::map<SequenceKey, std::shared_ptr<Sequence>> sequences_;
  std::map<int64_t, Account> accounts_;
  uint64_t turns_ = 0;
};

}  // namespace hetero::daemon
