// MaxUnpool over what ONNX's test data leaves out: 1-D and 3-D, pads and
// strides other than the kernel, float64 and int8 values, MaxPool's own
// indices through the driver (pooling the unpooled tensor gives the pooled
// one back), output_shape on every axis, and the nodes and inputs that must
// be refused.
#include <random>

#include "tests/unit/kernel_harness.h"

namespace hetero::cpu::testing {
namespace {

using core::DType;
using core::Shape;
using core::Tensor;

TEST(CpuMaxUnpool, PutsValuesAtTheirIndicesAndZerosElsewhere) {
  // 1-D: kernel 3, stride 2, pads 1 and 2: (3 - 1) * 2 - 3 + 3 = 4.
  KernelNode n1("MaxUnpool", 11, 2);
  n1.attr_ints("kernel_shape", {3}).attr_ints("strides", {2}).attr_ints("pads", {1, 2});
  const Tensor y1 = n1.run({tensor<double>({1.5, -2, 3}, {1, 1, 3}), tensor<int64_t>({3, 0, 1}, {1, 1, 3})})[0];
  EXPECT_EQ(y1.shape(), (Shape{1, 1, 4}));
  EXPECT_EQ(doubles(y1), (std::vector<double>{-2, 3, 0, 1.5}));
  // 3-D, two channels, int8 (the op moves elements; any type does).
  KernelNode n3("MaxUnpool", 11, 2);
  n3.attr_ints("kernel_shape", {2, 2, 2}).attr_ints("strides", {2, 2, 2});
  const Tensor y3 = n3.run({tensor<int8_t>({7, -8}, {1, 2, 1, 1, 1}), tensor<int64_t>({5, 8 + 2}, {1, 2, 1, 1, 1})})[0];
  EXPECT_EQ(y3.shape(), (Shape{1, 2, 2, 2, 2}));
  std::vector<int64_t> want(16, 0);
  want[5] = 7, want[10] = -8;
  EXPECT_EQ(ints(y3), want);
}

TEST(CpuMaxUnpool, OutputShapeLargerThanInferredPadsAtTheEnds) {
  // The inferred 2x2 block (indices address it) at the start of a 1x2x3x4
  // output; channel 1 is all zero.
  KernelNode n("MaxUnpool", 11, 3);
  n.attr_ints("kernel_shape", {2, 2}).attr_ints("strides", {2, 2});
  const Tensor y = n.run({f32({9}, {1, 1, 1, 1}), tensor<int64_t>({3}, {1, 1, 1, 1}), i64({1, 2, 3, 4})})[0];
  EXPECT_EQ(y.shape(), (Shape{1, 2, 3, 4}));
  std::vector<double> want(24, 0);
  want[1 * 4 + 1] = 9;
  EXPECT_EQ(doubles(y), want);
}

TEST(CpuMaxUnpool, UndoesMaxPoolThroughTheDriver) {
  std::mt19937 rng(41);
  // Positive values: a window's maximum then stays the maximum among the
  // zeros unpooling puts around it.
  std::uniform_real_distribution<float> d(0.1f, 1);
  Tensor x = Tensor::allocate(DType::F32, {2, 3, 6, 8});
  for (size_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = d(rng);
  const std::vector<Tensor> out = run_model(R"(<ir_version: 8, opset_import: ["" : 12]>
g (float[2, 3, 6, 8] x) => (float[2, 3, 3, 4] pooled, float[2, 3, 6, 8] unpooled, float[2, 3, 3, 4] again) {
  pooled, idx = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (x)
  unpooled = MaxUnpool <kernel_shape = [2, 2], strides = [2, 2]> (pooled, idx)
  again = MaxPool <kernel_shape = [2, 2], strides = [2, 2]> (unpooled)
})",
                                            {x});
  // Each pooled maximum is back where it came from, the rest is zero, and
  // pooling again gives the same maxima.
  size_t kept = 0;
  for (size_t i = 0; i < x.numel(); ++i) {
    const float u = out[1].data<float>()[i];
    if (u != 0) {
      EXPECT_EQ(u, x.data<float>()[i]);
      ++kept;
    }
  }
  EXPECT_EQ(kept, out[0].numel());
  EXPECT_EQ(doubles(out[2]), doubles(out[0]));
}

TEST(CpuMaxUnpool, BadNodesAndInputsAreRefused) {
  expect_compile_error(R"(<ir_version: 8, opset_import: ["" : 11]>
g (float[1, 1, 2, 2] x, int64[1, 1, 2, 2] i) => (float[1, 1, H, W] y) {
  y = MaxUnpool <kernel_shape = [2, 2], strides = [0, 2]> (x, i)
})",
                       HETERO_INVALID_MODEL, {"(MaxUnpool)", "strides [0,2] must be positive"});
  KernelNode pads("MaxUnpool", 11, 2);
  pads.attr_ints("kernel_shape", {2, 2}).attr_ints("pads", {0, 0, -1, 0});
  expect_error([&] { pads.build(); }, HETERO_INVALID_MODEL, {"node 'n' (MaxUnpool)", "pads [0,0,-1,0] must not be negative"});
  KernelNode length("MaxUnpool", 11, 2);
  length.attr_ints("kernel_shape", {2, 2}).attr_ints("strides", {2});
  expect_error([&] { length.build(); }, HETERO_INVALID_MODEL, {"strides [2] must have one value per kernel axis"});
  KernelNode missing("MaxUnpool", 11, 2);
  expect_error([&] { missing.build(); }, HETERO_INVALID_MODEL, {"kernel_shape is required"});
  KernelNode rank("MaxUnpool", 11, 2);
  rank.attr_ints("kernel_shape", {2, 2}).input_shape(0, {1, 4, 4});
  expect_error([&] { rank.build(); }, HETERO_INVALID_MODEL, {"X has rank 3, a 2-D kernel needs rank 4"});

  KernelNode n("MaxUnpool", 11, 3);
  n.attr_ints("kernel_shape", {2, 2}).attr_ints("strides", {2, 2});
  const Tensor x = f32({1, 2, 3, 4}, {1, 1, 2, 2});
  expect_error([&] { n.run({x, tensor<int64_t>({0, 1, 2, 16}, {1, 1, 2, 2}), std::nullopt}); }, HETERO_INVALID_ARGUMENT,
               {"node 'n' (MaxUnpool)", "index 16 at position 3 is outside [0, 16)"});
  expect_error([&] { n.run({x, tensor<int64_t>({0, 1, 2, -1}, {1, 1, 2, 2}), std::nullopt}); }, HETERO_INVALID_ARGUMENT,
               {"index -1"});
  expect_error([&] { n.run({x, tensor<int64_t>({0, 1}, {1, 1, 1, 2}), std::nullopt}); }, HETERO_INVALID_ARGUMENT,
               {"I must be int64 of X's shape"});
  expect_error([&] { n.run({x, tensor<int64_t>({0, 1, 2, 3}, {1, 1, 2, 2}), i64({1, 1, 3, 3})}); },
               HETERO_INVALID_ARGUMENT, {"output_shape 1x1x3x3 must have rank 4 and hold the unpooled 1x1x4x4"});
  // A stride so large the output size overflows.
  KernelNode huge("MaxUnpool", 11, 2);
  huge.attr_ints("kernel_shape", {2}).attr_ints("strides", {int64_t{1} << 62});
  expect_error([&] { huge.run({f32({1, 2, 3, 4}, {1, 1, 4}), tensor<int64_t>({0, 1, 2, 3}, {1, 1, 4})}); },
               HETERO_INVALID_ARGUMENT, {"unpools to no valid size along axis 2"});
}

}  // namespace
}  // namespace hetero::cpu::testing
