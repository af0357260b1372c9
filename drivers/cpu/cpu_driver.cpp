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
#include "drivers/cpu/cpu_budget.h"
#include "drivers/cpu/cpu_compile.h"
#include "drivers/cpu/scheduler.h"
#include "drivers/cpu/plan.h"
#include "drivers/cpu/team_width.h"
#include "drivers/cpu/width_choice.h"
#include "hetero_build_config.h"

namespace hetero::cpu {

namespace {

// Metrics of the CPU driver alone.
constexpr const char* kMetricNumStreams = "NUM_STREAMS";
constexpr const char* kMetricThreadsPerStream = "THREADS_PER_STREAM";

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

// One request's inferences: each runs on a stream of the driver's scheduler,
// at the compiled model's priority, and the asynchronous ones end there too:
// the completion callback runs on the stream thread, with no other thread
// between the caller and the kernels.
class CpuInferStep final : public core::InferStep {
 public:
  CpuInferStep(std::shared_ptr<const CpuProgram> program, std::shared_ptr<Scheduler> scheduler,
               std::shared_ptr<WidthChoice> width)
      : program_(std::move(program)),
        scheduler_(std::move(scheduler)),
        width_(std::move(width)),
        stream_(program_->engine),
        control_{&cancel_flag(), scheduler_.get(), program_->priority, program_->max_inference_bytes},
        frame_(*program_->plan, nullptr, stream_, program_->threads, &control_) {}

  const std::vector<driver::Port>& inputs() const override { return program_->inputs; }
  const std::vector<driver::Port>& outputs() const override { return program_->outputs; }
  std::vector<core::Tensor> run(const std::vector<core::Tensor>& inputs) override {
    std::vector<core::Tensor> outputs;
    const int width = width_->next();
    int ran = width;
    // Timed as the caller waits: a team wider than one is handed to a
    // stream thread and back (two thread wake-ups, on a virtual machine as
    // long as a small model's inference), which the width trial must weigh.
    const auto called = WidthChoice::Clock::now();
    auto job = [&] { outputs = execute(inputs, width, ran); };
    // One thread wide, it runs on the caller's thread while a stream is free
    // (Scheduler::run_here), leaving the caller's OpenMP setting as it was.
    bool ran_here = false;
    if (width == 1) {
      const int callers_threads = omp_get_max_threads();
      ran_here = scheduler_->run_here(program_->priority, job);
      omp_set_num_threads(callers_threads);
    }
    if (!ran_here) scheduler_->run(program_->priority, job);
    width_->record(width, ran, called, WidthChoice::Clock::now());
    return outputs;
  }
  void release_memory() override { frame_.release_memory(); }
  bool start(const std::vector<core::Tensor>& inputs, Done done) override {
    scheduler_->submit(program_->priority, [this, inputs, done = std::move(done)] {
      std::vector<core::Tensor> outputs;
      std::exception_ptr error;
      try {
        // Every width is handed over alike: timed on the stream.
        const int width = width_->next();
        int ran = width;
        const auto started = WidthChoice::Clock::now();
        outputs = execute(inputs, width, ran);
        width_->record(width, ran, started, WidthChoice::Clock::now());
      } catch (...) {
        error = std::current_exception();
      }
      // The request may be gone once done() has returned: nothing of this
      // step is touched after it.
      done(std::move(outputs), error);
    });
    return true;
  }

 private:
  // `width`: as wide as pays for this model (width_choice.h); `ran`, how
  // wide it ran: narrower while other work takes the cores (team_width.h).
  // OpenMP's thread count is per calling thread: set it for the stream's.
  std::vector<core::Tensor> execute(const std::vector<core::Tensor>& inputs, int width, int& ran) {
    const TeamWidth::Scope team(TeamWidth::current(), width);
    ran = team.width();
    omp_set_num_threads(ran);
    frame_.set_threads(ran);
    return frame_.run(inputs);
  }

  std::shared_ptr<const CpuProgram> program_;
  std::shared_ptr<Scheduler> scheduler_;
  std::shared_ptr<WidthChoice> width_;  // the compiled model's, shared by its requests
  dnnl::stream stream_;
  RunControl control_;
  Frame frame_;
};

class CpuCompiledModel final : public driver::CompiledModel {
 public:
  CpuCompiledModel(std::shared_ptr<const CpuProgram> program, std::shared_ptr<Scheduler> scheduler)
      : program_(std::move(program)),
        scheduler_(std::move(scheduler)),
        width_(std::make_shared<WidthChoice>(program_->threads, program_->choose_width)) {}
  const std::vector<driver::Port>& inputs() const override { return program_->inputs; }
  const std::vector<driver::Port>& outputs() const override { return program_->outputs; }
  std::unique_ptr<driver::InferRequest> create_infer_request() override {
    return core::make_infer_request(std::make_unique<CpuInferStep>(program_, scheduler_, width_));
  }
  std::vector<uint8_t> export_blob() const override { return export_program(*program_); }
  std::string device() const override { return program_->device; }

 private:
  std::shared_ptr<const CpuProgram> program_;
  std::shared_ptr<Scheduler> scheduler_;
  std::shared_ptr<WidthChoice> width_;
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
    {
      std::lock_guard lock(mutex_);
      configure_streams();
    }
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
             driver::kMetricRangeForAsyncInferRequests + " " + driver::kMetricOptimalNumberOfInferRequests + " " +
             kMetricNumStreams + " " + kMetricThreadsPerStream + " " + cpu_config().names();
    if (name == driver::kMetricOptimizationCapabilities) return "FP32 FP64 INT8 INT32 INT64 BOOL";
    // Requests beyond the streams only queue; fewer leave streams idle.
    if (name == driver::kMetricRangeForAsyncInferRequests)
      return "1 " + std::to_string(std::max(cores(), scheduler_->streams())) + " 1";
    if (name == driver::kMetricOptimalNumberOfInferRequests || name == kMetricNumStreams)
      return std::to_string(scheduler_->streams());
    if (name == kMetricThreadsPerStream) return std::to_string(scheduler_->threads_per_stream());
    fail(HETERO_NOT_FOUND, "the CPU driver has no metric '" + name + "'");
  }

  std::string get_config(const std::string& key) const override {
    std::lock_guard lock(mutex_);
    return cpu_config().get(options_, key);
  }
  void set_config(const driver::Config& config) override {
    std::lock_guard lock(mutex_);
    options_ = cpu_config().apply(options_, config, core::ConfigScope::Driver);
    configure_streams();
  }

  std::vector<driver::NodeSupport> query(const core::Model& model, const std::string& device_id,
                                         const driver::Config& config) const override {
    check_device(device_id);
    const CpuOptions options = options_with(config);
    std::vector<driver::NodeSupport> support;
    scheduler_->run(core::Priority::Normal, [&] { support = query_nodes(model, options, engine_); });
    return support;
  }

  std::unique_ptr<driver::CompiledModel> compile(const core::Model& model, const std::string& device_id,
                                                 const driver::Config& config) override {
    check_device(device_id);
    const CpuOptions options = options_with(config);
    std::shared_ptr<CpuProgram> program;
    // The stream reports to the caller's progress sink.
    core::ProgressSink* progress = core::progress_sink();
    PreparedModel prepared = prepare_compile(model, options);  // on this thread (cpu_compile.h)
    scheduler_->run(options.priority, [&] {
      core::ProgressScope scope(progress);
      program = plan_program(std::move(prepared), options, threads(options), engine_);
    });
    program->device = device_name(device_id);
    return std::make_unique<CpuCompiledModel>(std::move(program), scheduler_);
  }

  std::unique_ptr<driver::CompiledModel> import_blob(std::span<const uint8_t> blob, const std::string& device_id,
                                                     const driver::Config& config) override {
    check_device(device_id);
    const CpuOptions options = options_with(config);
    std::shared_ptr<CpuProgram> program;
    core::ProgressSink* progress = core::progress_sink();
    PreparedModel prepared = prepare_import(blob);
    scheduler_->run(options.priority, [&] {
      core::ProgressScope scope(progress);
      program = plan_program(std::move(prepared), options, threads(options), engine_);
    });
    program->device = device_name(device_id);
    return std::make_unique<CpuCompiledModel>(std::move(program), scheduler_);
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
  // The cores given to the driver: those the process may run on, within its
  // cgroup's CPU quota (cpu_budget.h).
  static int cores() { return usable_cpus(); }
  // A compile's OpenMP threads: num_threads, within one stream's share. A
  // realtime model takes one unless num_threads says otherwise: it runs on
  // the realtime lane beside the streams (drivers/cpu/scheduler.h).
  int threads(const CpuOptions& options) const {
    if (options.priority == core::Priority::Realtime && options.num_threads == 0) return 1;
    return std::min(options.threads_per_stream(cores()), scheduler_->threads_per_stream());
  }
  // The scheduler follows the driver's options (mutex_ held).
  void configure_streams() {
    scheduler_->configure(options_.streams(cores()), options_.threads_per_stream(cores()), options_.pin_threads,
                          options_.stream_nice, options_.lane_nice);
  }

  CpuOptions options_with(const driver::Config& config) const {
    std::lock_guard lock(mutex_);
    return cpu_config().apply(options_, config, core::ConfigScope::Any);
  }

  mutable dnnl::engine engine_;
  // Shared with compiled models and requests: the streams live as long as
  // anything can still run on them.
  std::shared_ptr<Scheduler> scheduler_ = std::make_shared<Scheduler>();
  std::string full_name_;
  mutable std::mutex mutex_;
  CpuOptions options_ = cpu_config().defaults();
};

}  // namespace

}  // namespace hetero::cpu

HETERO_DRIVER_MODULE("CPU", [] { return std::make_unique<hetero::cpu::CpuDriver>(); })
