// The CPU driver: oneDNN primitives for the heavy ops, plain C++ kernels for
// the long tail, one execution plan per compiled model.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <mutex>
#include <thread>

#include <dnnl.hpp>

#include "core/driver_module.h"
#include "core/error.h"
#include "core/function_expand.h"
#include "core/infer_request.h"
#include "core/progress.h"
#include "drivers/cpu/cpu_compile.h"
#include "drivers/cpu/executor.h"
#include "drivers/cpu/plan.h"
#include "hetero_build_config.h"

namespace hetero::cpu {

namespace {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "CPU";
}

class CpuInferStep final : public core::InferStep {
 public:
  CpuInferStep(std::shared_ptr<const CpuProgram> program, std::shared_ptr<Executor> executor)
      : program_(std::move(program)),
        executor_(std::move(executor)),
        stream_(program_->engine),
        frame_(*program_->plan, nullptr, stream_, program_->threads) {}

  const std::vector<driver::Port>& inputs() const override { return program_->inputs; }
  const std::vector<driver::Port>& outputs() const override { return program_->outputs; }
  std::vector<core::Tensor> run(const std::vector<core::Tensor>& inputs) override {
    std::vector<core::Tensor> outputs;
    executor_->run([&] {
      // OpenMP's thread count is per calling thread: set it for the executor's.
      omp_set_num_threads(program_->threads);
      outputs = frame_.run(inputs);
    });
    return outputs;
  }

 private:
  std::shared_ptr<const CpuProgram> program_;
  std::shared_ptr<Executor> executor_;
  dnnl::stream stream_;
  Frame frame_;
};

class CpuCompiledModel final : public driver::CompiledModel {
 public:
  CpuCompiledModel(std::shared_ptr<const CpuProgram> program, std::shared_ptr<Executor> executor)
      : program_(std::move(program)), executor_(std::move(executor)) {}
  const std::vector<driver::Port>& inputs() const override { return program_->inputs; }
  const std::vector<driver::Port>& outputs() const override { return program_->outputs; }
  std::unique_ptr<driver::InferRequest> create_infer_request() override {
    return core::make_infer_request(std::make_unique<CpuInferStep>(program_, executor_));
  }
  std::vector<uint8_t> export_blob() const override { return export_program(*program_); }
  std::string device() const override { return program_->device; }

 private:
  std::shared_ptr<const CpuProgram> program_;
  std::shared_ptr<Executor> executor_;
};

class CpuDriver final : public driver::Driver {
 public:
  std::string name() const override { return "CPU"; }
  std::string version() const override {
    const dnnl_version_t* v = dnnl_version();
    return std::string(HETERO_VERSION) + "+onednn." + std::to_string(v->major) + "." + std::to_string(v->minor) +
           "." + std::to_string(v->patch);
  }
  void initialize() override {
    engine_ = dnnl::engine(dnnl::engine::kind::cpu, 0);
    full_name_ = cpu_model_name();
  }
  std::vector<std::string> devices() const override {
    std::vector<std::string> ids;
    for (int i = 0; i < device_count(); ++i) ids.push_back(std::to_string(i));
    return ids;
  }

  std::string metric(const std::string& device_id, const std::string& name) const override {
    check_device(device_id);
    if (name == driver::kMetricAvailableDevices) {
      std::string list;
      for (const std::string& id : devices()) list += (list.empty() ? "" : " ") + id;
      return list;
    }
    if (name == driver::kMetricFullDeviceName) return full_name_;
    if (name == driver::kMetricSupportedProperties)
      return std::string(driver::kMetricAvailableDevices) + " " + driver::kMetricFullDeviceName + " " +
             driver::kMetricSupportedProperties + " " + driver::kMetricOptimizationCapabilities + " " +
             driver::kMetricRangeForAsyncInferRequests + " " + cpu_config().names();
    if (name == driver::kMetricOptimizationCapabilities) return "FP32 FP64 INT8 INT32 INT64 BOOL";
    if (name == driver::kMetricRangeForAsyncInferRequests)
      return "1 " + std::to_string(std::max(1u, std::thread::hardware_concurrency())) + " 1";
    fail(HETERO_NOT_FOUND, "the CPU driver has no metric '" + name + "'");
  }

  std::string get_config(const std::string& key) const override {
    std::lock_guard lock(mutex_);
    return cpu_config().get(options_, key);
  }
  void set_config(const driver::Config& config) override {
    std::lock_guard lock(mutex_);
    options_ = cpu_config().apply(options_, config, core::ConfigScope::Driver);
  }

  std::vector<driver::NodeSupport> query(const core::Model& model, const std::string& device_id,
                                         const driver::Config& config) const override {
    check_device(device_id);
    const CpuOptions options = options_with(config);
    std::vector<driver::NodeSupport> support;
    executor_->run([&] { support = query_nodes(model, options, engine_); });
    return support;
  }

  std::unique_ptr<driver::CompiledModel> compile(const core::Model& model, const std::string& device_id,
                                                 const driver::Config& config) override {
    check_device(device_id);
    const CpuOptions options = options_with(config);
    std::shared_ptr<CpuProgram> program;
    // The executor thread reports to the caller's progress sink.
    core::ProgressSink* progress = core::progress_sink();
    executor_->run([&] {
      core::ProgressScope scope(progress);
      program = compile_program(model, options, engine_);
    });
    program->device = device_name(device_id);
    return std::make_unique<CpuCompiledModel>(std::move(program), executor_);
  }

  std::unique_ptr<driver::CompiledModel> import_blob(std::span<const uint8_t> blob, const std::string& device_id,
                                                     const driver::Config& config) override {
    check_device(device_id);
    const CpuOptions options = options_with(config);
    std::shared_ptr<CpuProgram> program;
    core::ProgressSink* progress = core::progress_sink();
    executor_->run([&] {
      core::ProgressScope scope(progress);
      program = import_program(blob, options, engine_);
    });
    program->device = device_name(device_id);
    return std::make_unique<CpuCompiledModel>(std::move(program), executor_);
  }

 private:
  int device_count() const {
    std::lock_guard lock(mutex_);
    return options_.device_count;
  }
  void check_device(const std::string& device_id) const {
    const auto ids = devices();
    if (std::find(ids.begin(), ids.end(), device_id) == ids.end())
      fail(HETERO_NOT_FOUND, "the CPU driver has no device '" + device_id + "'");
  }
  // The first device answers to the bare driver name.
  static std::string device_name(const std::string& device_id) {
    return device_id == "0" ? "CPU" : "CPU." + device_id;
  }
  CpuOptions options_with(const driver::Config& config) const {
    std::lock_guard lock(mutex_);
    return cpu_config().apply(options_, config, core::ConfigScope::Any);
  }

  mutable dnnl::engine engine_;
  // Shared with compiled models and requests: the thread lives as long as
  // anything can still run on it.
  std::shared_ptr<Executor> executor_ = std::make_shared<Executor>();
  std::string full_name_;
  mutable std::mutex mutex_;
  CpuOptions options_ = cpu_config().defaults();
};

}  // namespace

}  // namespace hetero::cpu

HETERO_DRIVER_MODULE("CPU", [] { return std::make_unique<hetero::cpu::CpuDriver>(); })
