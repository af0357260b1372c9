// ONNX import: what a good model becomes (types, shapes, initializers viewed in
// the mapped file, subgraphs), and function expansion. The failure cases are
// in test_onnx_import_errors.cpp.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>

#include "core/function_expand.h"
#include "core/onnx_import.h"
#include "tests/unit/onnx_doubling.h"
#include "tests/unit/onnx_test_files.h"

namespace hetero::test {
namespace {

using core::DType;

// X·W + B, with W large enough (16 KiB) to be left out of the protobuf parse
// and B small enough to stay in it; both are raw_data.
onnx::ModelProto matmul_model() {
  onnx::ModelProto m = parse_model(R"ONNX(
    <ir_version: 8, opset_import: ["" : 17]>
    agraph (float[N, 64] X) => (float[N, 64] Y) {
      T = MatMul(X, W)
      Y = Add(T, B)
    }
  )ONNX");
  fill_iota(*m.mutable_graph()->add_initializer(), "W", {64, 64});
  fill_iota(*m.mutable_graph()->add_initializer(), "B", {64}, 0.25f);
  return m;
}

// Serializes `m` with W's payload at an offset that is `rest` modulo 8, by
// padding producer_name (which precedes the graph in the file).
std::string with_w_offset(onnx::ModelProto m, size_t rest) {
  const std::string& payload = m.graph().initializer(0).raw_data();
  for (size_t pad = 0; pad < 16; ++pad) {
    m.set_producer_name(std::string(pad, 'p'));
    std::string bytes = serialize(m);
    if (offset_of(bytes, payload) % 8 == rest) return bytes;
  }
  throw std::runtime_error("no padding gives that offset");
}

bool points_into(const void* p, const void* base, size_t size) {
  const auto* b = static_cast<const uint8_t*>(base);
  const auto* q = static_cast<const uint8_t*>(p);
  return q >= b && q < b + size;
}

TEST(OnnxImport, GoodModelHasTypesShapesAndViewsInitializers) {
  TempDir dir;
  const std::string bytes = with_w_offset(matmul_model(), 0);
  const std::string path = dir.write("model.onnx", bytes);
  core::ImportOptions options;
  options.input_shapes["X"] = {2, 64};
  const auto m = core::import_onnx_file(path, options);

  EXPECT_EQ(m->source, path);
  EXPECT_EQ(m->ir_version, 8);
  EXPECT_EQ(m->opset(""), 17);
  ASSERT_EQ(m->graph.inputs.size(), 1u);  // initializers are not inputs
  EXPECT_EQ(m->graph.inputs[0]->name, "X");
  EXPECT_EQ(m->graph.inputs[0]->dtype, DType::F32);
  EXPECT_EQ(m->graph.inputs[0]->static_shape(), (core::Shape{2, 64}));
  ASSERT_EQ(m->graph.outputs.size(), 1u);
  EXPECT_EQ(m->graph.outputs[0]->dtype, DType::F32);
  EXPECT_EQ(m->graph.outputs[0]->static_shape(), (core::Shape{2, 64}));  // inferred from the user's shape
  EXPECT_EQ(m->graph.find_value("T")->static_shape(), (core::Shape{2, 64}));

  ASSERT_EQ(m->graph.nodes().size(), 2u);
  EXPECT_EQ(m->graph.nodes()[0]->name, "MatMul_0");  // unnamed nodes get names
  EXPECT_EQ(m->graph.nodes()[1]->name, "Add_1");
  EXPECT_EQ(m->graph.nodes()[1]->opset, 17);

  // Initializers view the mapped file (no copy) where their payload is
  // aligned, which the padding guarantees for W; B is viewed or copied
  // depending on where the protobuf framing put it.
  ASSERT_EQ(m->mappings.size(), 1u);
  for (const char* name : {"W", "B"}) {
    const core::Value* v = m->graph.find_value(name);
    ASSERT_TRUE(v && v->is_constant()) << name;
    const core::Tensor& t = *v->constant;
    const size_t offset = offset_of(bytes, std::string(static_cast<const char*>(t.raw()), t.nbytes()));
    const bool aligned = offset % alignof(float) == 0;
    EXPECT_EQ(t.owner().get() == m->mappings[0].get(), aligned) << name;
    EXPECT_EQ(points_into(t.raw(), m->mappings[0].get(), bytes.size()), aligned) << name;
    EXPECT_EQ(t.data<float>()[5], t.data<float>()[0] + 5.0f) << name;
  }
  EXPECT_EQ(m->graph.find_value("B")->constant->data<float>()[0], 0.25f);
  EXPECT_EQ(m->graph.find_value("W")->constant->owner().get(), m->mappings[0].get());
  EXPECT_EQ(m->graph.find_value("W")->static_shape(), (core::Shape{64, 64}));
  EXPECT_EQ(m->graph.find_value("W")->constant->data<float>()[4095], 4095.0f);
  EXPECT_EQ(m->graph.nodes()[0]->inputs[1], m->graph.find_value("W"));
}

TEST(OnnxImport, MisalignedInitializerIsCopiedIntoAlignedMemory) {
  TempDir dir;
  const auto m = core::import_onnx_file(dir.write("model.onnx", with_w_offset(matmul_model(), 2)));
  const core::Tensor& w = *m->graph.find_value("W")->constant;
  EXPECT_NE(w.owner().get(), m->mappings.empty() ? nullptr : m->mappings[0].get());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w.raw()) % alignof(float), 0u);
  EXPECT_EQ(w.data<float>()[4095], 4095.0f);
}

TEST(OnnxImport, BytesAreCopiedOnceAndOutliveTheCallersBuffer) {
  std::vector<uint8_t> bytes = to_vector(with_w_offset(matmul_model(), 0));
  const auto m = core::import_onnx_bytes(bytes);
  std::fill(bytes.begin(), bytes.end(), 0xAB);
  bytes.clear();
  bytes.shrink_to_fit();
  ASSERT_EQ(m->mappings.size(), 1u);
  const core::Tensor& w = *m->graph.find_value("W")->constant;
  EXPECT_EQ(w.owner().get(), m->mappings[0].get());
  EXPECT_EQ(w.data<float>()[77], 77.0f);
  EXPECT_EQ(m->source, "<memory>");
  EXPECT_FALSE(m->graph.outputs[0]->static_shape());  // N stays symbolic without input shapes
  EXPECT_EQ((*m->graph.outputs[0]->shape)[0].param, "N");
}

TEST(OnnxImport, IfBodiesAreChildGraphsThatSeeOuterValues) {
  const auto m = core::import_onnx_bytes(to_vector(serialize(parse_model(R"ONNX(
    <ir_version: 8, opset_import: ["" : 17]>
    agraph (bool cond, float[2] X) => (float[2] Y) {
      Y = If(cond) <then_branch = g1 () => (float[2] t) { t = Add(X, X) },
                    else_branch = g2 () => (float[2] e) { e = Neg(X) }>
    }
  )ONNX"))));
  ASSERT_EQ(m->graph.nodes().size(), 1u);
  const core::Node& node = *m->graph.nodes()[0];
  const core::Attribute* then_branch = node.attr("then_branch");
  ASSERT_TRUE(then_branch && then_branch->type == core::AttrType::Graph);
  const core::Graph& g = *then_branch->g;
  EXPECT_EQ(g.parent, &m->graph);
  EXPECT_EQ(g.name, "g1");
  ASSERT_EQ(g.nodes().size(), 1u);
  const core::Value* x = m->graph.find_value("X");
  EXPECT_EQ(g.nodes()[0]->inputs[0], x);  // the outer Value itself
  EXPECT_EQ(g.nodes()[0]->inputs[1], x);
  EXPECT_EQ(g.find_value("X"), nullptr);
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.outputs[0]->name, "t");
  EXPECT_EQ(g.outputs[0]->owner, &g);
  EXPECT_EQ(m->graph.outputs[0]->dtype, DType::F32);
}

TEST(OnnxImport, ConstantNodesStayAndTheirOutputsAreConstant) {
  const auto m = core::import_onnx_bytes(to_vector(serialize(parse_model(R"ONNX(
    <ir_version: 8, opset_import: ["" : 17]>
    agraph (float[2] X) => (float[2] Y) {
      c = Constant<value = float[2] {1.5, 2.5}>()
      s = Constant<value_ints = [2]>()
      k = Constant<value = int64[1] {2}>()
      R = Reshape(X, k)
      Y = Add(R, c)
    }
  )ONNX"))));
  EXPECT_EQ(m->graph.nodes().size(), 5u);
  const core::Value* c = m->graph.find_value("c");
  ASSERT_TRUE(c->is_constant());
  EXPECT_EQ(c->producer->op_type, "Constant");
  EXPECT_EQ(c->constant->data<float>()[1], 2.5f);
  EXPECT_EQ(c->static_shape(), (core::Shape{2}));
  const core::Value* s = m->graph.find_value("s");
  ASSERT_TRUE(s->is_constant());
  EXPECT_EQ(s->dtype, DType::I64);
  EXPECT_EQ(s->constant->to_int64_vector(), (std::vector<int64_t>{2}));
  EXPECT_EQ(m->graph.find_value("R")->static_shape(), (core::Shape{2}));  // the constant shape reached inference
}

TEST(OnnxImport, UnsortedGraphsAreSortedAndDuplicateNamesMadeUnique) {
  onnx::ModelProto proto = parse_model(R"ONNX(
    <ir_version: 8, opset_import: ["" : 17]>
    agraph (float[2] X) => (float[2] Y) {
      a = Relu(X)
      b = Relu(a)
      Y = Relu(b)
    }
  )ONNX");
  auto& nodes = *proto.mutable_graph()->mutable_node();
  nodes.Mutable(0)->set_name("n");
  nodes.Mutable(1)->set_name("n");
  nodes.SwapElements(0, 2);  // Y = Relu(b) first
  const auto m = core::import_onnx_bytes(to_vector(serialize(proto)));
  ASSERT_EQ(m->graph.nodes().size(), 3u);
  EXPECT_EQ(m->graph.nodes()[0]->outputs[0]->name, "a");
  EXPECT_EQ(m->graph.nodes()[2]->outputs[0]->name, "Y");
  std::set<std::string> names;
  for (const auto& n : m->graph.nodes()) names.insert(n->name);
  EXPECT_EQ(names.size(), 3u);
  EXPECT_TRUE(names.count("n"));
  EXPECT_EQ(m->graph.outputs[0]->static_shape(), (core::Shape{2}));  // inference ran on the sorted copy
}

TEST(OnnxImport, SubgraphUsesOfOuterValuesCountWhenSorting) {
  // The If node comes first in the file, but its branches use X2, which the
  // Relu after it produces: import must put the Relu first.
  const auto m = core::import_onnx_bytes(to_vector(serialize(parse_model(R"ONNX(
    <ir_version: 8, opset_import: ["" : 17]>
    agraph (bool cond, float[2] X) => (float[2] Y) {
      Y = If(cond) <then_branch = g1 () => (float[2] t) { t = Add(X2, X2) },
                    else_branch = g2 () => (float[2] e) { e = Neg(X2) }>
      X2 = Relu(X)
    }
  )ONNX"))));
  ASSERT_EQ(m->graph.nodes().size(), 2u);
  EXPECT_EQ(m->graph.nodes()[0]->op_type, "Relu");
  EXPECT_EQ(m->graph.nodes()[1]->op_type, "If");
  EXPECT_EQ(m->graph.nodes()[1]->inputs.size(), 1u);  // no implicit input left wired
  EXPECT_EQ(m->graph.find_value("X2")->uses.size(), 3u);  // Add twice, Neg once
  EXPECT_EQ(m->graph.outputs[0]->static_shape(), (core::Shape{2}));
}

TEST(OnnxImport, UncheckedImportKeepsOperatorsOnnxDoesNotKnow) {
  onnx::ModelProto proto = parse_model(R"ONNX(
    <ir_version: 8, opset_import: ["" : 17]>
    agraph (float[2] X) => (float[2] Y) {
      Y = Frobnicate(X)
    }
  )ONNX");
  core::ImportOptions options;
  options.check = false;
  const auto m = core::import_onnx_bytes(to_vector(serialize(proto)), options);
  EXPECT_EQ(m->graph.nodes()[0]->op_type, "Frobnicate");
}

TEST(OnnxImport, ExternalDataIsMappedRelativeToTheModel) {
  TempDir dir;
  onnx::ModelProto proto = matmul_model();
  onnx::TensorProto& w = *proto.mutable_graph()->mutable_initializer(0);
  const std::string payload = w.raw_data();
  dir.write("weights/w.bin", std::string(64, '\0') + payload);
  w.clear_raw_data();
  w.set_data_location(onnx::TensorProto::EXTERNAL);
  auto add = [&](const char* k, const std::string& v) {
    auto* e = w.add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  add("location", "weights/w.bin");
  add("offset", "64");
  add("length", std::to_string(payload.size()));
  const auto m = core::import_onnx_file(dir.write("model.onnx", serialize(proto)));
  const core::Tensor& t = *m->graph.find_value("W")->constant;
  EXPECT_EQ(t.data<float>()[4095], 4095.0f);
  bool in_mapping = false;
  for (const auto& owner : m->mappings) in_mapping |= owner == t.owner();
  EXPECT_TRUE(in_mapping);  // viewed in the mapped weights file
  EXPECT_EQ(m->graph.inputs.size(), 1u);
}

TEST(OnnxImport, ModelLocalFunctionsAreInlined) {
  const auto m = core::import_onnx_bytes(to_vector(serialize(parse_model(R"ONNX(
    <ir_version: 8, opset_import: ["" : 17, "local" : 1]>
    agraph (float[2] X) => (float[2] Y) {
      Y = local.twice(X)
    }
    <domain: "local", opset_import: ["" : 17]>
    twice (x) => (y) {
      y = Add(x, x)
    }
  )ONNX"))));
  ASSERT_EQ(m->graph.nodes().size(), 1u);
  EXPECT_EQ(m->graph.nodes()[0]->op_type, "Add");
  EXPECT_EQ(m->graph.nodes()[0]->inputs[0], m->graph.inputs[0]);
  EXPECT_EQ(m->graph.nodes()[0]->outputs[0], m->graph.outputs[0]);
}

// A chain of functions each calling the next twice asks for 2^60 nodes from
// a model of a few KB: refused at once, before ONNX's checks walk it.
TEST(OnnxImport, FunctionsThatExpandWithoutBoundAreRefusedQuickly) {
  const std::string text = doubling_functions(60, "Add(x, x)", "float[2]");
  const auto t0 = std::chrono::steady_clock::now();
  try {
    core::import_onnx_bytes(to_vector(serialize(parse_model(text.c_str()))));
    ADD_FAILURE() << "a 2^60-node expansion was accepted";
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), HETERO_INVALID_MODEL);
    EXPECT_NE(std::string(e.what()).find("larger than 1000000 nodes"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'f60'"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

// Functions that each call the one before twice inline to 2^14 nodes, all
// of them, wired and in order. (Inlining used to re-read and re-sort the
// whole graph for every call: at 2^16 nodes a 1 KB model took over ten
// minutes to load; the suite's time limit guards against that coming back.)
TEST(OnnxImport, NestedFunctionsInlineEveryCall) {
  const std::string text = doubling_functions(14, "Neg(x)", "float[2]");
  const auto m = core::import_onnx_bytes(to_vector(serialize(parse_model(text.c_str()))));
  const core::Graph& g = m->graph;
  ASSERT_EQ(g.nodes().size(), size_t{1} << 14);
  for (const auto& n : g.nodes()) ASSERT_EQ(n->op_type, "Neg") << n->describe();
  // A chain: each node takes the one before's output, the first X, the last gives Y.
  EXPECT_EQ(g.nodes().front()->inputs[0], g.inputs[0]);
  EXPECT_EQ(g.nodes().back()->outputs[0], g.outputs[0]);
  for (size_t i = 1; i < g.nodes().size(); ++i)
    ASSERT_EQ(g.nodes()[i]->inputs[0], g.nodes()[i - 1]->outputs[0]) << g.nodes()[i]->describe();
}

// ---- function expansion -------------------------------------------------

// Every input of every node is a graph input, a constant or produced by an
// earlier node: the wiring is complete and sorted.
void expect_wired(const core::Graph& g) {
  for (const auto& n : g.nodes()) {
    for (const core::Value* v : n->inputs) {
      if (!v) continue;
      const bool is_input = std::find(g.inputs.begin(), g.inputs.end(), v) != g.inputs.end();
      EXPECT_TRUE(is_input || v->is_constant() || (v->producer && v->producer->index < n->index))
          << n->describe() << " uses '" << v->name << "'";
    }
  }
}

TEST(FunctionExpand, CeluBecomesBasicOps) {
  auto m = core::import_onnx_bytes(to_vector(serialize(parse_model(R"ONNX(
    <ir_version: 8, opset_import: ["" : 17]>
    agraph (float[3] X) => (float[3] Y) {
      Y = Celu<alpha = 2.0>(X)
    }
  )ONNX"))));
  core::Node& celu = *m->graph.nodes()[0];
  celu.name = "act";
  EXPECT_TRUE(core::has_function_body(celu));
  ASSERT_TRUE(core::expand_function(m->graph, celu, *m));
  ASSERT_GT(m->graph.nodes().size(), 1u);
  bool reads_x = false;
  for (const auto& n : m->graph.nodes()) {
    EXPECT_NE(n->op_type, "Celu");
    EXPECT_EQ(n->name.rfind("act/", 0), 0u) << n->name;
    for (const core::Value* v : n->inputs) reads_x |= v == m->graph.inputs[0];
  }
  EXPECT_TRUE(reads_x);
  ASSERT_NE(m->graph.outputs[0]->producer, nullptr);
  EXPECT_EQ(m->graph.outputs[0]->producer->index, m->graph.nodes().size() - 1);
  expect_wired(m->graph);
  // alpha reached the body: some node carries 2.0 as a constant or attribute.
  bool alpha = false;
  for (const auto& v : m->graph.values())
    if (v->is_constant() && v->dtype == DType::F32 && v->constant->numel() == 1) alpha |= v->constant->as_double(0) == 2.0;
  for (const auto& n : m->graph.nodes()) alpha |= n->attr_float("alpha", 0) == 2.0f;
  EXPECT_TRUE(alpha);
}

TEST(FunctionExpand, LayerNormalizationUsesInputTypes) {
  auto m = core::import_onnx_bytes(to_vector(serialize(parse_model(R"ONNX(
    <ir_version: 8, opset_import: ["" : 17]>
    agraph (float[2, 4] X, float[4] S, float[4] B) => (float[2, 4] Y) {
      Y = LayerNormalization<axis = -1, epsilon = 0.001>(X, S, B)
    }
  )ONNX"))));
  core::Node& ln = *m->graph.nodes()[0];
  ASSERT_TRUE(core::expand_function(m->graph, ln, *m));
  std::set<std::string> ops;
  for (const auto& n : m->graph.nodes()) ops.insert(n->op_type);
  EXPECT_FALSE(ops.count("LayerNormalization"));
  EXPECT_TRUE(ops.count("ReduceMean"));
  EXPECT_TRUE(ops.count("Sqrt"));
  EXPECT_EQ(m->graph.outputs[0]->producer->op_type, "Reshape");
  expect_wired(m->graph);
  for (const char* name : {"X", "S", "B"}) EXPECT_FALSE(m->graph.find_value(name)->uses.empty()) << name;
}

TEST(FunctionExpand, ReferencedAttributesFallBackToSchemaDefaults) {
  auto m = core::import_onnx_bytes(to_vector(serialize(parse_model(R"ONNX(
    <ir_version: 8, opset_import: ["" : 13]>
    agraph (float[1, 2, 3, 3] X) => (float[1, 2, 3, 3] Y) {
      Y = MeanVarianceNormalization(X)
    }
  )ONNX"))));
  ASSERT_TRUE(core::expand_function(m->graph, *m->graph.nodes()[0], *m));
  bool default_axes = false;
  for (const auto& n : m->graph.nodes())
    if (n->op_type == "ReduceMean") default_axes |= n->attr_ints("axes") == std::vector<int64_t>{0, 2, 3};
  EXPECT_TRUE(default_axes);
  expect_wired(m->graph);
}

TEST(FunctionExpand, OpsWithoutBodiesAreLeftAlone) {
  auto m = core::import_onnx_bytes(to_vector(serialize(parse_model(R"ONNX(
    <ir_version: 8, opset_import: ["" : 17]>
    agraph (float[3] X) => (float[3] Y) {
      Y = Relu(X)
    }
  )ONNX"))));
  core::Node& relu = *m->graph.nodes()[0];
  EXPECT_FALSE(core::has_function_body(relu));
  EXPECT_FALSE(core::expand_function(m->graph, relu, *m));
  EXPECT_EQ(m->graph.nodes().size(), 1u);
}

}  // namespace
}  // namespace hetero::test
