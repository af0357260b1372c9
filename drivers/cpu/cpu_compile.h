// Compiling a model for the CPU driver: options, the compiled program that
// infer requests share, and its export/import.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include <dnnl.hpp>

#include "core/config_table.h"
#include "core/driver.h"
#include "drivers/cpu/plan.h"

namespace hetero::cpu {

// The CPU driver's options, one field per config key; cpu_config() has each
// key's default and meaning.
struct CpuOptions {
  int num_threads;
  bool optimize;
  std::vector<std::string> ops;
  int device_count;
  std::string performance_hint;  // "latency" or "throughput"
  int num_streams;
  bool pin_threads;
  int stream_nice;
  int lane_nice;
  core::Priority priority;

  // The streams and threads per stream these options ask for, on `cores`
  // cores: never more threads in all than cores.
  int streams(int cores) const;
  int threads_per_stream(int cores) const;
  // Whether `ops` lets the device run `node`.
  bool allows(const core::Node& node) const;
};

const core::ConfigTable<CpuOptions>& cpu_config();

struct CpuProgram {
  std::unique_ptr<core::Model> model;  // the driver's own, optimized copy
  // export_program(): the optimized model as core/ir_codec bytes; for an
  // imported program, the very block its constants view.
  std::span<const uint8_t> exported;
  std::shared_ptr<const void> exported_owner;
  dnnl::engine engine;
  std::shared_ptr<Plan> plan;
  std::vector<driver::Port> inputs, outputs;
  int threads = 1;  // OpenMP threads per inference: those of one stream
  core::Priority priority = core::Priority::Normal;
  std::string device;
};

// `threads`: the OpenMP threads an inference of the program runs with (the
// stream's), which oneDNN's primitives are made for.
std::shared_ptr<CpuProgram> compile_program(const core::Model& model, const CpuOptions& options, int threads,
                                            dnnl::engine& engine);
std::vector<driver::NodeSupport> query_nodes(const core::Model& model, const CpuOptions& options,
                                             dnnl::engine& engine);
std::vector<uint8_t> export_program(const CpuProgram& program);
std::shared_ptr<CpuProgram> import_program(std::span<const uint8_t> blob, const CpuOptions& options, int threads,
                                           dnnl::engine& engine);

}  // namespace hetero::cpu
