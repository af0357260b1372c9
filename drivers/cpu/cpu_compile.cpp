#include "drivers/cpu/cpu_compile.h"

#include "drivers/cpu/graph_passes.h"

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/function_expand.h"
#include "core/ir_codec.h"
#include "core/mapped_file.h"
#include "core/progress.h"
#include "core/ports.h"

namespace hetero::cpu {

const core::ConfigTable<CpuOptions>& cpu_config() {
  static const core::ConfigTable<CpuOptions> table(
      "CPU",
      {
          core::int_key("num_threads", &CpuOptions::num_threads, 0, 0, 1024,
                        "threads per inference (per stream), at most the cores over num_streams; 0: up to "
                        "a stream's share, as many as are faster for the model"),
          core::bool_key("optimize", &CpuOptions::optimize, true, "graph passes: BatchNorm folding, post-op fusion"),
          core::ops_key(&CpuOptions::ops, ". With device_count, lets one CPU stand in for two unlike devices"),
          core::int_key("device_count", &CpuOptions::device_count, 1, 1, 16,
                        "devices the driver lists (CPU, CPU.1, ...), all this processor", core::ConfigScope::Driver),
          core::choice_key("performance_hint", &CpuOptions::performance_hint, {"latency", "throughput"}, "latency",
                           "latency: one stream with every core, for the fastest single inference; throughput: "
                           "one stream per core, for the most inferences side by side",
                           core::ConfigScope::Driver),
          core::int_key("num_streams", &CpuOptions::num_streams, 0, 0, 64,
                        "inferences that run side by side, each on its share of the cores; 0: from "
                        "performance_hint",
                        core::ConfigScope::Driver),
          core::bool_key("pin_threads", &CpuOptions::pin_threads, false,
                         "bind each stream's threads to cores of its own", core::ConfigScope::Driver),
          core::int_key("stream_nice", &CpuOptions::stream_nice, 10, 0, 19,
                        "how much nicer than the process the streams run once a realtime model is compiled, "
                        "so that the system gives the realtime lane a core at once; 0: as nice as the rest",
                        core::ConfigScope::Driver),
          core::int_key("lane_nice", &CpuOptions::lane_nice, -10, -20, 0,
                        "niceness of the realtime lane relative to the process, so that other processes' "
                        "threads do not take its core mid-inference; applied where the system allows it "
                        "(root, CAP_SYS_NICE or RLIMIT_NICE), else the lane runs as nice as the process",
                        core::ConfigScope::Driver),
          core::int_key("max_inference_mb", &CpuOptions::max_inference_mb, 0, 0, 1 << 20,
                        "memory the values of one inference (its intermediates and outputs) may take, in MiB; "
                        "past it the inference fails with OUT_OF_MEMORY; 0: no limit"),
          core::priority_key(&CpuOptions::priority,
                             "; a running inference lets waiting ones of higher priority run between its nodes"),
      });
  return table;
}

bool CpuOptions::allows(const core::Node& node) const { return core::ops_allow(ops, node); }

int CpuOptions::streams(int cores) const {
  if (num_streams > 0) return std::min(num_streams, cores);
  return performance_hint == "throughput" ? cores : 1;
}

int CpuOptions::threads_per_stream(int cores) const {
  const int share = std::max(1, cores / streams(cores));
  return num_threads > 0 ? std::min(num_threads, share) : share;
}

namespace {

bool has_kernel(const core::Node& node) {
  return KernelRegistry::builtin().find(node.op_type, node.domain, node.opset) != nullptr;
}

}  // namespace

PreparedModel prepare_compile(const core::Model& model, const CpuOptions& options) {
  for (const auto& node : model.graph.nodes())
    if (!options.allows(*node))
      fail(HETERO_NOT_SUPPORTED, node->describe() + " is left out by the CPU device's 'ops' config");
  PreparedModel prepared;
  prepared.model = model.clone();
  // Nodes no kernel handles become their ONNX function bodies.
  core::expand_functions(prepared.model->graph, *prepared.model, [](const core::Node& n) { return !has_kernel(n); });
  core::check_deadline();
  if (options.optimize) optimize_graph(*prepared.model);
  core::check_deadline();
  // The export is the optimized graph itself: importing it skips ONNX
  // parsing, checking, shape inference and the graph passes.
  auto exported = std::make_shared<const std::vector<uint8_t>>(core::encode_model(*prepared.model));
  prepared.exported = *exported;
  prepared.exported_owner = std::move(exported);
  return prepared;
}

PreparedModel prepare_import(std::span<const uint8_t> blob) {
  // The one copy of an import: the caller's bytes live only for this call.
  std::shared_ptr<const void> block = core::aligned_block(blob.empty() ? 1 : blob.size());
  std::memcpy(const_cast<void*>(block.get()), blob.data(), blob.size());
  PreparedModel prepared;
  prepared.exported = std::span<const uint8_t>(static_cast<const uint8_t*>(block.get()), blob.size());
  prepared.model = core::decode_model(prepared.exported, block, "CPU blob");
  prepared.exported_owner = std::move(block);
  return prepared;
}

std::shared_ptr<CpuProgram> plan_program(PreparedModel prepared, const CpuOptions& options, int threads,
                                         dnnl::engine& engine) {
  auto program = std::make_shared<CpuProgram>();
  program->model = std::move(prepared.model);
  program->exported = prepared.exported;
  program->exported_owner = std::move(prepared.exported_owner);
  program->engine = engine;
  program->threads = threads;
  program->choose_width = options.num_threads == 0;
  program->priority = options.priority;
  program->max_inference_bytes = uint64_t(options.max_inference_mb) << 20;
  // Weight reorders at compile time use the same thread count as inference.
  omp_set_num_threads(program->threads);
  program->plan = Plan::compile(program->model->graph, *program->model, program->engine);
  program->inputs = core::ports_of(program->model->graph.inputs);
  program->outputs = core::ports_of(program->model->graph.outputs);
  return program;
}

std::vector<driver::NodeSupport> query_nodes(const core::Model& model, const CpuOptions& options,
                                             dnnl::engine& engine) {
  std::vector<driver::NodeSupport> result(model.graph.nodes().size());
  KernelBuild::Compiler compile_subgraph = [&](const core::Graph& g) { return Plan::compile(g, model, engine); };
  for (const auto& node : model.graph.nodes()) {
    driver::NodeSupport& s = result[node->index];
    if (!options.allows(*node)) {
      s.reason = node->op_type + " is left out by the device's 'ops' config";
      continue;
    }
    const KernelFactory* factory = KernelRegistry::builtin().find(node->op_type, node->domain, node->opset);
    if (!factory) {
      if (core::has_function_body(*node)) {
        s.supported = true;  // runs as its ONNX function body
      } else {
        s.reason = "no CPU kernel for " + (node->domain.empty() ? "" : node->domain + ".") + node->op_type +
                   " at opset " + std::to_string(node->opset);
      }
      continue;
    }
    try {
      KernelBuild build{*node, node->opset, engine, compile_subgraph};
      (void)(*factory)(build);
      s.supported = true;
    } catch (const Failure& e) {
      s.reason = e.what();
    }
  }
  return result;
}

std::vector<uint8_t> export_program(const CpuProgram& program) {
  return {program.exported.begin(), program.exported.end()};
}

}  // namespace hetero::cpu
