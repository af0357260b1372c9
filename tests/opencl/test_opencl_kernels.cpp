// Every OpenCL kernel against the CPU driver on random shapes, in the spirit
// of ggml's test-backend-ops: each case is a small ONNX model run on CPU
// and on OPENCL (PoCL in the tests) with the same random inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "tests/opencl/opencl_test_util.h"

namespace hetero::test {
namespace {

constexpr const char* kHeader = "<ir_version: 8, opset_import: [\"\" : 13]>\n";

core::Shape random_shape(std::mt19937& rng, size_t min_rank, size_t max_rank, int64_t max_dim = 7) {
  std::uniform_int_distribution<size_t> r(min_rank, max_rank);
  std::uniform_int_distribution<int64_t> d(1, max_dim);
  core::Shape s(r(rng));
  for (int64_t& x : s) x = d(rng);
  return s;
}

std::string one_node(const std::string& inputs_decl, const std::string& out_decl, const std::string& body,
                     const std::string& inits = "") {
  return std::string(kHeader) + "g (" + inputs_decl + ") => (" + out_decl + ")" +
         (inits.empty() ? "" : " <" + inits + ">") + " {\n" + body + "\n}\n";
}

TEST(OpenClKernels, Unary) {
  REQUIRE_OPENCL();
  std::mt19937 rng(1);
  const std::vector<std::string> ops = {"Relu", "Sigmoid", "Tanh", "Exp", "Log", "Abs", "Neg", "Sqrt",
                                        "Reciprocal", "Floor", "Ceil", "Softplus", "Erf", "Sin", "Cos",
                                        "LeakyRelu <alpha = 0.2>", "HardSigmoid <alpha = 0.3, beta = 0.4>",
                                        "Elu <alpha = 0.7>", "HardSwish"};
  for (const std::string& op : ops)
    for (int rep = 0; rep < 2; ++rep) {
      const core::Shape s = random_shape(rng, 1, 4);
      const bool positive = op == "Log" || op == "Sqrt" || op == "Reciprocal";
      const std::string t = type_text("float", s);
      std::string text = one_node(t + " x", t + " y", "y = " + op + "(x)");
      if (op == "HardSwish") text.replace(text.find("13"), 2, "14");  // new in opset 14
      expect_same_as_cpu(text, {random_tensor(s, rng, positive ? 0.1f : -3.0f, 3.0f)}, op + " " + t);
    }
}

TEST(OpenClKernels, Clip) {
  REQUIRE_OPENCL();
  std::mt19937 rng(2);
  const core::Shape s = random_shape(rng, 2, 4);
  const std::string t = type_text("float", s);
  expect_same_as_cpu(one_node(t + " x", t + " y", "lo = Constant <value = float {-0.5}> ()\nhi = Constant <value = float {0.25}> ()\ny = Clip(x, lo, hi)"),
                     {random_tensor(s, rng)}, "constant bounds");
  // A bound computed at run time becomes Max/Min primitives.
  expect_same_as_cpu(one_node(t + " x, float[1] m", t + " y", "hi = Constant <value = float {0.5}> ()\nms = Squeeze(m)\ny = Clip(x, ms, hi)"),
                     {random_tensor(s, rng), random_tensor({1}, rng, -0.5f, 0.f)}, "run-time min");
}

TEST(OpenClKernels, BinaryBroadcasting) {
  REQUIRE_OPENCL();
  std::mt19937 rng(3);
  for (const std::string op : {"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"})
    for (int rep = 0; rep < 4; ++rep) {
      const core::Shape out = random_shape(rng, 1, 5, 5);
      // b: a suffix of out with some dims set to 1 (and a or b swapped).
      core::Shape b(out.begin() + std::uniform_int_distribution<long>(0, long(out.size()) - 1)(rng), out.end());
      for (int64_t& d : b)
        if (rng() % 2) d = 1;
      core::Shape a = out;
      if (rep % 2) std::swap(a, b);
      const bool pow = std::string(op) == "Pow", div = std::string(op) == "Div";
      const std::string ot = type_text("float", out);
      expect_same_as_cpu(one_node(type_text("float", a) + " a, " + type_text("float", b) + " b", ot + " y", "y = " + std::string(op) + "(a, b)"),
                         {random_tensor(a, rng, pow ? 0.2f : -2.f, 2.f), random_tensor(b, rng, div ? 0.5f : -2.f, 2.f)},
                         std::string(op) + " " + type_text("", a) + " " + type_text("", b));
    }
}

TEST(OpenClKernels, Conv) {
  REQUIRE_OPENCL();
  std::mt19937 rng(4);
  for (int rep = 0; rep < 12; ++rep) {
    const bool two_d = rep % 3 != 0;
    const int64_t group = rep % 4 == 1 ? 2 : 1;
    const int64_t n = 1 + rep % 2, cin = group * (1 + int64_t(rng() % 3)), cout = group * (1 + int64_t(rng() % 4));
    const int64_t k = 1 + int64_t(rng() % 3), stride = 1 + int64_t(rng() % 2), dil = 1 + int64_t(rng() % 2),
                  pad = int64_t(rng() % 2);
    const int64_t h = two_d ? 5 + int64_t(rng() % 5) : 1, w = 5 + int64_t(rng() % 6);
    core::Shape xs = two_d ? core::Shape{n, cin, h, w} : core::Shape{n, cin, w};
    core::Shape ws = two_d ? core::Shape{cout, cin / group, k, k} : core::Shape{cout, cin / group, k};
    auto out_dim = [&](int64_t in) { return (in + 2 * pad - dil * (k - 1) - 1) / stride + 1; };
    core::Shape ys = two_d ? core::Shape{n, cout, out_dim(h), out_dim(w)} : core::Shape{n, cout, out_dim(w)};
    const std::string sp = two_d ? "2" : "1";
    const std::string attrs = "<group = " + std::to_string(group) + ", strides = [" + std::to_string(stride) +
                              (two_d ? "," + std::to_string(stride) : "") + "], dilations = [" + std::to_string(dil) +
                              (two_d ? "," + std::to_string(dil) : "") + "], pads = [" +
                              std::string(two_d ? "P,P,P,P" : "P,P") + "]>";
    std::string a = attrs;
    for (size_t p; (p = a.find('P')) != std::string::npos;) a.replace(p, 1, std::to_string(pad));
    const bool bias = rep % 2 == 0;
    // Some cases carry what the program passes fuse: BatchNormalization
    // (folded into the weights), an activation, a residual Add.
    std::string body = "c = Conv " + a + "(x, w" + (bias ? ", b" : "") + ")\n";
    std::string inits = initializer("w", ws, rng) + (bias ? ", " + initializer("b", {cout}, rng) : "");
    std::vector<core::Tensor> inputs = {random_tensor(xs, rng)};
    std::string in_decl = type_text("float", xs) + " x";
    if (rep % 3 == 1) {
      inits += ", " + initializer("s", {cout}, rng, 0.5f, 1.5f) + ", " + initializer("bb", {cout}, rng) + ", " +
               initializer("m", {cout}, rng) + ", " + initializer("v", {cout}, rng, 0.5f, 2.f);
      body += "d = BatchNormalization(c, s, bb, m, v)\ny = Relu(d)";
    } else if (rep % 3 == 2) {
      in_decl += ", " + type_text("float", ys) + " r";
      inputs.push_back(random_tensor(ys, rng));
      body += "d = Add(c, r)\ny = LeakyRelu <alpha = 0.1> (d)";
    } else {
      body += "y = Identity(c)";
    }
    expect_same_as_cpu(one_node(in_decl, type_text("float", ys) + " y", body, inits), inputs,
                       "conv " + type_text("", xs) + " w " + type_text("", ws) + " " + a);
  }
}

TEST(OpenClKernels, MatMulAndGemm) {
  REQUIRE_OPENCL();
  std::mt19937 rng(5);
  for (int rep = 0; rep < 6; ++rep) {
    const int64_t m = 1 + int64_t(rng() % 6), k = 1 + int64_t(rng() % 9), n = 1 + int64_t(rng() % 7);
    core::Shape as = {m, k}, bs = {k, n}, ys = {m, n};
    if (rep % 3 == 1) as = {2, 3, m, k}, bs = {3, k, n}, ys = {2, 3, m, n};
    if (rep % 3 == 2) as = {3, m, k}, ys = {3, m, n};  // constant 2-D B: stored transposed once
    const bool const_b = rep % 3 == 2;
    const std::string in = type_text("float", as) + " a" + (const_b ? "" : ", " + type_text("float", bs) + " b");
    std::vector<core::Tensor> inputs = {random_tensor(as, rng)};
    if (!const_b) inputs.push_back(random_tensor(bs, rng));
    expect_same_as_cpu(one_node(in, type_text("float", ys) + " y", "y = MatMul(a, b)", const_b ? initializer("b", bs, rng) : ""),
                       inputs, "matmul " + type_text("", as) + " x " + type_text("", bs));
  }
  for (int trans = 0; trans < 2; ++trans) {
    const int64_t m = 3, k = 5, n = 4;
    const core::Shape bs = trans ? core::Shape{n, k} : core::Shape{k, n};
    expect_same_as_cpu(one_node("float[3,5] a", "float[3,4] y", "y = Gemm <transB = " + std::to_string(trans) + ">(a, b, c)",
                                initializer("b", bs, rng) + ", " + initializer("c", {n}, rng)),
                       {random_tensor({m, k}, rng)}, "gemm transB=" + std::to_string(trans));
  }
}

TEST(OpenClKernels, Pooling) {
  REQUIRE_OPENCL();
  std::mt19937 rng(6);
  for (int rep = 0; rep < 8; ++rep) {
    const bool two_d = rep % 4 != 3;
    const int64_t k = 2 + int64_t(rng() % 2), s = 1 + int64_t(rng() % 2), p = rep % 2 ? 1 : 0;
    const int64_t h = two_d ? 6 + int64_t(rng() % 4) : 1, w = 6 + int64_t(rng() % 5);
    const core::Shape xs = two_d ? core::Shape{1, 3, h, w} : core::Shape{2, 3, w};
    auto od = [&](int64_t in) { return (in + 2 * p - k) / s + 1; };
    const core::Shape ys = two_d ? core::Shape{xs[0], 3, od(h), od(w)} : core::Shape{2, 3, od(w)};
    const std::string ks = two_d ? std::to_string(k) + "," + std::to_string(k) : std::to_string(k);
    const std::string ss = two_d ? std::to_string(s) + "," + std::to_string(s) : std::to_string(s);
    const std::string ps = two_d ? std::string(4 - 1, ',').insert(0, "") : "";
    std::string pads = two_d ? "P,P,P,P" : "P,P";
    for (size_t i; (i = pads.find('P')) != std::string::npos;) pads.replace(i, 1, std::to_string(p));
    (void)ps;
    const std::string attrs = "<kernel_shape = [" + ks + "], strides = [" + ss + "], pads = [" + pads + "]";
    const std::string op = rep % 2 ? "MaxPool" : "AveragePool";
    const std::string extra = op == "AveragePool" && rep % 4 == 2 ? ", count_include_pad = 1>" : ">";
    expect_same_as_cpu(one_node(type_text("float", xs) + " x", type_text("float", ys) + " y", "y = " + op + " " + attrs + extra + " (x)"),
                       {random_tensor(xs, rng)}, op + " " + type_text("", xs) + attrs);
  }
  for (const std::string op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    const core::Shape xs = {2, 5, 4, 3};
    expect_same_as_cpu(one_node("float[2,5,4,3] x", "float[2,5,1,1] y", "y = " + op + "(x)"), {random_tensor(xs, rng)}, op);
  }
}

TEST(OpenClKernels, Softmax) {
  REQUIRE_OPENCL();
  std::mt19937 rng(7);
  for (int rep = 0; rep < 6; ++rep) {
    const core::Shape s = random_shape(rng, 1, 4);
    const auto axis = static_cast<int64_t>(rng() % s.size()) - (rep % 2 ? static_cast<int64_t>(s.size()) : 0);
    const std::string t = type_text("float", s);
    const std::string opset = rep % 3 == 0 ? "11" : "13";  // opset 11 flattens from the axis on
    std::string text = one_node(t + " x", t + " y", "y = Softmax <axis = " + std::to_string(axis) + ">(x)");
    text.replace(text.find("13"), 2, opset);
    expect_same_as_cpu(text, {random_tensor(s, rng, -4, 4)}, "softmax opset " + opset + " " + t + " axis " + std::to_string(axis));
  }
}

TEST(OpenClKernels, Reduce) {
  REQUIRE_OPENCL();
  std::mt19937 rng(8);
  for (const std::string op : {"ReduceMax", "ReduceMin", "ReduceSum", "ReduceMean"})
    for (int rep = 0; rep < 3; ++rep) {
      const core::Shape s = random_shape(rng, 1, 4, 6);
      std::vector<int64_t> axes;
      for (size_t d = 0; d < s.size(); ++d)
        if (rng() % 2) axes.push_back(static_cast<int64_t>(d));
      // keepdims=0 over every axis would give a scalar; keep the dims then.
      const bool keep = rep % 2 || axes.empty() || axes.size() == s.size();
      core::Shape ys;
      for (size_t d = 0; d < s.size(); ++d) {
        const bool red = axes.empty() || std::count(axes.begin(), axes.end(), int64_t(d));
        if (!red) ys.push_back(s[d]);
        else if (keep) ys.push_back(1);
      }
      std::string ax;
      for (int64_t a : axes) ax += (ax.empty() ? "" : ",") + std::to_string(a);
      std::string body, inits;
      if (op == "ReduceSum") {  // axes is an input from opset 13
        body = "y = ReduceSum <keepdims = " + std::to_string(keep) + ">(x" + (axes.empty() ? "" : ", axes") + ")";
        if (!axes.empty()) inits = "int64[" + std::to_string(axes.size()) + "] axes = {" + ax + "}";
      } else {
        body = "y = " + op + " <keepdims = " + std::to_string(keep) + (axes.empty() ? "" : ", axes = [" + ax + "]") + ">(x)";
      }
      expect_same_as_cpu(one_node(type_text("float", s) + " x", type_text("float", ys) + " y", body, inits),
                         {random_tensor(s, rng)}, op + " " + type_text("", s) + " axes " + ax);
    }
}

TEST(OpenClKernels, TransposeConcatAndViews) {
  REQUIRE_OPENCL();
  std::mt19937 rng(9);
  for (int rep = 0; rep < 5; ++rep) {
    const core::Shape s = random_shape(rng, 2, 5, 5);
    std::vector<int64_t> perm(s.size());
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = int64_t(i);
    std::shuffle(perm.begin(), perm.end(), rng);
    core::Shape ys;
    std::string ps;
    for (int64_t p : perm) ys.push_back(s[size_t(p)]), ps += (ps.empty() ? "" : ",") + std::to_string(p);
    expect_same_as_cpu(one_node(type_text("float", s) + " x", type_text("float", ys) + " y", "y = Transpose <perm = [" + ps + "]>(x)"),
                       {random_tensor(s, rng)}, "transpose " + type_text("", s) + " perm " + ps);
  }
  for (int rep = 0; rep < 4; ++rep) {
    const core::Shape s = random_shape(rng, 1, 4, 5);
    const size_t axis = rng() % s.size();
    core::Shape a = s, b = s, ys = s;
    b[axis] = 1 + int64_t(rng() % 3);
    ys[axis] = a[axis] + b[axis] + a[axis];
    expect_same_as_cpu(one_node(type_text("float", a) + " a, " + type_text("float", b) + " b", type_text("float", ys) + " y",
                                "y = Concat <axis = " + std::to_string(axis) + ">(a, b, a)"),
                       {random_tensor(a, rng), random_tensor(b, rng)}, "concat " + type_text("", s) + " axis " + std::to_string(axis));
  }
  // Shape arithmetic folded at compile time feeding a Reshape, then views.
  expect_same_as_cpu(one_node("float[2,3,4,1] x", "float[2,12] y",
                              "s = Shape(x)\nn = Slice(s, st, en)\nc = Concat <axis = 0>(n, m1)\nr = Reshape(x, c)\n"
                              "u = Unsqueeze(r, ax)\nq = Squeeze(u, ax)\ny = Relu(q)",
                              "int64[1] st = {0}, int64[1] en = {1}, int64[1] m1 = {-1}, int64[1] ax = {1}"),
                     {random_tensor({2, 3, 4, 1}, rng)}, "shape arithmetic and views");
}

// Slice with constant parameters: random starts and ends (negative and out
// of range), axes (negative, some left out) and steps (negative too), as the
// strided-copy kernel takes them.
TEST(OpenClKernels, Slice) {
  REQUIRE_OPENCL();
  std::mt19937 rng(13);
  auto list = [](const std::vector<int64_t>& v) {
    std::string s;
    for (int64_t x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
    return s;
  };
  for (int rep = 0; rep < 12; ++rep) {
    const core::Shape s = random_shape(rng, 1, 5, 6);
    const auto rank = static_cast<int64_t>(s.size());
    std::vector<int64_t> starts, ends, axes, steps;
    core::Shape ys = s;
    for (int64_t ax = 0; ax < rank; ++ax) {
      if (rng() % 3 == 0) continue;  // this axis is not sliced
      const int64_t n = s[size_t(ax)];
      int64_t step = 1 + int64_t(rng() % 3);
      if (rng() % 2) step = -step;
      // Positions from -n - 2 to n + 2: negative ones count from the end,
      // out-of-range ones clamp.
      const int64_t a = int64_t(rng() % uint64_t(2 * n + 5)) - n - 2, b = int64_t(rng() % uint64_t(2 * n + 5)) - n - 2;
      auto clamp = [&](int64_t v, int64_t lo, int64_t hi) { return std::clamp(v < 0 ? v + n : v, lo, hi); };
      const int64_t st = step > 0 ? clamp(a, 0, n) : clamp(a, -1, n - 1), en = step > 0 ? clamp(b, 0, n) : clamp(b, -1, n - 1);
      const int64_t count = step > 0 ? std::max<int64_t>(0, (en - st + step - 1) / step) : std::max<int64_t>(0, (st - en - step - 1) / -step);
      if (count == 0) continue;  // an empty output is no kernel's work
      ys[size_t(ax)] = count;
      starts.push_back(a), ends.push_back(b), steps.push_back(step);
      axes.push_back(rng() % 2 ? ax - rank : ax);
    }
    if (starts.empty()) continue;
    const auto k = static_cast<int64_t>(starts.size());
    const std::string inits = "int64[" + std::to_string(k) + "] st = {" + list(starts) + "}, int64[" + std::to_string(k) +
                              "] en = {" + list(ends) + "}, int64[" + std::to_string(k) + "] ax = {" + list(axes) +
                              "}, int64[" + std::to_string(k) + "] sp = {" + list(steps) + "}";
    expect_same_as_cpu(one_node(type_text("float", s) + " x", type_text("float", ys) + " y", "y = Slice(x, st, en, ax, sp)", inits),
                       {random_tensor(s, rng)},
                       "slice " + type_text("", s) + " starts " + list(starts) + " ends " + list(ends) + " axes " + list(axes) +
                           " steps " + list(steps));
  }
  // Behind shape arithmetic that ONNX's shape inference does not follow (a
  // Reshape to a computed shape), as PP-OCR rec slices its attention's
  // queries, keys and values: the GPU infers the shapes itself.
  expect_same_as_cpu(one_node("float[2,3,4] x", "float[?,?] y",
                              "s = Shape(x)\nn = Slice(s, s0, s1)\nc = Concat <axis = 0>(n, m1)\nr = Reshape(x, c)\n"
                              "y = Slice(r, b0, b1, b2, b3)",
                              "int64[1] s0 = {0}, int64[1] s1 = {1}, int64[1] m1 = {-1}, int64[1] b0 = {-1}, "
                              "int64[1] b1 = {-100}, int64[1] b2 = {1}, int64[1] b3 = {-2}"),
                     {random_tensor({2, 3, 4}, rng)}, "slice after a computed reshape");
}

// ConvTranspose over strides, dilations, pads, groups, output_padding and
// output_shape, 2-D and 1-D.
TEST(OpenClKernels, ConvTranspose) {
  REQUIRE_OPENCL();
  std::mt19937 rng(12);
  struct Case {
    core::Shape x, w, y;
    std::string attrs;
    bool bias;
  };
  const std::vector<Case> cases = {
      {{1, 3, 5, 5}, {3, 4, 3, 3}, {1, 4, 7, 7}, "", true},
      {{2, 4, 4, 6}, {4, 2, 2, 2}, {2, 4, 8, 12}, "group = 2, strides = [2, 2]", true},
      {{1, 2, 5, 4}, {2, 3, 3, 2}, {1, 3, 11, 9}, "strides = [2, 2], pads = [1, 0, 0, 0], output_padding = [1, 1]", false},
      {{1, 2, 4, 4}, {2, 2, 3, 3}, {1, 2, 8, 8}, "strides = [2, 2], auto_pad = \"SAME_UPPER\"", true},
      {{1, 1, 3, 3}, {1, 2, 3, 3}, {1, 2, 10, 8}, "strides = [3, 2], output_shape = [10, 8]", false},
      {{1, 3, 4, 4}, {3, 2, 2, 3}, {1, 2, 6, 6}, "dilations = [2, 2], pads = [0, 1, 0, 1]", true},
      {{1, 3, 6}, {3, 2, 4}, {1, 2, 12}, "strides = [2], pads = [1, 1]", true},
      // The kernel the size of the stride: a 1x1 convolution and a shuffle.
      {{2, 8, 5, 6}, {8, 4, 2, 2}, {2, 4, 10, 12}, "strides = [2, 2]", true},
      {{1, 6, 3, 4}, {6, 2, 3, 2}, {1, 2, 9, 8}, "strides = [3, 2]", false},
  };
  for (const Case& c : cases)
    for (const bool constant : {false, true}) {
      // Weights and bias as inputs, then as initializers, as a model's are
      // (which is when a kernel the size of the stride takes the 1x1 path).
      const core::Shape b = {c.y[1]};
      std::string ins = type_text("float", c.x) + " x", inits;
      std::vector<core::Tensor> inputs = {random_tensor(c.x, rng)};
      if (constant) {
        inits = initializer("w", c.w, rng) + (c.bias ? ", " + initializer("b", b, rng) : "");
      } else {
        ins += ", " + type_text("float", c.w) + " w" + (c.bias ? ", " + type_text("float", b) + " b" : "");
        inputs.push_back(random_tensor(c.w, rng));
        if (c.bias) inputs.push_back(random_tensor(b, rng));
      }
      const std::string op = "ConvTranspose" + (c.attrs.empty() ? "" : " <" + c.attrs + ">");
      expect_same_as_cpu(
          one_node(ins, type_text("float", c.y) + " y", "y = " + op + "(x, w" + (c.bias ? ", b)" : ")"), inits), inputs,
          op + " " + type_text("", c.x) + (constant ? ", constant weights" : ""));
    }
}

// Resize with constant scales or sizes: nearest in each rounding and each
// coordinate transformation, linear along one, two and three axes, up and
// down; and Upsample.
// A ConvTranspose whose kernel is its stride is a 1x1 convolution and a
// channel shuffle; the batch norm and activation after it (a detector's
// upsampling head) run as post-ops of the shuffle's copy.
TEST(OpenClKernels, ConvTransposeShuffleTakesPostOps) {
  REQUIRE_OPENCL();
  std::mt19937 rng(31);
  const std::string text = one_node("float[1,6,5,4] x", "float[1,4,10,8] y",
                                    "c = ConvTranspose <strides = [2, 2]> (x, w, b)\nm = Mul(c, s)\na = Add(m, t)\ny = Relu(a)",
                                    initializer("w", {6, 4, 2, 2}, rng) + ", " + initializer("b", {4}, rng) + ", " +
                                        initializer("s", {4, 1, 1}, rng, 0.5f, 1.5f) + ", " + initializer("t", {4, 1, 1}, rng));
  expect_same_as_cpu(text, {random_tensor({1, 6, 5, 4}, rng)}, "shuffle with batch norm and Relu");
}

// A squeeze-and-excitation block (MobileNetV3, PP-OCR cls): the pooling and
// the two 1x1 convolutions run as one kernel of one work group per batch
// item; with and without biases, with more channels than the group has work
// items, on 1-D and 2-D inputs, with the scaling folded into the 1x1
// projection after the block where there is one; and left unfused where a
// second node reads the pooled vector.
TEST(OpenClKernels, SqueezeExcite) {
  REQUIRE_OPENCL();
  std::mt19937 rng(37);
  struct Case {
    core::Shape x;
    int64_t hidden;
    bool bias, pooled_read_twice;
    int64_t projected = 0;  // output channels of a 1x1 convolution after the block, if any
  };
  for (const Case& c : {Case{{1, 16, 6, 8}, 4, true, false}, Case{{2, 24, 5, 3}, 6, false, false},
                        Case{{1, 300, 2, 3}, 75, true, false}, Case{{2, 12, 10}, 3, true, true},
                        Case{{1, 16, 6, 8}, 4, true, false, 8}, Case{{2, 40, 3, 9}, 10, false, false, 24},
                        Case{{2, 12, 10}, 3, true, false, 5}}) {
    const int64_t ch = c.x[1];
    core::Shape w1{c.hidden, ch, 1, 1}, w2{ch, c.hidden, 1, 1}, b1{c.hidden}, b2{ch};
    if (c.x.size() == 3) w1.pop_back(), w2.pop_back();
    std::string inits = initializer("w1", w1, rng) + ", " + initializer("w2", w2, rng);
    if (c.bias) inits += ", " + initializer("b1", b1, rng) + ", " + initializer("b2", b2, rng);
    const std::string bias1 = c.bias ? ", b1)" : ")", bias2 = c.bias ? ", b2)" : ")";
    core::Shape pooled(c.x.size(), 1);
    pooled[0] = c.x[0];
    pooled[1] = ch;
    core::Shape y = c.x;
    std::string body = "p = GlobalAveragePool(x)\nh = Conv(p, w1" + bias1 + "\nr = Relu(h)\ne = Conv(r, w2" + bias2 +
                       "\ns = HardSigmoid <alpha = 0.2, beta = 0.5> (e)\n";
    if (c.projected) {
      core::Shape w3{c.projected, ch, 1, 1};
      if (c.x.size() == 3) w3.pop_back();
      inits += ", " + initializer("w3", w3, rng) + ", " + initializer("b3", {c.projected}, rng);
      body += "m = Mul(s, x)\ny = Conv(m, w3, b3)";
      y[1] = c.projected;
    } else {
      body += "y = Mul(x, s)";
    }
    std::string outs = type_text("float", y) + " y";
    if (c.pooled_read_twice) {
      outs += ", " + type_text("float", pooled) + " z";
      body += "\nz = Neg(p)";
    }
    expect_same_as_cpu(one_node(type_text("float", c.x) + " x", outs, body, inits), {random_tensor(c.x, rng)},
                       "squeeze-excite " + type_text("", c.x) + (c.bias ? "" : " without biases") +
                           (c.projected ? ", projected" : ""));
  }
}

TEST(OpenClKernels, Resize) {
  REQUIRE_OPENCL();
  std::mt19937 rng(13);
  auto floats = [](const std::vector<double>& v) {
    std::string s;
    for (double d : v) s += (s.empty() ? "" : ", ") + std::to_string(d);
    return s;
  };
  auto ints = [](const core::Shape& v) {
    std::string s;
    for (int64_t d : v) s += (s.empty() ? "" : ", ") + std::to_string(d);
    return s;
  };
  struct Case {
    core::Shape x, y;
    std::vector<double> scales;  // empty: sizes = y
    std::string attrs;
  };
  const std::vector<Case> cases = {
      {{1, 2, 4, 5}, {1, 2, 8, 10}, {1, 1, 2, 2}, "mode = \"nearest\""},
      {{1, 2, 4, 5}, {1, 2, 8, 10}, {1, 1, 2, 2}, "mode = \"nearest\", coordinate_transformation_mode = \"asymmetric\", nearest_mode = \"floor\""},
      {{1, 1, 5, 7}, {1, 1, 7, 3}, {}, "mode = \"nearest\", nearest_mode = \"round_prefer_ceil\""},
      {{1, 1, 5, 7}, {1, 1, 9, 12}, {}, "mode = \"nearest\", coordinate_transformation_mode = \"align_corners\", nearest_mode = \"ceil\""},
      {{2, 3, 4}, {2, 3, 12}, {1, 1, 3}, "mode = \"nearest\", coordinate_transformation_mode = \"tf_half_pixel_for_nn\""},
      {{1, 2, 4, 5}, {1, 2, 8, 10}, {1, 1, 2, 2}, "mode = \"linear\""},
      {{1, 2, 6, 9}, {1, 2, 4, 4}, {}, "mode = \"linear\", coordinate_transformation_mode = \"pytorch_half_pixel\""},
      {{1, 2, 4, 5}, {1, 2, 7, 9}, {}, "mode = \"linear\", coordinate_transformation_mode = \"align_corners\""},
      {{2, 3, 4, 5}, {2, 6, 6, 5}, {}, "mode = \"linear\", coordinate_transformation_mode = \"asymmetric\""},
      {{3, 7}, {3, 17}, {1, 2.5}, "mode = \"linear\""},
  };
  for (const Case& c : cases) {
    const std::string inits = c.scales.empty()
                                  ? "float[0] roi = {}, float[0] sc = {}, int64[" + std::to_string(c.y.size()) +
                                        "] sz = {" + ints(c.y) + "}"
                                  : "float[0] roi = {}, float[" + std::to_string(c.scales.size()) + "] sc = {" +
                                        floats(c.scales) + "}";
    const std::string call = c.scales.empty() ? "Resize <" + c.attrs + ">(x, roi, sc, sz)" : "Resize <" + c.attrs + ">(x, roi, sc)";
    expect_same_as_cpu(one_node(type_text("float", c.x) + " x", type_text("float", c.y) + " y", "y = " + call, inits),
                       {random_tensor(c.x, rng)}, call + " " + type_text("", c.x));
  }
  std::string upsample = one_node("float[1,2,3,4] x", "float[1,2,6,12] y", "y = Upsample <mode = \"linear\">(x, sc)",
                                  "float[4] sc = {1.0, 1.0, 2.0, 3.0}");
  upsample.replace(upsample.find("13"), 2, "9");
  expect_same_as_cpu(upsample, {random_tensor({1, 2, 3, 4}, rng)}, "Upsample linear");
}

// QuantizeLinear -> DequantizeLinear, which the GPU computes as one rounding
// to the codes and back: ties (x / scale exactly half-way) round to even,
// values past the codes saturate, NaN and infinities land where the CPU's
// quantisation puts them; alone, and fused after an Add and a pooling.
TEST(OpenClKernels, QuantizeDequantize) {
  REQUIRE_OPENCL();
  core::Tensor x = core::Tensor::allocate(core::DType::F32, {1, 2, 8, 16});
  float* v = x.data<float>();
  for (size_t i = 0; i < x.numel(); ++i) v[i] = 0.5f * (static_cast<float>(i) - 128.0f) + 0.25f;  // / 0.5: ties
  v[3] = NAN;
  v[4] = INFINITY;
  v[5] = -INFINITY;
  v[6] = 1e30f;
  for (const std::string dtype : {"uint8", "int8"}) {
    const std::string zp = dtype == "uint8" ? "uint8[1] zp = {128}" : "int8[1] zp = {-3}";
    const std::string params = "float[1] s = {0.5}, " + zp + ", float[1] t = {0.75}";
    const std::string qdq = "q = QuantizeLinear(a, s, zp)\ny = DequantizeLinear(q, s, zp)";
    const std::string io = "float[1,2,8,16] x";
    expect_same_as_cpu(one_node(io, "float[1,2,8,16] y", "a = Identity(x)\n" + qdq, params), {x}, dtype + " alone");
    expect_same_as_cpu(one_node(io, "float[1,2,8,16] y", "a = Add(x, t)\n" + qdq, params), {x},
                       dtype + " fused after Add");
    expect_same_as_cpu(one_node(io, "float[1,2,4,8] y", "a = MaxPool <kernel_shape = [2,2], strides = [2,2]>(x)\n" + qdq,
                                params),
                       {x}, dtype + " fused after MaxPool");
  }
}

// Pad in each mode, pads per axis (negative ones crop, constant mode only).
TEST(OpenClKernels, Pad) {
  REQUIRE_OPENCL();
  std::mt19937 rng(14);
  auto list = [](const std::vector<int64_t>& v) {
    std::string s;
    for (int64_t x : v) s += (s.empty() ? "" : ", ") + std::to_string(x);
    return s;
  };
  for (const std::string mode : {"constant", "edge", "reflect"})
    for (int rep = 0; rep < 4; ++rep) {
      const core::Shape s = random_shape(rng, 1, 4, 5);
      std::vector<int64_t> pads(2 * s.size());
      core::Shape ys = s;
      for (size_t d = 0; d < 2 * s.size(); ++d) {
        const int64_t n = s[d % s.size()];
        // reflect: up to n - 1; constant: a crop of up to half the axis too.
        const int64_t hi = mode == "reflect" ? n - 1 : 3, lo = mode == "constant" ? -(n / 2) : 0;
        pads[d] = lo + int64_t(rng() % uint64_t(hi - lo + 1));
        ys[d % s.size()] += pads[d];
      }
      const std::string k = std::to_string(pads.size());
      const std::string text = one_node(type_text("float", s) + " x", type_text("float", ys) + " y",
                                        "y = Pad <mode = \"" + mode + "\">(x, p, v)",
                                        "int64[" + k + "] p = {" + list(pads) + "}, float v = {0.75}");
      expect_same_as_cpu(text, {random_tensor(s, rng)}, mode + " " + type_text("", s) + " pads " + list(pads));
    }
}

// Gather with constant indices (negative ones count from the end; a scalar
// index drops the axis) along every axis.
TEST(OpenClKernels, Gather) {
  REQUIRE_OPENCL();
  std::mt19937 rng(15);
  for (int rep = 0; rep < 8; ++rep) {
    const core::Shape s = random_shape(rng, 1, 4, 6);
    const auto axis = int64_t(rng() % s.size());
    const int64_t n = s[size_t(axis)];
    const bool scalar = rep % 3 == 0;
    std::vector<int64_t> idx(scalar ? 1 : 1 + rng() % 5);
    std::string list;
    for (int64_t& i : idx) {
      i = int64_t(rng() % uint64_t(2 * n)) - n;
      list += (list.empty() ? "" : ", ") + std::to_string(i);
    }
    core::Shape ys(s.begin(), s.begin() + axis);
    if (!scalar) ys.push_back(int64_t(idx.size()));
    ys.insert(ys.end(), s.begin() + axis + 1, s.end());
    const std::string ind = scalar ? "int64 i = {" + list + "}" : "int64[" + std::to_string(idx.size()) + "] i = {" + list + "}";
    expect_same_as_cpu(one_node(type_text("float", s) + " x", type_text("float", ys) + " y",
                                "y = Gather <axis = " + std::to_string(axis) + ">(x, i)", ind),
                       {random_tensor(s, rng)}, "gather " + type_text("", s) + " axis " + std::to_string(axis) + " [" + list + "]");
  }
}

// LSTM in every direction, with and without the optional inputs (bias,
// initial states, peepholes), every output read.
TEST(OpenClKernels, Lstm) {
  REQUIRE_OPENCL();
  std::mt19937 rng(16);
  const int64_t seq = 5, batch = 2, in = 3, hid = 4;
  for (const std::string dir : {"forward", "reverse", "bidirectional"})
    for (const bool optional : {false, true}) {
      const int64_t d = dir == "bidirectional" ? 2 : 1;
      std::string inits = initializer("w", {d, 4 * hid, in}, rng) + ", " + initializer("r", {d, 4 * hid, hid}, rng);
      std::string args = "x, w, r";
      std::string inputs = type_text("float", {seq, batch, in}) + " x";
      std::vector<core::Tensor> values = {random_tensor({seq, batch, in}, rng, -2, 2)};
      if (optional) {
        inits += ", " + initializer("b", {d, 8 * hid}, rng) + ", " + initializer("p", {d, 3 * hid}, rng);
        inputs += ", " + type_text("float", {d, batch, hid}) + " h, " + type_text("float", {d, batch, hid}) + " c";
        values.push_back(random_tensor({d, batch, hid}, rng));
        values.push_back(random_tensor({d, batch, hid}, rng));
        args += ", b, , h, c, p";
      }
      const std::string state = type_text("float", {d, batch, hid});
      expect_same_as_cpu(one_node(inputs, type_text("float", {seq, d, batch, hid}) + " y, " + state + " yh, " + state + " yc",
                                  "y, yh, yc = LSTM <hidden_size = " + std::to_string(hid) + ", direction = \"" + dir +
                                      "\">(" + args + ")",
                                  inits),
                         values, "LSTM " + dir + (optional ? " with bias, states and peepholes" : ""));
    }
}

// An If whose condition is known at compile time (here from the input's
// shape, nested one level) runs the branch it takes, inlined.
TEST(OpenClKernels, IfWithAKnownCondition) {
  REQUIRE_OPENCL();
  std::mt19937 rng(17);
  const std::string text = one_node(
      "float[2,3] x", "float[2,3] y",
      "s = Shape(x)\nn = Size(s)\nc = Equal(n, two)\n"
      "y = If(c) <then_branch = g1 () => (float[2,3] t) {\n"
      "    k = Not(c)\n"
      "    t = If(k) <then_branch = g3 () => (float[2,3] a) { a = Neg(x) },\n"
      "               else_branch = g4 () => (float[2,3] b) { b = Sigmoid(x) }>\n"
      "  },\n"
      "  else_branch = g2 () => (float[2,3] e) { e = Relu(x) }>",
      "int64 two = {2}");
  expect_same_as_cpu(text, {random_tensor({2, 3}, rng)}, "If on the rank, nested");
}

// An If whose condition follows from a small integer input (as Silero VAD
// branches on its sample rate) runs on the GPU whichever way it goes: a
// program per outcome, chosen on the host. One whose condition comes from
// a device tensor is refused, with that reason.
TEST(OpenClKernels, IfOnAnInput) {
  REQUIRE_OPENCL();
  std::mt19937 rng(18);
  const std::string text = one_node(
      "float[2,3] x, int64 rate", "float[2,3] y",
      "c = Equal(rate, k)\n"
      "y = If(c) <then_branch = g1 () => (float[2,3] t) { t = Neg(x) },\n"
      "  else_branch = g2 () => (float[2,3] e) { e = Relu(x) }>",
      "int64 k = {16000}");
  const core::Tensor x = random_tensor({2, 3}, rng);
  for (const int64_t rate : {16000, 8000})
    expect_same_as_cpu(text, {x, core::Tensor::from_vector<int64_t>({rate}, {})}, "rate " + std::to_string(rate));
  auto m = model(one_node("float[2,3] x", "float[2,3] y",
                          "r = ReduceMax <keepdims = 0>(x)\nc = Cast <to = 9>(r)\n"
                          "y = If(c) <then_branch = g1 () => (float[2,3] t) { t = Neg(x) },\n"
                          "  else_branch = g2 () => (float[2,3] e) { e = Relu(x) }>"));
  const auto support = runtime().query(*m, "OPENCL");
  ASSERT_EQ(support.size(), 3u);
  EXPECT_FALSE(support[2].supported);
  EXPECT_NE(support[2].reason.find("device values at run time"), std::string::npos) << support[2].reason;
}

TEST(OpenClKernels, UnfusedMatchesFused) {
  REQUIRE_OPENCL();
  std::mt19937 rng(10);
  const std::string text = one_node("float[1,4,6,6] x", "float[1,8,6,6] y",
                                    "c = Conv <pads = [1,1,1,1]>(x, w, b)\nm = Mul(c, s)\nd = Add(m, t)\n"
                                    "h = HardSigmoid(d)\ny = Mul(d, h)",
                                    initializer("w", {8, 4, 3, 3}, rng) + ", " + initializer("b", {8}, rng) + ", " +
                                        initializer("s", {8, 1, 1}, rng) + ", " + initializer("t", {1, 8, 1, 1}, rng));
  const std::vector<core::Tensor> in = {random_tensor({1, 4, 6, 6}, rng)};
  expect_same_as_cpu(text, in, "optimized");
  expect_same_as_cpu(text, in, "optimize=false", {{"optimize", "false"}});
}

}  // namespace
}  // namespace hetero::test
