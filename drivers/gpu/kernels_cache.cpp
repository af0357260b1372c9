#include "drivers/gpu/kernels_cache.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <thread>

#include "core/error.h"
#include "core/progress.h"
#include "drivers/gpu/kernel_sources.h"

namespace hetero::gpu {

const char* kernel_build_options() {
  // Exact IEEE division and square root: results are compared with the CPU
  // driver's within 1e-4.
  return "-cl-std=CL1.2";
}

BuiltKernels build_kernels(Device& device, const std::map<std::string, std::string>& codes, size_t per_batch,
                           size_t threads, const char* progress_stage) {
  BuiltKernels out;
  per_batch = std::max<size_t>(1, per_batch);
  // std::map iterates in name order: the same kernels give the same batches
  // (and blobs the same bytes).
  std::vector<std::string> batch;
  auto flush = [&] {
    if (batch.empty()) return;
    ProgramSource ps;
    ps.source = std::string(kernel_source("common"));
    for (const std::string& name : batch) {
      ps.source += "\n" + codes.at(name);
      out.program_of[name] = static_cast<uint32_t>(out.programs.size());
    }
    ps.options = kernel_build_options();
    out.programs.push_back(std::move(ps));
    batch.clear();
  };
  for (const auto& [name, code] : codes) {
    batch.push_back(name);
    if (batch.size() == per_batch) flush();
  }
  flush();

  out.executables.resize(out.programs.size());
  std::vector<std::exception_ptr> errors(out.programs.size());
  std::atomic<size_t> next{0}, built{0};
  std::atomic<bool> out_of_time{false};  // the sink's deadline (core/progress.h) passed
  const uint64_t total = out.programs.size();
  core::ProgressSink* progress = core::progress_sink();
  core::report_progress(progress_stage, 0, total);
  // Progress goes to the sink from this thread alone, which builds batches
  // too: it reports how many all threads have built after each of its own.
  auto worker = [&](bool reporting) {
    for (size_t i; !out_of_time && (i = next.fetch_add(1)) < out.programs.size();) {
      try {
        out.executables[i] = device.build(out.programs[i].source, out.programs[i].options);
      } catch (...) {
        errors[i] = std::current_exception();
      }
      const size_t done = built.fetch_add(1) + 1;
      if (reporting && progress) {
        progress->report(progress_stage, done, total);
        if (progress->past_deadline()) out_of_time = true;
      }
    }
  };
  const size_t n = std::min(std::max<size_t>(1, threads), out.programs.size());
  std::vector<std::thread> pool;
  for (size_t t = 1; t < n; ++t) pool.emplace_back(worker, false);
  worker(true);
  for (std::thread& t : pool) t.join();
  core::check_deadline();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
  core::report_progress(progress_stage, total, total);
  return out;
}

}  // namespace hetero::gpu
