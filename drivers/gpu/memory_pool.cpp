#include "drivers/gpu/memory_pool.h"

#include <algorithm>
#include <limits>

#include "core/error.h"

namespace hetero::gpu {

namespace {

struct RefLess {
  bool operator()(const Ref& a, const Ref& b) const {
    return std::tie(a.kind, a.index) < std::tie(b.kind, b.index);
  }
};

}  // namespace

void plan_network(const ProgramGraph& g, const std::map<std::string, uint32_t>& kernel_index, NetworkPlan& plan) {
  // Views share their input's bytes: every value maps to the root that owns them.
  std::map<std::string, std::string> alias;
  for (const ProgramNode& n : g.nodes)
    if (n.prim.kind == PrimKind::View) alias[n.prim.output] = n.prim.inputs.at(0);
  auto root_of = [&](std::string v) {
    for (auto it = alias.find(v); it != alias.end(); it = alias.find(v)) v = it->second;
    return v;
  };
  auto bytes_of = [&](const std::string& v) { return core::shape_numel(g.shapes.at(v)) * core::dtype_size(g.dtype(v)); };

  struct Use {
    const Launch* launch;
    std::string node;
  };
  std::vector<Use> launches;
  for (const ProgramNode& n : g.nodes)
    for (const Launch& l : n.launches) launches.push_back({&l, n.prim.id});

  std::map<std::string, Ref> refs;
  std::set<std::string> used_roots;
  for (const Use& u : launches)
    for (const std::string& a : u.launch->args) used_roots.insert(root_of(a));
  for (size_t i = 0; i < g.inputs.size(); ++i) {
    refs[g.inputs[i]] = {Ref::Kind::Input, static_cast<uint32_t>(i)};
    plan.input_bytes.push_back(used_roots.count(g.inputs[i]) ? bytes_of(g.inputs[i]) : 0);
  }
  auto constant_ref = [&](const std::string& name) {
    auto it = refs.find(name);
    if (it != refs.end()) return it->second;
    const Ref r{Ref::Kind::Constant, static_cast<uint32_t>(plan.constants.size())};
    plan.constants.push_back(g.constants.at(name));
    return refs[name] = r;
  };

  // Live ranges of the pooled roots, in launch order.
  constexpr size_t kForever = std::numeric_limits<size_t>::max();
  std::map<std::string, size_t> last_use;
  std::set<std::string> outputs;
  for (const std::string& o : g.outputs) outputs.insert(root_of(o));
  for (size_t s = 0; s < launches.size(); ++s)
    for (const std::string& a : launches[s].launch->args) {
      const std::string r = root_of(a);
      last_use[r] = outputs.count(r) ? kForever : s;
    }

  // Free buffers by size; a tensor takes the smallest that fits, else the
  // largest free one grown to fit, else a new one.
  std::vector<std::pair<std::string, uint32_t>> held;  // root → pool buffer
  std::vector<uint32_t> free_buffers;
  auto assign = [&](const std::string& r, size_t s) {
    for (auto it = held.begin(); it != held.end();) {
      if (last_use[it->first] < s) {
        free_buffers.push_back(it->second);
        it = held.erase(it);
      } else {
        ++it;
      }
    }
    const uint64_t need = bytes_of(r);
    plan.intermediate_bytes += need;
    int best = -1;
    for (size_t i = 0; i < free_buffers.size(); ++i) {
      const uint64_t have = plan.pool_bytes[free_buffers[i]];
      if (have >= need && (best < 0 || have < plan.pool_bytes[free_buffers[size_t(best)]])) best = int(i);
    }
    if (best < 0)
      for (size_t i = 0; i < free_buffers.size(); ++i)
        if (best < 0 || plan.pool_bytes[free_buffers[i]] > plan.pool_bytes[free_buffers[size_t(best)]]) best = int(i);
    uint32_t buffer;
    if (best >= 0) {
      buffer = free_buffers[size_t(best)];
      free_buffers.erase(free_buffers.begin() + best);
      plan.pool_bytes[buffer] = std::max(plan.pool_bytes[buffer], need);
    } else {
      buffer = static_cast<uint32_t>(plan.pool_bytes.size());
      plan.pool_bytes.push_back(need);
    }
    held.emplace_back(r, buffer);
    return refs[r] = Ref{Ref::Kind::Pool, buffer};
  };
  auto ref_of = [&](const std::string& v, size_t s, bool write) -> Ref {
    const std::string r = root_of(v);
    if (auto it = refs.find(r); it != refs.end()) return it->second;
    if (g.constants.count(r)) return constant_ref(r);
    if (!write) fail(HETERO_INTERNAL, "GPU plan: '" + v + "' is read before it is written");
    return assign(r, s);
  };

  std::map<Ref, int32_t, RefLess> last_writer;
  std::map<Ref, std::vector<uint32_t>, RefLess> readers;
  for (size_t s = 0; s < launches.size(); ++s) {
    const Launch& l = *launches[s].launch;
    Step step;
    if (l.gemm) step.gemm = l.gemm;
    else step.kernel = kernel_index.at(l.kernel);
    step.range = l.range;
    step.node = launches[s].node;
    std::set<uint32_t> deps;
    // Reads first: a step's output never shares a buffer with its inputs.
    for (size_t i = 0; i < l.args.size(); ++i) {
      if (i == l.output_arg) {
        step.args.push_back({});
        continue;
      }
      const Ref r = ref_of(l.args[i], s, false);
      step.args.push_back(r);
      if (auto w = last_writer.find(r); w != last_writer.end()) deps.insert(uint32_t(w->second));
    }
    const Ref out = ref_of(l.args[l.output_arg], s, true);
    step.args[l.output_arg] = out;
    if (auto w = last_writer.find(out); w != last_writer.end()) deps.insert(uint32_t(w->second));
    for (uint32_t r : readers[out]) deps.insert(r);
    for (size_t i = 0; i < l.args.size(); ++i)
      if (i != l.output_arg) readers[step.args[i]].push_back(uint32_t(s));
    last_writer[out] = int32_t(s);
    readers[out].clear();
    deps.erase(uint32_t(s));
    step.deps.assign(deps.begin(), deps.end());
    plan.steps.push_back(std::move(step));
  }

  for (const std::string& o : g.outputs) {
    const std::string r = root_of(o);
    NetworkPlan::Output out;
    out.shape = g.shapes.at(o);
    out.dtype = g.dtype(o);
    if (auto it = refs.find(r); it != refs.end()) {
      out.ref = it->second;
    } else if (g.constants.count(r)) {
      out.ref = constant_ref(r);
    } else {
      // Written by no launch (an empty tensor): a buffer of its own.
      out.ref = {Ref::Kind::Pool, static_cast<uint32_t>(plan.pool_bytes.size())};
      plan.pool_bytes.push_back(bytes_of(r));
      refs[r] = out.ref;
    }
    if (auto w = last_writer.find(out.ref); w != last_writer.end()) out.last_writer = w->second;
    plan.outputs.push_back(out);
  }
}

}  // namespace hetero::gpu
