// The C ABI over a daemon connection: devices and served models by name,
// inference requests carried by the protocol. What only makes sense in
// process (reading, compiling, exporting models) is NOT_SUPPORTED here.
#include <sys/mman.h>

#include <cstring>
#include <mutex>
#include <optional>

#include "capi/backend.h"
#include "capi/remote/remote_connection.h"
#include "core/error.h"
#include "core/infer_request.h"
#include "core/request_state.h"
#include "protocol/socket_io.h"
#include "protocol/tensor_codec.h"

namespace hetero::capi {

namespace {

// Inputs of at least this many bytes in all travel in one sealed memfd, and
// outputs come back in one: above it, a copy costs more than the mapping.
constexpr size_t kMemfdThreshold = 64 * 1024;

[[noreturn]] void in_process_only(const char* what) {
  fail(HETERO_NOT_SUPPORTED, std::string(what) +
                                 " runs in process only; on a daemon connection, serve the model with "
                                 "hetero_core_load_model() and use it with hetero_compiled_model_open()");
}

std::vector<Port> ports_from(const google::protobuf::RepeatedPtrField<wire::Port>& ports) {
  std::vector<Port> out;
  for (const wire::Port& p : ports) {
    Port info;
    info.name = p.name();
    info.dtype = static_cast<hetero_dtype>(p.dtype());
    if (p.rank() >= 0) info.shape.emplace(p.dims().begin(), p.dims().end());
    out.push_back(std::move(info));
  }
  return out;
}

const char* state_name(wire::ModelInfo::State state) {
  switch (state) {
    case wire::ModelInfo::READY:
      return "ready";
    case wire::ModelInfo::FAILED:
      return "failed";
    default:
      return "loading";
  }
}

class RemoteInferRequest final : public InferRequestImpl {
 public:
  // `state_inputs` and `state_outputs`: which ports a sequence's state
  // pairs are (wire::ModelInfo::state_pairs); `default_inputs`, which
  // inputs the daemon's config gives values (wire::ModelInfo::default_inputs).
  RemoteInferRequest(std::shared_ptr<RemoteConnection> connection, std::string model, std::vector<Port> inputs,
                     std::vector<Port> outputs, std::vector<bool> state_inputs, std::vector<bool> state_outputs,
                     std::vector<bool> default_inputs)
      : connection_(std::move(connection)), model_(std::move(model)), ports_(std::move(inputs)),
        output_ports_(std::move(outputs)), state_inputs_(std::move(state_inputs)),
        state_outputs_(std::move(state_outputs)), default_inputs_(std::move(default_inputs)),
        inputs_(ports_.size()), output_count_(output_ports_.size()) {}

  ~RemoteInferRequest() override { state_.wait_idle(); }

  void set_input(size_t index, const core::Tensor& tensor) override {
    if (index >= inputs_.size()) fail(HETERO_INVALID_ARGUMENT, "input index " + std::to_string(index) + " is out of range");
    state_.bind([&] { inputs_[index] = tensor; });
  }

  core::Tensor output(size_t index, std::shared_ptr<const void>& keepalive) override {
    if (index >= output_count_) fail(HETERO_INVALID_ARGUMENT, "output index " + std::to_string(index) + " is out of range");
    return state_.read_outputs([&] {
      // A sequence's state outputs stay in the daemon.
      if (!state_sent_ && state_outputs_[index])
        fail(HETERO_INVALID_ARGUMENT, "output '" + output_ports_[index].name +
                                          "' is its sequence's state, which heterod keeps and does not send");
      keepalive = outputs_keepalive_;
      return outputs_[index];
    });
  }

  void infer() override {
    std::vector<int> fds;
    wire::Request request;
    wire::UniqueFd memfd = begin(request, fds);
    std::exception_ptr error;
    std::optional<Reply> reply;
    if (state_.start()) {
      try {
        reply = connection_->call(request, fds);
      } catch (...) {
        error = std::current_exception();
      }
    } else {
      error = std::make_exception_ptr(core::cancelled_failure());
    }
    if (std::exception_ptr failed = finish(reply ? &*reply : nullptr, error, nullptr)) std::rethrow_exception(failed);
  }

  void start_async(std::function<void(std::exception_ptr)> done) override {
    std::vector<int> fds;  // begin()'s view of `memfd`, which call_async() keeps
    wire::Request request;
    std::vector<wire::UniqueFd> memfd;
    if (wire::UniqueFd fd = begin(request, fds)) memfd.push_back(std::move(fd));
    state_.start();  // the daemon queues it; a Cancel reaches it there
    try {
      connection_->call_async(std::move(request), std::move(memfd),
                              [this, done = std::move(done)](Reply* reply, std::exception_ptr error) {
                                finish(reply, error, done);
                              });
    } catch (...) {
      finish(nullptr, std::current_exception(), nullptr);
      throw;
    }
  }

  std::exception_ptr wait() override { return state_.wait(); }

  // The daemon stops the request and answers it CANCELLED; the Cancel's own
  // reply says nothing worth waiting for.
  void cancel() override {
    state_.cancel([&] {
      wire::Request request;
      request.mutable_cancel()->set_request_id(in_flight_);
      connection_->call_async(std::move(request), {}, [](Reply*, std::exception_ptr) {});
    });
  }

  // The daemon gives back its models' memory itself when they idle; a
  // client's request holds none between inferences but its outputs.
  void release_memory() override {}

  void set_sequence(uint64_t id, uint32_t flags) override {
    state_.bind([&] {
      sequence_id_ = id;
      sequence_flags_ = flags;
    });
  }

 private:
  // Queues an inference (core/request_state.h): the Infer request for the
  // bound inputs, under a new id, and the memfd that carries them when they
  // are large (null otherwise; its descriptor is in `fds`).
  wire::UniqueFd begin(wire::Request& request, std::vector<int>& fds) {
    wire::UniqueFd memfd = state_.begin([&] {
      wire::Infer* infer = request.mutable_infer();
      infer->set_model(model_);
      infer->set_memfd_threshold(kMemfdThreshold);
      if (sequence_id_) {
        // The flags are the next call's: they go with it.
        infer->set_sequence_id(sequence_id_);
        infer->set_sequence_start(sequence_flags_ & HETERO_SEQUENCE_START);
        infer->set_sequence_end(sequence_flags_ & HETERO_SEQUENCE_END);
        infer->set_sequence_state_outputs(sequence_flags_ & HETERO_SEQUENCE_STATE_OUTPUTS);
      }
      sequenced_ = sequence_id_ != 0;
      state_sent_ = !sequenced_ || (sequence_flags_ & HETERO_SEQUENCE_STATE_OUTPUTS);
      sequence_flags_ = 0;
      std::vector<wire::OutgoingTensor> tensors;
      for (size_t k = 0; k < inputs_.size(); ++k) {
        const core::Tensor& t = inputs_[k];
        // A sequence's state inputs are the daemon's unless the call gives
        // one, and so are the inputs its config gives values.
        if (t.empty() && ((sequenced_ && state_inputs_[k]) || default_inputs_[k])) continue;
        if (t.empty()) fail(HETERO_INVALID_ARGUMENT, "input '" + ports_[k].name + "' is not set");
        tensors.push_back({ports_[k].name, static_cast<int32_t>(t.dtype()), t.shape(), t.raw(), t.nbytes()});
      }
      wire::UniqueFd fd = wire::encode_tensors(tensors, kMemfdThreshold, *infer->mutable_inputs(), "hetero-inputs");
      // A state input bound for a sequence's call is sent with it alone: it
      // must not reset the state at every later call.
      if (sequenced_)
        for (size_t k = 0; k < inputs_.size(); ++k)
          if (state_inputs_[k]) inputs_[k] = core::Tensor();
      in_flight_ = connection_->new_id();
      request.set_id(in_flight_);
      return fd;
    });
    if (memfd) fds.push_back(memfd.get());
    return memfd;
  }

  // Ends the inference with the daemon's reply (null when the call failed
  // with `error`): its outputs kept, then `done`. Returns its failure.
  std::exception_ptr finish(Reply* reply, std::exception_ptr error, const std::function<void(std::exception_ptr)>& done) {
    std::vector<core::Tensor> outputs;
    std::shared_ptr<const void> keepalive;
    if (!error) {
      try {
        if (reply->response.status() != HETERO_OK) throw_reply_error(reply->response);
        keepalive = take(*reply, outputs);
      } catch (...) {
        error = std::current_exception();
      }
    }
    state_.complete(
        error,
        [&] {
          outputs_ = std::move(outputs);
          outputs_keepalive_ = std::move(keepalive);
        },
        done);
    return error;
  }

  // The outputs of a reply: inline ones copied, memfd ones mapped in place.
  // Returns what keeps the mappings alive.
  std::shared_ptr<const void> take(Reply& reply, std::vector<core::Tensor>& outputs) const {
    const wire::InferReply& r = reply.response.infer();
    // A sequence's call comes back without its state outputs: each output
    // goes to its port by name, and those left out stay empty.
    if (static_cast<size_t>(r.outputs_size()) > output_count_ ||
        (state_sent_ && static_cast<size_t>(r.outputs_size()) != output_count_))
      fail(HETERO_PROTOCOL_ERROR, "heterod answered with " + std::to_string(r.outputs_size()) + " outputs, expected " +
                                      std::to_string(output_count_));
    outputs.assign(output_count_, core::Tensor());
    auto mappings = std::make_shared<wire::TensorMappings>();
    for (int k = 0; k < r.outputs_size(); ++k) {
      const wire::Tensor& t = r.outputs(k);
      const auto port = std::find_if(output_ports_.begin(), output_ports_.end(),
                                     [&](const Port& p) { return p.name == t.name(); });
      if (port == output_ports_.end())
        fail(HETERO_PROTOCOL_ERROR, "heterod answered with an output '" + t.name() + "' the model does not have");
      const wire::TensorView view = wire::decode_tensor(t, reply.fds, *mappings, "output '" + t.name() + "'");
      core::Tensor& out = outputs[static_cast<size_t>(port - output_ports_.begin())];
      if (t.data_case() == wire::Tensor::kMemfd) {
        out = core::Tensor::wrap(view.dtype, view.dims, const_cast<uint8_t*>(view.data), mappings);
      } else {
        out = core::Tensor::allocate(view.dtype, view.dims, false);
        if (view.bytes) std::memcpy(out.raw(), view.data, view.bytes);
      }
    }
    return mappings;
  }

  std::shared_ptr<RemoteConnection> connection_;
  std::string model_;
  std::vector<Port> ports_, output_ports_;
  std::vector<bool> state_inputs_, state_outputs_, default_inputs_;
  std::vector<core::Tensor> inputs_;
  size_t output_count_;
  // The sequence its calls belong to (0: none) and the next call's flags;
  // whether the call in flight is a sequence's. Guarded by state_.
  uint64_t sequence_id_ = 0;
  uint32_t sequence_flags_ = 0;
  bool sequenced_ = false;
  bool state_sent_ = true;  // the call in flight is answered with its state outputs
  core::RequestState state_;
  // Guarded by state_ (bound, taken and recorded under its lock).
  std::vector<core::Tensor> outputs_;
  std::shared_ptr<const void> outputs_keepalive_;
  uint64_t in_flight_ = 0;  // the id of the last Infer sent
};

class RemoteCompiledModel final : public CompiledModelImpl {
 public:
  RemoteCompiledModel(std::shared_ptr<RemoteConnection> connection, const wire::ModelInfo& info)
      : connection_(std::move(connection)), name_(info.name()), device_(info.device()),
        inputs_(ports_from(info.inputs())), outputs_(ports_from(info.outputs())),
        submodels_(info.submodel_devices().begin(), info.submodel_devices().end()),
        state_inputs_(inputs_.size()), state_outputs_(outputs_.size()), default_inputs_(inputs_.size()) {
    if (submodels_.empty()) submodels_.push_back(device_);
    auto mark = [](const std::vector<Port>& ports, std::vector<bool>& marks, const std::string& name) {
      for (size_t k = 0; k < ports.size(); ++k)
        if (ports[k].name == name) marks[k] = true;
    };
    for (const wire::StatePair& pair : info.state_pairs()) {
      mark(inputs_, state_inputs_, pair.input());
      mark(outputs_, state_outputs_, pair.output());
      state_pairs_.emplace_back(pair.output(), pair.input());
    }
    for (const std::string& input : info.default_inputs()) mark(inputs_, default_inputs_, input);
  }
  const std::vector<std::pair<std::string, std::string>>& state_pairs() const override { return state_pairs_; }
  bool input_given(size_t index) const override { return default_inputs_[index]; }
  const std::vector<Port>& inputs() const override { return inputs_; }
  const std::vector<Port>& outputs() const override { return outputs_; }
  const std::string& device() const override { return device_; }
  const std::vector<std::string>& submodel_devices() const override { return submodels_; }
  std::vector<uint8_t> export_blob() const override { in_process_only("exporting a compiled model"); }
  std::unique_ptr<InferRequestImpl> create_infer_request() override {
    return std::make_unique<RemoteInferRequest>(connection_, name_, inputs_, outputs_, state_inputs_, state_outputs_,
                                                default_inputs_);
  }
  void end_sequence(uint64_t id) override {
    wire::Request request;
    request.mutable_end_sequence()->set_model(name_);
    request.mutable_end_sequence()->set_sequence_id(id);
    connection_->call(request);
  }

 private:
  std::shared_ptr<RemoteConnection> connection_;
  std::string name_, device_;
  std::vector<Port> inputs_, outputs_;
  std::vector<std::string> submodels_;
  std::vector<bool> state_inputs_, state_outputs_;  // which ports its state pairs are
  std::vector<bool> default_inputs_;                // which inputs the daemon's config gives values
  std::vector<std::pair<std::string, std::string>> state_pairs_;  // output, input
};

class RemoteBackend final : public Backend {
 public:
  explicit RemoteBackend(const std::string& socket_path)
      : connection_(std::make_shared<RemoteConnection>(socket_path)) {}

  const std::vector<DeviceEntry>& devices() const override { return listing().devices; }
  const std::vector<DriverEntry>& drivers() const override { return listing().drivers; }
  const std::vector<DriverFailureEntry>& driver_failures() const override { return listing().failures; }
  std::string metric(const std::string& device, const std::string& name) const override {
    const auto& metrics = listing().metrics;
    auto d = metrics.find(device);
    if (d == metrics.end()) fail(HETERO_NOT_FOUND, "heterod has no device '" + device + "'");
    auto m = d->second.find(name);
    if (m == d->second.end()) fail(HETERO_NOT_FOUND, "device '" + device + "' has no metric '" + name + "'");
    return m->second;
  }

  std::unique_ptr<ModelImpl> read_model_file(const std::string&, const InputShapes&) override {
    in_process_only("reading a model");
  }
  std::unique_ptr<ModelImpl> read_model_memory(std::span<const uint8_t>, const InputShapes&) override {
    in_process_only("reading a model");
  }
  std::vector<QueryNode> query(const ModelImpl&, const std::string&, const Config&) const override {
    in_process_only("querying a device");
  }
  std::unique_ptr<CompiledModelImpl> compile(const ModelImpl&, const std::string&, const Config&) override {
    in_process_only("compiling a model");
  }
  std::unique_ptr<CompiledModelImpl> import_blob(std::span<const uint8_t>, const Config&) override {
    in_process_only("importing a blob");
  }
  std::unique_ptr<CompiledModelImpl> compile_file(const std::string&, const InputShapes&, const std::string&,
                                                  const Config&) override {
    in_process_only("compiling a model");
  }
  std::string partition(const ModelImpl&, const std::string&, hetero_plan_format, const Config&) override {
    in_process_only("partitioning a model");
  }

  std::vector<ServedModelEntry> list_models() override {
    std::vector<ServedModelEntry> out;
    for (const wire::ModelInfo& m : list())
      out.push_back({m.name(), m.device(), state_name(m.state()), m.error()});
    return out;
  }

  std::unique_ptr<CompiledModelImpl> open_model(const std::string& name) override {
    for (const wire::ModelInfo& m : list()) {
      if (m.name() != name) continue;
      if (m.state() != wire::ModelInfo::READY)
        fail(m.state() == wire::ModelInfo::LOADING ? HETERO_BUSY : HETERO_NOT_FOUND,
             "model '" + name + "' is " + state_name(m.state()) + (m.error().empty() ? "" : ": " + m.error()));
      return std::make_unique<RemoteCompiledModel>(connection_, m);
    }
    fail(HETERO_NOT_FOUND, "heterod at " + connection_->socket_path() + " serves no model '" + name + "'");
  }

  void load_model(const std::string& name, const std::string& path, std::span<const uint8_t> bytes,
                  const std::string& device, const Config& config) override {
    wire::Request request;
    wire::LoadModel* load = request.mutable_load_model();
    load->set_name(name);
    load->set_device(device);
    load->mutable_config()->insert(config.begin(), config.end());
    wire::UniqueFd memfd;
    std::vector<int> fds;
    if (!path.empty()) {
      load->set_path(path);
    } else if (bytes.size() < kMemfdThreshold) {
      load->set_model_bytes(bytes.data(), bytes.size());
    } else {
      memfd = wire::make_sealed_memfd(
          "hetero-model", bytes.size(),
          [](void* dst, void* context) {
            auto* b = static_cast<std::span<const uint8_t>*>(context);
            std::memcpy(dst, b->data(), b->size());
          },
          &bytes);
      fds.push_back(memfd.get());
      load->mutable_model_memfd()->set_size(bytes.size());
    }
    connection_->call(request, fds);
  }

  void unload_model(const std::string& name) override {
    wire::Request request;
    request.mutable_unload_model()->set_name(name);
    connection_->call(request);
  }

  StatsSnapshot stats() override {
    wire::Request request;
    request.mutable_stats();
    const wire::StatsReply reply = connection_->call(request).response.stats();
    StatsSnapshot out;
    out.uptime_ms = reply.uptime_ms();
    out.connections = reply.connections();
    for (const wire::ModelStats& m : reply.models())
      out.models.push_back({m.name(), m.requests(), m.errors(), m.busy(), m.timeouts(), m.latency_p50_us(),
                            m.latency_p90_us(), m.latency_p99_us(), m.queue_depth(), m.in_flight()});
    return out;
  }

  void reload() override {
    wire::Request request;
    request.mutable_reload();
    connection_->call(request);
  }

 private:
  google::protobuf::RepeatedPtrField<wire::ModelInfo> list() {
    wire::Request request;
    request.mutable_list_models();
    return connection_->call(request).response.list_models().models();
  }

  // The daemon's drivers and devices, asked for on the first call that needs
  // them, not at connect: the daemon starts a driver's runtime when a client
  // first lists it, so a client that only runs served models starts none.
  struct Listing {
    std::vector<DeviceEntry> devices;
    std::vector<DriverEntry> drivers;
    std::vector<DriverFailureEntry> failures;
    std::map<std::string, std::map<std::string, std::string>> metrics;
  };
  const Listing& listing() const {
    std::call_once(listed_, [&] {
      wire::Request request;
      request.mutable_list_devices();
      const wire::ListDevicesReply list = connection_->call(request).response.list_devices();
      for (const wire::Device& d : list.devices()) {
        listing_.devices.push_back({d.name(), d.full_name()});
        listing_.metrics[d.name()].insert(d.metrics().begin(), d.metrics().end());
      }
      for (const wire::Driver& d : list.drivers())
        listing_.drivers.push_back({d.name(), d.version(), d.path(), d.no_device_reason()});
      for (const wire::DriverFailure& f : list.driver_failures()) listing_.failures.push_back({f.path(), f.reason()});
    });
    return listing_;
  }

  std::shared_ptr<RemoteConnection> connection_;
  mutable std::once_flag listed_;
  mutable Listing listing_;
};

}  // namespace

std::shared_ptr<Backend> make_remote_backend(const std::string& socket_path) {
  return std::make_shared<RemoteBackend>(socket_path);
}

}  // namespace hetero::capi
