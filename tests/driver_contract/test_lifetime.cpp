// Release order: the C ABI lets handles go in any order (a compiled model
// keeps its driver loaded, a request its compiled model, an output tensor its
// memory), so requests outlive their compiled model and core, an inference in
// flight outlives the handles released during it, and outputs outlive their
// request. Each test uses a core of its own, released early.
#include "tests/driver_contract/contract.h"
#include "tests/driver_contract/contract_models.h"

namespace hetero::contract {
namespace {

class Lifetime : public DeviceTest {};

TEST_P(Lifetime, ARequestOutlivesItsCompiledModelAndCore) {
  const TestModel& m = small_cnn_model();
  CorePtr core = make_core(device_case().core_config);
  auto [compiled, request] = load(m.text, core.get());
  ASSERT_TRUE(request);
  compiled.reset();
  core.reset();
  set_inputs(request.get(), m.inputs);
  ASSERT_OK(hetero_infer_request_infer(request.get()));
  expect_same(read_outputs(request.get(), 2), reference(m.text, m.inputs), device_case().exact, "after release");
}

TEST_P(Lifetime, AnInferenceInFlightOutlivesTheHandlesReleasedDuringIt) {
  const TestModel& m = small_cnn_model();
  CorePtr core = make_core(device_case().core_config);
  auto [compiled, request] = load(m.text, core.get());
  ASSERT_TRUE(request);
  set_inputs(request.get(), m.inputs);  // the input tensors are released already
  ASSERT_OK(hetero_infer_request_start_async(request.get(), nullptr, nullptr));
  compiled.reset();
  core.reset();
  ASSERT_OK(hetero_infer_request_wait(request.get()));
  expect_same(read_outputs(request.get(), 2), reference(m.text, m.inputs), device_case().exact, "in flight");
}

TEST_P(Lifetime, OutputsOutliveTheirRequestAndEverythingElse) {
  const TestModel& m = two_outputs_model();
  CorePtr core = make_core(device_case().core_config);
  auto [compiled, request] = load(m.text, core.get());
  ASSERT_TRUE(request);
  set_inputs(request.get(), m.inputs);
  ASSERT_OK(hetero_infer_request_infer(request.get()));
  hetero_tensor_t *y = nullptr, *z = nullptr;
  ASSERT_OK(hetero_infer_request_get_output(request.get(), &y, 0));
  ASSERT_OK(hetero_infer_request_get_output(request.get(), &z, 1));
  TensorPtr outputs[] = {TensorPtr(y), TensorPtr(z)};
  request.reset();
  compiled.reset();
  core.reset();
  expect_same({read_tensor(y), read_tensor(z)}, reference(m.text, m.inputs), device_case().exact, "kept outputs");
}

TEST_P(Lifetime, AnImportedModelOutlivesItsCore) {
  const TestModel& m = three_inputs_model();
  CorePtr core = make_core(device_case().core_config);
  CompiledPtr compiled = compile_text(m.text, core.get());
  ASSERT_TRUE(compiled);
  void* data = nullptr;
  size_t size = 0;
  ASSERT_OK(hetero_compiled_model_export(compiled.get(), &data, &size));
  const std::vector<uint8_t> blob = take_bytes(data, size);
  compiled.reset();
  hetero_compiled_model_t* imported = nullptr;
  ASSERT_OK(hetero_compiled_model_import(&imported, core.get(), blob.data(), blob.size(), nullptr, nullptr, 0));
  CompiledPtr owned(imported);
  core.reset();
  expect_same(infer(imported, m.inputs), reference(m.text, m.inputs), device_case().exact, "imported");
}

HETERO_CONTRACT_INSTANTIATE(Lifetime);

}  // namespace
}  // namespace hetero::contract
