// The IR codec CPU blobs are made of: a model with subgraphs, outer-scope
// references and every attribute type survives encoding, byte for byte and
// in what it computes; damaged encodings are refused, never a crash (also
// under ASan).
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "core/ir_codec.h"
#include "core/runtime.h"
#include "tests/unit/model_text.h"

using namespace hetero;
using namespace hetero::core;

namespace {

// An If whose branches read outer values (w, x), constants, and attributes
// of several types; the CPU driver's passes add more (post-ops, layouts).
constexpr const char* kModel = R"ONNX(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x, bool c) => (float[2, 3] y, float[2] s) {
  w = Constant <value = float[3] {1, 2, 3}> ()
  m = Mul (x, w)
  y = If (c) <then_branch = t () => (float[2, 3] out) { out = Relu (m) },
              else_branch = e () => (float[2, 3] out) { out = Add (m, x) }>
  s = ReduceSum <keepdims = 0> (y, axes)
  axes = Constant <value_ints = [1]> ()
}
)ONNX";

std::unique_ptr<Model> model() {
  // Listed out of order on purpose: import sorts it.
  return test::model_from_text(kModel);
}

std::vector<float> outputs(const Model& m, bool condition) {
  static Runtime rt;
  auto compiled = rt.compile(m, "CPU");
  auto req = compiled->create_infer_request();
  req->set_input(0, Tensor::from_vector(std::vector<float>{1, -2, 3, -4, 5, -6}, {2, 3}));
  Tensor c = Tensor::allocate(DType::Bool, {});
  c.data<uint8_t>()[0] = condition;
  req->set_input(1, c);
  req->infer();
  std::vector<float> out;
  for (size_t i = 0; i < 2; ++i) {
    const Tensor t = req->output(i);
    out.insert(out.end(), t.values<float>().begin(), t.values<float>().end());
  }
  return out;
}

TEST(IrCodec, RoundTripIsExactAndComputesTheSame) {
  const auto original = model();
  const std::vector<uint8_t> bytes = encode_model(*original);
  const auto decoded = decode_model(bytes, "test IR");
  EXPECT_EQ(encode_model(*decoded), bytes);
  EXPECT_EQ(decoded->source_sha256, original->source_sha256);
  EXPECT_EQ(decoded->opset(""), 13);
  for (bool c : {true, false}) {
    const auto expected = outputs(*original, c);
    EXPECT_EQ(outputs(*decoded, c), expected) << "condition " << c;
  }
  // Constants view the decoded block, 64-byte aligned.
  const Value* w = decoded->graph.find_value("w");
  ASSERT_TRUE(w && w->is_constant());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w->constant->raw()) % 64, 0u);
}

TEST(IrCodec, DamagedBytesAreRefusedOrStillAModel) {
  const std::vector<uint8_t> bytes = encode_model(*model());
  std::mt19937_64 rng(11);
  size_t refused = 0;
  for (int i = 0; i < 5000; ++i) {
    std::vector<uint8_t> bad = bytes;
    switch (i % 3) {
      case 0: bad.resize(rng() % bad.size()); break;
      case 1: bad[rng() % bad.size()] ^= static_cast<uint8_t>(1u << (rng() % 8)); break;
      default:
        for (int k = 0; k < 3; ++k) bad[rng() % bad.size()] = static_cast<uint8_t>(rng());
    }
    try {
      const auto m = decode_model(bad, "damaged IR");
      (void)encode_model(*m);  // what decoded must be a whole model
    } catch (const Failure& e) {
      EXPECT_EQ(e.status(), HETERO_BLOB_CORRUPT) << e.what();
      ++refused;
    }
  }
  EXPECT_GT(refused, 2500u);
}

}  // namespace
