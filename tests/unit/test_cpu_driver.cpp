// The CPU driver end to end through the runtime: compile, query, sync and
// async infer requests, buffer reuse, input checks, export/import.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <future>

#include "core/error.h"
#include "core/runtime.h"
#include "tests/unit/model_text.h"

using namespace hetero;
using namespace hetero::core;

namespace {

constexpr const char* kSmallNet = R"ONNX(
<ir_version: 8, opset_import: ["" : 13]>
net (float[N, 4] x) => (float[N, 4] y, float[N, 4] z) {
  w = Constant <value = float[4, 4] {1,0,0,0, 0,2,0,0, 0,0,3,0, 0,0,0,4}> ()
  m = MatMul (x, w)
  y = Relu (m)
  z = Neg (y)
}
)ONNX";

Tensor input(std::vector<float> values, int64_t rows) {
  return Tensor::from_vector(values, {rows, 4});
}

Runtime& runtime() {
  static Runtime rt;
  return rt;
}

}  // namespace

TEST(CpuDriver, SyncInferComputesAndKeepsEarlierOutputs) {
  auto model = test::model_from_text(kSmallNet);
  auto compiled = runtime().compile(*model, "CPU");
  ASSERT_EQ(compiled->inputs().size(), 1u);
  ASSERT_EQ(compiled->outputs().size(), 2u);
  EXPECT_EQ(compiled->outputs()[1].name, "z");
  auto req = compiled->create_infer_request();

  req->set_input(0, input({1, -1, 1, 1}, 1));
  req->infer();
  Tensor first = req->output(0);
  EXPECT_EQ(std::vector<float>(first.values<float>().begin(), first.values<float>().end()),
            (std::vector<float>{1, 0, 3, 4}));

  // A second run must not write into the buffers the caller still holds.
  req->set_input(0, input({2, 2, 2, 2, 1, 1, 1, 1}, 2));
  req->infer();
  EXPECT_EQ(first.data<float>()[3], 4);
  Tensor second = req->output(1);
  EXPECT_EQ(second.shape(), (Shape{2, 4}));
  EXPECT_EQ(second.data<float>()[7], -4);
}

TEST(CpuDriver, AsyncRequestsRunConcurrently) {
  auto model = test::model_from_text(kSmallNet);
  auto compiled = runtime().compile(*model, "CPU");
  constexpr int kRequests = 4;
  std::vector<std::unique_ptr<driver::InferRequest>> reqs;
  std::atomic<int> done{0};
  for (int i = 0; i < kRequests; ++i) {
    reqs.push_back(compiled->create_infer_request());
    reqs.back()->set_input(0, input({float(i), 1, 1, 1}, 1));
  }
  for (auto& r : reqs)
    r->start_async([&](std::exception_ptr e) {
      EXPECT_FALSE(e);
      ++done;
    });
  for (auto& r : reqs) r->wait();
  EXPECT_EQ(done.load(), kRequests);
  for (int i = 0; i < kRequests; ++i) EXPECT_EQ(reqs[i]->output(0).data<float>()[0], float(i));
}

TEST(CpuDriver, AsyncFailureReachesTheCallback) {
  auto model = test::model_from_text(kSmallNet);
  auto compiled = runtime().compile(*model, "CPU");
  auto req = compiled->create_infer_request();
  std::promise<std::string> message;
  req->start_async([&](std::exception_ptr e) {
    try {
      if (e) std::rethrow_exception(e);
      message.set_value("");
    } catch (const Error& err) {
      message.set_value(err.what());
    }
  });
  req->wait();
  EXPECT_NE(message.get_future().get().find("input 'x' is not set"), std::string::npos);
}

TEST(CpuDriver, InputsAreChecked) {
  auto model = test::model_from_text(kSmallNet);
  auto compiled = runtime().compile(*model, "CPU");
  auto req = compiled->create_infer_request();
  EXPECT_THROW(req->set_input(0, Tensor::allocate(DType::F64, {1, 4})), Error);
  EXPECT_THROW(req->set_input(0, Tensor::allocate(DType::F32, {1, 5})), Error);
  EXPECT_THROW(req->set_input(0, Tensor::allocate(DType::F32, {4})), Error);
  EXPECT_THROW(req->set_input(1, Tensor::allocate(DType::F32, {1, 4})), Error);
  EXPECT_THROW(req->output(0), Error);
}

TEST(CpuDriver, QueryNamesUnsupportedNodes) {
  // Det is a valid ONNX op the CPU driver has no kernel for.
  auto model = test::model_from_text(R"ONNX(
<ir_version: 8, opset_import: ["" : 13]>
g (float[2, 2] x) => (float y) {
  a = Relu (x)
  y = Det (a)
}
)ONNX");
  auto support = runtime().query(*model, "CPU");
  ASSERT_EQ(support.size(), 2u);
  EXPECT_TRUE(support[0].supported);
  EXPECT_FALSE(support[1].supported);
  EXPECT_NE(support[1].reason.find("Det"), std::string::npos) << support[1].reason;
  try {
    runtime().compile(*model, "CPU");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HETERO_NOT_SUPPORTED);
    EXPECT_NE(std::string(e.what()).find("(Det)"), std::string::npos) << e.what();
  }
}

TEST(CpuDriver, ExportImportGivesTheSameOutputs) {
  auto model = test::model_from_text(kSmallNet);
  auto compiled = runtime().compile(*model, "CPU");
  const BlobOrigin origin{{}, model->source_sha256};
  const auto blob = runtime().export_blob(*compiled, origin);
  EXPECT_EQ(blob, runtime().export_blob(*runtime().compile(*model, "CPU"), origin)) << "blobs must be deterministic";
  auto imported = runtime().import_blob(blob);
  auto a = compiled->create_infer_request();
  auto b = imported->create_infer_request();
  for (auto* r : {a.get(), b.get()}) {
    r->set_input(0, input({0.5f, -2, 3, 0.25f}, 1));
    r->infer();
  }
  EXPECT_EQ(0, std::memcmp(a->output(1).raw(), b->output(1).raw(), a->output(1).nbytes()));
  auto corrupt = blob;
  corrupt[corrupt.size() / 2] ^= 1;
  EXPECT_THROW(runtime().import_blob(corrupt), Error);
}

TEST(CpuDriver, ConfigRejectsUnknownKeys) {
  auto model = test::model_from_text(kSmallNet);
  try {
    runtime().compile(*model, "CPU", {{"num_thread", "2"}});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HETERO_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("num_thread"), std::string::npos);
  }
  EXPECT_NO_THROW(runtime().compile(*model, "CPU", {{"num_threads", "1"}}));
}

// device_count lists the one processor as several devices; 'ops' keeps a
// device to some op types, as HETERO's tests use to stand in for a device
// that lacks kernels.
TEST(CpuDriver, DeviceCountAndOpsRestriction) {
  RuntimeOptions options;
  options.config["CPU.device_count"] = "2";
  const Runtime rt(options);
  std::vector<std::string> names;
  for (const DeviceInfo& d : rt.devices())
    if (d.driver == "CPU") names.push_back(d.name);  // OPENCL may list devices too
  EXPECT_EQ(names, (std::vector<std::string>{"CPU", "CPU.1"}));
  EXPECT_EQ(rt.metric("CPU.1", "AVAILABLE_DEVICES"), "0 1");

  auto model = test::model_from_text(kSmallNet);
  const auto support = rt.query(*model, "CPU.1", {{"ops", "MatMul, Neg"}});
  ASSERT_EQ(support.size(), 4u);  // Constant, MatMul, Relu, Neg
  EXPECT_TRUE(support[1].supported);
  EXPECT_FALSE(support[2].supported);
  EXPECT_NE(support[2].reason.find("'ops' config"), std::string::npos) << support[2].reason;
  EXPECT_TRUE(support[3].supported);

  try {
    rt.compile(*model, "CPU.1", {{"ops", "MatMul"}});
    ADD_FAILURE() << "compiled a model with an op its 'ops' config leaves out";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), HETERO_NOT_SUPPORTED);
    EXPECT_NE(std::string(e.what()).find("Relu"), std::string::npos) << e.what();
  }
  EXPECT_EQ(rt.compile(*model, "CPU.1")->device(), "CPU.1");
  EXPECT_THROW(rt.compile(*model, "CPU.2"), Error);
  EXPECT_THROW(rt.compile(*model, "CPU", {{"device_count", "3"}}), Error);
}

// An If branch reading a value the outer graph computed earlier, and that no
// outer node reads directly: the value must live until the If has run.
TEST(CpuDriver, BranchReadsAnOuterValueNothingElseReads) {
  auto model = test::model_from_text(R"ONNX(
<ir_version: 8, opset_import: ["" : 13]>
g (float[3] x, bool c) => (float[3] y) {
  m = Neg (x)
  y = If (c) <then_branch = t () => (float[3] out) { out = Relu (m) },
              else_branch = e () => (float[3] out) { out = Identity (m) }>
}
)ONNX");
  auto req = runtime().compile(*model, "CPU")->create_infer_request();
  req->set_input(0, Tensor::from_vector(std::vector<float>{1, -2, 3}, {3}));
  Tensor c = Tensor::allocate(DType::Bool, {});
  c.data<uint8_t>()[0] = 1;
  req->set_input(1, c);
  req->infer();
  EXPECT_EQ(std::vector<float>(req->output(0).values<float>().begin(), req->output(0).values<float>().end()),
            (std::vector<float>{0, 2, 0}));
}
