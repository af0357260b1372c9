// The in-process backend: the C ABI's handles over core::Runtime and the
// driver objects it hands out.
#include <charconv>
#include <mutex>
#include <optional>
#include <utility>

#include "capi/backend.h"
#include "capi/local_sequences.h"
#include "core/json.h"
#include "core/error.h"
#include "core/onnx_import.h"
#include "core/progress.h"
#include "core/runtime.h"
#include "partition/hetero_driver.h"
#include "partition/plan.h"
#include "partition/plan_format.h"
#include "pipeline/pipeline_model.h"
#include "pipeline/pipeline_spec.h"

namespace hetero::capi {

namespace {

// Driver modules are dlclosed when the Runtime goes, so everything that runs
// or frees driver code (compiled models, requests, output tensors) holds a
// reference to it, declared before the driver object so that it dies last.
using RuntimePtr = std::shared_ptr<core::Runtime>;

// hetero_dtype uses core::DType's (ONNX) numbering by design.
hetero_dtype to_c(core::DType dtype) noexcept { return static_cast<hetero_dtype>(dtype); }

Port port_from_driver(const driver::Port& port) {
  Port info;
  info.name = port.name;
  info.dtype = to_c(port.dtype);
  if (port.has_rank) {
    info.shape.emplace();
    for (const core::Dim& d : port.shape) info.shape->push_back(d.known() ? d.size : -1);
  }
  return info;
}

Port port_from_value(const core::Value& value) {
  Port info;
  info.name = value.name;
  info.dtype = to_c(value.dtype);
  if (value.shape) {
    info.shape.emplace();
    for (const core::Dim& d : *value.shape) info.shape->push_back(d.known() ? d.size : -1);
  }
  return info;
}

std::vector<Port> ports_from_driver(const std::vector<driver::Port>& ports) {
  std::vector<Port> out;
  for (const driver::Port& p : ports) out.push_back(port_from_driver(p));
  return out;
}

class LocalModel final : public ModelImpl {
 public:
  explicit LocalModel(std::unique_ptr<core::Model> model) : model_(std::move(model)) {
    for (const core::Value* v : model_->graph.inputs) inputs_.push_back(port_from_value(*v));
    for (const core::Value* v : model_->graph.outputs) outputs_.push_back(port_from_value(*v));
  }
  const std::vector<Port>& inputs() const override { return inputs_; }
  const std::vector<Port>& outputs() const override { return outputs_; }
  const core::Model* core_model() const override { return model_.get(); }

  std::string describe_json() const override {
    namespace json = core::json;
    const json::Value doc = json::object();
    json::set(doc.get(), "ir_version", json::integer(model_->ir_version));
    json::set(doc.get(), "producer", json::string(model_->producer_name));
    const json::Value opsets = json::object();
    for (const auto& [domain, version] : model_->opsets)
      json::set(opsets.get(), domain.empty() ? "ai.onnx" : domain.c_str(), json::integer(version));
    json::set(doc.get(), "opsets", json::Value(json_incref(opsets.get())));
    json::set(doc.get(), "nodes", json::integer(static_cast<int64_t>(model_->graph.nodes().size())));
    return json::dump(doc.get());
  }

 private:
  std::unique_ptr<core::Model> model_;
  std::vector<Port> inputs_, outputs_;
};

class LocalInferRequest final : public InferRequestImpl {
 public:
  LocalInferRequest(RuntimePtr runtime, std::shared_ptr<driver::CompiledModel> compiled,
                    std::shared_ptr<LocalSequences> sequences)
      : runtime_(std::move(runtime)), compiled_(std::move(compiled)), sequences_(std::move(sequences)),
        request_(compiled_->create_infer_request()), given_(compiled_->inputs().size()) {
    if (!request_) fail(HETERO_DRIVER_ERROR, "the driver returned no infer request");
  }

  void set_input(size_t index, const core::Tensor& tensor) override {
    request_->set_input(index, tensor);
    given_[index] = true;
  }
  core::Tensor output(size_t index, std::shared_ptr<const void>& keepalive) override {
    if (state_kept_ && sequences_->is_state_output(index))
      fail(HETERO_INVALID_ARGUMENT, "output '" + compiled_->outputs()[index].name +
                                        "' is its sequence's state, which the sequence keeps: ask for it with "
                                        "HETERO_SEQUENCE_STATE_OUTPUTS");
    core::Tensor t = request_->output(index);
    keepalive = runtime_;
    return t;
  }
  void infer() override {
    const Call call = begin_call();
    try {
      request_->infer();
    } catch (...) {
      end_call(call, false);
      throw;
    }
    end_call(call, true);
  }
  void start_async(std::function<void(std::exception_ptr)> done) override {
    const Call call = begin_call();
    try {
      request_->start_async([this, call, done = std::move(done)](std::exception_ptr error) {
        end_call(call, !error);
        done(error);
      });
    } catch (...) {
      end_call(call, false);
      throw;
    }
  }
  std::exception_ptr wait() override { return request_->wait(); }
  void cancel() override { request_->cancel(); }
  void release_memory() override { request_->release_memory(); }
  void set_sequence(uint64_t id, uint32_t flags) override {
    if (id) sequences_->require_state();
    sequence_id_ = id;
    sequence_flags_ = flags;
  }

 private:
  // The sequence a call belongs to (id 0: none), as set_sequence() said.
  struct Call {
    uint64_t id = 0;
    uint32_t flags = 0;
  };

  // Binds the sequence's state to each state input this call does not give.
  Call begin_call() {
    const Call call{sequence_id_, sequence_flags_};
    if (call.id) {
      std::vector<core::Tensor> state = sequences_->begin(call.id, call.flags & HETERO_SEQUENCE_START);
      try {
        const auto& pairs = sequences_->pairs();
        for (size_t p = 0; p < pairs.size(); ++p) {
          const size_t input = pairs[p].first;
          if (given_[input]) continue;
          if (state[p].empty())
            fail(HETERO_INVALID_ARGUMENT, "state input '" + compiled_->inputs()[input].name +
                                              "' has no shape a zero state could take: give it with the "
                                              "sequence's first call");
          request_->set_input(input, state[p]);
        }
      } catch (...) {
        sequences_->finish(call.id, {}, false);
        throw;
      }
    }
    std::fill(given_.begin(), given_.end(), false);
    sequence_flags_ = 0;
    state_kept_ = call.id && !(call.flags & HETERO_SEQUENCE_STATE_OUTPUTS);
    return call;
  }

  // Keeps the state outputs of a call that ran, and gives the turn back.
  void end_call(const Call& call, bool ran) {
    if (!call.id) return;
    std::vector<core::Tensor> state;
    if (ran)
      for (const auto& [input, output] : sequences_->pairs()) state.push_back(request_->output(output));
    sequences_->finish(call.id, std::move(state), call.flags & HETERO_SEQUENCE_END);
  }

  RuntimePtr runtime_;
  std::shared_ptr<driver::CompiledModel> compiled_;
  std::shared_ptr<LocalSequences> sequences_;
  std::unique_ptr<driver::InferRequest> request_;
  std::vector<bool> given_;  // inputs bound since the last call
  uint64_t sequence_id_ = 0;
  uint32_t sequence_flags_ = 0;  // the next call's
  bool state_kept_ = false;      // the last call's state outputs are its sequence's
};

class LocalCompiledModel final : public CompiledModelImpl {
 public:
  LocalCompiledModel(RuntimePtr runtime, core::LoadedModel loaded)
      : runtime_(std::move(runtime)), compiled_(std::move(loaded.compiled)), origin_(std::move(loaded.origin)) {
    if (!compiled_) fail(HETERO_DRIVER_ERROR, "the driver returned no compiled model");
    inputs_ = ports_from_driver(compiled_->inputs());
    outputs_ = ports_from_driver(compiled_->outputs());
    device_ = compiled_->device();
    submodel_devices_ = compiled_->submodel_devices();
    sequences_ = std::make_shared<LocalSequences>(inputs_, outputs_);
    from_cache = loaded.from_cache;
  }

  const std::vector<Port>& inputs() const override { return inputs_; }
  const std::vector<Port>& outputs() const override { return outputs_; }
  const std::string& device() const override { return device_; }
  const std::vector<std::string>& submodel_devices() const override { return submodel_devices_; }
  std::vector<uint8_t> export_blob() const override { return runtime_->export_blob(*compiled_, origin_); }
  std::unique_ptr<InferRequestImpl> create_infer_request() override {
    return std::make_unique<LocalInferRequest>(runtime_, compiled_, sequences_);
  }
  const std::vector<std::pair<std::string, std::string>>& state_pairs() const override { return sequences_->names(); }
  void end_sequence(uint64_t id) override { sequences_->end(id); }

 private:
  RuntimePtr runtime_;
  std::shared_ptr<driver::CompiledModel> compiled_;
  core::BlobOrigin origin_;
  std::vector<Port> inputs_, outputs_;
  std::string device_;
  std::vector<std::string> submodel_devices_;
  std::shared_ptr<LocalSequences> sequences_;
};

const core::Model& local_model(const ModelImpl& model) {
  const core::Model* local = model.core_model();
  if (!local)
    fail(HETERO_INVALID_ARGUMENT, "the model was read through a core of another kind (a daemon connection); "
                                  "read it again through this core");
  return *local;
}

class LocalBackend final : public Backend {
 public:
  explicit LocalBackend(const Config& options)
      : runtime_(std::make_shared<core::Runtime>(runtime_options(options))) {}

  const std::vector<DeviceEntry>& devices() const override { return listing().devices; }
  const std::vector<DriverEntry>& drivers() const override { return listing().drivers; }
  const std::vector<DriverFailureEntry>& driver_failures() const override { return listing().failures; }
  std::string metric(const std::string& device, const std::string& name) const override {
    return runtime_->metric(device, name);
  }

  void set_progress(ProgressFn fn) override {
    std::lock_guard lock(progress_mutex_);
    progress_ = std::move(fn);
  }

  std::unique_ptr<ModelImpl> read_model_file(const std::string& path, const InputShapes& shapes) override {
    ProgressCall reporting(progress());
    return std::make_unique<LocalModel>(core::import_onnx_file(path, import_options(shapes)));
  }
  std::unique_ptr<ModelImpl> read_model_memory(std::span<const uint8_t> bytes, const InputShapes& shapes) override {
    ProgressCall reporting(progress());
    return std::make_unique<LocalModel>(core::import_onnx_bytes(bytes, import_options(shapes)));
  }

  std::vector<QueryNode> query(const ModelImpl& model, const std::string& device,
                               const Config& config) const override {
    const core::Model& m = local_model(model);
    const std::vector<driver::NodeSupport> support = runtime_->query(m, device, config);
    const auto& nodes = m.graph.nodes();
    if (support.size() != nodes.size())
      fail(HETERO_DRIVER_ERROR, "the driver for " + device + " answered a query about " + std::to_string(nodes.size()) +
                                    " nodes with " + std::to_string(support.size()) + " entries");
    std::vector<QueryNode> out;
    out.reserve(nodes.size());
    for (size_t i = 0; i < nodes.size(); ++i)
      out.push_back({nodes[i]->name, nodes[i]->op_type, support[i].supported, support[i].reason});
    return out;
  }

  std::unique_ptr<CompiledModelImpl> compile(const ModelImpl& model, const std::string& device,
                                             const Config& config) override {
    ProgressCall reporting(progress());
    return std::make_unique<LocalCompiledModel>(runtime_, runtime_->load(local_model(model), device, config));
  }

  std::unique_ptr<CompiledModelImpl> compile_file(const std::string& path, const InputShapes& shapes,
                                                  const std::string& device, const Config& config) override {
    ProgressCall reporting(progress());
    if (pipeline::is_pipeline_path(path)) {
      // A model made of models (docs/streams.md): its inputs' shapes are its file's.
      if (!shapes.empty())
        fail(HETERO_INVALID_ARGUMENT, path + " is a pipeline, whose inputs take no shapes from its caller");
      core::LoadedModel loaded;
      loaded.compiled = pipeline::compile_pipeline(*runtime_, path, device, config);
      return std::make_unique<LocalCompiledModel>(runtime_, std::move(loaded));
    }
    return std::make_unique<LocalCompiledModel>(runtime_,
                                                runtime_->load_file(path, import_options(shapes), device, config));
  }

  std::unique_ptr<CompiledModelImpl> import_blob(std::span<const uint8_t> blob, const Config& config) override {
    ProgressCall reporting(progress());
    core::LoadedModel loaded;
    loaded.compiled = runtime_->import_blob(blob, config, &loaded.origin);
    return std::make_unique<LocalCompiledModel>(runtime_, std::move(loaded));
  }

  std::string partition(const ModelImpl& model, const std::string& device, hetero_plan_format format,
                        const Config& config) override {
    ProgressCall reporting(progress());
    const core::Model& m = local_model(model);
    const core::DeviceString parsed = core::parse_device_string(device);
    const partition::Plan plan = partition::make_plan(*runtime_, m, parsed, config);
    switch (format) {
      case HETERO_PLAN_TEXT: return partition::plan_text(plan);
      case HETERO_PLAN_JSON: return partition::plan_json(plan, parsed.to_string());
      case HETERO_PLAN_DOT: return partition::plan_dot(plan, m);
    }
    fail(HETERO_INVALID_ARGUMENT, "plan format " + std::to_string(static_cast<int>(format)) +
                                      " is none of HETERO_PLAN_TEXT, _JSON, _DOT");
  }

 private:
  // The core's progress callback installed on this thread for one call: a
  // sink of its own per call, so that concurrent compiles do not share the
  // sink's state. Without a callback the thread keeps the sink it has (the
  // daemon's, holding a compile's deadline), or none.
  class ProgressCall {
   public:
    explicit ProgressCall(ProgressFn fn)
        : sink_(fn ? std::optional<core::ProgressSink>(std::in_place, std::move(fn)) : std::nullopt),
          scope_(sink_ ? &*sink_ : core::progress_sink()) {}

   private:
    std::optional<core::ProgressSink> sink_;
    core::ProgressScope scope_;
  };
  ProgressFn progress() const {
    std::lock_guard lock(progress_mutex_);
    return progress_;
  }

  // hetero_core_create's keys: "driver_path", "cache_dir", "cache_max_mb",
  // else "DRIVER.key" settings (which the Runtime checks, refusing keys that
  // name no driver).
  static bool is_cache_key(const std::string& key) { return key == "cache_dir" || key == "cache_max_mb"; }
  static core::RuntimeOptions runtime_options(const Config& options) {
    core::RuntimeOptions o;
    for (const auto& [key, value] : options) {
      if (key == "driver_path")
        o.driver_path = value;
      else if (!is_cache_key(key))
        o.config[key] = value;
    }
    o.cache = cache_options(options);
    o.make_hetero_driver = partition::make_hetero_driver;
    return o;
  }
  static std::optional<core::BlobCacheOptions> cache_options(const Config& options) {
    auto dir = options.find("cache_dir");
    if (dir == options.end()) {
      if (options.count("cache_max_mb")) fail(HETERO_INVALID_ARGUMENT, "cache_max_mb is set but cache_dir is not");
      return std::nullopt;
    }
    core::BlobCacheOptions o;
    o.dir = dir->second;
    if (auto max = options.find("cache_max_mb"); max != options.end()) {
      const std::string& v = max->second;
      uint64_t mb = 0;
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), mb);
      if (ec != std::errc() || end != v.data() + v.size() || mb < 1 || mb > (uint64_t{1} << 40))
        fail(HETERO_INVALID_ARGUMENT, "cache_max_mb must be a whole number of MiB, 1 or more, got '" + v + "'");
      o.max_bytes = mb << 20;
    }
    return o;
  }
  static core::ImportOptions import_options(const InputShapes& shapes) {
    core::ImportOptions o;
    o.input_shapes = shapes;
    return o;
  }

  // Every device, driver and failure, made on the first call for any of
  // them: listing devices initialises every driver, which a core that only
  // runs a model on CPU never needs.
  struct Listing {
    std::vector<DeviceEntry> devices;
    std::vector<DriverEntry> drivers;
    std::vector<DriverFailureEntry> failures;
  };
  const Listing& listing() const {
    std::call_once(listed_, [&] {
      for (core::DeviceInfo& d : runtime_->devices())
        listing_.devices.push_back({std::move(d.name), std::move(d.full_name)});
      const core::DriverRegistry& registry = runtime_->registry();
      for (const core::LoadedDriver& ld : registry.drivers()) {
        const driver::Driver* d = registry.find(ld.driver->name());
        if (!d) continue;  // its initialisation failed: a failure below
        listing_.drivers.push_back(
            {d->name(), d->version(), ld.path, d->devices().empty() ? d->no_device_reason() : std::string()});
      }
      for (const core::DriverFailure& f : registry.failures()) listing_.failures.push_back({f.path, f.reason});
    });
    return listing_;
  }

  RuntimePtr runtime_;
  mutable std::mutex progress_mutex_;
  ProgressFn progress_;
  mutable std::once_flag listed_;
  mutable Listing listing_;
};

}  // namespace

std::shared_ptr<Backend> make_local_backend(const Config& options) { return std::make_shared<LocalBackend>(options); }

}  // namespace hetero::capi
