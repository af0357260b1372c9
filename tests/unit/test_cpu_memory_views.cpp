// The oneDNN views a node keeps between runs (MemoryViews,
// drivers/cpu/dnnl_util.h): one object per argument and descriptor,
// re-pointed at each run's data; and, where a user would notice a view left
// pointing at an old buffer, one request running a convolution and a matrix
// product on fresh inputs again and again.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/runtime.h"
#include "drivers/cpu/dnnl_util.h"
#include "tests/unit/kernel_harness.h"
#include "tests/unit/model_text.h"

namespace hetero::cpu::testing {
namespace {

TEST(CpuMemoryViews, OneViewPerArgumentAndDescriptorRepointedAtEachBind) {
  const dnnl::engine& engine = test_engine();
  const dnnl::memory::desc four = plain_desc({4}), eight = plain_desc({8});
  std::vector<float> a(8), b(8);
  MemoryViews views;
  const dnnl::memory first = views.bind(DNNL_ARG_SRC, four, engine, a.data());
  const dnnl::memory again = views.bind(DNNL_ARG_SRC, four, engine, b.data());
  EXPECT_EQ(first.get(), again.get()) << "the same argument and descriptor: the same view";
  EXPECT_EQ(first.get_data_handle(), b.data());
  // Two arguments of one primitive never share a view, even alike.
  const dnnl::memory dst = views.bind(DNNL_ARG_DST, four, engine, a.data());
  EXPECT_NE(dst.get(), again.get());
  EXPECT_EQ(again.get_data_handle(), b.data()) << "binding DST left SRC alone";
  // Another shape of the same argument gets a view of its own.
  const dnnl::memory wider = views.bind(DNNL_ARG_SRC, eight, engine, a.data());
  EXPECT_NE(wider.get(), again.get());
  EXPECT_EQ(views.bind(DNNL_ARG_SRC, four, engine, b.data()).get(), first.get());
}

constexpr const char* kConvAndProduct = R"ONNX(
<ir_version: 8, opset_import: ["" : 13]>
net (float[1, 2, 6, 6] x, float[3, 4] a) => (float[1, 3, 6, 6] y, float[3, 5] z) {
  w = Constant <value = float[3, 2, 3, 3] {
      1, 0, -1, 2, 0, -2, 1, 0, -1,   0, 1, 0, 1, -4, 1, 0, 1, 0,
      1, 1, 1, 1, 1, 1, 1, 1, 1,      -1, 2, -1, 0, 0, 0, 1, -2, 1,
      0.5, 0, 0, 0, 0.5, 0, 0, 0, 0.5, 2, 0, 0, 0, -1, 0, 0, 0, 2}> ()
  bias = Constant <value = float[3] {0.1, -0.2, 0.3}> ()
  c = Conv <pads = [1, 1, 1, 1]> (x, w, bias)
  y = Relu (c)
  b = Constant <value = float[4, 5] {1, 2, 3, 4, 5, -1, -2, -3, -4, -5, 0.5, 0, 0.5, 0, 0.5, 3, 1, 4, 1, 5}> ()
  z = MatMul (a, b)
}
)ONNX";

// Fresh input tensors each time (new buffers): each run's outputs must be
// those of a request that never ran before.
TEST(CpuMemoryViews, ARequestRunOnFreshInputsMatchesAFreshRequest) {
  auto model = test::model_from_text(kConvAndProduct);
  auto compiled = test_runtime().compile(*model, "CPU");
  auto reused = compiled->create_infer_request();
  std::mt19937 rng(9);
  for (int run = 0; run < 4; ++run) {
    SCOPED_TRACE("run " + std::to_string(run));
    const core::Tensor x = random_f32({1, 2, 6, 6}, rng), a = random_f32({3, 4}, rng);
    reused->set_input(0, x);
    reused->set_input(1, a);
    reused->infer();
    auto fresh = compiled->create_infer_request();
    fresh->set_input(0, x);
    fresh->set_input(1, a);
    fresh->infer();
    for (size_t k = 0; k < 2; ++k) EXPECT_EQ(floats(reused->output(k)), floats(fresh->output(k))) << "output " << k;
  }
}

}  // namespace
}  // namespace hetero::cpu::testing
