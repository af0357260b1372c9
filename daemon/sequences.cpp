#include "daemon/sequences.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/log.h"
#include "core/state_pairs.h"
#include "daemon/served_model.h"

namespace hetero::daemon {

namespace {

std::string describe_dims(std::span<const int64_t> dims) {
  if (dims.empty()) return "a scalar";
  std::string s;
  for (int64_t d : dims) {
    if (!s.empty()) s += 'x';
    s += std::to_string(d);
  }
  return s;
}

std::string sequence_name(const SequenceKey& key) {
  return "sequence '" + key.id + "' of model '" + key.model + "'";
}

}  // namespace

std::vector<StatePair> find_state_pairs(const ModelSpec& spec, const std::vector<Port>& inputs,
                                        const std::vector<Port>& outputs) {
  auto index_of = [](const std::vector<Port>& ports, const std::string& name) -> std::ptrdiff_t {
    const auto it = std::find_if(ports.begin(), ports.end(), [&](const Port& p) { return p.name == name; });
    return it == ports.end() ? -1 : it - ports.begin();
  };
  std::vector<StatePair> pairs;
  if (spec.state_set) {
    for (const auto& [output, input] : spec.state) {
      const std::ptrdiff_t o = index_of(outputs, output), i = index_of(inputs, input);
      const std::string pair = "model '" + spec.name + "': state '" + output + ": " + input + "': ";
      if (o < 0) fail(HETERO_INVALID_MODEL, pair + "the model has no output '" + output + "'");
      if (i < 0) fail(HETERO_INVALID_MODEL, pair + "the model has no input '" + input + "'");
      if (outputs[static_cast<size_t>(o)].dtype != inputs[static_cast<size_t>(i)].dtype)
        fail(HETERO_INVALID_MODEL, pair + "the output is " + hetero_dtype_name(outputs[static_cast<size_t>(o)].dtype) +
                                       ", the input " + hetero_dtype_name(inputs[static_cast<size_t>(i)].dtype));
      pairs.push_back({static_cast<size_t>(i), static_cast<size_t>(o)});
    }
    return pairs;
  }
  for (const auto& [input, output] : core::state_pairs_by_name(inputs, outputs)) pairs.push_back({input, output});
  return pairs;
}

// ---- One call's hold -----------------------------------------------------

SequenceCall::SequenceCall(SequenceTable& table, std::shared_ptr<Sequence> sequence, uint64_t turn, bool end,
                           std::vector<StatePair> pairs)
    : table_(table), sequence_(std::move(sequence)), turn_(turn), end_(end), pairs_(std::move(pairs)) {}

SequenceCall::~SequenceCall() {
  // A call that failed (or never ran) still holds the turn: the state stays
  // as it was before it.
  uint64_t mine = turn_;
  sequence_->turn.compare_exchange_strong(mine, 0);
  sequence_->last_call = Clock::now();
  if (end_ || sequence_->closed) table_.remove(sequence_);
}

hetero_status SequenceCall::bind(InferJob& job, const std::vector<std::string>& input_names, std::string& why) {
  Sequence& s = *sequence_;
  for (size_t p = 0; p < pairs_.size(); ++p) {
    Sequence::State& state = s.state[p];
    const std::string& name = input_names[pairs_[p].input];
    const auto given = std::find_if(job.inputs.begin(), job.inputs.end(),
                                    [&](const wire::TensorView& v) { return v.name == name; });
    if (given != job.inputs.end()) {
      // The client sets the state: the buffer takes its shape, and the
      // output is stored there after the call.
      if (given->bytes != state.capacity) {
        const uint64_t others = s.charged - state.capacity;
        if (!table_.recharge(s, others + given->bytes, why)) return HETERO_BUSY;
        state.data.reset(static_cast<uint8_t*>(std::calloc(std::max<size_t>(given->bytes, 1), 1)));
        if (!state.data) {
          why = sequence_name(s.key) + ": no memory for its state input '" + name + "'";
          return HETERO_OUT_OF_MEMORY;
        }
        state.capacity = given->bytes;
      }
      state.dtype = given->dtype;
      state.dims = given->dims;
      state.bytes = given->bytes;
      state.known = true;
      continue;
    }
    if (!state.known) {
      why = sequence_name(s.key) + ": its state input '" + name +
            "' has dims the model does not fix, so the sequence's first call must give it";
      return HETERO_INVALID_ARGUMENT;
    }
    job.inputs.push_back({name, state.dtype, state.dims, state.data.get(), state.bytes});
  }
  return HETERO_OK;
}

void SequenceCall::store(std::span<const wire::OutgoingTensor> outputs) {
  Sequence& s = *sequence_;
  for (size_t p = 0; p < pairs_.size(); ++p) {
    const wire::OutgoingTensor& out = outputs[pairs_[p].output];
    Sequence::State& state = s.state[p];
    if (out.bytes != state.capacity) {
      s.closed = true;
      fail(HETERO_INVALID_MODEL, sequence_name(s.key) + " ended: state output '" + std::string(out.name) + "' is " +
                                     describe_dims(out.dims) + ", " + std::to_string(out.bytes) +
                                     " bytes, where its input was " + describe_dims(state.dims) + ", " +
                                     std::to_string(state.bytes) + " bytes");
    }
    // The output may be the input's own memory passed through.
    std::memmove(state.data.get(), out.data, out.bytes);
    state.bytes = out.bytes;
    state.dims.assign(out.dims.begin(), out.dims.end());
  }
  if (end_) s.closed = true;
  uint64_t mine = turn_;
  s.turn.compare_exchange_strong(mine, 0);
}

bool SequenceCall::is_state_output(size_t k) const {
  return std::any_of(pairs_.begin(), pairs_.end(), [k](const StatePair& p) { return p.output == k; });
}

// ---- The table -----------------------------------------------------------

std::vector<Sequence::State> SequenceTable::initial_state(const ServedModel& model) {
  const std::vector<Port> inputs = model.describe().inputs;
  std::vector<Sequence::State> state;
  for (const StatePair& pair : model.state_pairs()) {
    const Port& port = inputs[pair.input];
    Sequence::State& s = state.emplace_back();
    s.dtype = static_cast<core::DType>(port.dtype);
    const auto fixed = model.spec().shapes.find(port.name);
    if (fixed != model.spec().shapes.end()) {
      s.dims = fixed->second;
    } else if (port.shape) {
      s.dims = core::initial_state_dims(*port.shape);
    } else {
      continue;  // rank unknown: the first call gives it
    }
    size_t elements = 1;
    for (int64_t d : s.dims) elements *= static_cast<size_t>(d);
    s.bytes = elements * core::dtype_size(s.dtype);
    s.data.reset(static_cast<uint8_t*>(std::calloc(std::max<size_t>(s.bytes, 1), 1)));
    s.capacity = s.bytes;
    s.known = s.data != nullptr;  // without memory, the first call must give it
  }
  return state;
}

bool SequenceTable::recharge(Sequence& sequence, uint64_t bytes, std::string& why) {
  Account& account = accounts_[sequence.key.owner];
  const uint64_t others = account.bytes - sequence.charged;
  const uint64_t limit = uint64_t{limits_.max_sequence_state_mb} << 20;
  if (bytes > sequence.charged && others + bytes > limit) {
    why = sequence_name(sequence.key) + ": its state would take this client's sequences to " +
          std::to_string(others + bytes) + " bytes, over limits.max_sequence_state_mb (" +
          std::to_string(limits_.max_sequence_state_mb) + " MiB)";
    return false;
  }
  account.bytes = others + bytes;
  sequence.charged = bytes;
  return true;
}

void SequenceTable::erase(std::map<SequenceKey, std::shared_ptr<Sequence>>::iterator it) {
  Sequence& s = *it->second;
  Account& account = accounts_[s.key.owner];
  account.bytes -= s.charged;
  s.charged = 0;
  if (--account.sequences == 0) accounts_.erase(s.key.owner);
  sequences_.erase(it);
}

void SequenceTable::remove(const std::shared_ptr<Sequence>& sequence) {
  const auto it = sequences_.find(sequence->key);
  if (it != sequences_.end() && it->second == sequence) erase(it);
}

std::unique_ptr<SequenceCall> SequenceTable::begin_call(const std::shared_ptr<ServedModel>& model,
                                                        const SequenceKey& key, bool start, bool end,
                                                        hetero_status& status, std::string& why) {
  if (model->state_pairs().empty()) {
    status = HETERO_INVALID_ARGUMENT;
    why = "model '" + key.model + "' keeps no state: it has no state pairs to carry in a sequence (its config's "
          "'state:' names them)";
    return nullptr;
  }
  auto it = sequences_.find(key);
  if (it != sequences_.end()) {
    Sequence& s = *it->second;
    if (s.turn != 0) {
      status = HETERO_BUSY;
      why = sequence_name(key) + " has a call running: a sequence's calls go one at a time";
      return nullptr;
    }
    if (s.ended.empty() && s.model.lock() != model) s.ended = "its model was unloaded or reloaded with changes";
    if (!s.ended.empty() && !start) {
      status = HETERO_CANCELLED;
      why = sequence_name(key) + " ended: " + s.ended;
      erase(it);
      return nullptr;
    }
    // Ended by its last call, or started on a model since replaced: a start
    // begins it again, anything else finds it gone.
    if (s.closed || !s.ended.empty()) {
      erase(it);
      it = sequences_.end();
    }
  }
  if (it == sequences_.end()) {
    if (!start) {
      status = HETERO_NOT_FOUND;
      why = "no " + sequence_name(key) + " (never started, ended, or idle longer than limits.sequence_idle_ms): "
            "its first call starts it";
      return nullptr;
    }
    Account& account = accounts_[key.owner];
    if (account.sequences >= limits_.max_sequences_per_client) {
      if (account.sequences == 0) accounts_.erase(key.owner);
      status = HETERO_BUSY;
      why = "this client has " + std::to_string(account.sequences) +
            " sequences open (limits.max_sequences_per_client); end one first";
      return nullptr;
    }
    auto sequence = std::make_shared<Sequence>();
    sequence->key = key;
    sequence->model = model;
    ++account.sequences;
    it = sequences_.emplace(key, std::move(sequence)).first;
    start = true;
  }
  Sequence& s = *it->second;
  if (start) {
    // A start resets the state; what a call gives replaces it in bind().
    std::vector<Sequence::State> state = initial_state(*model);
    uint64_t bytes = 0;
    for (const Sequence::State& st : state) bytes += st.capacity;
    if (!recharge(s, bytes, why)) {
      status = HETERO_BUSY;
      erase(it);
      return nullptr;
    }
    s.state = std::move(state);
    s.ended.clear();
  }
  const uint64_t turn = ++turns_;
  s.turn = turn;
  s.last_call = Clock::now();
  return std::make_unique<SequenceCall>(*this, it->second, turn, end, model->state_pairs());
}

hetero_status SequenceTable::end(const SequenceKey& key, std::string& why) {
  const auto it = sequences_.find(key);
  if (it == sequences_.end() || it->second->closed) {
    why = "no " + sequence_name(key) + " to end";
    return HETERO_NOT_FOUND;
  }
  // A running call holds it; it goes when that call's hold does.
  if (it->second->turn != 0)
    it->second->closed = true;
  else
    erase(it);
  return HETERO_OK;
}

void SequenceTable::end_connection(const void* connection) {
  for (auto it = sequences_.begin(); it != sequences_.end();) {
    const auto next = std::next(it);
    if (it->first.connection == connection) {
      if (it->second->turn != 0)
        it->second->closed = true;
      else
        erase(it);
    }
    it = next;
  }
}

void SequenceTable::expire(Clock::time_point now,
                           const std::function<const ServedModel*(const std::string&)>& serving) {
  const auto idle = std::chrono::milliseconds(limits_.sequence_idle_ms);
  for (auto it = sequences_.begin(); it != sequences_.end();) {
    const auto next = std::next(it);
    Sequence& s = *it->second;
    if (s.turn != 0) {
      // A running call has its inputs in the state: looked at again when it has run.
    } else if (now - s.last_call > idle) {
      core::log(core::LogLevel::Debug, sequence_name(it->first) + " ended: idle longer than limits.sequence_idle_ms");
      erase(it);
    } else if (s.ended.empty() && s.model.lock().get() != serving(it->first.model)) {
      s.ended = "its model was unloaded or reloaded with changes";
      s.state.clear();
      std::string unused;
      recharge(s, 0, unused);
    }
    it = next;
  }
}

}  // namespace hetero::daemon
