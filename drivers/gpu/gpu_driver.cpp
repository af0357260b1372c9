#include "drivers/gpu/gpu_driver.h"

#include <mutex>

#include "core/config_table.h"
#include "core/error.h"
#include "core/infer_request.h"
#include "core/onnx_export.h"
#include "core/ports.h"
#include "drivers/gpu/network.h"
#include "drivers/gpu/program_set.h"
#include "drivers/gpu/shape_specializations.h"
#include "drivers/gpu/tuner.h"
#include "hetero_build_config.h"

namespace hetero::gpu {

namespace {

constexpr const char* kMetricKernelSourceBuilds = "KERNEL_SOURCE_BUILDS";
constexpr const char* kMetricKernelTuningRuns = "KERNEL_TUNING_RUNS";
// Tensor bytes inferences have copied between host memory and the device
// (Device::bytes_copied): 0 where inputs and outputs are lent, not copied.
constexpr const char* kMetricBytesCopied = "BYTES_COPIED";

// The options of a GPU driver, one field per config key; gpu_config() has
// each key's default and meaning.
struct Options {
  bool optimize;
  std::vector<std::string> ops;
  int kernels_per_batch;
  Tuning tuning;  // compiles time the heavy nodes' kernel variants
  core::Priority priority;

  bool allows(const core::Node& node) const { return core::ops_allow(ops, node); }
};

// How compiles choose the kernel variants of the heavy nodes (tuner.h).
core::ConfigKey<Options> tuning_key() {
  return {"tuning",
          "off, fast or full",
          tuning_name(Tuning::Fast),
          "time the kernel variants of convolutions and matrix products at compile: off (defaults), fast "
          "(a few candidates), full (every candidate)",
          core::ConfigScope::Any,
          [](Options& o, const std::string& v) {
            for (Tuning t : {Tuning::Off, Tuning::Fast, Tuning::Full})
              if (v == tuning_name(t)) return o.tuning = t, true;
            return false;
          },
          [](const Options& o) { return std::string(tuning_name(o.tuning)); }};
}

// `driver` names the driver in errors ("OPENCL").
core::ConfigTable<Options> gpu_config(const std::string& driver) {
  return core::ConfigTable<Options>(
      driver, {
                  core::bool_key("optimize", &Options::optimize, true, "graph passes: fusion and weight reorders"),
                  core::ops_key(&Options::ops),
                  core::int_key("kernels_per_batch", &Options::kernels_per_batch, 8, 1, 256,
                                "kernels compiled together in one device program"),
                  tuning_key(),
                  core::priority_key(&Options::priority,
                                     "; a GPU queue runs its work in order, so this ranks only the "
                                     "CPU parts of a HETERO model"),
              });
}

// A compiled model's programs: one set for a model whose inputs have static
// shapes, or a set per input shapes seen (shape_specializations.h).
struct Programs {
  std::shared_ptr<const ProgramSet> fixed;
  std::shared_ptr<ShapeSpecializations> per_shape;

  const std::vector<driver::Port>& inputs() const { return fixed ? fixed->inputs : per_shape->inputs(); }
  const std::vector<driver::Port>& outputs() const { return fixed ? fixed->outputs : per_shape->outputs(); }
  std::shared_ptr<const ProgramSet> for_inputs(const std::vector<core::Tensor>& inputs) const {
    return fixed ? fixed : per_shape->get(inputs);
  }
};

// One infer request: a network per program of the set its inputs use, made
// when an inference first needs it (most sets have one program).
class GpuInferStep final : public core::InferStep {
 public:
  explicit GpuInferStep(Programs programs) : programs_(std::move(programs)) {}

  const std::vector<driver::Port>& inputs() const override { return programs_.inputs(); }
  const std::vector<driver::Port>& outputs() const override { return programs_.outputs(); }
  std::vector<core::Tensor> run(const std::vector<core::Tensor>& inputs) override {
    auto set = programs_.for_inputs(inputs);
    if (set != set_) {  // other input shapes than the last inference's
      set_ = std::move(set);
      networks_.clear();
      networks_.resize(set_->variants.size());
    }
    const size_t v = set_->select(inputs);
    if (!networks_[v]) networks_[v] = std::make_unique<Network>(set_->variants[v].program);
    return networks_[v]->execute(inputs);
  }

 private:
  Programs programs_;
  std::shared_ptr<const ProgramSet> set_;  // the set networks_ run
  std::vector<std::unique_ptr<Network>> networks_;
};

class GpuCompiledModel final : public driver::CompiledModel {
 public:
  GpuCompiledModel(Programs programs, std::string device, bool warm_up_before_export)
      : programs_(std::move(programs)), device_(std::move(device)), warm_up_before_export_(warm_up_before_export) {}

  const std::vector<driver::Port>& inputs() const override { return programs_.inputs(); }
  const std::vector<driver::Port>& outputs() const override { return programs_.outputs(); }
  std::unique_ptr<driver::InferRequest> create_infer_request() override {
    return core::make_infer_request(std::make_unique<GpuInferStep>(programs_));
  }
  std::vector<uint8_t> export_blob() const override {
    if (programs_.fixed) {
      if (warm_up_before_export_) warm_up(*programs_.fixed);
      return export_program_set(*programs_.fixed);
    }
    if (warm_up_before_export_)
      for (const auto& set : programs_.per_shape->held()) warm_up(*set);
    return programs_.per_shape->export_blob();
  }
  std::string device() const override { return device_; }

 private:
  // Runs every kernel of every program of `set` once, on zeros, before the
  // binaries are read: an OpenCL implementation may generate a kernel's
  // machine code only at its first launch (PoCL does, per kernel and
  // work-group size) and its program binaries carry what it has generated,
  // so that an imported blob's first inference does not generate it again
  // (PoCL with an empty kernel cache: 4.4 s instead of 13 ms for PP-OCR cls).
  static void warm_up(const ProgramSet& set) {
    std::vector<core::Tensor> zeros;
    for (const driver::Port& port : set.inputs) {
      core::Shape shape;
      for (const core::Dim& d : port.shape) {
        if (!d.known()) return;  // cannot happen for a compiled program (static shapes); nothing to warm then
        shape.push_back(d.size);
      }
      zeros.push_back(core::Tensor::allocate(port.dtype, shape));
    }
    for (const ProgramSet::Variant& v : set.variants)
      if (v.program) Network(v.program).execute(zeros);
  }

  Programs programs_;
  std::string device_;
  bool warm_up_before_export_;
};

class GpuDriver final : public driver::Driver {
 public:
  explicit GpuDriver(std::unique_ptr<DeviceFamily> family)
      : family_(std::move(family)), name_(family_->name()) {}

  std::string name() const override { return name_; }
  std::string version() const override { return HETERO_VERSION; }
  void initialize() override {
    family_->enumerate();
    devices_.resize(family_->device_count());
  }
  std::vector<std::string> devices() const override {
    std::vector<std::string> ids;
    for (size_t i = 0; i < devices_.size(); ++i) ids.push_back(std::to_string(i));
    return ids;
  }
  std::string no_device_reason() const override {
    return devices_.empty() ? family_->no_device_reason() : std::string();
  }

  std::string metric(const std::string& device_id, const std::string& name) const override {
    const size_t index = index_of(device_id);
    if (name == driver::kMetricAvailableDevices) {
      std::string list;
      for (const std::string& id : devices()) {
        if (!list.empty()) list += ' ';
        list += id;
      }
      return list;
    }
    if (name == driver::kMetricFullDeviceName) return family_->full_name(index);
    if (name == driver::kMetricSupportedProperties) {
      std::string list = std::string(driver::kMetricAvailableDevices) + " " + driver::kMetricFullDeviceName + " " +
                         driver::kMetricSupportedProperties + " " + driver::kMetricOptimizationCapabilities + " " +
                         driver::kMetricRangeForAsyncInferRequests + " " + driver::kMetricOptimalNumberOfInferRequests +
                         " " + kMetricKernelSourceBuilds + " " +
                         kMetricKernelTuningRuns + " " + kMetricBytesCopied;
      for (const std::string& extra : family_->extra_metric_names()) {
        list += ' ';
        list += extra;
      }
      return list + " " + config_.names();
    }
    if (name == driver::kMetricOptimizationCapabilities) return family_->fp16(index) ? "FP32 FP16" : "FP32";
    if (name == driver::kMetricRangeForAsyncInferRequests) return "1 4 1";
    // One to run while the next one's inputs are written.
    if (name == driver::kMetricOptimalNumberOfInferRequests) return "2";
    if (name == kMetricKernelSourceBuilds) {
      std::lock_guard lock(mutex_);
      const auto& d = devices_[index];
      return std::to_string(d ? d->source_builds() : 0);
    }
    if (name == kMetricBytesCopied) {
      std::lock_guard lock(mutex_);
      const auto& d = devices_[index];
      return std::to_string(d ? d->bytes_copied() : 0);
    }
    if (name == kMetricKernelTuningRuns) return std::to_string(tuning_runs(device_name(device_id)));
    if (std::optional<std::string> value = family_->extra_metric(index, name)) return *value;
    fail(HETERO_NOT_FOUND, "the " + name_ + " driver has no metric '" + name + "'");
  }

  std::string get_config(const std::string& key) const override {
    std::lock_guard lock(mutex_);
    return config_.get(options_, key);
  }
  void set_config(const driver::Config& config) override {
    std::lock_guard lock(mutex_);
    options_ = config_.apply(options_, config, core::ConfigScope::Driver);
  }

  std::vector<driver::NodeSupport> query(const core::Model& model, const std::string& device_id,
                                         const driver::Config& config) const override {
    index_of(device_id);
    const Options options = options_with(config);
    std::vector<std::string> reasons(model.graph.nodes().size());
    build_topology(model.graph, &reasons);
    std::vector<driver::NodeSupport> support(reasons.size());
    for (const auto& node : model.graph.nodes()) {
      driver::NodeSupport& s = support[node->index];
      if (!options.allows(*node)) {
        s.reason = node->op_type + " is left out by the device's 'ops' config";
      } else {
        s.reason = reasons[node->index];
        s.supported = s.reason.empty();
      }
    }
    return support;
  }

  std::unique_ptr<driver::CompiledModel> compile(const core::Model& model, const std::string& device_id,
                                                 const driver::Config& config) override {
    const Options options = options_with(config);
    for (const auto& node : model.graph.nodes())
      if (!options.allows(*node))
        fail(HETERO_NOT_SUPPORTED, node->describe() + " is left out by the " + name_ + " device's 'ops' config");
    const BuildOptions build = build_options(options);
    bool dynamic = false;
    for (const core::Value* v : model.graph.inputs) dynamic = dynamic || !v->static_shape();
    if (dynamic)  // compiled per input shapes, as inferences bring them
      return compiled({nullptr, std::make_shared<ShapeSpecializations>(core::export_onnx(model), model.source,
                                                                        core::ports_of(model.graph.inputs),
                                                                        core::ports_of(model.graph.outputs),
                                                                        device(device_id), build)},
                      device_id);
    return compiled({build_program_set(model, device(device_id), build), nullptr}, device_id);
  }

  std::unique_ptr<driver::CompiledModel> import_blob(std::span<const uint8_t> blob, const std::string& device_id,
                                                     const driver::Config& config) override {
    const Options options = options_with(config);  // rejects unknown keys
    if (ShapeSpecializations::is_blob(blob))
      return compiled({nullptr, ShapeSpecializations::import_blob(blob, device(device_id), build_options(options))},
                      device_id);
    return compiled({import_program_set(blob, device(device_id)), nullptr}, device_id);
  }

 private:
  static BuildOptions build_options(const Options& options) {
    BuildOptions build;
    build.optimize = options.optimize;
    build.kernels_per_batch = static_cast<size_t>(options.kernels_per_batch);
    build.tuning = options.tuning;
    return build;
  }
  std::unique_ptr<driver::CompiledModel> compiled(Programs programs, const std::string& device_id) const {
    return std::make_unique<GpuCompiledModel>(std::move(programs), device_name(device_id),
                                              family_->warm_up_before_export());
  }
  size_t index_of(const std::string& device_id) const {
    for (size_t i = 0; i < devices_.size(); ++i)
      if (std::to_string(i) == device_id) return i;
    fail(HETERO_NOT_FOUND, "the " + name_ + " driver has no device '" + device_id + "'" +
                               (devices_.empty() ? " (" + family_->no_device_reason() + ")" : std::string()));
  }
  std::string device_name(const std::string& device_id) const {
    return device_id == "0" ? name_ : name_ + "." + device_id;
  }
  std::shared_ptr<Device> device(const std::string& device_id) {
    const size_t i = index_of(device_id);
    std::lock_guard lock(mutex_);
    if (!devices_[i]) devices_[i] = family_->open(i, device_name(device_id));
    return devices_[i];
  }
  Options options_with(const driver::Config& config) const {
    std::lock_guard lock(mutex_);
    return config_.apply(options_, config, core::ConfigScope::Any);
  }

  std::unique_ptr<DeviceFamily> family_;
  std::string name_;
  std::vector<std::shared_ptr<Device>> devices_;  // opened on first use
  const core::ConfigTable<Options> config_ = gpu_config(name_);
  mutable std::mutex mutex_;
  Options options_ = config_.defaults();
};

}  // namespace

std::unique_ptr<driver::Driver> make_driver(std::unique_ptr<DeviceFamily> family) {
  return std::make_unique<GpuDriver>(std::move(family));
}

}  // namespace hetero::gpu
