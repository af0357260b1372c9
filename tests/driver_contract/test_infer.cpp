// Compile and infer: a compiled model describes its ports; its outputs are
// the CPU driver's on the same inputs; requests run sync and async, several at
// once on one compiled model, and again after giving back their memory; bad ports, inputs not set and outputs asked for
// before any inference are refused with the port named.
#include <algorithm>
#include <atomic>
#include <future>
#include <thread>

#include "tests/driver_contract/contract.h"
#include "tests/driver_contract/contract_models.h"

namespace hetero::contract {
namespace {

class Infer : public DeviceTest {
 protected:
  // `m`'s inputs with every value scaled by `factor`: other inputs, other outputs.
  static Tensors scaled(const TestModel& m, float factor) {
    Tensors in = m.inputs;
    for (HostTensor& t : in)
      for (float& v : t.values) v *= factor;
    return in;
  }
};

TEST_P(Infer, CompiledModelDescribesItsDeviceAndPorts) {
  const TestModel& m = three_inputs_model();
  ModelPtr model = read_model(m.text);
  CompiledPtr compiled = compile(model.get());
  ASSERT_TRUE(compiled);
  const char* device = nullptr;
  ASSERT_OK(hetero_compiled_model_get_device(compiled.get(), &device));
  EXPECT_EQ(device, device_case().device);
  size_t parts = 0;
  ASSERT_OK(hetero_compiled_model_get_submodel_count(compiled.get(), &parts));
  if (device_case().hetero()) {
    EXPECT_GT(parts, 1u) << "the HETERO case's config cuts every test model";
  } else {
    EXPECT_EQ(parts, 1u);
  }
  for (size_t i = 0; i < parts; ++i) {
    const char* part = nullptr;
    ASSERT_OK(hetero_compiled_model_get_submodel_device(compiled.get(), &part, i));
    const std::vector<std::string> members = device_case().members();
    EXPECT_NE(std::find(members.begin(), members.end(), part), members.end()) << part;
  }
  const char* part = nullptr;
  EXPECT_REFUSED(hetero_compiled_model_get_submodel_device(compiled.get(), &part, parts), HETERO_INVALID_ARGUMENT);
  EXPECT_EQ(part, nullptr);
  // The model's ports, in its order.
  size_t inputs = 0, outputs = 0, model_inputs = 0, model_outputs = 0;
  ASSERT_OK(hetero_compiled_model_get_input_count(compiled.get(), &inputs));
  ASSERT_OK(hetero_compiled_model_get_output_count(compiled.get(), &outputs));
  ASSERT_OK(hetero_model_get_input_count(model.get(), &model_inputs));
  ASSERT_OK(hetero_model_get_output_count(model.get(), &model_outputs));
  ASSERT_EQ(inputs, model_inputs);
  ASSERT_EQ(outputs, model_outputs);
  for (size_t i = 0; i < inputs + outputs; ++i) {
    const bool in = i < inputs;
    const size_t k = in ? i : i - inputs;
    const char *name = nullptr, *model_name = nullptr;
    hetero_dtype dtype = HETERO_DTYPE_UNDEFINED;
    const int64_t *dims = nullptr, *model_dims = nullptr;
    int64_t rank = -1, model_rank = -1;
    ASSERT_OK(in ? hetero_compiled_model_get_input_name(compiled.get(), &name, k)
                 : hetero_compiled_model_get_output_name(compiled.get(), &name, k));
    ASSERT_OK(in ? hetero_model_get_input_name(model.get(), &model_name, k)
                 : hetero_model_get_output_name(model.get(), &model_name, k));
    ASSERT_OK(in ? hetero_compiled_model_get_input_dtype(compiled.get(), &dtype, k)
                 : hetero_compiled_model_get_output_dtype(compiled.get(), &dtype, k));
    ASSERT_OK(in ? hetero_compiled_model_get_input_shape(compiled.get(), &dims, &rank, k)
                 : hetero_compiled_model_get_output_shape(compiled.get(), &dims, &rank, k));
    ASSERT_OK(in ? hetero_model_get_input_shape(model.get(), &model_dims, &model_rank, k)
                 : hetero_model_get_output_shape(model.get(), &model_dims, &model_rank, k));
    EXPECT_STREQ(name, model_name);
    EXPECT_EQ(dtype, HETERO_DTYPE_FLOAT32) << name;
    ASSERT_EQ(rank, model_rank) << name;
    EXPECT_EQ(std::vector<int64_t>(dims, dims + rank), std::vector<int64_t>(model_dims, model_dims + rank)) << name;
  }
  const char* name = nullptr;
  EXPECT_REFUSED(hetero_compiled_model_get_input_name(compiled.get(), &name, inputs), HETERO_INVALID_ARGUMENT);
  EXPECT_REFUSED(hetero_compiled_model_get_output_name(compiled.get(), &name, outputs), HETERO_INVALID_ARGUMENT);
  EXPECT_EQ(name, nullptr);
}

TEST_P(Infer, OutputsAreTheCpuDriversOutputs) {
  for (const TestModel* m : test_models()) {
    CompiledPtr compiled = compile_text(m->text);
    ASSERT_TRUE(compiled) << m->name;
    const Tensors got = infer(compiled.get(), m->inputs);
    expect_same(got, reference(m->text, m->inputs), device_case().exact, m->name);
    if (m == &two_outputs_model())
      expect_same({got.at(0)}, {HostTensor{{2, 4}, two_outputs_expected_y()}}, device_case().exact, "y by hand");
  }
}

TEST_P(Infer, ARequestRunsAgainOnNewInputs) {
  const TestModel& m = small_cnn_model();
  auto [compiled, request] = load(m.text);
  ASSERT_TRUE(request);
  for (float factor : {1.0f, -0.5f, 2.0f}) {
    const Tensors inputs = scaled(m, factor);
    set_inputs(request.get(), inputs);
    ASSERT_OK(hetero_infer_request_infer(request.get()));
    expect_same(read_outputs(request.get(), 2), reference(m.text, inputs), device_case().exact,
                "inputs scaled by " + std::to_string(factor));
  }
}

// hetero_infer_request_release_memory(): what the request kept for its next
// inference is given back; an output held across it stays as it was, and
// the next inference allocates again and is right.
TEST_P(Infer, ARequestThatGaveBackItsMemoryRunsAgain) {
  const TestModel& m = small_cnn_model();
  auto [compiled, request] = load(m.text);
  ASSERT_TRUE(request);
  set_inputs(request.get(), m.inputs);
  ASSERT_OK(hetero_infer_request_infer(request.get()));
  hetero_tensor_t* held_handle = nullptr;
  ASSERT_OK(hetero_infer_request_get_output(request.get(), &held_handle, 0));
  TensorPtr held(held_handle);
  const HostTensor before = read_tensor(held.get());
  ASSERT_OK(hetero_infer_request_release_memory(request.get()));
  expect_same({read_tensor(held.get())}, {before}, true, "an output held across release_memory");
  const Tensors inputs = scaled(m, -0.5f);
  set_inputs(request.get(), inputs);
  ASSERT_OK(hetero_infer_request_infer(request.get()));
  expect_same(read_outputs(request.get(), 2), reference(m.text, inputs), device_case().exact, "after release_memory");
  expect_same({read_tensor(held.get())}, {before}, true, "the held output after the next inference");
  ASSERT_OK(hetero_infer_request_release_memory(request.get()));  // twice in a row is harmless
}

// What the completion callback sees of its own request.
struct CallbackProbe {
  hetero_infer_request_t* request = nullptr;
  std::atomic<int> calls{0};
  hetero_status status = HETERO_INTERNAL;
  std::string error;          // hetero_last_error() on the callback's thread
  hetero_status nested_wait;  // a wait on its own request, from inside
  Tensors outputs;            // read inside the callback
  size_t output_count = 0;
};

void on_done(void* user_data, hetero_status status) {
  auto* probe = static_cast<CallbackProbe*>(user_data);
  probe->status = status;
  if (status != HETERO_OK) probe->error = hetero_last_error();
  probe->nested_wait = hetero_infer_request_wait(probe->request);
  if (status == HETERO_OK) probe->outputs = read_outputs(probe->request, probe->output_count);
  ++probe->calls;
}

TEST_P(Infer, AsyncInferenceCallsBackOnceWithTheOutputs) {
  const TestModel& m = two_outputs_model();
  auto [compiled, request] = load(m.text);
  ASSERT_TRUE(request);
  set_inputs(request.get(), m.inputs);
  CallbackProbe probe;
  probe.request = request.get();
  probe.output_count = 2;
  ASSERT_OK(hetero_infer_request_start_async(request.get(), on_done, &probe));
  ASSERT_OK(hetero_infer_request_wait(request.get()));
  EXPECT_EQ(probe.calls.load(), 1);
  EXPECT_EQ(probe.status, HETERO_OK);
  EXPECT_EQ(probe.nested_wait, HETERO_BUSY) << "a wait from the callback must be refused, not deadlock";
  const Tensors want = reference(m.text, m.inputs);
  expect_same(probe.outputs, want, device_case().exact, "outputs read in the callback");
  expect_same(read_outputs(request.get(), 2), want, device_case().exact, "outputs after wait");
  // Again at once, without a callback.
  ASSERT_OK(hetero_infer_request_start_async(request.get(), nullptr, nullptr));
  ASSERT_OK(hetero_infer_request_wait(request.get()));
  EXPECT_EQ(probe.calls.load(), 1);
}

// An inference that cannot run is reported either by start_async itself or
// through the callback and wait, naming the input in both ways.
TEST_P(Infer, AFailedAsyncInferenceIsReported) {
  auto [compiled, request] = load(two_outputs_model().text);
  ASSERT_TRUE(request);
  CallbackProbe probe;
  probe.request = request.get();
  const hetero_status started = hetero_infer_request_start_async(request.get(), on_done, &probe);
  if (started != HETERO_OK) {
    EXPECT_REFUSED(started, HETERO_INVALID_ARGUMENT, "input 'x' is not set");
    EXPECT_OK(hetero_infer_request_wait(request.get()));
    EXPECT_EQ(probe.calls.load(), 0) << "a refused start called back";
    return;
  }
  EXPECT_REFUSED(hetero_infer_request_wait(request.get()), HETERO_INVALID_ARGUMENT, "input 'x' is not set");
  EXPECT_EQ(probe.calls.load(), 1);
  EXPECT_EQ(probe.status, HETERO_INVALID_ARGUMENT);
  EXPECT_NE(probe.error.find("input 'x' is not set"), std::string::npos) << probe.error;
}

TEST_P(Infer, SeveralRequestsOnOneCompiledModelRunAtOnce) {
  const TestModel& m = small_cnn_model();
  CompiledPtr compiled = compile_text(m.text);
  ASSERT_TRUE(compiled);
  constexpr int kRequests = 4;
  CompiledPtr cpu = compile_on_cpu(m.text);
  ASSERT_TRUE(cpu);
  std::vector<Tensors> inputs, want;
  for (int i = 0; i < kRequests * 3; ++i) {
    inputs.push_back(scaled(m, 1.0f - 0.25f * static_cast<float>(i)));
    want.push_back(infer(cpu.get(), inputs.back()));
  }
  // Async: all requests in flight together, three rounds.
  std::vector<RequestPtr> requests;
  for (int i = 0; i < kRequests; ++i) requests.push_back(new_request(compiled.get()));
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < kRequests; ++i) {
      set_inputs(requests[i].get(), inputs[round * kRequests + i]);
      ASSERT_OK(hetero_infer_request_start_async(requests[i].get(), nullptr, nullptr));
    }
    for (int i = 0; i < kRequests; ++i) {
      ASSERT_OK(hetero_infer_request_wait(requests[i].get()));
      expect_same(read_outputs(requests[i].get(), 2), want[round * kRequests + i], device_case().exact,
                  "round " + std::to_string(round) + ", request " + std::to_string(i));
    }
  }
  // Sync: one thread per request, on one compiled model.
  std::vector<std::future<Tensors>> results;
  for (int i = 0; i < kRequests; ++i)
    results.push_back(std::async(std::launch::async, [&, i] {
      Tensors out;
      for (int run = 0; run < 3; ++run) out = infer(compiled.get(), inputs[i]);
      return out;
    }));
  for (int i = 0; i < kRequests; ++i)
    expect_same(results[i].get(), want[i], device_case().exact, "thread " + std::to_string(i));
}

TEST_P(Infer, BadPortsAndTensorsAreRefusedAndNamed) {
  const TestModel& m = two_outputs_model();
  auto [compiled, request] = load(m.text);
  ASSERT_TRUE(request);
  hetero_infer_request_t* r = request.get();
  TensorPtr good = make_tensor(m.inputs[0]);
  EXPECT_REFUSED(hetero_infer_request_set_input(r, 1, good.get()), HETERO_INVALID_ARGUMENT, "1");
  EXPECT_REFUSED(hetero_infer_request_set_input_by_name(r, "nope", good.get()), HETERO_NOT_FOUND, "'nope'", "'x'");
  TensorPtr wrong_dtype = make_tensor(HETERO_DTYPE_INT64, {2, 4});
  EXPECT_REFUSED(hetero_infer_request_set_input(r, 0, wrong_dtype.get()), HETERO_INVALID_ARGUMENT, "'x'", "float32");
  TensorPtr wrong_dim = make_tensor(HETERO_DTYPE_FLOAT32, {2, 5});
  EXPECT_REFUSED(hetero_infer_request_set_input(r, 0, wrong_dim.get()), HETERO_INVALID_ARGUMENT, "'x'");
  TensorPtr wrong_rank = make_tensor(HETERO_DTYPE_FLOAT32, {8});
  EXPECT_REFUSED(hetero_infer_request_set_input(r, 0, wrong_rank.get()), HETERO_INVALID_ARGUMENT, "'x'");

  // The refusals left the request as it was: it runs once given a good input.
  ASSERT_OK(hetero_infer_request_set_input_by_name(r, "x", good.get()));
  ASSERT_OK(hetero_infer_request_infer(r));
  hetero_tensor_t* out = nullptr;
  EXPECT_REFUSED(hetero_infer_request_get_output(r, &out, 2), HETERO_INVALID_ARGUMENT, "2");
  EXPECT_REFUSED(hetero_infer_request_get_output_by_name(r, &out, "nope"), HETERO_NOT_FOUND, "'nope'", "'y'", "'z'");
  EXPECT_EQ(out, nullptr) << "an out-param written on error";
  ASSERT_OK(hetero_infer_request_get_output_by_name(r, &out, "z"));
  TensorPtr z(out);
  expect_same({read_tensor(z.get())}, {reference(m.text, m.inputs)[1]}, device_case().exact, "z by name");
}

TEST_P(Infer, AnInputNotSetIsNamed) {
  const TestModel& m = three_inputs_model();
  auto [compiled, request] = load(m.text);
  ASSERT_TRUE(request);
  EXPECT_REFUSED(hetero_infer_request_infer(request.get()), HETERO_INVALID_ARGUMENT, "input 'x' is not set");
  TensorPtr x = make_tensor(m.inputs[0]), b = make_tensor(m.inputs[1]);
  ASSERT_OK(hetero_infer_request_set_input(request.get(), 0, x.get()));
  EXPECT_REFUSED(hetero_infer_request_infer(request.get()), HETERO_INVALID_ARGUMENT, "input 'b' is not set");
  ASSERT_OK(hetero_infer_request_set_input(request.get(), 1, b.get()));
  EXPECT_REFUSED(hetero_infer_request_infer(request.get()), HETERO_INVALID_ARGUMENT, "input 'unused' is not set");
}

TEST_P(Infer, OutputsBeforeAnyInferenceAreRefused) {
  auto [compiled, request] = load(two_outputs_model().text);
  ASSERT_TRUE(request);
  hetero_tensor_t* out = nullptr;
  EXPECT_REFUSED(hetero_infer_request_get_output(request.get(), &out, 0), HETERO_INVALID_ARGUMENT,
                 "no inference has finished");
  EXPECT_REFUSED(hetero_infer_request_get_output_by_name(request.get(), &out, "z"), HETERO_INVALID_ARGUMENT,
                 "no inference has finished");
  EXPECT_EQ(out, nullptr);
}

// A dynamic dim runs at every size given (a GPU compiles each size when an
// inference first brings it).
TEST_P(Infer, DynamicDimsRunAtEverySize) {
  ModelPtr model = read_model(kDynamicBatchModel);
  CompiledPtr compiled = compile(model.get());
  ASSERT_TRUE(compiled);
  RequestPtr request = new_request(compiled.get());
  ASSERT_TRUE(request);
  for (int64_t batch : {1, 3, 2}) {
    HostTensor x{{batch, 4}, {}};
    for (int64_t i = 0; i < batch * 4; ++i) x.values.push_back(static_cast<float>(i % 5) - 2.0f);
    set_inputs(request.get(), {x});
    ASSERT_OK(hetero_infer_request_infer(request.get()));
    expect_same(read_outputs(request.get(), 1), reference(kDynamicBatchModel, {x}), device_case().exact,
                "batch " + std::to_string(batch));
  }
}

HETERO_CONTRACT_INSTANTIATE(Infer);

}  // namespace
}  // namespace hetero::contract
