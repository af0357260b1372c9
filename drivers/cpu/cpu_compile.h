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
  int max_inference_mb;  // memory one inference's values may take; 0: no limit

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
  // Whether inferences may run narrower where that is faster
  // (width_choice.h): unless the user set num_threads.
  bool choose_width = true;
  core::Priority priority = core::Priority::Normal;
  uint64_t max_inference_bytes = 0;  // RunControl::max_bytes
  std::string device;
};

// A compile, and an import, in two parts.
//
// The graph work (compile: the 'ops' check, function expansion, the graph
// passes, the export's encoding; import: the copy and decoding of the blob)
// makes no kernel and runs no OpenMP, so it runs on the caller's thread and
// holds no stream. For a big model it is most of a compile (a model of 2^16
// nodes: 430 of 460 ms), and a stream held that long would keep every other
// model's inferences waiting.
//
// The plan (plan_program) makes the kernels and their oneDNN primitives,
// which are made for the OpenMP thread count they will run with, so it runs
// on a stream, and lets higher-priority work in between two nodes.
struct PreparedModel {
  std::unique_ptr<core::Model> model;
  // What export_program() gives: the optimized model's bytes; for an import,
  // the block the model's constants view.
  std::span<const uint8_t> exported;
  std::shared_ptr<const void> exported_owner;
};
PreparedModel prepare_compile(const core::Model& model, const CpuOptions& options);
PreparedModel prepare_import(std::span<const uint8_t> blob);
// `threads`: the OpenMP threads an inference of the program runs with (the
// stream's), which oneDNN's primitives are made for.
std::shared_ptr<CpuProgram> plan_program(PreparedModel prepared, const CpuOptions& options, int threads,
                                         dnnl::engine& engine);
std::vector<driver::NodeSupport> query_nodes(const core::Model& model, const CpuOptions& options,
                                             dnnl::engine& engine);
std::vector<uint8_t> export_program(const CpuProgram& program);

}  // namespace hetero::cpu
