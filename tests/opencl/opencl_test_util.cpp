#include "tests/opencl/opencl_test_util.h"

#include <cmath>
#include <sstream>

#include "core/error.h"
#include "partition/hetero_driver.h"
#include "tests/unit/model_text.h"

namespace hetero::test {

core::Runtime& runtime() {
  static core::Runtime rt = [] {
    core::RuntimeOptions o;
    o.make_hetero_driver = partition::make_hetero_driver;
    return core::Runtime(o);
  }();
  return rt;
}

bool have_opencl() {
  const driver::Driver* d = runtime().registry().find("OPENCL");
  return d && !d->devices().empty();
}

std::string type_text(const char* dtype, const core::Shape& shape) {
  std::ostringstream s;
  s << dtype << "[";
  for (size_t i = 0; i < shape.size(); ++i) s << (i ? "," : "") << shape[i];
  s << "]";
  return s.str();
}

core::Tensor random_tensor(const core::Shape& shape, std::mt19937& rng, float lo, float hi) {
  core::Tensor t = core::Tensor::allocate(core::DType::F32, shape);
  std::uniform_real_distribution<float> dist(lo, hi);
  for (size_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

std::string initializer(const std::string& name, const core::Shape& shape, std::mt19937& rng, float lo, float hi) {
  const core::Tensor t = random_tensor(shape, rng, lo, hi);
  std::ostringstream s;
  s.precision(9);
  s << type_text("float", shape) << " " << name << " = {";
  for (size_t i = 0; i < t.numel(); ++i) s << (i ? "," : "") << t.data<float>()[i];
  s << "}";
  return s.str();
}

std::unique_ptr<core::Model> model(const std::string& text) { return model_from_text(text.c_str()); }

std::vector<core::Tensor> run_on(const core::Model& m, const std::string& device,
                                 const std::vector<core::Tensor>& inputs, const driver::Config& config) {
  auto compiled = runtime().compile(m, device, config);
  auto request = compiled->create_infer_request();
  for (size_t i = 0; i < inputs.size(); ++i) request->set_input(i, inputs[i]);
  request->infer();
  std::vector<core::Tensor> out;
  for (size_t i = 0; i < compiled->outputs().size(); ++i) out.push_back(request->output(i));
  return out;
}

void expect_same_as_cpu(const std::string& text, const std::vector<core::Tensor>& inputs, const std::string& what,
                        const driver::Config& opencl_config) {
  SCOPED_TRACE(what);
  std::unique_ptr<core::Model> m;
  try {
    m = model(text);
  } catch (const std::exception& e) {
    FAIL() << "bad test model: " << e.what() << "\n" << text;
  }
  std::vector<core::Tensor> want, got;
  try {
    want = run_on(*m, "CPU", inputs);
    got = run_on(*m, "OPENCL", inputs, opencl_config);
  } catch (const std::exception& e) {
    FAIL() << e.what() << "\n" << text;
  }
  EXPECT_TRUE(same_values(want, got)) << text.substr(0, 2000);
}

::testing::AssertionResult same_values(const std::vector<core::Tensor>& want, const std::vector<core::Tensor>& got) {
  if (want.size() != got.size())
    return ::testing::AssertionFailure() << want.size() << " outputs expected, " << got.size() << " given";
  for (size_t k = 0; k < want.size(); ++k) {
    if (want[k].shape() != got[k].shape() || want[k].dtype() != got[k].dtype())
      return ::testing::AssertionFailure() << "output " << k << " differs in shape or type";
    size_t bad = 0, worst = 0;
    double worst_err = 0;
    for (size_t i = 0; i < want[k].numel(); ++i) {
      const double e = want[k].as_double(i), g = got[k].as_double(i);
      if (std::isnan(e) && std::isnan(g)) continue;
      const double err = std::fabs(e - g);
      if (!(err <= 1e-4 + 1e-3 * std::fabs(e))) {
        if (!bad || err > worst_err) worst = i, worst_err = err;
        ++bad;
      }
    }
    if (bad)
      return ::testing::AssertionFailure() << "output " << k << ": " << bad << " of " << want[k].numel()
                                           << " elements differ; worst at " << worst << ": CPU "
                                           << want[k].as_double(worst) << ", OPENCL " << got[k].as_double(worst);
  }
  return ::testing::AssertionSuccess();
}

std::string small_cnn(bool cpu_stage) {
  std::mt19937 rng(42);
  return std::string("<ir_version: 8, opset_import: [\"\" : 13]>\n"
                     "g (float[1,3,16,16] x) => (float[1,4] y) <") +
         initializer("w1", {8, 3, 3, 3}, rng) + ", " + initializer("s", {8}, rng, 0.5f, 1.5f) + ", " +
         initializer("bb", {8}, rng) + ", " + initializer("m", {8}, rng) + ", " + initializer("v", {8}, rng, 0.5f, 2) +
         ", " + initializer("w2", {8, 1, 3, 3}, rng) + ", " + initializer("fc", {8, 4}, rng) + ", " +
         initializer("fb", {4}, rng) + ", int64[1] zero = {0}, int64[1] one = {1}, int64[1] minus = {-1}" +
         "> {\n"
         "c1 = Conv <strides = [2,2], pads = [1,1,1,1]>(x, w1)\n"
         "n1 = BatchNormalization(c1, s, bb, m, v)\n"
         "h1 = HardSigmoid(n1)\na1 = Mul(n1, h1)\n"
         "c2 = Conv <group = 8, pads = [1,1,1,1]>(a1, w2)\nr2 = Relu(c2)\n" +
         (cpu_stage ? "q = MaxPool <kernel_shape = [2,2], strides = [2,2]>(r2)\np = Shrink <lambd = 0.25, bias = 0.5>(q)\n"
                 : "p = MaxPool <kernel_shape = [2,2], strides = [2,2]>(r2)\n") +
         "g1 = GlobalAveragePool(p)\n"
         "sh = Shape(g1)\nb = Slice(sh, zero, one)\nnew = Concat <axis = 0>(b, minus)\n"
         "f = Reshape(g1, new)\nmm = MatMul(f, fc)\nz = Add(mm, fb)\ny = Softmax <axis = 1>(z)\n}\n";
}

}  // namespace hetero::test
