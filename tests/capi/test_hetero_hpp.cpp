// The C++ layer (include/hetero/hetero.hpp) over the real libhetero: RAII
// handles that move and release once, errors as hetero::Error with the C
// ABI's status and message, spans over tensor data, synchronous and async
// inference, blobs, and a client of the real heterod on a temporary socket.
// In suite "sanitize" too, so handle and callback lifetimes run under ASan.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <optional>

#include "hetero/hetero.hpp"
#include "tests/daemon/daemon_process.h"

namespace {

// tiny.onnx: y = Relu(x·W + b); x = [1, 2, 3, 4] gives y = [5.5, 5, 0].
std::string fixture(const std::string& name) { return std::string(CAPI_FIXTURE_DIR) + "/" + name; }
const std::vector<float> kX = {1, 2, 3, 4};
const std::vector<float> kY = {5.5f, 5.0f, 0.0f};

std::vector<float> to_vector(std::span<const float> s) { return {s.begin(), s.end()}; }

template <typename F>
hetero::Error error_of(F&& f) {
  try {
    f();
  } catch (const hetero::Error& e) {
    return e;
  }
  ADD_FAILURE() << "no hetero::Error thrown";
  return hetero::Error(HETERO_OK, "");
}

TEST(HeteroHpp, CoreDevicesDriversMetrics) {
  hetero::Core core;
  const auto devices = core.devices();
  ASSERT_FALSE(devices.empty());
  EXPECT_EQ(devices[0].name, "CPU");
  EXPECT_FALSE(devices[0].full_name.empty());
  EXPECT_EQ(core.metric("CPU", "FULL_DEVICE_NAME"), devices[0].full_name);
  bool cpu = false;
  for (const auto& d : core.drivers()) cpu = cpu || (d.name == "CPU" && d.no_device_reason.empty());
  EXPECT_TRUE(cpu);
  EXPECT_TRUE(core.driver_failures().empty());
  EXPECT_EQ(hetero::api_version() >> 16, HETERO_API_VERSION_MAJOR);
  EXPECT_EQ(hetero::library_version(), "0.1.0");

  const hetero::Error e = error_of([&] { core.metric("CPU", "NO_SUCH_METRIC"); });
  EXPECT_EQ(e.status(), HETERO_NOT_FOUND);
  EXPECT_STREQ(e.status_name(), "HETERO_NOT_FOUND");
  EXPECT_NE(std::string(e.what()).find("NO_SUCH_METRIC"), std::string::npos) << e.what();
  EXPECT_EQ(error_of([] { hetero::Core(hetero::Config{{"no_dot_key", "1"}}); }).status(), HETERO_INVALID_ARGUMENT);
}

TEST(HeteroHpp, ModelsQueryPartition) {
  hetero::Core core;
  hetero::Model model = core.read_model(fixture("tiny_dynamic.onnx"));
  ASSERT_EQ(model.inputs().size(), 1u);
  EXPECT_EQ(model.inputs()[0].name, "x");
  EXPECT_EQ(model.inputs()[0].dtype, HETERO_DTYPE_FLOAT32);
  EXPECT_EQ(*model.inputs()[0].shape, (std::vector<int64_t>{-1, 4}));
  hetero::Model fixed = core.read_model(fixture("tiny_dynamic.onnx"), {{"x", {2, 4}}});
  EXPECT_EQ(*fixed.outputs()[0].shape, (std::vector<int64_t>{2, 3}));

  const auto nodes = core.query(model, "CPU");
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[0].op_type, "MatMul");
  EXPECT_TRUE(nodes[0].supported);
  EXPECT_NE(core.partition(fixed, "HETERO:CPU", HETERO_PLAN_JSON).find("\"subgraphs\""), std::string::npos);

  const hetero::Error e = error_of([&] { core.read_model(fixture("missing.onnx")); });
  EXPECT_EQ(e.status(), HETERO_NOT_FOUND);
  EXPECT_NE(std::string(e.what()).find("missing.onnx"), std::string::npos);
}

TEST(HeteroHpp, InferWithSpans) {
  hetero::Core core;
  hetero::CompiledModel compiled = core.compile_file(fixture("tiny.onnx"));
  EXPECT_EQ(compiled.device(), "CPU");
  EXPECT_EQ(compiled.submodel_devices(), std::vector<std::string>{"CPU"});
  hetero::InferRequest request = compiled.create_infer_request();

  std::vector<float> x = kX;
  request.set_input("x", hetero::Tensor::wrap(std::span(x), {1, 4}));  // not copied: the request reads x
  request.infer();
  hetero::Tensor y = request.output("y");
  EXPECT_EQ(y.shape(), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(y.dtype(), HETERO_DTYPE_FLOAT32);
  EXPECT_EQ(to_vector(y.data<float>()), kY);
  EXPECT_EQ(y.bytes().size(), 3 * sizeof(float));

  x[3] = 0;  // written in place: the next inference sees it
  request.infer();
  EXPECT_EQ(to_vector(request.output(0).data<float>()), (std::vector<float>{1.5f, 1.0f, 3.5f}));
  EXPECT_EQ(to_vector(y.data<float>()), kY) << "an output held is not changed by the next inference";

  // An owning tensor, filled through its span.
  hetero::Tensor owned(HETERO_DTYPE_FLOAT32, {1, 4});
  std::ranges::copy(kX, owned.data<float>().begin());
  request.set_input(0, owned);
  request.infer();
  EXPECT_EQ(to_vector(request.output("y").data<float>()), kY);

  EXPECT_EQ(error_of([&] { (void)owned.data<int32_t>(); }).status(), HETERO_INVALID_ARGUMENT);
  std::vector<double> wrong(4);
  EXPECT_EQ(error_of([&] { request.set_input(0, hetero::Tensor::wrap(std::span(wrong), {1, 4})); }).status(),
            HETERO_INVALID_ARGUMENT);
  EXPECT_EQ(error_of([&] { request.set_input("nope", owned); }).status(), HETERO_NOT_FOUND);
}

TEST(HeteroHpp, HandlesMoveAndOutliveEachOther) {
  std::optional<hetero::InferRequest> request;
  hetero::Tensor x = hetero::Tensor::read_file(fixture("tiny_input.pb"));
  {
    hetero::Core core;
    hetero::CompiledModel compiled = core.compile_file(fixture("tiny.onnx"));
    hetero::CompiledModel moved = std::move(compiled);
    EXPECT_EQ(compiled.get(), nullptr);  // NOLINT(bugprone-use-after-move): a moved-from handle is empty
    request = moved.create_infer_request();
  }  // the core and compiled model are released; the request keeps what it needs
  request->set_input(0, x);
  request->infer();
  hetero::InferRequest other = std::move(*request);
  EXPECT_FALSE(*request);
  EXPECT_EQ(to_vector(other.output(0).data<float>()), kY);
  other = hetero::InferRequest();  // released by assignment
  EXPECT_FALSE(other);
}

TEST(HeteroHpp, AsyncWithCallback) {
  hetero::Core core;
  hetero::CompiledModel compiled = core.compile_file(fixture("tiny.onnx"));
  hetero::InferRequest request = compiled.create_infer_request();
  hetero::Tensor x = hetero::Tensor::read_file(fixture("tiny_input.pb"));
  request.set_input(0, x);

  std::mutex mutex;
  std::condition_variable cv;
  std::vector<hetero_status> statuses;
  std::vector<float> seen;
  for (int i = 0; i < 10; ++i) {
    request.start_async([&](hetero_status status) {
      std::lock_guard lock(mutex);
      statuses.push_back(status);
      seen = to_vector(request.output(0).data<float>());  // outputs may be read in the callback
      cv.notify_all();
    });
    request.wait();
  }
  std::unique_lock lock(mutex);
  cv.wait(lock, [&] { return statuses.size() == 10; });
  EXPECT_EQ(statuses, std::vector<hetero_status>(10, HETERO_OK));
  EXPECT_EQ(seen, kY);
  lock.unlock();

  // A failing inference: wait() throws with the reason, the callback gets the status.
  hetero::InferRequest unbound = compiled.create_infer_request();
  std::atomic<int> failed{HETERO_OK};
  unbound.start_async([&](hetero_status status) { failed = status; });
  const hetero::Error e = error_of([&] { unbound.wait(); });
  EXPECT_NE(e.status(), HETERO_OK);
  EXPECT_NE(std::string(e.what()).find("'x'"), std::string::npos) << e.what();
  EXPECT_EQ(failed.load(), e.status());

  // Destroyed with an inference running: the destructor waits, the callback runs once.
  std::atomic<int> calls{0};
  {
    hetero::InferRequest running = compiled.create_infer_request();
    running.set_input(0, x);
    running.start_async([&](hetero_status) { ++calls; });
  }
  EXPECT_EQ(calls.load(), 1);
}

TEST(HeteroHpp, ExportImport) {
  hetero::Core core;
  const std::vector<std::byte> blob = core.compile_file(fixture("tiny.onnx")).export_blob();
  EXPECT_NE(hetero::describe_blob(blob).find("CPU"), std::string::npos);
  hetero::CompiledModel imported = core.import_model(blob);
  hetero::InferRequest request = imported.create_infer_request();
  request.set_input(0, hetero::Tensor::read_file(fixture("tiny_input.pb")));
  request.infer();
  EXPECT_EQ(to_vector(request.output(0).data<float>()), kY);
  const std::span<const std::byte> half(blob.data(), blob.size() / 2);
  EXPECT_EQ(error_of([&] { core.import_model(half); }).status(), HETERO_BLOB_CORRUPT);
}

TEST(HeteroHpp, DaemonClient) {
  using namespace hetero::test;
  TempDir dir;
  const std::string socket = dir.path() + "/heterod.sock";
  DaemonProcess daemon(dir.path(), "socket: {path: " + socket + "}\nmodel_dirs: [" + CAPI_FIXTURE_DIR +
                                       "]\nmodels:\n  - {name: tiny, path: " + fixture("tiny.onnx") + "}\n");
  ASSERT_TRUE(daemon.wait_ready(socket)) << daemon.log();
  {
    hetero::Core core = hetero::Core::connect(socket);
    const auto models = core.models();
    ASSERT_EQ(models.size(), 1u);
    EXPECT_EQ(models[0].name, "tiny");
    EXPECT_EQ(models[0].state, "ready");

    hetero::CompiledModel tiny = core.open_model("tiny");
    hetero::InferRequest request = tiny.create_infer_request();
    std::vector<float> x = kX;
    request.set_input("x", hetero::Tensor::wrap(std::span(x), {1, 4}));
    request.infer();
    EXPECT_EQ(to_vector(request.output("y").data<float>()), kY);
    // tiny keeps no state: no sequence of it (tests/daemon/test_sequences.cpp has one that does).
    EXPECT_TRUE(tiny.state_pairs().empty());
    request.set_sequence(1, HETERO_SEQUENCE_START);
    EXPECT_EQ(error_of([&] { request.infer(); }).status(), HETERO_INVALID_ARGUMENT);
    EXPECT_EQ(error_of([&] { tiny.end_sequence(1); }).status(), HETERO_NOT_FOUND);

    core.load_model("tiny2", fixture("tiny.onnx"));
    EXPECT_EQ(core.models().size(), 2u);
    core.unload_model("tiny2");
    EXPECT_NE(core.stats().find("tiny"), std::string::npos);
    EXPECT_EQ(error_of([&] { core.open_model("nope"); }).status(), HETERO_NOT_FOUND);
    EXPECT_EQ(error_of([&] { core.read_model(fixture("tiny.onnx")); }).status(), HETERO_NOT_SUPPORTED);
  }
  EXPECT_EQ(error_of([&] { hetero::Core::connect(dir.path() + "/nobody.sock"); }).status(),
            HETERO_CONNECTION_ERROR);
  daemon.signal(SIGTERM);
  EXPECT_EQ(daemon.wait_exit(), 0) << daemon.log();
}

}  // namespace
