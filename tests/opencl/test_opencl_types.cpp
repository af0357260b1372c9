// int32, int64 and bool device tensors on OPENCL against the CPU driver:
// comparisons into masks, Where, Cast, logic, integer arithmetic, and the
// copies (views, Transpose, Slice, Concat, Gather, Expand) on every type, as
// the mask and index arithmetic of real models uses them. Each model must
// compile on OPENCL whole, so no node of it is left to the CPU.
#include <gtest/gtest.h>

#include <random>

#include "core/error.h"
#include "tests/opencl/opencl_test_util.h"
#include "tests/unit/expect_error.h"

namespace hetero::test {
namespace {

constexpr const char* kHeader = "<ir_version: 8, opset_import: [\"\" : 13]>\n";

std::string graph(const std::string& inputs, const std::string& outputs, const std::string& body) {
  return std::string(kHeader) + "g (" + inputs + ") => (" + outputs + ") {\n" + body + "\n}\n";
}

// Whole numbers in [lo, hi] of `dtype` (int32, int64, or bool for 0 and 1).
core::Tensor random_integers(core::DType dtype, const core::Shape& shape, std::mt19937& rng, int64_t lo = -9,
                             int64_t hi = 9) {
  core::Tensor t = core::Tensor::allocate(dtype, shape);
  std::uniform_int_distribution<int64_t> d(dtype == core::DType::Bool ? 0 : lo, dtype == core::DType::Bool ? 1 : hi);
  for (size_t i = 0; i < t.numel(); ++i) {
    const int64_t v = d(rng);
    if (dtype == core::DType::I32) t.data<int32_t>()[i] = static_cast<int32_t>(v);
    else if (dtype == core::DType::I64) t.data<int64_t>()[i] = v;
    else t.data<bool>()[i] = v != 0;
  }
  return t;
}

TEST(OpenClTypes, ComparisonsIntoMasks) {
  REQUIRE_OPENCL();
  std::mt19937 rng(21);
  for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"})
    for (const char* type : {"float", "int32", "int64"}) {
      const std::string t = type;
      // [2,3,4] against [3,1]: broadcasting both ways.
      const std::string text = graph(t + "[2,3,4] a, " + t + "[3,1] b", "bool[2,3,4] y", std::string("y = ") + op + "(a, b)");
      std::vector<core::Tensor> in;
      if (t == "float") {
        // Whole numbers in float, so that Equal finds equal pairs.
        in = {random_integers(core::DType::I32, {2, 3, 4}, rng, -3, 3), random_integers(core::DType::I32, {3, 1}, rng, -3, 3)};
        for (core::Tensor& x : in) {
          core::Tensor f = core::Tensor::allocate(core::DType::F32, x.shape());
          for (size_t i = 0; i < x.numel(); ++i) f.data<float>()[i] = static_cast<float>(x.data<int32_t>()[i]);
          x = f;
        }
      } else {
        const core::DType dt = t == "int32" ? core::DType::I32 : core::DType::I64;
        in = {random_integers(dt, {2, 3, 4}, rng, -3, 3), random_integers(dt, {3, 1}, rng, -3, 3)};
      }
      expect_same_as_cpu(text, in, std::string(op) + " of " + t);
    }
}

TEST(OpenClTypes, WhereOnEveryType) {
  REQUIRE_OPENCL();
  std::mt19937 rng(22);
  expect_same_as_cpu(graph("bool[4,1] c, float[4,5] x, float[5] y", "float[4,5] z", "z = Where(c, x, y)"),
                     {random_integers(core::DType::Bool, {4, 1}, rng), random_tensor({4, 5}, rng), random_tensor({5}, rng)},
                     "float, broadcast");
  expect_same_as_cpu(graph("bool[2,3] c, int64[2,3] x, int64[1] y", "int64[2,3] z", "z = Where(c, x, y)"),
                     {random_integers(core::DType::Bool, {2, 3}, rng), random_integers(core::DType::I64, {2, 3}, rng),
                      random_integers(core::DType::I64, {1}, rng)},
                     "int64");
  expect_same_as_cpu(graph("bool[6] c, bool[6] x, bool[6] y", "bool[6] z", "z = Where(c, x, y)"),
                     {random_integers(core::DType::Bool, {6}, rng), random_integers(core::DType::Bool, {6}, rng),
                      random_integers(core::DType::Bool, {6}, rng)},
                     "bool");
}

// A float model's mask arithmetic: positions where the input passes a
// threshold, counted as floats and used to pick values, as attention masks
// and voice-activity gates do.
TEST(OpenClTypes, MaskArithmeticInAFloatModel) {
  REQUIRE_OPENCL();
  std::mt19937 rng(23);
  const std::string text = graph(
      "float[2,8] x", "float[2,8] y, bool[2,8] keep",
      "zero = Constant <value = float {0.1}> ()\n"
      "keep = Greater(x, zero)\n"
      "k = Cast <to = 1> (keep)\n"
      "scaled = Mul(x, k)\n"
      "neg = Neg(x)\n"
      "y = Where(keep, scaled, neg)");
  expect_same_as_cpu(text, {random_tensor({2, 8}, rng)}, "mask");
}

TEST(OpenClTypes, Casts) {
  REQUIRE_OPENCL();
  std::mt19937 rng(24);
  // ONNX's type numbers: float 1, int32 6, int64 7, bool 9.
  const std::vector<std::pair<const char*, int>> types = {{"float", 1}, {"int32", 6}, {"int64", 7}, {"bool", 9}};
  for (const auto& [from, from_id] : types)
    for (const auto& [to, to_id] : types) {
      const std::string text = graph(std::string(from) + "[3,4] x", std::string(to) + "[3,4] y",
                                     "y = Cast <to = " + std::to_string(to_id) + "> (x)");
      core::Tensor x = from_id == 1 ? random_tensor({3, 4}, rng, -5, 5)
                                    : random_integers(from_id == 6 ? core::DType::I32
                                                      : from_id == 7 ? core::DType::I64
                                                                     : core::DType::Bool,
                                                      {3, 4}, rng);
      if (from_id == 1) x.data<float>()[0] = 0;  // a zero, to cast to false
      expect_same_as_cpu(text, {x}, std::string(from) + " to " + to);
    }
}

TEST(OpenClTypes, IntegerArithmetic) {
  REQUIRE_OPENCL();
  std::mt19937 rng(25);
  for (const char* type : {"int32", "int64"}) {
    const std::string t = type;
    const core::DType dt = t == "int32" ? core::DType::I32 : core::DType::I64;
    for (const char* op : {"Add", "Sub", "Mul", "Max", "Min"})
      expect_same_as_cpu(graph(t + "[3,5] a, " + t + "[5] b", t + "[3,5] y", std::string("y = ") + op + "(a, b)"),
                         {random_integers(dt, {3, 5}, rng), random_integers(dt, {5}, rng)}, std::string(op) + " " + t);
    for (const char* op : {"Abs", "Neg"})
      expect_same_as_cpu(graph(t + "[7] a", t + "[7] y", std::string("y = ") + op + "(a)"), {random_integers(dt, {7}, rng)},
                         std::string(op) + " " + t);
    // Division truncates toward zero, by a constant divisor, -1 among them.
    expect_same_as_cpu(graph(t + "[2,4] a", t + "[2,4] y",
                             "d = Constant <value = " + t + "[4] {3, -1, -4, 7}> ()\ny = Div(a, d)"),
                       {random_integers(dt, {2, 4}, rng, -50, 50)}, "Div " + t);
  }
}

TEST(OpenClTypes, Logic) {
  REQUIRE_OPENCL();
  std::mt19937 rng(26);
  for (const char* op : {"And", "Or", "Xor"})
    expect_same_as_cpu(graph("bool[3,4] a, bool[4] b", "bool[3,4] y", std::string("y = ") + op + "(a, b)"),
                       {random_integers(core::DType::Bool, {3, 4}, rng), random_integers(core::DType::Bool, {4}, rng)}, op);
  expect_same_as_cpu(graph("bool[9] a", "bool[9] y", "y = Not(a)"), {random_integers(core::DType::Bool, {9}, rng)}, "Not");
}

TEST(OpenClTypes, CopiesOfEveryType) {
  REQUIRE_OPENCL();
  std::mt19937 rng(27);
  for (const auto& [type, dt] : std::vector<std::pair<std::string, core::DType>>{
           {"int32", core::DType::I32}, {"int64", core::DType::I64}, {"bool", core::DType::Bool}}) {
    const std::string t = type;
    const std::string text = graph(
        t + "[2,3,4] x, " + t + "[2,1,4] z", t + "[4,3,2] tr, " + t + "[2,2,4] sl, " + t + "[2,4,4] cat, " + t +
                                               "[2,2,4] ga, " + t + "[3,2,3,4] ex, " + t + "[6,4] re",
        "tr = Transpose <perm = [2,1,0]> (x)\n"
        "starts = Constant <value = int64[1] {1}> ()\nends = Constant <value = int64[1] {3}> ()\n"
        "axes = Constant <value = int64[1] {1}> ()\nsl = Slice(x, starts, ends, axes)\n"
        "cat = Concat <axis = 1> (x, z)\n"
        "idx = Constant <value = int64[2] {2, -3}> ()\nga = Gather <axis = 1> (x, idx)\n"
        "shape = Constant <value = int64[4] {3, 1, 3, 4}> ()\nex = Expand(x, shape)\n"
        "rs = Constant <value = int64[2] {6, 4}> ()\nre = Reshape(x, rs)");
    expect_same_as_cpu(text, {random_integers(dt, {2, 3, 4}, rng), random_integers(dt, {2, 1, 4}, rng)}, t);
  }
  std::mt19937 frng(28);
  expect_same_as_cpu(graph("float[2,1,3] x", "float[2,4,3] y", "s = Constant <value = int64[3] {1, 4, 1}> ()\ny = Expand(x, s)"),
                     {random_tensor({2, 1, 3}, frng)}, "Expand float");
}

// A blob keeps each output's type (from its port): an imported model gives
// the same int64 and bool tensors as the compiled one.
TEST(OpenClTypes, BlobsKeepTheTypes) {
  REQUIRE_OPENCL();
  std::mt19937 rng(29);
  const auto m = model(graph("int64[3,4] x, float[3,4] f", "bool[3,4] mask, int64[4,3] t, float[3,4] y",
                             "two = Constant <value = int64 {2}> ()\nmask = Greater(x, two)\n"
                             "t = Transpose(x)\nzero = Constant <value = float {0}> ()\ny = Where(mask, f, zero)"));
  auto compiled = runtime().compile(*m, "OPENCL", {});
  auto imported = runtime().import_blob(runtime().export_blob(*compiled, {}));
  const std::vector<core::Tensor> in = {random_integers(core::DType::I64, {3, 4}, rng), random_tensor({3, 4}, rng)};
  auto run = [&](driver::CompiledModel& c) {
    auto request = c.create_infer_request();
    for (size_t i = 0; i < in.size(); ++i) request->set_input(i, in[i]);
    request->infer();
    std::vector<core::Tensor> out;
    for (size_t i = 0; i < c.outputs().size(); ++i) out.push_back(request->output(i));
    return out;
  };
  const std::vector<core::Tensor> want = run_on(*m, "CPU", in), a = run(*compiled), b = run(*imported);
  EXPECT_TRUE(same_values(want, a));
  EXPECT_TRUE(same_values(want, b));
  EXPECT_EQ(b[0].dtype(), core::DType::Bool);
  EXPECT_EQ(b[1].dtype(), core::DType::I64);
}

// What OPENCL refuses, saying why; the CPU driver runs these.
TEST(OpenClTypes, RefusalsNameTheReason) {
  REQUIRE_OPENCL();
  auto compile = [](const std::string& text) { runtime().compile(*model(text), "OPENCL", {}); };
  // The CPU driver refuses a zero divisor at run time; the GPU cannot, so a
  // divisor it does not know is refused at compile.
  expect_error([&] { compile(graph("int64[4] a, int64[4] b", "int64[4] y", "y = Div(a, b)")); }, HETERO_NOT_SUPPORTED,
               {"integer Div by a value computed at run time"});
  expect_error([&] { compile(graph("int32[2] a", "int32[2] y", "d = Constant <value = int32[2] {2, 0}> ()\ny = Div(a, d)")); },
               HETERO_INVALID_MODEL, {"integer Div by zero"});
  expect_error([&] { compile(graph("int64[2,3] a", "int64[1,1] y", "y = ReduceSum(a)")); }, HETERO_NOT_SUPPORTED,
               {"input 'a' is int64; the GPU kernel of ReduceSum takes float32 only"});
  expect_error([&] { compile(graph("int64[3] a, int64[3] b", "int64[3] y", "y = Pow(a, b)")); }, HETERO_NOT_SUPPORTED,
               {"the GPU kernel of Pow takes float32 only"});
  expect_error([&] { compile(graph("float[2,3] a", "int64[2] y", "y = ArgMax <axis = 1, keepdims = 0> (a)")); }, HETERO_NOT_SUPPORTED,
               {"no GPU kernel for ArgMax"});
}

}  // namespace
}  // namespace hetero::test
