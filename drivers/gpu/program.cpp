// Building a program: topology → program nodes → passes → kernel selection →
// batch compilation → network plan.
#include "drivers/gpu/program.h"

#include <set>
#include <thread>

#include "core/error.h"
#include "core/ports.h"
#include "drivers/gpu/kernels_cache.h"
#include "drivers/gpu/memory_pool.h"
#include "drivers/gpu/tuner.h"

namespace hetero::gpu {

ProgramGraph init_program(Topology topology) {
  ProgramGraph g;
  for (Primitive& p : topology.primitives) {
    ProgramNode n;
    n.prim = std::move(p);
    g.nodes.push_back(std::move(n));
  }
  g.shapes = std::move(topology.shapes);
  g.dtypes = std::move(topology.dtypes);
  g.constants = std::move(topology.constants);
  g.inputs = std::move(topology.inputs);
  g.outputs = std::move(topology.outputs);
  return g;
}

namespace {

// Drops nodes whose output no graph output needs (the shape arithmetic that
// folding replaced leaves none, but a HETERO cut may).
void remove_dead_nodes(ProgramGraph& g) {
  std::set<std::string> needed(g.outputs.begin(), g.outputs.end());
  std::vector<bool> keep(g.nodes.size());
  for (size_t i = g.nodes.size(); i-- > 0;) {
    const ProgramNode& n = g.nodes[i];
    if (!needed.count(n.prim.output)) continue;
    keep[i] = true;
    for (const std::string& in : n.prim.inputs)
      if (!in.empty()) needed.insert(in);
    for (const PostOp& p : n.post_ops)
      if (!p.tensor.empty()) needed.insert(p.tensor);
  }
  std::vector<ProgramNode> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (keep[i]) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);
}

}  // namespace

std::shared_ptr<CompiledProgram> assemble_program(const ProgramGraph& g, std::shared_ptr<Device> device,
                                                  const BuiltKernels& built) {
  auto program = std::make_shared<CompiledProgram>();
  program->device = device;
  NetworkPlan& plan = program->plan;
  plan.programs = built.programs;
  program->executables = built.executables;
  std::map<std::string, uint32_t> kernel_index;
  for (const ProgramNode& n : g.nodes)
    for (const Launch& l : n.launches) {
      if (l.gemm || kernel_index.count(l.kernel)) continue;
      kernel_index[l.kernel] = static_cast<uint32_t>(plan.kernels.size());
      plan.kernels.push_back({l.kernel, built.program_of.at(l.kernel)});
    }
  plan_network(g, kernel_index, plan);
  for (const core::Tensor& c : plan.constants)
    program->constant_buffers.push_back(device->allocate(std::max<size_t>(c.nbytes(), 4), c.nbytes() ? c.raw() : nullptr));
  return program;
}

std::shared_ptr<CompiledProgram> build_program(ProgramGraph g, std::shared_ptr<Device> device,
                                               const BuildOptions& options) {
  remove_dead_nodes(g);
  std::vector<TuningRecord> tuning;
  if (options.optimize) {
    passes::fold_channel_constants(g);
    passes::fuse_post_ops(g);
    passes::fuse_squeeze_excite(g);
    tuning = choose_variants(g, *device, options.tuning, options.kernels_per_batch);
    passes::reorder_weights(g);
  } else {
    // The plain kernels, reading B as given unless it is marked transposed.
    for (ProgramNode& n : g.nodes)
      n.weights_transposed = n.prim.kind == PrimKind::MatMul && !n.prim.attrs.perm.empty() && n.prim.attrs.perm[0] == 1;
  }
  passes::choose_layouts(g);

  const std::map<std::string, std::string> codes = select_kernels(g, *device);
  const size_t threads = std::max(1u, std::thread::hardware_concurrency());
  auto program = assemble_program(g, device, build_kernels(*device, codes, options.kernels_per_batch, threads));
  program->plan.tuning = std::move(tuning);
  return program;
}

std::shared_ptr<CompiledProgram> build_program(const core::Model& model, std::shared_ptr<Device> device,
                                               const BuildOptions& options, const ConditionChoices& choices) {
  auto program = build_program(init_program(build_topology(model.graph, nullptr, choices)), std::move(device), options);
  program->inputs = core::ports_of(model.graph.inputs);
  program->outputs = core::ports_of(model.graph.outputs);
  return program;
}

}  // namespace hetero::gpu
