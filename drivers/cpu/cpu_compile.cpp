#include "drivers/cpu/cpu_compile.h"

#include "drivers/cpu/graph_passes.h"

#include <omp.h>

#include <algorithm>
#include <charconv>
#include <cstring>

#include "core/error.h"
#include "core/function_expand.h"
#include "core/ir_codec.h"
#include "core/mapped_file.h"
#include "core/config_list.h"
#include "core/ports.h"

namespace hetero::cpu {

namespace {

constexpr const char* kKeys = "(keys: num_threads, optimize, ops, device_count)";

}  // namespace

void CpuOptions::apply(const driver::Config& config) {
  for (const auto& [key, value] : config) {
    if (key == "device_count") {
      int n = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || end != value.data() + value.size() || n < 1 || n > 16)
        fail(HETERO_INVALID_ARGUMENT, "CPU config device_count must be an integer 1..16, got '" + value + "'");
      device_count = n;
    } else if (key == "ops") {
      ops = core::split_config_list(value);
    } else if (key == "num_threads") {
      int n = -1;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec != std::errc() || end != value.data() + value.size() || n < 0 || n > 1024)
        fail(HETERO_INVALID_ARGUMENT, "CPU config num_threads must be an integer 0..1024 (0: one per core), got '" +
                                          value + "'");
      num_threads = n;
    } else if (key == "optimize") {
      if (value != "true" && value != "false")
        fail(HETERO_INVALID_ARGUMENT, "CPU config optimize must be true or false, got '" + value + "'");
      optimize = value == "true";
    } else {
      fail(HETERO_INVALID_ARGUMENT, "the CPU driver has no config key '" + key + "' " + kKeys);
    }
  }
}

std::string CpuOptions::get(const std::string& key) const {
  if (key == "num_threads") return std::to_string(num_threads);
  if (key == "optimize") return optimize ? "true" : "false";
  if (key == "device_count") return std::to_string(device_count);
  if (key == "ops") {
    std::string list;
    for (const std::string& op : ops) list += (list.empty() ? "" : ",") + op;
    return list;
  }
  fail(HETERO_INVALID_ARGUMENT, "the CPU driver has no config key '" + key + "' " + kKeys);
}

bool CpuOptions::allows(const core::Node& node) const {
  // Constants are copied into every submodel that uses them, whatever runs it.
  return ops.empty() || node.op_type == "Constant" || std::find(ops.begin(), ops.end(), node.op_type) != ops.end();
}

int CpuOptions::threads() const { return num_threads > 0 ? num_threads : omp_get_num_procs(); }

namespace {

bool has_kernel(const core::Node& node) {
  return KernelRegistry::builtin().find(node.op_type, node.domain, node.opset) != nullptr;
}

// Replaces nodes no kernel handles by their ONNX function bodies, until every
// node has a kernel or no body is left to expand.
void expand_functions(core::Graph& graph, const core::Model& model) {
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& node : graph.nodes()) {
      if (!has_kernel(*node) && core::has_function_body(*node) && core::expand_function(graph, *node, model)) {
        changed = true;
        break;  // the node list changed under us
      }
    }
  }
}

}  // namespace

namespace {

// The program of an optimized model: its execution plan and ports.
std::shared_ptr<CpuProgram> plan_program(std::unique_ptr<core::Model> model, const CpuOptions& options,
                                         dnnl::engine& engine) {
  auto program = std::make_shared<CpuProgram>();
  program->model = std::move(model);
  program->engine = engine;
  program->threads = options.threads();
  // Weight reorders at compile time use the same thread count as inference.
  omp_set_num_threads(program->threads);
  program->plan = Plan::compile(program->model->graph, *program->model, program->engine);
  for (const core::Value* v : program->model->graph.inputs) program->inputs.push_back(core::port_of(*v));
  for (const core::Value* v : program->model->graph.outputs) program->outputs.push_back(core::port_of(*v));
  return program;
}

}  // namespace

std::shared_ptr<CpuProgram> compile_program(const core::Model& model, const CpuOptions& options,
                                            dnnl::engine& engine) {
  for (const auto& node : model.graph.nodes())
    if (!options.allows(*node))
      fail(HETERO_NOT_SUPPORTED, node->describe() + " is left out by the CPU device's 'ops' config");
  auto optimized = model.clone();
  expand_functions(optimized->graph, *optimized);
  if (options.optimize) optimize_graph(*optimized);
  // The export is the optimized graph itself: importing it skips ONNX
  // parsing, checking, shape inference and the graph passes.
  auto exported = std::make_shared<const std::vector<uint8_t>>(core::encode_model(*optimized));
  auto program = plan_program(std::move(optimized), options, engine);
  program->exported = *exported;
  program->exported_owner = std::move(exported);
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
    } catch (const Error& e) {
      s.reason = e.what();
    }
  }
  return result;
}

std::vector<uint8_t> export_program(const CpuProgram& program) {
  return {program.exported.begin(), program.exported.end()};
}

std::shared_ptr<CpuProgram> import_program(std::span<const uint8_t> blob, const CpuOptions& options,
                                           dnnl::engine& engine) {
  // The one copy of an import: the caller's bytes live only for this call.
  std::shared_ptr<const void> block = core::aligned_block(blob.empty() ? 1 : blob.size());
  std::memcpy(const_cast<void*>(block.get()), blob.data(), blob.size());
  const std::span<const uint8_t> bytes(static_cast<const uint8_t*>(block.get()), blob.size());
  auto program = plan_program(core::decode_model(bytes, block, "CPU blob"), options, engine);
  program->exported = bytes;
  program->exported_owner = std::move(block);
  return program;
}

}  // namespace hetero::cpu
