// share_dft (graph_passes.h): Convs that are short-time Fourier transforms
// (conv_dft.h) of one signal, with one window and the same strides, pads
// and kernel, become one hetero.cpu DftConvs node, which transforms each
// frame once and writes every Conv's output from it. Exporters write an
// STFT's real and imaginary parts as two such Convs: openWakeWord's
// melspectrogram spent 44% of its time loading and transforming frames, each
// frame twice; with one transform its fastest inference went from 0.114 to
// 0.090 ms on a two-vCPU Xeon VM.
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "drivers/cpu/conv_dft.h"
#include "drivers/cpu/conv_util.h"
#include "drivers/cpu/graph_passes.h"
#include "drivers/cpu/graph_rewrite.h"
#include "drivers/cpu/kernel.h"

namespace hetero::cpu::passes {

namespace {

// A Conv whose weights are a DFT basis, with what must match to share.
struct Transform {
  core::Node* conv;
  DftBasis basis;
  WindowAttrs attrs;
};

// `n` as a Transform: a plain 1-D Conv without bias whose constant weights
// dft_basis() recognises, with a group of one and no dilation (what the DFT
// kernel runs, kernels_conv_dft.cpp).
std::optional<Transform> transform_of(core::Node* n) {
  if (!is_op(n, "Conv") || n->input(2) || !n->input(0) || n->outputs.empty() || !n->outputs[0]) return std::nullopt;
  const core::Tensor* w = constant_of(n->input(1));
  if (!w || w->rank() != 3) return std::nullopt;
  WindowAttrs attrs = WindowAttrs::parse(*n);
  if (attrs.group != 1) return std::nullopt;
  attrs.resolve(*n, 1);
  if (attrs.dilations[0] != 1) return std::nullopt;
  std::optional<DftBasis> basis = dft_basis(*w);
  if (!basis) return std::nullopt;
  return Transform{n, std::move(*basis), std::move(attrs)};
}

// Whether `t` cuts the same frames as `group`'s Convs and one window serves
// them all.
bool joins(const std::vector<const Transform*>& group, const Transform& t) {
  const Transform& a = *group[0];
  if (a.conv->input(0) != t.conv->input(0) || a.attrs.auto_pad != t.attrs.auto_pad ||
      a.attrs.kernel_shape != t.attrs.kernel_shape || a.attrs.strides != t.attrs.strides ||
      a.attrs.pads != t.attrs.pads)
    return false;
  // In the order the DftConvs kernel will take them (kernels_conv_dft.cpp).
  std::vector<const DftBasis*> bases;
  for (const Transform* g : group) bases.push_back(&g->basis);
  bases.push_back(&t.basis);
  return common_window(bases).has_value();
}

}  // namespace

void share_dft(core::Graph& graph) {
  std::vector<Transform> transforms;
  for (const auto& n : graph.nodes())
    if (std::optional<Transform> t = transform_of(n.get())) transforms.push_back(std::move(*t));
  NameGen names(graph);
  std::unordered_set<const core::Node*> merged;
  std::vector<std::vector<const Transform*>> groups;
  for (size_t i = 0; i < transforms.size(); ++i) {
    if (merged.count(transforms[i].conv)) continue;
    std::vector<const Transform*> group{&transforms[i]};
    for (size_t j = i + 1; j < transforms.size() && group.size() < kMaxDftOutputs; ++j)
      if (!merged.count(transforms[j].conv) && joins(group, transforms[j]))
        group.push_back(&transforms[j]);
    if (group.size() < 2) continue;
    for (const Transform* t : group) merged.insert(t->conv);
    groups.push_back(std::move(group));
  }
  if (groups.empty()) return;
  for (const auto& group : groups) {
    // What the new node takes of the Convs, before they go.
    core::Node* first = group[0]->conv;
    core::Value* signal = first->input(0);
    std::vector<core::Value*> weights, outputs;
    for (const Transform* t : group) {
      weights.push_back(t->conv->input(1));
      outputs.push_back(t->conv->outputs[0]);
    }
    core::Node* shared = graph.add_node("DftConvs", names.node(first->name + "_shared"));
    shared->domain = kCpuDomain;
    shared->opset = 1;
    shared->attributes = first->attributes;
    std::unordered_set<const core::Node*> convs;
    for (const Transform* t : group) convs.insert(t->conv);
    graph.erase_nodes(convs);
    graph.set_input(shared, 0, signal);
    for (size_t o = 0; o < group.size(); ++o) {
      graph.set_input(shared, o + 1, weights[o]);
      graph.set_output(shared, o, outputs[o]);
    }
  }
  graph.sort_topologically();
}

}  // namespace hetero::cpu::passes
