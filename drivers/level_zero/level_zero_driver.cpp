// The Level Zero driver module: devices of every driver the Level Zero loader
// finds (LEVEL_ZERO, LEVEL_ZERO.1, ...), programs built by the shared GPU
// parts (drivers/gpu) over ze_device.h, one network per infer request. It is
// the OpenCL driver's module (drivers/opencl/opencl_driver.cpp) with the
// device underneath swapped: config keys, query, compile, blobs and infer
// requests behave the same; metrics come from the Level Zero device
// properties.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <mutex>

#include "core/async_request.h"
#include "core/error.h"
#include "core/ports.h"
#include "drivers/gpu/network.h"
#include "drivers/gpu/program.h"
#include "drivers/level_zero/ze_device.h"
#include "hetero/driver.hpp"
#include "hetero_build_config.h"

namespace hetero::level_zero {

namespace {

constexpr const char* kMetricKernelSourceBuilds = "KERNEL_SOURCE_BUILDS";
constexpr const char* kMetricDeviceType = "DEVICE_TYPE";
constexpr const char* kMetricComputeUnits = "COMPUTE_UNITS";
constexpr const char* kMetricMaxGroupSize = "MAX_GROUP_SIZE";
constexpr const char* kMetricGlobalMemSize = "GLOBAL_MEM_SIZE";
constexpr const char* kMetricPciId = "PCI_ID";
constexpr const char* kKeys = "(keys: optimize, ops, kernels_per_batch)";

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const size_t b = text.find_first_not_of(' ', start);
    const size_t e = text.find_last_not_of(' ', comma - 1);
    if (b < comma && e != std::string::npos && e >= b) items.push_back(text.substr(b, e - b + 1));
    start = comma + 1;
  }
  return items;
}

struct Options {
  bool optimize = true;
  std::vector<std::string> ops;  // empty: every op it has kernels for
  int kernels_per_batch = 8;

  void apply(const driver::Config& config) {
    for (const auto& [key, value] : config) {
      if (key == "optimize") {
        if (value != "true" && value != "false")
          fail(HETERO_INVALID_ARGUMENT, "LEVEL_ZERO config optimize must be true or false, got '" + value + "'");
        optimize = value == "true";
      } else if (key == "ops") {
        ops = split_list(value);
      } else if (key == "kernels_per_batch") {
        int n = 0;
        auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
        if (ec != std::errc() || end != value.data() + value.size() || n < 1 || n > 256)
          fail(HETERO_INVALID_ARGUMENT, "LEVEL_ZERO config kernels_per_batch must be an integer 1..256, got '" + value + "'");
        kernels_per_batch = n;
      } else {
        fail(HETERO_INVALID_ARGUMENT, "the LEVEL_ZERO driver has no config key '" + key + "' " + kKeys);
      }
    }
  }
  std::string get(const std::string& key) const {
    if (key == "optimize") return optimize ? "true" : "false";
    if (key == "kernels_per_batch") return std::to_string(kernels_per_batch);
    if (key == "ops") {
      std::string list;
      for (const std::string& op : ops) list += (list.empty() ? "" : ",") + op;
      return list;
    }
    fail(HETERO_INVALID_ARGUMENT, "the LEVEL_ZERO driver has no config key '" + key + "' " + kKeys);
  }
  bool allows(const core::Node& node) const {
    return ops.empty() || node.op_type == "Constant" || std::find(ops.begin(), ops.end(), node.op_type) != ops.end();
  }
};

class LevelZeroInferRequest final : public core::AsyncInferRequest {
 public:
  explicit LevelZeroInferRequest(std::shared_ptr<const gpu::CompiledProgram> program)
      : program_(program), network_(program), inputs_(program->inputs.size()), outputs_(program->outputs.size()) {}
  ~LevelZeroInferRequest() override { stop_worker(); }

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
  std::shared_ptr<const gpu::CompiledProgram> program_;
  gpu::Network network_;
  std::vector<core::Tensor> inputs_, outputs_;
};

class LevelZeroCompiledModel final : public driver::CompiledModel {
 public:
  LevelZeroCompiledModel(std::shared_ptr<const gpu::CompiledProgram> program, std::string device)
      : program_(std::move(program)), device_(std::move(device)) {}
  const std::vector<driver::Port>& inputs() const override { return program_->inputs; }
  const std::vector<driver::Port>& outputs() const override { return program_->outputs; }
  std::unique_ptr<driver::InferRequest> create_infer_request() override {
    return std::make_unique<LevelZeroInferRequest>(program_);
  }
  std::vector<uint8_t> export_blob() const override { return gpu::export_program(*program_); }
  std::string device() const override { return device_; }

 private:
  std::shared_ptr<const gpu::CompiledProgram> program_;
  std::string device_;
};

class LevelZeroDriver final : public driver::Driver {
 public:
  LevelZeroDriver() : infos_(enumerate_devices(no_device_reason_)), devices_(infos_.size()) {}

  std::string name() const override { return "LEVEL_ZERO"; }
  std::string version() const override { return HETERO_VERSION; }
  std::vector<std::string> devices() const override {
    std::vector<std::string> ids;
    for (size_t i = 0; i < infos_.size(); ++i) ids.push_back(std::to_string(i));
    return ids;
  }
  std::string no_device_reason() const override { return infos_.empty() ? no_device_reason_ : std::string(); }

  std::string metric(const std::string& device_id, const std::string& name) const override {
    const DeviceInfo& info = infos_[index_of(device_id)];
    if (name == driver::kMetricAvailableDevices) {
      std::string list;
      for (const std::string& id : devices()) list += (list.empty() ? "" : " ") + id;
      return list;
    }
    if (name == driver::kMetricFullDeviceName)
      return info.name + " (Level Zero " + info.type + ", driver version " + std::to_string(info.driver_version) + ")";
    if (name == kMetricDeviceType) return info.type;
    if (name == kMetricComputeUnits) return std::to_string(info.compute_units);
    if (name == kMetricMaxGroupSize) return std::to_string(info.max_group_size);
    if (name == kMetricGlobalMemSize) return std::to_string(info.global_mem);
    if (name == kMetricPciId) {
      char buf[16];
      std::snprintf(buf, sizeof buf, "%04x:%04x", info.vendor_id, info.device_id);
      return buf;
    }
    if (name == driver::kMetricSupportedProperties)
      return std::string(driver::kMetricAvailableDevices) + " " + driver::kMetricFullDeviceName + " " +
             driver::kMetricSupportedProperties + " " + driver::kMetricOptimizationCapabilities + " " +
             driver::kMetricRangeForAsyncInferRequests + " " + kMetricKernelSourceBuilds + " " +
             kMetricDeviceType + " " + kMetricComputeUnits + " " + kMetricMaxGroupSize + " " +
             kMetricGlobalMemSize + " " + kMetricPciId +
             " optimize ops kernels_per_batch";
    if (name == driver::kMetricOptimizationCapabilities) return info.fp16 ? "FP32 FP16" : "FP32";
    if (name == driver::kMetricRangeForAsyncInferRequests) return "1 4 1";
    if (name == kMetricKernelSourceBuilds) {
      std::lock_guard lock(mutex_);
      const auto& d = devices_[index_of(device_id)];
      return std::to_string(d ? d->source_builds() : 0);
    }
    fail(HETERO_NOT_FOUND, "the LEVEL_ZERO driver has no metric '" + name + "'");
  }

  std::string get_config(const std::string& key) const override {
    std::lock_guard lock(mutex_);
    return options_.get(key);
  }
  void set_config(const driver::Config& config) override {
    std::lock_guard lock(mutex_);
    Options next = options_;
    next.apply(config);
    options_ = next;
  }

  std::vector<driver::NodeSupport> query(const core::Model& model, const std::string& device_id,
                                         const driver::Config& config) const override {
    index_of(device_id);
    const Options options = options_with(config);
    std::vector<std::string> reasons(model.graph.nodes().size());
    gpu::build_topology(model.graph, &reasons);
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
        fail(HETERO_NOT_SUPPORTED, node->describe() + " is left out by the LEVEL_ZERO device's 'ops' config");
    gpu::BuildOptions build;
    build.optimize = options.optimize;
    build.kernels_per_batch = static_cast<size_t>(options.kernels_per_batch);
    auto program = gpu::build_program(model, device(device_id), build);
    return std::make_unique<LevelZeroCompiledModel>(std::move(program), device_name(device_id));
  }

  std::unique_ptr<driver::CompiledModel> import_blob(std::span<const uint8_t> blob, const std::string& device_id,
                                                     const driver::Config& config) override {
    (void)options_with(config);  // rejects unknown keys
    auto program = gpu::import_program(blob, device(device_id));
    return std::make_unique<LevelZeroCompiledModel>(std::move(program), device_name(device_id));
  }

 private:
  size_t index_of(const std::string& device_id) const {
    for (size_t i = 0; i < infos_.size(); ++i)
      if (std::to_string(i) == device_id) return i;
    fail(HETERO_NOT_FOUND, "the LEVEL_ZERO driver has no device '" + device_id + "'" +
                               (infos_.empty() ? " (" + no_device_reason_ + ")" : std::string()));
  }
  static std::string device_name(const std::string& device_id) {
    return device_id == "0" ? "LEVEL_ZERO" : "LEVEL_ZERO." + device_id;
  }
  // The device's context is made on first use: listing devices stays cheap.
  std::shared_ptr<gpu::Device> device(const std::string& device_id) {
    const size_t i = index_of(device_id);
    std::lock_guard lock(mutex_);
    if (!devices_[i]) devices_[i] = std::make_shared<ZeDevice>(infos_[i], device_name(device_id));
    return devices_[i];
  }
  Options options_with(const driver::Config& config) const {
    std::lock_guard lock(mutex_);
    Options o = options_;
    o.apply(config);
    return o;
  }

  std::string no_device_reason_;
  std::vector<DeviceInfo> infos_;
  std::vector<std::shared_ptr<ZeDevice>> devices_;
  mutable std::mutex mutex_;
  Options options_;
};

}  // namespace

}  // namespace hetero::level_zero

extern "C" __attribute__((visibility("default"))) hetero::driver::Driver* hetero_driver_open(
    uint32_t host_abi_version, char* error, size_t error_size) {
  if (host_abi_version != HETERO_DRIVER_ABI_VERSION) {
    std::snprintf(error, error_size, "driver ABI version %u, host expects %u", HETERO_DRIVER_ABI_VERSION,
                  host_abi_version);
    return nullptr;
  }
  try {
    return new hetero::level_zero::LevelZeroDriver();
  } catch (const std::exception& e) {
    std::snprintf(error, error_size, "Level Zero driver initialisation failed: %s", e.what());
    return nullptr;
  }
}
