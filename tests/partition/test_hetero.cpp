// HETERO end to end on the real CPU driver, listed as two devices (CPU and
// CPU.1; 'ops' keeps one to some op types): planning, cutting and running
// must give what the whole model gives, and every refusal names its cause.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "core/runtime.h"
#include "partition/hetero_compiled_model.h"
#include "partition/hetero_driver.h"
#include "partition/plan.h"
#include "partition/plan_format.h"
#include "tests/unit/model_text.h"

namespace hetero::partition {
namespace {

using core::Tensor;

const core::Runtime& two_cpus() {
  static const core::Runtime rt = [] {
    core::RuntimeOptions o;
    o.config["CPU.device_count"] = "2";
    o.make_hetero_driver = make_hetero_driver;
    return core::Runtime(o);
  }();
  return rt;
}

// y = Relu(x + c) * c, z = Neg(y); c is a constant both devices read.
constexpr const char* kSharedConstant = R"ONNX(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 3] x, float[2, 3] unused) => (float[2, 3] y, float[2, 3] z, float[2, 3] x_again) {
  c = Constant <value = float[3] {1, -2, 3}> ()
  a = Add (x, c)
  r = Relu (a)
  y = Mul (r, c)
  z = Neg (y)
  x_again = Identity (x)
}
)ONNX";

std::string write_policy(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

Tensor input(std::vector<float> v) { return Tensor::from_vector(v, {2, 3}); }

std::vector<float> values(const Tensor& t) { return {t.values<float>().begin(), t.values<float>().end()}; }

// Runs `compiled` on x and returns its outputs.
std::vector<Tensor> run(driver::CompiledModel& compiled, const Tensor& x) {
  auto req = compiled.create_infer_request();
  req->set_input(0, x);
  req->set_input(1, x);
  req->infer();
  std::vector<Tensor> out;
  for (size_t i = 0; i < compiled.outputs().size(); ++i) out.push_back(req->output(i));
  return out;
}

std::string error_of(const std::function<void()>& fn, hetero_status expected) {
  try {
    fn();
  } catch (const Failure& e) {
    EXPECT_EQ(e.status(), expected) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

TEST(Hetero, SplitRunGivesTheWholeModelsOutputs) {
  const auto model = test::model_from_text(kSharedConstant);
  // CPU.1 runs Add, Mul and Identity only: Relu and Neg fall to CPU. The
  // Identity shares no edge with the rest (a graph input is not a node), so
  // it is an island of its own: Add | Identity | Relu | Mul | Neg.
  const driver::Config config{{"CPU.1:ops", "Add,Mul,Identity"}};
  const Plan plan = make_plan(two_cpus(), *model, core::parse_device_string("HETERO:CPU.1,CPU"), config);
  ASSERT_EQ(plan.cut.parts.size(), 5u) << plan_text(plan);
  EXPECT_EQ(plan.cut.transfers, 3u) << plan_text(plan);  // a, r, y

  auto whole = two_cpus().compile(*model, "CPU");
  auto split = compile_hetero(two_cpus(), *model, core::parse_device_string("HETERO:CPU.1,CPU"), config);
  EXPECT_EQ(split->device(), "HETERO:CPU.1,CPU");
  ASSERT_EQ(split->stages().size(), 5u);
  const Tensor x = input({1, 2, -3, -4, 5, 0.5f});
  const auto expected = run(*whole, x), got = run(*split, x);
  ASSERT_EQ(got.size(), 3u);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(values(got[i]), values(expected[i])) << "output " << i;
  EXPECT_EQ(values(got[0]), (std::vector<float>{2, 0, 0, 0, -6, 10.5f}));
}

TEST(Hetero, ConstantReadOnTwoDevicesIsCopiedToBoth) {
  const auto model = test::model_from_text(kSharedConstant);
  const Plan plan = make_plan(two_cpus(), *model, core::parse_device_string("HETERO:CPU.1,CPU"), {{"CPU.1:ops", "Add,Mul,Identity"}});
  size_t parts_with_constant = 0;
  for (const Submodel& sub : plan.cut.parts) {
    bool has = false;
    for (const auto& n : sub.model->graph.nodes()) has |= n->op_type == "Constant";
    parts_with_constant += has;
    // Constants are never a submodel's input: nothing is transferred for them.
    for (const core::Value* v : sub.model->graph.inputs) EXPECT_NE(v->name, "c");
  }
  EXPECT_EQ(parts_with_constant, 2u) << plan_text(plan);  // the Add part and the Mul part
}

TEST(Hetero, PolicyPinsWinAndFallBack) {
  const auto model = test::model_from_text(kSharedConstant);
  // Relu pinned to CPU.1, which cannot run it: fallback moves it to CPU...
  const std::string fallback = write_policy("fallback.yaml",
                                            "devices: [CPU.1, CPU]\nrules:\n  - device: CPU.1\n    ops: [Relu]\n");
  const driver::Config ops{{"CPU.1:ops", "Add,Mul,Identity"}, {"policy", fallback}};
  const Plan plan = make_plan(two_cpus(), *model, core::parse_device_string("HETERO:CPU.1,CPU"), ops);
  const size_t relu = model->graph.find_node("Relu_2")->index;
  EXPECT_EQ(plan.config.policy.devices[plan.affinity.device[relu]], "CPU");

  // ...and without fallback it is an error naming the node and the rule.
  const std::string strict = write_policy(
      "strict.yaml", "devices: [CPU.1, CPU]\nfallback: false\nrules:\n  - device: CPU.1\n    ops: [Relu]\n");
  const std::string why = error_of(
      [&] { make_plan(two_cpus(), *model, core::parse_device_string("HETERO:CPU.1,CPU"), {{"CPU.1:ops", "Add"}, {"policy", strict}}); },
      HETERO_NOT_SUPPORTED);
  EXPECT_NE(why.find("Relu_2"), std::string::npos) << why;
  EXPECT_NE(why.find("strict.yaml:4"), std::string::npos) << why;

  // A pin to a device that can run the node is kept over priority order.
  const std::string pin = write_policy("pin.yaml", "devices: [CPU.1, CPU]\nrules:\n  - device: CPU\n    nodes: [Neg_*]\n");
  const Plan pinned = make_plan(two_cpus(), *model, core::parse_device_string("HETERO:CPU.1,CPU"), {{"policy", pin}});
  ASSERT_EQ(pinned.cut.parts.size(), 3u) << plan_text(pinned);  // Add..Mul | Identity | Neg
  EXPECT_EQ(pinned.cut.parts[0].node_names, (std::vector<std::string>{"Add_1", "Relu_2", "Mul_3"}));
  EXPECT_EQ(pinned.cut.parts[2].node_names, (std::vector<std::string>{"Neg_4"}));
}

TEST(Hetero, QueryAnswersForTheDeviceList) {
  const auto model = test::model_from_text(kSharedConstant);
  const auto any = query_hetero(two_cpus(), *model, core::parse_device_string("HETERO:CPU.1,CPU"), {{"CPU.1:ops", "Add"}});
  for (const auto& s : any) EXPECT_TRUE(s.supported) << s.reason;
  const auto some = query_hetero(two_cpus(), *model, core::parse_device_string("HETERO:CPU.1,CPU"), {{"CPU.1:ops", "Add"}, {"CPU:ops", "Mul"}});
  const size_t relu = model->graph.find_node("Relu_2")->index;
  EXPECT_FALSE(some[relu].supported);
  EXPECT_NE(some[relu].reason.find("CPU.1: Relu is left out"), std::string::npos) << some[relu].reason;
  EXPECT_NE(some[relu].reason.find("; CPU: Relu is left out"), std::string::npos) << some[relu].reason;
}

TEST(Hetero, PlansOfflineFromPinsForAbsentDevices) {
  const auto model = test::model_from_text(kSharedConstant);
  // No NPU driver here: the pinned nodes go to it anyway, the rest to CPU.
  const std::string policy = write_policy("offline.yaml",
                                          "devices: [NPU, CPU]\nrules:\n  - device: NPU\n    ops: [Relu, Neg]\n");
  const Plan plan = make_plan(two_cpus(), *model, core::parse_device_string("HETERO:NPU,CPU"), {{"policy", policy}});
  ASSERT_EQ(plan.cut.parts.size(), 5u) << plan_text(plan);  // Add | Relu | Mul | Neg | Identity
  EXPECT_EQ(plan.config.policy.devices[plan.cut.parts[1].device], "NPU");
  EXPECT_EQ(plan.cut.parts[1].node_names, (std::vector<std::string>{"Relu_2"}));
  EXPECT_EQ(plan.config.policy.devices[plan.cut.parts[3].device], "NPU");
  // Compiling needs the device, and says which one is missing.
  const std::string why =
      error_of([&] { compile_hetero(two_cpus(), *model, core::parse_device_string("HETERO:NPU,CPU"), {{"policy", policy}}); }, HETERO_NOT_FOUND);
  EXPECT_NE(why.find("NPU"), std::string::npos) << why;
  // ... and which pinned nodes need it.
  EXPECT_NE(why.find("'Relu_2'"), std::string::npos) << why;
  EXPECT_NE(why.find("pinned to NPU by " + policy), std::string::npos) << why;
}

TEST(Hetero, ADeviceNoDriverHasAndNoRulePinsToIsATypo) {
  const auto model = test::model_from_text(kSharedConstant);
  const std::string why =
      error_of([&] { make_plan(two_cpus(), *model, core::parse_device_string("HETERO:OPNECL,CPU"), {}); }, HETERO_NOT_FOUND);
  EXPECT_NE(why.find("no OPNECL driver is loaded (devices: CPU"), std::string::npos) << why;
}

TEST(Hetero, ConfigMistakesAreNamed) {
  const auto model = test::model_from_text(kSharedConstant);
  EXPECT_NE(error_of([&] { make_plan(two_cpus(), *model, core::parse_device_string("HETERO:CPU.1,CPU"), {{"num_threads", "2"}}); },
                     HETERO_INVALID_ARGUMENT)
                .find("'num_threads'"),
            std::string::npos);
  EXPECT_NE(error_of([&] { make_plan(two_cpus(), *model, core::parse_device_string("HETERO:CPU.1,CPU"), {{"OPENCL:ops", "Add"}}); },
                     HETERO_INVALID_ARGUMENT)
                .find("OPENCL, which is not a device of HETERO:CPU.1,CPU"),
            std::string::npos);
  const std::string other = write_policy("other.yaml", "devices: [CPU, CPU.1]\n");
  EXPECT_NE(error_of([&] { make_plan(two_cpus(), *model, core::parse_device_string("HETERO:CPU.1,CPU"), {{"policy", other}}); },
                     HETERO_INVALID_ARGUMENT)
                .find("differ from the device HETERO:CPU.1,CPU"),
            std::string::npos);
  EXPECT_NE(error_of([&] { make_plan(two_cpus(), *model, core::parse_device_string("HETERO:CPU.1,CPU"), {{"CPU.1:colour", "red"}}); },
                     HETERO_INVALID_ARGUMENT)
                .find("colour"),
            std::string::npos);
}

// A HETERO blob is written and read by the same calls as any driver's: the
// plan, then each part's own driver export in execution order, in a section
// of its own. (The driver contract suite, tests/driver_contract, checks that
// it computes exactly the same and is refused without CPU.1.)
TEST(Hetero, BlobHoldsThePlanAndEachPartsExport) {
  const auto model = test::model_from_text(kSharedConstant);
  const driver::Config config{{"CPU.1:ops", "Add,Mul,Identity"}};
  auto split = two_cpus().compile(*model, "HETERO:CPU.1,CPU", config);
  const std::vector<uint8_t> blob = two_cpus().export_blob(*split, {config, model->source_sha256});
  const core::BlobView view = core::read_blob(blob);
  EXPECT_EQ(view.header.driver, "HETERO");
  EXPECT_EQ(view.header.device, "HETERO:CPU.1,CPU");
  const std::vector<std::string> parts = split->submodel_devices();
  ASSERT_EQ(view.sections.size(), 1 + parts.size());
  EXPECT_EQ(view.sections[0].name, "plan");
  for (size_t i = 0; i < parts.size(); ++i) {
    EXPECT_EQ(view.sections[i + 1].name, "part" + std::to_string(i));
    EXPECT_EQ(view.sections[i + 1].device, parts[i]);
  }
  EXPECT_EQ(two_cpus().import_blob(blob)->submodel_devices(), parts);
}

// The blob cache serves HETERO through the same calls as CPU: a second
// load imports, and an edit of the policy file (same path) misses.
TEST(Hetero, CacheServesHeteroAndMissesAnEditedPolicy) {
  const std::string dir = ::testing::TempDir() + "hetero-cache-" + std::to_string(::getpid());
  core::RuntimeOptions o;
  o.config["CPU.device_count"] = "2";
  o.cache = core::BlobCacheOptions{dir};
  o.make_hetero_driver = make_hetero_driver;
  const core::Runtime rt(o);
  const auto model = test::model_from_text(kSharedConstant);
  const std::string policy = write_policy("cached.yaml", "devices: [CPU.1, CPU]\nrules:\n  - device: CPU\n    nodes: [Neg_*]\n");
  const driver::Config config{{"CPU.1:ops", "Add,Mul,Identity"}, {"policy", policy}};
  for (const std::string device : {"CPU", "HETERO:CPU.1,CPU"}) {
    const driver::Config c = device == "CPU" ? driver::Config{} : config;
    EXPECT_FALSE(rt.load(*model, device, c).from_cache) << device;
    const core::LoadedModel again = rt.load(*model, device, c);
    EXPECT_TRUE(again.from_cache) << device;
    const Tensor x = input({1, -2, 3, -4, 5, -6});
    const std::vector<Tensor> cached = run(*again.compiled, x), compiled = run(*rt.compile(*model, device, c), x);
    ASSERT_EQ(cached.size(), compiled.size());
    for (size_t i = 0; i < cached.size(); ++i) EXPECT_EQ(values(cached[i]), values(compiled[i])) << device;
  }
  write_policy("cached.yaml", "devices: [CPU.1, CPU]\nfallback: true\n");
  EXPECT_FALSE(rt.load(*model, "HETERO:CPU.1,CPU", config).from_cache);
  std::filesystem::remove_all(dir);
}

// a1 -> b1 -> a2 -> b2 -> add(b2, a1): the issue's nested cycle, with the a*
// nodes on CPU.1 and the b* nodes on CPU. Each device's nodes must not be
// merged into one subgraph (a2 would then wait for b1, which waits for a1).
TEST(Hetero, NestedCycleThroughAnotherDeviceRuns) {
  const auto model = test::model_from_text(R"ONNX(
<ir_version: 8, opset_import: ["" : 13]>
g (float[4] x) => (float[4] y) {
  a1 = Relu (x)
  b1 = Neg (a1)
  a2 = Relu (b1)
  b2 = Neg (a2)
  y = Sum (b2, a1)
}
)ONNX");
  const driver::Config config{{"CPU.1:ops", "Relu,Sum"}};
  const Plan plan = make_plan(two_cpus(), *model, core::parse_device_string("HETERO:CPU.1,CPU"), config);
  EXPECT_EQ(plan.cut.parts.size(), 5u) << plan_text(plan);
  auto split = compile_hetero(two_cpus(), *model, core::parse_device_string("HETERO:CPU.1,CPU"), config);
  auto req = split->create_infer_request();
  const Tensor x = Tensor::from_vector(std::vector<float>{1, -1, 2, -2}, {4});
  req->set_input(0, x);
  req->infer();
  // a1 = relu(x); b1 = -a1; a2 = relu(b1) = 0; y = -0 + a1 = a1.
  EXPECT_EQ(values(req->output(0)), (std::vector<float>{1, 0, 2, 0}));
}

TEST(Hetero, FormatsNameEverySubgraph) {
  const auto model = test::model_from_text(kSharedConstant);
  const Plan plan = make_plan(two_cpus(), *model, core::parse_device_string("HETERO:CPU.1,CPU"), {{"CPU.1:ops", "Add,Mul,Identity"}});
  const std::string json = plan_json(plan, "HETERO:CPU.1,CPU");
  EXPECT_NE(json.find("\"subgraphs\": [{\"device\": \"CPU.1\", \"nodes\": [\"Add_1\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"transfers\": 3"), std::string::npos) << json;
  const std::string dot = plan_dot(plan, *model);
  EXPECT_NE(dot.find("subgraph cluster_3"), std::string::npos) << dot;
  EXPECT_NE(dot.find("label=\"r\""), std::string::npos) << dot;  // a tensor crossing devices
}

}  // namespace
}  // namespace hetero::partition
