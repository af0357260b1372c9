// If, Loop and Scan run through real plans and frames: bodies that read
// outer-scope values, loop-carried values that change shape, scan outputs
// stacked along other axes and in reverse.
#include <dnnl.hpp>

#include "drivers/cpu/plan.h"
#include "tests/unit/kernel_harness.h"

namespace hetero::cpu::testing {

namespace {

using core::DType;
using core::Graph;
using core::Node;
using core::Shape;
using core::Tensor;
using core::Value;

core::Attribute graph_attr(const std::string& name, std::shared_ptr<Graph> g) {
  core::Attribute a;
  a.name = name;
  a.type = core::AttrType::Graph;
  a.g = std::move(g);
  return a;
}

core::Attribute ints_attr(const std::string& name, std::vector<int64_t> v) {
  core::Attribute a;
  a.name = name;
  a.type = core::AttrType::Ints;
  a.ints = std::move(v);
  return a;
}

Node* add(Graph& g, const std::string& op, std::vector<Value*> ins, std::vector<Value*> outs) {
  Node* n = g.add_node(op, op + std::to_string(g.nodes().size()));
  for (size_t i = 0; i < ins.size(); ++i) g.set_input(n, i, ins[i]);
  for (size_t i = 0; i < outs.size(); ++i) g.set_output(n, i, outs[i]);
  return n;
}

// Compiles the model's graph and runs it once.
std::vector<Tensor> run_model(core::Model& model, const std::vector<Tensor>& inputs) {
  model.opsets[""] = 17;
  dnnl::stream stream(test_engine());
  std::shared_ptr<Plan> plan = Plan::compile(model.graph, model, test_engine());
  Frame frame(*plan, nullptr, stream, 2);
  return frame.run(inputs);
}

TEST(CpuControlFlow, LoopCarriesGrowingValuesAndReadsTheOuterScope) {
  core::Model model;
  Graph& g = model.graph;
  Value* m = g.add_value("M");
  Value* v0 = g.add_value("v0");
  Value* w = g.add_value("w");
  g.inputs = {m, v0, w};
  auto body = std::make_shared<Graph>();
  body->parent = &g;
  Value* i = body->add_value("i");
  Value* cond = body->add_value("cond");
  Value* v = body->add_value("v");
  body->inputs = {i, cond, v};
  Value* cond_out = body->add_value("cond_out");
  Value* v_out = body->add_value("v_out");
  Value* scan = body->add_value("scan");
  add(*body, "Identity", {cond}, {cond_out});
  add(*body, "Concat", {v, w}, {v_out})->attributes.push_back([] {
    core::Attribute a;
    a.name = "axis";
    a.i = 0;
    return a;
  }());
  add(*body, "Identity", {i}, {scan});
  body->outputs = {cond_out, v_out, scan};
  Value* v_final = g.add_value("v_final");
  Value* scans = g.add_value("scans");
  scans->dtype = DType::I64;
  Node* loop = add(g, "Loop", {m, nullptr, v0}, {v_final, scans});
  loop->attributes.push_back(graph_attr("body", body));
  g.outputs = {v_final, scans};

  auto outs = run_model(model, {i64({3}).reshaped({}), f32({1}, {1}), f32({5, 6}, {2})});
  EXPECT_EQ(floats(outs[0]), (std::vector<float>{1, 5, 6, 5, 6, 5, 6}));
  EXPECT_EQ(ints(outs[1]), (std::vector<int64_t>{0, 1, 2}));
  outs = run_model(model, {i64({0}).reshaped({}), f32({1}, {1}), f32({5, 6}, {2})});
  EXPECT_EQ(floats(outs[0]), (std::vector<float>{1}));
  EXPECT_EQ(outs[1].shape(), (Shape{0}));
  EXPECT_EQ(outs[1].dtype(), DType::I64);
}

// A model of one If on input c whose branches each run one node of input w:
// `then_op` or `else_op`, given w `operands` times (w, w, ... ).
void make_if_model(core::Model& model, const char* then_op, const char* else_op, size_t operands) {
  Graph& g = model.graph;
  Value* c = g.add_value("c");
  Value* w = g.add_value("w");
  g.inputs = {c, w};
  auto branch = [&](const char* op) {
    auto b = std::make_shared<Graph>();
    b->parent = &g;
    Value* out = b->add_value(std::string("out_") + op);
    add(*b, op, std::vector<Value*>(operands, w), {out});
    b->outputs = {out};
    return b;
  };
  Value* y = g.add_value("y");
  Node* n = add(g, "If", {c}, {y});
  n->attributes.push_back(graph_attr("then_branch", branch(then_op)));
  n->attributes.push_back(graph_attr("else_branch", branch(else_op)));
  g.outputs = {y};
}

TEST(CpuControlFlow, IfPicksTheBranchByCondition) {
  core::Model model;
  make_if_model(model, "Identity", "Shape", 1);
  EXPECT_EQ(floats(run_model(model, {Tensor::from_vector<bool>({true}, {}), f32({5, 6}, {2})})[0]),
            (std::vector<float>{5, 6}));
  EXPECT_EQ(ints(run_model(model, {Tensor::from_vector<bool>({false}, {}), f32({5, 6}, {2})})[0]),
            (std::vector<int64_t>{2}));
}

// A frame keeps the frames of its If branches for the next run, buffers and
// all (Frame::nested): an output the caller still holds from one run is not
// written by the next, whichever branch runs.
TEST(CpuControlFlow, IfBranchesKeptForTheNextRunLeaveHeldOutputsAlone) {
  core::Model model;
  make_if_model(model, "Add", "Mul", 2);
  model.opsets[""] = 17;
  dnnl::stream stream(test_engine());
  std::shared_ptr<Plan> plan = Plan::compile(model.graph, model, test_engine());
  Frame frame(*plan, nullptr, stream, 1);
  auto run = [&](bool then, float x) {
    return frame.run({Tensor::from_vector<bool>({then}, {}), f32({x, x}, {2})})[0];
  };
  const Tensor first = run(true, 3);
  const Tensor second = run(true, 5);
  const Tensor third = run(false, 7);
  run(true, 9);
  EXPECT_EQ(floats(first), (std::vector<float>{6, 6}));
  EXPECT_EQ(floats(second), (std::vector<float>{10, 10}));
  EXPECT_EQ(floats(third), (std::vector<float>{49, 49}));
  EXPECT_EQ(floats(run(false, 2)), (std::vector<float>{4, 4}));
  frame.release_memory();
  EXPECT_EQ(floats(first), (std::vector<float>{6, 6}));
  EXPECT_EQ(floats(run(true, 1)), (std::vector<float>{2, 2}));
}

TEST(CpuControlFlow, ScanAlongAxisOneInReverse) {
  core::Model model;
  Graph& g = model.graph;
  Value* x = g.add_value("x");
  g.inputs = {x};
  // Body: no state; the scan output is the slice itself.
  auto body = std::make_shared<Graph>();
  body->parent = &g;
  Value* xt = body->add_value("xt");
  Value* yt = body->add_value("yt");
  body->inputs = {xt};
  add(*body, "Identity", {xt}, {yt});
  body->outputs = {yt};
  Value* y = g.add_value("y");
  Node* n = add(g, "Scan", {x}, {y});
  n->attributes.push_back(graph_attr("body", body));
  core::Attribute num;
  num.name = "num_scan_inputs";
  num.i = 1;
  n->attributes.push_back(num);
  n->attributes.push_back(ints_attr("scan_input_axes", {1}));
  n->attributes.push_back(ints_attr("scan_input_directions", {1}));
  n->attributes.push_back(ints_attr("scan_output_axes", {-1}));
  g.outputs = {y};
  // x is [2, 3]; slices along axis 1 taken last first, stacked as the last
  // axis: the columns reversed.
  const Tensor out = run_model(model, {iota_f32({2, 3})})[0];
  EXPECT_EQ(out.shape(), (Shape{2, 3}));
  EXPECT_EQ(floats(out), (std::vector<float>{2, 1, 0, 5, 4, 3}));
}

}  // namespace

}  // namespace hetero::cpu::testing
