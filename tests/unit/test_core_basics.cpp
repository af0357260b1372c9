// Device strings, dtypes, tensors, the blob container and the graph.
#include <gtest/gtest.h>

#include "core/blob_container.h"
#include "core/device_string.h"
#include "core/error.h"
#include "core/graph.h"
#include "core/tensor.h"

using namespace hetero;
using namespace hetero::core;

TEST(DeviceString, PlainAndIndexed) {
  auto ds = parse_device_string("CPU");
  EXPECT_FALSE(ds.hetero);
  ASSERT_EQ(ds.devices.size(), 1u);
  EXPECT_EQ(ds.devices[0].driver, "CPU");
  EXPECT_EQ(ds.devices[0].id, "");
  ds = parse_device_string("OPENCL.1");
  EXPECT_EQ(ds.devices[0].driver, "OPENCL");
  EXPECT_EQ(ds.devices[0].id, "1");
  EXPECT_EQ(ds.to_string(), "OPENCL.1");
}

TEST(DeviceString, Hetero) {
  auto ds = parse_device_string("HETERO:OPENCL,CPU");
  EXPECT_TRUE(ds.hetero);
  ASSERT_EQ(ds.devices.size(), 2u);
  EXPECT_EQ(ds.devices[0].driver, "OPENCL");
  EXPECT_EQ(ds.devices[1].driver, "CPU");
  EXPECT_EQ(ds.to_string(), "HETERO:OPENCL,CPU");
}

TEST(DeviceString, Errors) {
  for (const char* bad : {"", "cpu", "HETERO", "HETERO:", "HETERO:CPU,", "HETERO:CPU,CPU", "CPU.", "CP U", "CPU.a-b"}) {
    try {
      parse_device_string(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Failure& e) {
      EXPECT_EQ(e.status(), HETERO_INVALID_ARGUMENT) << bad;
    }
  }
}

TEST(Tensor, AllocateAndViews) {
  Tensor t = Tensor::allocate(DType::F32, {2, 3});
  EXPECT_EQ(t.numel(), 6u);
  EXPECT_EQ(t.nbytes(), 24u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);
  t.data<float>()[5] = 7;
  Tensor r = t.reshaped({6});
  EXPECT_EQ(r.data<float>()[5], 7);
  EXPECT_EQ(r.raw(), t.raw());
  Tensor c = t.clone();
  EXPECT_NE(c.raw(), t.raw());
  EXPECT_EQ(c.data<float>()[5], 7);
  EXPECT_THROW(t.reshaped({5}), Failure);
}

TEST(Tensor, AbsurdSizesAreRefused) {
  try {
    Tensor::allocate(DType::F32, {1ll << 40, 1ll << 40});
    FAIL();
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), HETERO_INVALID_ARGUMENT);
  }
  EXPECT_THROW(Tensor::allocate(DType::F32, {-1}), Failure);
  EXPECT_THROW(Tensor::allocate(DType::String, {1}), Failure);
}

TEST(DType, HalfRoundTrip) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f}) EXPECT_EQ(half_to_float(float_to_half(f)), f);
  EXPECT_EQ(float_to_half(1e6f), 0x7c00);  // overflow → inf
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.5f)), 1.5f);
  EXPECT_EQ(dtype_from_name("float32"), DType::F32);
  EXPECT_STREQ(dtype_name(DType::I64), "int64");
}


// An If whose branch reads a value of the main graph depends on that value's
// producer as if it were an input: Silero VAD's opset-15 export has an If
// whose branches read another If's output, and a pass that sorted the graph
// ran them the wrong way round ("has no value").
TEST(Graph, SortCountsWhatSubgraphsRead) {
  Graph g;
  Value* x = g.add_value("x");
  Value* c = g.add_value("c");
  g.inputs = {x, c};
  Value* v = g.add_value("v");
  Value* y = g.add_value("y");
  // The If first, the producer of what its branch reads after it.
  Node* branch_reader = g.add_node("If", "reads_v");
  g.set_input(branch_reader, 0, c);
  g.set_output(branch_reader, 0, y);
  auto body = std::make_shared<Graph>();
  body->parent = &g;
  Value* inner = body->add_value("inner");
  Node* shape = body->add_node("Shape", "shape_of_v");
  body->set_input(shape, 0, v);
  body->set_output(shape, 0, inner);
  body->outputs = {inner};
  Attribute then_branch;
  then_branch.name = "then_branch";
  then_branch.type = AttrType::Graph;
  then_branch.g = body;
  branch_reader->attributes.push_back(then_branch);
  Node* producer = g.add_node("Relu", "makes_v");
  g.set_input(producer, 0, x);
  g.set_output(producer, 0, v);
  g.outputs = {y};

  g.sort_topologically();
  ASSERT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(g.nodes()[0]->name, "makes_v");
  EXPECT_EQ(g.nodes()[1]->name, "reads_v");
}
