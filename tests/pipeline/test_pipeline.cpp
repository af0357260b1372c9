// Pipelines of small ONNX models on the real CPU driver: the stages wired as
// the file says, a window's emissions run through the models after it, a
// model stage's state carried from run to run and call to call, and the same
// outputs however the stream is cut into calls. Then the file's mistakes,
// each named with its line.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <map>

#include "core/error.h"
#include "core/runtime.h"
#include "pipeline/pipeline_model.h"
#include "pipeline/pipeline_spec.h"
#include "tests/unit/onnx_model_file.h"

namespace hetero::pipeline {
namespace {

using core::Tensor;

const std::string& dir() {
  static const std::string d = [] {
    std::string path = ::testing::TempDir() + "pipeline-test-" + std::to_string(::getpid());
    ::mkdir(path.c_str(), 0755);
    return path;
  }();
  return d;
}

void write_model(const std::string& name, const std::string& text) {
  const auto model = test::parse_model_text("pipeline_tests", name, text);
  ASSERT_TRUE(model && test::write_message(dir() + "/" + name, *model));
}

std::string write_file(const std::string& name, const std::string& text) {
  const std::string path = dir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

const core::Runtime& runtime() {
  static const core::Runtime rt;
  return rt;
}

class PipelineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    write_model("double.onnx", R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[1, N] x) => (float[1, N] y) { two = Constant <value = float {2}> () y = Mul (x, two) })");
    write_model("frame_sum.onnx", R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[1, 4] x) => (float[1, 1] s) { s = ReduceSum <keepdims = 1> (x) })");
    write_model("times_k.onnx", R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[1, 1] x, int64 k) => (float[1, 1] y) { kf = Cast <to = 1> (k) y = Mul (x, kf) })");
    write_model("accumulate.onnx", R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[1, 1] x, float[1, 1] acc) => (float[1, 1] y, float[1, 1] acc_next) {
        acc_next = Add (acc, x) y = Identity (acc_next) })");
  }
};

// Doubled, framed 4 at a time every 2, summed, scaled, weighted, added up.
constexpr const char* kChain = R"(inputs:
  audio: {dtype: float32, shape: [1, -1]}
stages:
  - {name: doubled, model: double.onnx, inputs: {x: audio}}
  - name: frames
    window: {input: doubled.y, axis: 1, size: 4, step: 2}
  - {name: sums, model: frame_sum.onnx, inputs: {x: frames}}
  - {name: scaled, scale: {input: sums.s, a: 0.5, b: 1}}
  - {name: weighted, model: times_k.onnx, inputs: {x: scaled, k: 3}}
  - {name: total, model: accumulate.onnx, inputs: {x: weighted.y}, state: {acc_next: acc}}
  - {name: out, concat: {input: total.y, axis: 0}}
outputs:
  running: out
  doubled: doubled.y
)";

size_t index_of(const std::vector<driver::Port>& ports, const std::string& name) {
  for (size_t i = 0; i < ports.size(); ++i)
    if (ports[i].name == name) return i;
  ADD_FAILURE() << "no port " << name;
  return 0;
}

// Streams 1, 2, ..., total through `compiled` in calls of `chunk` samples,
// each state output fed back; returns every `running` value, in order.
std::vector<float> stream(driver::CompiledModel& compiled, int total, int chunk) {
  auto request = compiled.create_infer_request();
  const auto& ins = compiled.inputs();
  const auto& outs = compiled.outputs();
  std::map<std::string, Tensor> state;
  for (size_t i = 1; i < ins.size(); ++i) {
    core::Shape shape;
    for (const core::Dim& d : ins[i].shape) shape.push_back(d.known() ? d.size : 1);
    state[ins[i].name] = Tensor::allocate(ins[i].dtype, shape);
  }
  std::vector<float> running;
  for (int at = 0; at < total; at += chunk) {
    const int n = std::min(chunk, total - at);
    std::vector<float> audio(static_cast<size_t>(n));
    for (int k = 0; k < n; ++k) audio[k] = static_cast<float>(at + k + 1);
    request->set_input(0, Tensor::from_vector(audio, {1, n}));
    for (const auto& [name, t] : state) request->set_input(index_of(ins, name), t);
    request->infer();
    const Tensor out = request->output(index_of(outs, "running"));
    EXPECT_EQ(out.rank(), 2u);
    running.insert(running.end(), out.values<float>().begin(), out.values<float>().end());
    EXPECT_EQ(request->output(index_of(outs, "doubled")).numel(), static_cast<size_t>(n));
    for (auto& [name, t] : state) t = request->output(index_of(outs, name + "_next")).clone();
  }
  return running;
}

TEST_F(PipelineTest, RunsItsStagesOverAStreamCutAnyWay) {
  const auto compiled = compile_pipeline(runtime(), write_file("chain.yaml", kChain), "CPU", {});
  std::vector<std::string> inputs, outputs;
  for (const auto& p : compiled->inputs()) inputs.push_back(p.name);
  for (const auto& p : compiled->outputs()) outputs.push_back(p.name);
  EXPECT_EQ(inputs, (std::vector<std::string>{"audio", "frames.window", "frames.steps", "total.acc"}));
  EXPECT_EQ(outputs, (std::vector<std::string>{"running", "doubled", "frames.window_next", "frames.steps_next",
                                               "total.acc_next"}));
  EXPECT_EQ(compiled->submodel_devices().size(), 4u);
  // Windows of 2k end at k = 4, 6, 8, 10: sums 8k - 12, halved plus one,
  // times 3, added up.
  const std::vector<float> want{33, 90, 171, 276};
  for (int chunk : {1, 2, 3, 4, 7, 10}) EXPECT_EQ(stream(*compiled, 10, chunk), want) << "calls of " << chunk;
  EXPECT_THROW(compiled->export_blob(), Failure);
}

// The message of compiling `text`, which must fail with `status`.
std::string refusal(const std::string& text, hetero_status status) {
  const std::string path = write_file("bad.yaml", text);
  try {
    compile_pipeline(runtime(), path, "CPU", {});
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), status) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "compiled:\n" << text;
  return {};
}

constexpr const char* kInput = "inputs: {audio: {dtype: float32, shape: [1, -1]}}\n";

TEST_F(PipelineTest, NamesTheLineOfEachMistake) {
  const std::string file = dir() + "/bad.yaml";
  const auto says = [&](const std::string& text, const std::string& line, const std::string& what,
                        hetero_status status = HETERO_INVALID_ARGUMENT) {
    const std::string message = refusal(text, status);
    EXPECT_EQ(message.rfind(file + ":" + line + ": ", 0), 0u) << message;
    EXPECT_NE(message.find(what), std::string::npos) << message;
  };
  says(std::string(kInput) + "stages:\n  - {name: a, scale: {input: nothing}}\noutputs: {o: a}\n", "3",
       "no input or stage above it is called 'nothing'");
  says(std::string(kInput) + "stages:\n  - {name: d, model: double.onnx, inputs: {x: audio}}\n"
                             "  - {name: s, scale: {input: d}}\noutputs: {o: s}\n",
       "4", "name one of its outputs ('d.OUTPUT')");
  says(std::string(kInput) + "stages:\n  - {name: d, model: ../double.onnx, inputs: {x: audio}}\noutputs: {o: d.y}\n",
       "3", "inside its directory");
  says(std::string(kInput) + "stages:\n  - {name: w, window: {input: audio, size: 4, step: 2}}\noutputs: {o: w}\n",
       "3", "needs 'axis'");
  says(std::string(kInput) + "stages:\n  - {name: w, window: {input: audio, axis: 1, size: 4, step: 2, hop: 1}}\n"
                             "outputs: {o: w}\n",
       "3", "unknown window key 'hop'");
  says(std::string(kInput) + "stages:\n  - {name: d, model: double.onnx, inputs: {x: audio}}\n"
                             "  - {name: w, window: {input: d.y, axis: 1, size: 4, step: 2}}\noutputs: {o: w}\n",
       "5", "gather them with a concat stage");
  says(std::string(kInput) + "stages:\n  - {name: d, model: double.onnx, inputs: {input: audio}}\noutputs: {o: d.y}\n",
       "3", "has no input 'input' (its inputs: 'x')");
  says(std::string(kInput) + "stages:\n  - {name: d, model: double.onnx, inputs: {x: audio}}\n"
                             "  - {name: s, scale: {input: d.z}}\noutputs: {o: s}\n",
       "4", "reads 'd.z', which stage 'd' does not make (it makes 'd.y')");
  says(std::string(kInput) + "stages:\n  - {name: d, model: double.onnx, inputs: {x: audio}}\noutputs: {o: d.z}\n",
       "4", "output 'o' reads 'd.z'");
  says(std::string(kInput) + "stages:\n  - {name: t, model: times_k.onnx, inputs: {x: audio}}\noutputs: {o: t.y}\n",
       "3", "model input 'k' reads nothing");
  says(std::string(kInput) + "stages:\n  - {name: d, model: missing.onnx, inputs: {x: audio}}\noutputs: {o: d.y}\n",
       "3", "stage 'd': " + dir() + "/missing.onnx: No such file", HETERO_NOT_FOUND);
  says(std::string(kInput) + "stages:\n  - {name: a, scale: {input: audio}}\n  - {name: a, scale: {input: audio}}\n"
                             "outputs: {o: a}\n",
       "4", "'a' names an input or a stage already");
  says(std::string(kInput) + "stages: []\noutputs: {o: audio}\n", "2", "one or more stages");
  says(std::string(kInput) + "stages: [{name: a, scale: {input: audio}}]\noutputs: {o: a}\nextra: 1\n", "4",
       "unknown key 'extra'");
}

// A stage may name a compiled blob, which runs only on the device it was
// compiled for, as hetero_compiled_model_open_file() has it.
TEST_F(PipelineTest, RunsABlobStageOnlyOnItsDevice) {
  const core::LoadedModel loaded = runtime().load_file(dir() + "/double.onnx", {}, "CPU", {});
  const std::vector<uint8_t> blob = runtime().export_blob(*loaded.compiled, loaded.origin);
  std::ofstream(dir() + "/double.blob", std::ios::binary)
      .write(reinterpret_cast<const char*>(blob.data()), static_cast<std::streamsize>(blob.size()));
  const std::string text = std::string(kInput) + "stages:\n  - {name: d, model: double.blob, inputs: {x: audio}}\n"
                                                 "outputs: {o: d.y}\n";
  const auto compiled = compile_pipeline(runtime(), write_file("blob.yaml", text), "CPU", {});
  auto request = compiled->create_infer_request();
  request->set_input(0, Tensor::from_vector(std::vector<float>{1, 2}, {1, 2}));
  request->infer();
  const Tensor doubled = request->output(0);
  EXPECT_EQ(std::vector<float>(doubled.values<float>().begin(), doubled.values<float>().end()),
            (std::vector<float>{2, 4}));

  const std::string elsewhere = std::string(kInput) +
                                "stages:\n  - {name: d, model: double.blob, device: 'HETERO:CPU', inputs: {x: audio}}\n"
                                "outputs: {o: d.y}\n";
  const std::string message = refusal(elsewhere, HETERO_BLOB_MISMATCH);
  EXPECT_EQ(message.rfind(dir() + "/bad.yaml:3: stage 'd': ", 0), 0u) << message;
  EXPECT_NE(message.find("the blob is compiled for CPU, not HETERO:CPU"), std::string::npos) << message;
}

TEST_F(PipelineTest, IsAPipelineByItsName) {
  EXPECT_TRUE(is_pipeline_path("/etc/heterod/pipelines/openwakeword.yaml"));
  EXPECT_TRUE(is_pipeline_path("vad.yml"));
  EXPECT_FALSE(is_pipeline_path("model.onnx"));
  EXPECT_FALSE(is_pipeline_path(".yaml"));
}

}  // namespace
}  // namespace hetero::pipeline
