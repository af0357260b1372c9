#include "daemon/served_model.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "core/log.h"
#include "daemon/client_memory.h"
#include "daemon/compile_args.h"
#include "protocol/utf8.h"

namespace hetero::daemon {

ServedModel::ServedModel(const ModelSpec& spec, CompiledModel compiled, Threads threads)
    : spec_(spec), compiled_(std::move(compiled)), post_(std::move(threads.loop)),
      releaser_(std::move(threads.releaser)), keep_deadline_(std::move(threads.keep_deadline)) {
  size_t count = 0;
  check(hetero_compiled_model_get_input_count(compiled_.get(), &count), "inputs");
  for (size_t k = 0; k < count; ++k) {
    const char* name = nullptr;
    check(hetero_compiled_model_get_input_name(compiled_.get(), &name, k), "input name");
    input_names_.emplace_back(name);
  }
  check(hetero_compiled_model_get_output_count(compiled_.get(), &count), "outputs");
  for (size_t k = 0; k < count; ++k) {
    const char* name = nullptr;
    check(hetero_compiled_model_get_output_name(compiled_.get(), &name, k), "output name");
    output_names_.emplace_back(name);
  }
  // Every reply that names a port (a listing, metadata, an error) would be
  // unreadable for every client: refuse the model instead.
  for (const auto* names : {&input_names_, &output_names_})
    for (const std::string& name : *names)
      if (!wire::is_valid_utf8(name))
        hetero::fail(HETERO_INVALID_MODEL, "model '" + spec_.name + "': the port name '" +
                                               wire::escape_invalid_utf8(name) + "' is not valid UTF-8");
  const std::vector<Port> inputs = compiled_.inputs();
  make_defaults(inputs);
  state_pairs_ = find_state_pairs(spec_, inputs, compiled_.outputs());
  if (!spec_.state_set && !state_pairs_.empty()) {
    std::string pairs;
    for (const StatePair& p : state_pairs_) {
      if (!pairs.empty()) pairs += ", ";
      pairs += output_names_[p.output] + ": " + input_names_[p.input];
    }
    core::log(core::LogLevel::Info, "model '" + spec_.name + "' serves sequences carrying its state {" + pairs +
                                        "} (output: input, found by their names; its config's 'state:' sets them)");
  }
  for (uint32_t k = 0; k < spec_.parallel; ++k) {
    auto slot = std::make_unique<Slot>();
    slot->model = this;
    hetero_infer_request_t* request = nullptr;
    check(hetero_infer_request_create(&request, compiled_.get()), "model '" + spec_.name + "': infer request");
    slot->request.reset(request);
    free_slots_.push_back(slot.get());
    slots_.push_back(std::move(slot));
  }
}

namespace {

// Value k of a default input's bytes, as a T.
template <typename T>
void store_as(uint8_t* out, size_t k, double value) {
  const T v = static_cast<T>(value);
  std::memcpy(out + k * sizeof(T), &v, sizeof(T));
}

}  // namespace

void ServedModel::make_defaults(const std::vector<Port>& ports) {
  for (const auto& [name, value] : spec_.defaults) {
    const std::string what = "model '" + spec_.name + "': defaults: input '" + name + "'";
    const auto port = std::find_if(ports.begin(), ports.end(), [&](const Port& p) { return p.name == name; });
    if (port == ports.end()) hetero::fail(HETERO_INVALID_MODEL, what + ": the model has no such input");
    DefaultInput& d = defaults_.emplace_back();
    d.name = name;
    d.dtype = static_cast<core::DType>(port->dtype);
    if (!value.scalar) d.dims = {static_cast<int64_t>(value.values.size())};
    if (port->shape && port->shape->size() != d.dims.size())
      hetero::fail(HETERO_INVALID_MODEL, what + " has " + std::to_string(port->shape->size()) + " dims, its value " +
                                             (value.scalar ? "is a number" : "a list"));
    if (port->shape && !value.scalar && (*port->shape)[0] >= 0 && (*port->shape)[0] != d.dims[0])
      hetero::fail(HETERO_INVALID_MODEL, what + " takes " + std::to_string((*port->shape)[0]) + " values, " +
                                             std::to_string(d.dims[0]) + " are given");
    const size_t size = core::dtype_size(d.dtype);
    d.bytes = value.values.size() * size;
    d.words.assign((d.bytes + 7) / 8, 0);
    auto* out = reinterpret_cast<uint8_t*>(d.words.data());
    for (size_t k = 0; k < value.values.size(); ++k) {
      const double v = value.values[k];
      switch (d.dtype) {
        case core::DType::F32: store_as<float>(out, k, v); break;
        case core::DType::F64: store_as<double>(out, k, v); break;
        case core::DType::I64: store_as<int64_t>(out, k, v); break;
        case core::DType::I32: store_as<int32_t>(out, k, v); break;
        case core::DType::I8: store_as<int8_t>(out, k, v); break;
        case core::DType::U8:
        case core::DType::Bool: store_as<uint8_t>(out, k, v); break;
        default:
          hetero::fail(HETERO_INVALID_MODEL, what + " is " + hetero_dtype_name(port->dtype) +
                                                 ": defaults are for float, int and bool inputs");
      }
    }
  }
}

ServedModel::~ServedModel() {
  // No inference runs (each holds the model), so nothing else touches them.
  if (memory_)
    for (const auto& slot : slots_)
      if (slot->charged) memory_->uncharge(charge_bytes_);
  struct Parts {
    CompiledModel compiled;
    std::vector<std::unique_ptr<Slot>> slots;  // destroyed first: requests must not outlive their model
  };
  auto parts = std::make_shared<Parts>(Parts{std::move(compiled_), std::move(slots_)});
  releaser_->post([parts = std::move(parts)]() mutable { parts.reset(); });
}

std::shared_ptr<ServedModel> ServedModel::load(hetero_core_t* core, const ModelSpec& spec, Threads threads) {
  hetero_compiled_model_t* compiled = nullptr;
  const CompileArgs args(spec);
  // An ONNX file or a blob (for the device the config names).
  check(hetero_compiled_model_open_file(&compiled, core, spec.path.c_str(), args.shape_names.data(),
                                        args.shape_dims.data(), args.shape_ranks.data(), args.shape_names.size(),
                                        spec.device.c_str(), args.key_ptrs.data(), args.value_ptrs.data(),
                                        args.keys.size()),
        "model '" + spec.name + "' (" + spec.path + ")");
  CompiledModel owned(compiled);
  std::shared_ptr<ServedModel> model(new ServedModel(spec, std::move(owned), std::move(threads)));
  ::stat(spec.path.c_str(), &model->file_stat_);
  return model;
}

std::shared_ptr<ServedModel> ServedModel::load_bytes(hetero_core_t* core, const ModelSpec& spec,
                                                     std::span<const uint8_t> bytes, Threads threads) {
  hetero_compiled_model_t* compiled = nullptr;
  const CompileArgs args(spec);
  check(hetero_compiled_model_open_memory(&compiled, core, bytes.data(), bytes.size(), args.shape_names.data(),
                                          args.shape_dims.data(), args.shape_ranks.data(), args.shape_names.size(),
                                          spec.device.c_str(), args.key_ptrs.data(), args.value_ptrs.data(),
                                          args.keys.size()),
        "model '" + spec.name + "' (uploaded)");
  CompiledModel owned(compiled);
  return std::shared_ptr<ServedModel>(new ServedModel(spec, std::move(owned), std::move(threads)));
}

bool ServedModel::file_changed() const {
  if (spec_.path.empty()) return false;
  struct stat now {};
  if (::stat(spec_.path.c_str(), &now) != 0) return true;
  return now.st_ino != file_stat_.st_ino || now.st_size != file_stat_.st_size ||
         now.st_mtim.tv_sec != file_stat_.st_mtim.tv_sec || now.st_mtim.tv_nsec != file_stat_.st_mtim.tv_nsec;
}

ModelDescription ServedModel::describe() const {
  ModelDescription d;
  d.name = spec_.name;
  d.device = compiled_.device();
  d.source = spec_.path.empty() ? "upload" : spec_.path;
  d.parallel = spec_.parallel;
  const auto bare = spec_.config.find("priority");
  d.priority = !spec_.priority.empty()       ? spec_.priority
               : bare != spec_.config.end() ? bare->second
                                            : core::priority_name(core::Priority::Normal);
  d.inputs = compiled_.inputs();
  d.outputs = compiled_.outputs();
  d.submodel_devices = compiled_.submodel_devices();
  for (const StatePair& p : state_pairs_) d.state.emplace_back(output_names_[p.output], input_names_[p.input]);
  for (const DefaultInput& input : defaults_) d.defaults.push_back(input.name);
  return d;
}

ModelStatistics ServedModel::statistics() const {
  ModelStatistics s;
  s.name = spec_.name;
  s.requests = requests_;
  s.errors = errors_;
  s.busy = busy_;
  s.timeouts = timeouts_;
  s.runs = runs_;
  s.success_ns = success_ns_;
  s.failure_ns = failure_ns_;
  s.queue_ns = queue_ns_;
  s.compute_ns = compute_ns_;
  s.last_request_ms = last_request_ms_;
  s.queue_depth = static_cast<uint32_t>(queue_.size());
  s.in_flight = static_cast<uint32_t>(running_);
  const size_t n = std::min(latency_count_, latencies_us_.size());
  if (n == 0) return s;
  std::vector<float> sorted(latencies_us_.begin(), latencies_us_.begin() + static_cast<std::ptrdiff_t>(n));
  std::sort(sorted.begin(), sorted.end());
  auto at = [&](double q) { return sorted[std::min(n - 1, static_cast<size_t>(q * static_cast<double>(n)))]; };
  s.latency_p50_us = at(0.50);
  s.latency_p90_us = at(0.90);
  s.latency_p99_us = at(0.99);
  return s;
}

uint64_t ServedModel::count(Clock::time_point received, bool ok) {
  ++requests_;
  if (!ok) ++errors_;
  const auto ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - received).count());
  (ok ? success_ns_ : failure_ns_) += ns;
  last_request_ms_ = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                               std::chrono::system_clock::now().time_since_epoch())
                                               .count());
  return ns;
}

void ServedModel::record(const InferJob& job, bool ok) {
  const uint64_t ns = count(job.received, ok);
  latencies_us_[latency_count_++ % latencies_us_.size()] = static_cast<float>(ns) / 1e3f;
}

void ServedModel::count_refused(Clock::time_point received, hetero_status status) {
  // Not in the latencies: they describe requests that reached the model.
  count(received, false);
  if (status == HETERO_BUSY) ++busy_;
}

void ServedModel::answer(InferJob& job) {
  record(job, true);
  if (job.client_open()) job.answer();
}

void ServedModel::fail(InferJob& job, hetero_status status, const std::string& message) {
  record(job, false);
  if (job.client_open()) job.answer_error(status, message);
}

void ServedModel::submit(const std::shared_ptr<ServedModel>& self, std::unique_ptr<InferJob> job) {
  ServedModel& m = *self;
  const Clock::time_point deadline = job->deadline;
  // Jobs queued for want of the client's memory go first.
  if (Slot* slot = m.queue_.empty() ? m.take_slot() : nullptr) {
    slot->keep_alive = self;
    m.start(*slot, std::move(job));
    if (m.keep_deadline_) m.keep_deadline_(deadline);
    return;
  }
  // A client may send its next request as soon as a reply sent from a
  // driver thread reaches it, before finish() has freed that slot: such a
  // slot counts as free here, so that a queue of 0 does not answer "busy".
  const size_t finishing = static_cast<size_t>(
      std::count_if(m.slots_.begin(), m.slots_.end(), [](const auto& slot) { return slot->replied.load(); }));
  const size_t room = m.spec_.queue + finishing;
  if (m.queue_.size() >= room) {
    // Jobs of clients that have gone hold places they will never use.
    std::erase_if(m.queue_, [](const std::unique_ptr<InferJob>& queued) { return !queued->client_open(); });
  }
  if (m.queue_.size() >= room) {
    m.count_refused(job->received, HETERO_BUSY);
    if (job->client_open())
      job->answer_error(HETERO_BUSY, "model '" + m.spec_.name + "' is busy: its queue of " +
                                         std::to_string(m.spec_.queue) + " requests is full");
    return;
  }
  m.queue_.push_back(std::move(job));
  if (m.keep_deadline_) m.keep_deadline_(deadline);
}

hetero_status ServedModel::place_inputs(InferJob& job, std::string& why) const {
  if (job.sequence)
    if (const hetero_status bound = job.sequence->bind(job, input_names_, why); bound != HETERO_OK) return bound;
  for (const DefaultInput& d : defaults_)
    if (std::none_of(job.inputs.begin(), job.inputs.end(), [&](const wire::TensorView& v) { return v.name == d.name; }))
      job.inputs.push_back({d.name, d.dtype, d.dims, reinterpret_cast<const uint8_t*>(d.words.data()), d.bytes});
  if (job.inputs.size() != input_names_.size()) {
    why = "model '" + spec_.name + "' takes " + std::to_string(input_names_.size()) + " inputs, the request has " +
          std::to_string(job.inputs.size());
    return HETERO_INVALID_ARGUMENT;
  }
  std::vector<bool> seen(input_names_.size());
  job.input_index.clear();
  for (const wire::TensorView& input : job.inputs) {
    const auto pos = std::find(input_names_.begin(), input_names_.end(), input.name);
    if (pos == input_names_.end()) {
      why = "model '" + spec_.name + "' has no input '" + input.name + "'";
      return HETERO_INVALID_ARGUMENT;
    }
    const auto index = static_cast<size_t>(pos - input_names_.begin());
    if (seen[index]) {
      why = "input '" + input.name + "' is given twice";
      return HETERO_INVALID_ARGUMENT;
    }
    seen[index] = true;
    job.input_index.push_back(index);
  }
  return HETERO_OK;
}

void ServedModel::time_out(InferJob& job, const std::string& why) {
  ++timeouts_;
  fail(job, HETERO_TIMEOUT,
       why.empty() ? "model '" + spec_.name + "': the request passed its deadline (limits.request_timeout_ms, or the client's)"
                   : why);
}

void ServedModel::expire() {
  const auto now = Clock::now();
  // A client may ask for a deadline sooner than the config's timeout (v2's
  // gRPC deadline): the whole queue is looked at, not only its front.
  std::vector<std::unique_ptr<InferJob>> expired;
  for (auto it = queue_.begin(); it != queue_.end();) {
    if ((*it)->deadline < now) {
      expired.push_back(std::move(*it));
      it = queue_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& job : expired) time_out(*job);
  // A request idle for a while gives its intermediate values back to the
  // allocator, which returns the pages a few seconds later unless the next
  // inference takes them first (daemon/allocator.cpp): a model run now and
  // then holds its weights between runs, not a large input's activations,
  // while one at a steady cadence (a VAD, a camera's frames) keeps them.
  constexpr auto kIdleBeforeRelease = std::chrono::seconds(1);
  for (Slot* slot : free_slots_)
    if (slot->holds_memory && now - slot->idle_since >= kIdleBeforeRelease) release_memory(*slot);
  const auto longest_run = std::chrono::milliseconds(spec_.max_inference_ms);
  for (auto& slot : slots_) {
    if (!slot->job || slot->cancelled_as != HETERO_OK) continue;
    if (slot->job->deadline < now)
      cancel_running(*slot, HETERO_TIMEOUT, {});
    else if (spec_.max_inference_ms && now - slot->job->started > longest_run)
      cancel_running(*slot, HETERO_TIMEOUT,
                     "model '" + spec_.name + "': the inference ran longer than its max_inference_ms (" +
                         std::to_string(spec_.max_inference_ms) + " ms)");
  }
}

Clock::time_point ServedModel::next_deadline() const {
  Clock::time_point soonest = Clock::time_point::max();
  for (const auto& job : queue_) soonest = std::min(soonest, job->deadline);
  for (const auto& slot : slots_)
    if (slot->job && slot->cancelled_as == HETERO_OK) soonest = std::min(soonest, slot->job->deadline);
  return soonest;
}

void ServedModel::cancel_running(Slot& slot, hetero_status as, std::string message) {
  slot.cancelled_as = as;
  slot.cancel_message = std::move(message);
  hetero_infer_request_cancel(slot.request.get());
  // A deadline is kept even inside one long node, which sees the cancel only
  // when it ends: the client is answered now, and the slot is busy until then.
  if (as == HETERO_TIMEOUT && !slot.claimed.exchange(true)) {
    time_out(*slot.job, slot.cancel_message);
    slot.answered_early = true;
  }
}

void ServedModel::cancel_orphans() {
  for (auto& slot : slots_) {
    if (!slot->job || slot->cancelled_as != HETERO_OK) continue;
    if (!slot->job->client_open()) cancel_running(*slot, HETERO_CANCELLED, "its client has gone");
  }
}

bool ServedModel::cancel(const void* client, uint64_t id) {
  const std::string message = "model '" + spec_.name + "': the client cancelled the request";
  auto is_it = [&](const InferJob& job) { return job.id == id && job.client == client; };
  for (auto it = queue_.begin(); it != queue_.end(); ++it) {
    if (!is_it(**it)) continue;
    std::unique_ptr<InferJob> job = std::move(*it);
    queue_.erase(it);
    fail(*job, HETERO_CANCELLED, message);
    return true;
  }
  for (auto& slot : slots_) {
    if (!slot->job || !is_it(*slot->job)) continue;
    if (slot->cancelled_as == HETERO_OK) cancel_running(*slot, HETERO_CANCELLED, message);
    return true;
  }
  return false;
}

void ServedModel::cancel_all(const std::string& why) {
  std::deque<std::unique_ptr<InferJob>> queued;
  queued.swap(queue_);
  for (auto& job : queued) fail(*job, HETERO_CANCELLED, why);
  for (auto& slot : slots_)
    if (slot->job && slot->cancelled_as == HETERO_OK) cancel_running(*slot, HETERO_CANCELLED, why);
}

void ServedModel::charge_to(std::shared_ptr<ClientMemory> account, uint64_t bytes) {
  memory_ = std::move(account);
  charge_bytes_ = bytes;
  memory_->join(shared_from_this());
}

void ServedModel::release_memory(Slot& slot) {
  hetero_infer_request_release_memory(slot.request.get());
  slot.holds_memory = false;
  if (std::exchange(slot.charged, false)) memory_->uncharge(charge_bytes_);
}

void ServedModel::release_idle_memory() {
  for (Slot* slot : free_slots_)
    if (slot->holds_memory) release_memory(*slot);
}

ServedModel::Slot* ServedModel::take_slot() {
  if (free_slots_.empty()) return nullptr;
  auto taken = free_slots_.end() - 1;
  if (memory_) {
    // One that keeps its buffers is charged for them already.
    const auto charged = std::find_if(free_slots_.rbegin(), free_slots_.rend(), [](Slot* s) { return s->charged; });
    if (charged != free_slots_.rend())
      taken = std::next(charged).base();
    else if (memory_->charge(charge_bytes_))
      (*taken)->charged = true;
    else
      return nullptr;
  }
  Slot* slot = *taken;
  free_slots_.erase(taken);
  return slot;
}

void ServedModel::pump() {
  while (!queue_.empty()) {
    std::unique_ptr<InferJob>& front = queue_.front();
    if (!front->client_open()) {  // its client has gone
      queue_.pop_front();
      continue;
    }
    if (front->deadline < Clock::now()) {
      std::unique_ptr<InferJob> job = std::move(front);
      queue_.pop_front();
      time_out(*job);
      continue;
    }
    Slot* slot = take_slot();
    if (!slot) return;  // every request busy, or the client's memory taken: a finish() or a wake comes back
    std::unique_ptr<InferJob> job = std::move(front);
    queue_.pop_front();
    slot->keep_alive = shared_from_this();
    start(*slot, std::move(job));
  }
}

void ServedModel::start(Slot& slot, std::unique_ptr<InferJob> job) {
  hetero_infer_request_t* request = slot.request.get();
  for (size_t k = 0; k < job->inputs.size(); ++k) {
    const wire::TensorView& input = job->inputs[k];
    hetero_tensor_t* tensor = nullptr;
    std::string error;
    hetero_status status =
        hetero_tensor_wrap(&tensor, static_cast<hetero_dtype>(input.dtype), input.dims.data(), input.dims.size(),
                           const_cast<uint8_t*>(input.data), input.bytes);
    if (status != HETERO_OK) {
      // hetero_tensor_wrap's message names the function, not the input.
      error = "input '" + input.name + "': " + hetero_last_error();
    } else {
      status = hetero_infer_request_set_input(request, job->input_index[k], tensor);
      hetero_tensor_release(tensor);
      // The core's names the input already ("input 'x' must be float32").
      if (status != HETERO_OK) error = hetero_last_error();
    }
    if (status != HETERO_OK) {
      fail(*job, status, error);
      return give_back(slot);
    }
  }
  job->started = Clock::now();
  slot.job = std::move(job);
  ++running_;
  const hetero_status status = hetero_infer_request_start_async(request, &ServedModel::on_done, &slot);
  if (status != HETERO_OK) {
    --running_;
    std::unique_ptr<InferJob> failed = std::move(slot.job);
    fail(*failed, status, hetero_last_error());
    give_back(slot);
  }
}

void ServedModel::give_back(Slot& slot) {
  free_slots_.push_back(&slot);
  slot.idle_since = Clock::now();
  slot.holds_memory = true;  // what it may hold (and its charge) goes after its idle second
  slot.keep_alive.reset();
}

void ServedModel::take_outputs(Slot& slot) const {
  std::vector<TensorPtr> held(output_names_.size());  // what the views point into
  std::vector<wire::OutgoingTensor> outputs(output_names_.size());
  for (size_t k = 0; k < outputs.size(); ++k) {
    hetero_tensor_t* tensor = nullptr;
    check(hetero_infer_request_get_output(slot.request.get(), &tensor, k), "output '" + output_names_[k] + "'");
    held[k].reset(tensor);
    void* data = nullptr;
    const int64_t* dims = nullptr;
    size_t rank = 0;
    hetero_dtype dtype = HETERO_DTYPE_UNDEFINED;
    wire::OutgoingTensor& out = outputs[k];
    hetero_tensor_get_data(tensor, &data);
    hetero_tensor_get_dtype(tensor, &dtype);
    hetero_tensor_get_shape(tensor, &dims, &rank);
    hetero_tensor_get_byte_size(tensor, &out.bytes);
    out.name = output_names_[k];
    out.dtype = dtype;
    out.dims = {dims, rank};
    out.data = data;
  }
  if (slot.job->sequence) slot.job->sequence->store(outputs);
  slot.job->take_outputs(outputs);
}

void ServedModel::on_done(void* user_data, hetero_status status) {
  Slot& slot = *static_cast<Slot*>(user_data);
  ServedModel& model = *slot.model;
  auto outcome = std::make_shared<Outcome>();
  outcome->status = status;
  // Answered TIMEOUT at its deadline already (cancel_running): only the
  // slot is freed.
  const bool answered = slot.claimed.exchange(true);
  if (!answered && status != HETERO_OK) {
    outcome->message = hetero_last_error();
  } else if (!answered) {
    try {
      model.take_outputs(slot);
    } catch (const Failure& e) {
      outcome->status = e.status();
      outcome->message = e.what();
    } catch (const std::exception& e) {
      outcome->status = HETERO_INTERNAL;
      outcome->message = e.what();
    }
  }
  slot.done = Clock::now();
  slot.job->release_inputs();
  // The answer goes now if it can: the loop thread's wake-up is then off the
  // client's path. Whatever the job holds of its client meanwhile is let go
  // of with the job, on the loop thread.
  if (!answered && outcome->status == HETERO_OK && slot.job->try_answer_now()) {
    outcome->sent = true;
    slot.replied = true;
  }
  // The slot's keep_alive holds the model until finish() has run.
  model.post_->post([&slot, outcome] { slot.model->finish(slot, std::move(*outcome)); });
}

void ServedModel::finish(Slot& slot, Outcome outcome) {
  // The callback posted this before returning: let it return before the
  // request is used again.
  hetero_infer_request_wait(slot.request.get());
  std::unique_ptr<InferJob> job = std::move(slot.job);
  --running_;
  ++runs_;
  queue_ns_ += static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(job->started - job->received).count());
  compute_ns_ += static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(slot.done - job->started).count());
  // A cancel that came too late to stop the inference leaves its answer be.
  const hetero_status cancelled_as = std::exchange(slot.cancelled_as, HETERO_OK);
  slot.replied = false;
  slot.claimed = false;
  if (std::exchange(slot.answered_early, false)) {
    // cancel_running() answered it.
  } else if (outcome.sent) {
    record(*job, true);
    job->answer_sent();
  } else if (outcome.status == HETERO_OK)
    answer(*job);
  else if (outcome.status == HETERO_CANCELLED && cancelled_as == HETERO_TIMEOUT)
    time_out(*job, slot.cancel_message);
  else if (outcome.status == HETERO_CANCELLED && cancelled_as == HETERO_CANCELLED)
    fail(*job, HETERO_CANCELLED, slot.cancel_message);
  else
    fail(*job, outcome.status, outcome.message);
  std::shared_ptr<ServedModel> keep = std::move(slot.keep_alive);
  free_slots_.push_back(&slot);
  slot.idle_since = Clock::now();
  slot.holds_memory = true;
  // The client's other models may be waiting for the memory this request
  // keeps: idle now, it can give it to them.
  if (memory_) memory_->wake_soon();
  pump();
  // `keep` may be the last reference (an unloaded model): nothing after this.
}

void ServedModel::wait_idle() {
  for (auto& slot : slots_) {
    hetero_infer_request_wait(slot->request.get());
    slot->keep_alive.reset();
  }
}

}  // namespace hetero::daemon
