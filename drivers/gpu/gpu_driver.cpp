#include "drivers/gpu/gpu_driver.h"

#include <algorithm>
#include <charconv>
#include <mutex>

#include "core/async_request.h"
#include "core/config_list.h"
#include "core/error.h"
#include "core/ports.h"
#include "drivers/gpu/network.h"
#include "drivers/gpu/program.h"
#include "drivers/gpu/tuner.h"
#include "hetero_build_config.h"

namespace hetero::gpu {

namespace {

constexpr const char* kMetricKernelSourceBuilds = "KERNEL_SOURCE_BUILDS";
constexpr const char* kMetricKernelTuningRuns = "KERNEL_TUNING_RUNS";
constexpr const char* kKeys = "(keys: optimize, ops, kernels_per_batch, tuning)";

struct Options {
  bool optimize = true;
  std::vector<std::string> ops;  // empty: every op it has kernels for
  int kernels_per_batch = 8;
  Tuning tuning = Tuning::Fast;  // compiles time the heavy nodes' kernel variants

  // `driver` names the driver in errors ("OPENCL").
  void apply(const driver::Config& config, const std::string& driver) {
    for (const auto& [key, value] : config) {
      if (key == "optimize") {
        if (value != "true" && value != "false")
          fail(HETERO_INVALID_ARGUMENT, driver + " config optimize must be true or false, got '" + value + "'");
        optimize = value == "true";
      } else if (key == "ops") {
        ops = core::split_config_list(value);
      } else if (key == "kernels_per_batch") {
        int n = 0;
        auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
        if (ec != std::errc() || end != value.data() + value.size() || n < 1 || n > 256)
          fail(HETERO_INVALID_ARGUMENT,
               driver + " config kernels_per_batch must be an integer 1..256, got '" + value + "'");
        kernels_per_batch = n;
      } else if (key == "tuning") {
        tuning = parse_tuning(value, driver + " config tuning");
      } else {
        fail(HETERO_INVALID_ARGUMENT, "the " + driver + " driver has no config key '" + key + "' " + kKeys);
      }
    }
  }
  std::string get(const std::string& key, const std::string& driver) const {
    if (key == "optimize") return optimize ? "true" : "false";
    if (key == "kernels_per_batch") return std::to_string(kernels_per_batch);
    if (key == "tuning") return tuning_name(tuning);
    if (key == "ops") {
      std::string list;
      for (const std::string& op : ops) {
        if (!list.empty()) list += ',';
        list += op;
      }
      return list;
    }
    fail(HETERO_INVALID_ARGUMENT, "the " + driver + " driver has no config key '" + key + "' " + kKeys);
  }
  bool allows(const core::Node& node) const {
    return ops.empty() || node.op_type == "Constant" || std::find(ops.begin(), ops.end(), node.op_type) != ops.end();
  }
};

class GpuInferRequest final : public core::AsyncInferRequest {
 public:
  explicit GpuInferRequest(std::shared_ptr<const CompiledProgram> program)
      : program_(program), network_(program), inputs_(program->inputs.size()), outputs_(program->outputs.size()) {}
  ~GpuInferRequest() override { stop_worker(); }

  void set_input(size_t index, const core::Tensor& tensor) override {
    if (index >= inputs_.size())
      fail(HETERO_INVALID_ARGUMENT, "input index " + std::to_string(index) + " is out of range (the model has " +
                                        std::to_string(inputs_.size()) + " inputs)");
    core::check_input(program_->inputs[index], tensor);
    inputs_[index] = tensor;
  }
  core::Tensor output(size_t index) const override {
    if (index >= outputs_.size())
      fail(HETERO_INVALID_ARGUMENT, "output index " + std::to_string(index) + " is out of range (the model has " +
                                        std::to_string(outputs_.size()) + " outputs)");
    if (outputs_[index].empty()) fail(HETERO_INVALID_ARGUMENT, "no inference has finished on this request yet");
    return outputs_[index];
  }
  void infer() override {
    for (size_t i = 0; i < inputs_.size(); ++i)
      if (inputs_[i].empty()) fail(HETERO_INVALID_ARGUMENT, "input '" + program_->inputs[i].name + "' is not set");
    outputs_ = network_.execute(inputs_);
  }

 private:
  std::shared_ptr<const CompiledProgram> program_;
  Network network_;
  std::vector<core::Tensor> inputs_, outputs_;
};

class GpuCompiledModel final : public driver::CompiledModel {
 public:
  GpuCompiledModel(std::shared_ptr<const CompiledProgram> program, std::string device, bool warm_up_before_export)
      : program_(std::move(program)), device_(std::move(device)), warm_up_before_export_(warm_up_before_export) {}
  const std::vector<driver::Port>& inputs() const override { return program_->inputs; }
  const std::vector<driver::Port>& outputs() const override { return program_->outputs; }
  std::unique_ptr<driver::InferRequest> create_infer_request() override {
    return std::make_unique<GpuInferRequest>(program_);
  }
  std::vector<uint8_t> export_blob() const override {
    if (warm_up_before_export_) warm_up();
    return export_program(*program_);
  }
  std::string device() const override { return device_; }

 private:
  // Runs every kernel once, on zeros, before the binaries are read: an
  // OpenCL implementation may generate a kernel's machine code only at its
  // first launch (PoCL does, per kernel and work-group size) and its
  // program binaries carry what it has generated, so that an imported blob's
  // first inference does not generate it again (PoCL with an empty kernel
  // cache: 4.4 s instead of 13 ms for PP-OCR cls).
  void warm_up() const {
    std::vector<core::Tensor> zeros;
    for (const driver::Port& port : program_->inputs) {
      core::Shape shape;
      for (const core::Dim& d : port.shape) {
        if (!d.known()) return;  // cannot happen for a compiled program (static shapes); nothing to warm then
        shape.push_back(d.size);
      }
      zeros.push_back(core::Tensor::allocate(port.dtype, shape));
    }
    Network(program_).execute(zeros);
  }

  std::shared_ptr<const CompiledProgram> program_;
  std::string device_;
  bool warm_up_before_export_;
};

class GpuDriver final : public driver::Driver {
 public:
  explicit GpuDriver(std::unique_ptr<DeviceFamily> family)
      : family_(std::move(family)), name_(family_->name()), devices_(family_->device_count()) {}

  std::string name() const override { return name_; }
  std::string version() const override { return HETERO_VERSION; }
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
                         driver::kMetricRangeForAsyncInferRequests + " " + kMetricKernelSourceBuilds + " " +
                         kMetricKernelTuningRuns;
      for (const std::string& extra : family_->extra_metric_names()) {
        list += ' ';
        list += extra;
      }
      return list + " optimize ops kernels_per_batch tuning";
    }
    if (name == driver::kMetricOptimizationCapabilities) return family_->fp16(index) ? "FP32 FP16" : "FP32";
    if (name == driver::kMetricRangeForAsyncInferRequests) return "1 4 1";
    if (name == kMetricKernelSourceBuilds) {
      std::lock_guard lock(mutex_);
      const auto& d = devices_[index];
      return std::to_string(d ? d->source_builds() : 0);
    }
    if (name == kMetricKernelTuningRuns) return std::to_string(tuning_runs(device_name(device_id)));
    if (std::optional<std::string> value = family_->extra_metric(index, name)) return *value;
    fail(HETERO_NOT_FOUND, "the " + name_ + " driver has no metric '" + name + "'");
  }

  std::string get_config(const std::string& key) const override {
    std::lock_guard lock(mutex_);
    return options_.get(key, name_);
  }
  void set_config(const driver::Config& config) override {
    std::lock_guard lock(mutex_);
    Options next = options_;
    next.apply(config, name_);
    options_ = next;
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
    BuildOptions build;
    build.optimize = options.optimize;
    build.kernels_per_batch = static_cast<size_t>(options.kernels_per_batch);
    build.tuning = options.tuning;
    auto program = build_program(model, device(device_id), build);
    return compiled(std::move(program), device_id);
  }

  std::unique_ptr<driver::CompiledModel> import_blob(std::span<const uint8_t> blob, const std::string& device_id,
                                                     const driver::Config& config) override {
    (void)options_with(config);  // rejects unknown keys
    auto program = import_program(blob, device(device_id));
    return compiled(std::move(program), device_id);
  }

 private:
  std::unique_ptr<driver::CompiledModel> compiled(std::shared_ptr<const CompiledProgram> program,
                                                  const std::string& device_id) const {
    return std::make_unique<GpuCompiledModel>(std::move(program), device_name(device_id),
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
    Options o = options_;
    o.apply(config, name_);
    return o;
  }

  std::unique_ptr<DeviceFamily> family_;
  std::string name_;
  std::vector<std::shared_ptr<Device>> devices_;  // opened on first use
  mutable std::mutex mutex_;
  Options options_;
};

}  // namespace

std::unique_ptr<driver::Driver> make_driver(std::unique_ptr<DeviceFamily> family) {
  return std::make_unique<GpuDriver>(std::move(family));
}

}  // namespace hetero::gpu
