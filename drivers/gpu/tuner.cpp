#include "drivers/gpu/tuner.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include "core/error.h"
#include "core/progress.h"
#include "drivers/gpu/kernels_cache.h"
#include "drivers/gpu/network.h"

namespace hetero::gpu {

namespace {

// A node is worth timing from this many FLOPs: below it the candidates run
// in a few microseconds and launch costs decide.
double heavy_flops(Tuning level) { return level == Tuning::Full ? 2e5 : 1e6; }
// Timing rounds: each round times every candidate once, the minimum counts.
int rounds(Tuning level) { return level == Tuning::Full ? 9 : 5; }
// How many node shapes a compile tunes at most, the heaviest first: every
// candidate is a kernel to compile, which takes the device compiler a second
// or more (PoCL).
size_t max_tuned(Tuning level) { return level == Tuning::Full ? std::numeric_limits<size_t>::max() : 12; }

// The process's choices: device name → node key → record.
struct Cache {
  std::mutex mutex;
  std::map<std::string, std::map<std::string, TuningRecord>> choices;
  std::map<std::string, uint64_t> runs;
};
Cache& cache() {
  static Cache c;
  return c;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// One node alone with one candidate variant: its inputs are the node's
// non-constant operands, its output the node's.
ProgramGraph one_node_graph(const ProgramNode& node, const KernelVariant& variant, const ProgramGraph& g) {
  ProgramGraph one;
  ProgramNode n = node;
  n.variant = variant;
  n.launches.clear();
  std::vector<std::string> operands = n.prim.inputs;
  for (const PostOp& p : n.post_ops)
    if (!p.tensor.empty()) operands.push_back(p.tensor);
  for (const std::string& v : operands) {
    if (v.empty() || one.shapes.count(v)) continue;
    one.shapes[v] = g.shapes.at(v);
    if (auto c = g.constants.find(v); c != g.constants.end()) one.constants[v] = c->second;
    else one.inputs.push_back(v);
  }
  one.shapes[n.prim.output] = g.shapes.at(n.prim.output);
  one.outputs = {n.prim.output};
  one.nodes.push_back(std::move(n));
  passes::reorder_weights(one);
  return one;
}

struct Candidate {
  ProgramGraph* graph;
  std::unique_ptr<Network> network;
  double best_ms = std::numeric_limits<double>::infinity();
  bool dropped = false;
};

// Times one node's candidates against each other.
void time_candidates(std::vector<Candidate>& candidates, Device& device, const BuiltKernels& built, int rounds) {
  auto shared = std::shared_ptr<Device>(&device, [](Device*) {});
  double fastest_warm = std::numeric_limits<double>::infinity();
  for (Candidate& c : candidates) {
    std::vector<core::Tensor> zeros;
    for (const std::string& in : c.graph->inputs) {
      core::Tensor t = core::Tensor::allocate(core::DType::F32, c.graph->shapes.at(in));
      std::fill_n(static_cast<uint8_t*>(t.raw()), t.nbytes(), 0);
      zeros.push_back(std::move(t));
    }
    c.network = std::make_unique<Network>(assemble_program(*c.graph, shared, built));
    c.network->execute(zeros);  // inputs written; the device's first-launch work done
    const auto t0 = std::chrono::steady_clock::now();
    c.network->run_steps();
    fastest_warm = std::min(fastest_warm, ms_since(t0));
  }
  // Short kernels are launched several times per sample so that waiting for
  // them does not dominate what is measured.
  const auto repeat = static_cast<size_t>(std::clamp(0.5 / std::max(fastest_warm, 1e-3), 1.0, 16.0));
  for (int r = 0; r < rounds; ++r) {
    double best = std::numeric_limits<double>::infinity();
    for (const Candidate& c : candidates) best = std::min(best, c.best_ms);
    for (Candidate& c : candidates) {
      if (c.dropped) continue;
      const auto t0 = std::chrono::steady_clock::now();
      c.network->run_steps(repeat);
      c.best_ms = std::min(c.best_ms, ms_since(t0) / static_cast<double>(repeat));
      // Far behind after two rounds: no point timing it further.
      if (r >= 1 && c.best_ms > 3 * best) c.dropped = true;
    }
  }
}

}  // namespace

void TuningSession::add(const std::string& key, const ProgramNode& node, const ProgramGraph& g,
                        const std::vector<KernelVariant>& candidates) {
  auto& list = nodes_[key];
  for (const KernelVariant& v : candidates) list.emplace_back(v, one_node_graph(node, v, g));
}

std::map<std::string, std::vector<TuningSession::Timed>> TuningSession::run(int rounds) {
  std::map<std::string, std::string> codes;
  for (auto& [key, list] : nodes_)
    for (auto& [variant, graph] : list)
      for (const auto& [name, code] : select_kernels(graph, device_)) codes.emplace(name, code);
  std::map<std::string, std::vector<Timed>> out;
  if (codes.empty()) return out;
  const BuiltKernels built = build_kernels(device_, codes, kernels_per_batch_, std::max(1u, std::thread::hardware_concurrency()),
                                           "building tuning candidates");
  // Progress in candidates timed, a node's all at once (they are timed in
  // alternating rounds).
  uint64_t timed = 0, candidate_count = 0;
  for (const auto& [key, list] : nodes_) candidate_count += list.size();
  core::report_progress("timing tuning candidates", 0, candidate_count);
  for (auto& [key, list] : nodes_) {
    std::vector<Candidate> candidates;
    for (auto& [variant, graph] : list) candidates.push_back({&graph, nullptr});
    time_candidates(candidates, device_, built, rounds);
    for (size_t i = 0; i < list.size(); ++i)
      out[key].push_back({list[i].first, candidates[i].best_ms});
    timed += list.size();
    core::report_progress("timing tuning candidates", timed, candidate_count);
    core::check_deadline();
  }
  nodes_.clear();
  return out;
}

const char* tuning_name(Tuning t) {
  switch (t) {
    case Tuning::Off: return "off";
    case Tuning::Fast: return "fast";
    case Tuning::Full: return "full";
  }
  return "?";
}

Tuning parse_tuning(const std::string& text, const std::string& what) {
  if (text == "off") return Tuning::Off;
  if (text == "fast") return Tuning::Fast;
  if (text == "full") return Tuning::Full;
  fail(HETERO_INVALID_ARGUMENT, what + " must be off, fast or full, got '" + text + "'");
}

uint64_t tuning_runs(const std::string& device) {
  std::lock_guard lock(cache().mutex);
  auto it = cache().runs.find(device);
  return it == cache().runs.end() ? 0 : it->second;
}

void remember_choices(const std::string& device, const std::vector<TuningRecord>& records) {
  std::lock_guard lock(cache().mutex);
  auto& mine = cache().choices[device];
  for (const TuningRecord& r : records) {
    if (r.level == 0 || !KernelVariant::parse(r.variant)) continue;
    auto it = mine.find(r.key);
    if (it == mine.end() || it->second.level < r.level) mine[r.key] = r;
  }
}

std::vector<TuningRecord> choose_variants(ProgramGraph& g, Device& device, Tuning level, size_t kernels_per_batch) {
  const DeviceTraits traits = device.traits();
  // Nodes of the same key (shapes and attributes) share one choice.
  std::map<std::string, TuningRecord> chosen;
  std::map<std::string, std::vector<ProgramNode*>> pending;
  for (ProgramNode& n : g.nodes) {
    if (!has_variants(n)) continue;
    const std::string key = variant_key(n, g);
    // A shape met before: its choice so far (the default, or the cache's),
    // and the tuner's if it is timed below.
    if (auto it = chosen.find(key); it != chosen.end()) {
      n.variant = *KernelVariant::parse(it->second.variant);
      if (auto p = pending.find(key); p != pending.end()) p->second.push_back(&n);
      continue;
    }
    n.variant = default_variant(n, g, traits);
    chosen[key] = {key, n.variant.text(), 0};
    if (level == Tuning::Off || node_flops(n, g) < heavy_flops(level)) continue;
    std::lock_guard lock(cache().mutex);
    auto& mine = cache().choices[device.name()];
    if (auto it = mine.find(key); it != mine.end() && it->second.level >= static_cast<uint8_t>(level)) {
      auto v = KernelVariant::parse(it->second.variant);
      if (v && variant_fits(*v, n, g)) {
        n.variant = *v;
        chosen[key] = it->second;
        continue;
      }
    }
    pending[key].push_back(&n);
  }

  // The heaviest shapes (all their nodes' FLOPs) are tuned; the others keep
  // their defaults.
  std::vector<std::pair<double, std::string>> by_weight;
  for (const auto& [key, nodes] : pending) by_weight.emplace_back(node_flops(*nodes[0], g) * nodes.size(), key);
  std::sort(by_weight.rbegin(), by_weight.rend());
  TuningSession session(device, kernels_per_batch);
  for (size_t i = 0; i < by_weight.size() && i < max_tuned(level); ++i) {
    const auto& nodes = pending[by_weight[i].second];
    session.add(by_weight[i].second, *nodes[0], g, candidate_variants(*nodes[0], g, traits, level));
  }
  for (const auto& [key, timed] : session.run(rounds(level))) {
    const auto best = std::min_element(timed.begin(), timed.end(),
                                       [](const auto& a, const auto& b) { return a.ms < b.ms; });
    for (ProgramNode* n : pending[key]) n->variant = best->variant;
    const TuningRecord record{key, best->variant.text(), static_cast<uint8_t>(level)};
    chosen[key] = record;
    std::lock_guard lock(cache().mutex);
    cache().runs[device.name()] += timed.size();
    cache().choices[device.name()][key] = record;
  }
  std::vector<TuningRecord> records;
  for (auto& [key, record] : chosen) records.push_back(std::move(record));
  return records;
}

}  // namespace hetero::gpu
