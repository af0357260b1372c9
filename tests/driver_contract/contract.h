// The driver contract suite's fixture: what every device must do, written
// once and run on each device string (value-parameterised, one instance per
// DeviceCase), through the public C ABI.
//
// A test asks for what it needs in SetUp: a device test runs only where the
// device is on this machine (a device that may be absent, LEVEL_ZERO on a box
// without a Level Zero GPU driver, is skipped with the driver's own reason;
// one that must be present fails), a driver test only needs the driver
// module loaded.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "hetero/hetero.h"

namespace hetero::contract {

using Config = std::map<std::string, std::string>;

// One device string under test and what the contract allows it to differ in.
struct DeviceCase {
  std::string device;  // "CPU.1", "HETERO:CPU.1,CPU"
  // hetero_core_create() pairs of the core it runs in.
  Config core_config;
  // Added to every compile: for HETERO, what splits the test models across
  // its devices, so that every test runs a model in several parts.
  Config compile_config;
  // False: absent on this machine is skipped with the driver's reason.
  bool must_be_present = true;
  // Outputs equal to the CPU driver's bit for bit (else rtol 1e-3, atol 1e-4).
  bool exact = true;
  // Two compiles of one model export the same bytes (OpenCL device binaries
  // are the OpenCL implementation's, and PoCL's differ between builds).
  bool deterministic_blobs = true;
  // Config keys the driver has; the first two are common to every driver.
  std::vector<std::string> config_keys;
  // Values of those keys the driver must refuse.
  std::vector<std::pair<std::string, std::string>> bad_values;

  bool hetero() const;
  // The plain devices it runs on: itself, or a HETERO string's list.
  std::vector<std::string> members() const;
  // The driver module of those devices (one for every case here): "CPU".
  std::string driver() const;
  // The instance's name in gtest: "HETERO_CPU_1_CPU".
  std::string test_name() const;

  // `key` = `value` as this device's compile config: a driver key for a plain
  // device, "DRIVER:key" (every device of the driver) for HETERO.
  Config driver_key(const std::string& key, const std::string& value) const;
  // compile_config with `config` added (and winning).
  Config compile_config_with(const Config& config) const;
};

const std::vector<DeviceCase>& device_cases();
// gtest prints a case as its device string.
void PrintTo(const DeviceCase& c, std::ostream* out);

// ---- C handles, released by unique_ptr -------------------------------------

template <typename T, hetero_status (*Release)(T*)>
struct Releaser {
  void operator()(T* p) const { Release(p); }
};
using CorePtr = std::unique_ptr<hetero_core_t, Releaser<hetero_core_t, hetero_core_release>>;
using ModelPtr = std::unique_ptr<hetero_model_t, Releaser<hetero_model_t, hetero_model_release>>;
using CompiledPtr =
    std::unique_ptr<hetero_compiled_model_t, Releaser<hetero_compiled_model_t, hetero_compiled_model_release>>;
using RequestPtr =
    std::unique_ptr<hetero_infer_request_t, Releaser<hetero_infer_request_t, hetero_infer_request_release>>;
using TensorPtr = std::unique_ptr<hetero_tensor_t, Releaser<hetero_tensor_t, hetero_tensor_release>>;
using QueryPtr = std::unique_ptr<hetero_query_result_t, Releaser<hetero_query_result_t, hetero_query_result_release>>;

// Bytes the library allocated (metrics, blobs), freed with hetero_free.
struct LibraryFree {
  void operator()(void* p) const { hetero_free(p); }
};
std::string take_string(char* text);
std::vector<uint8_t> take_bytes(void* data, size_t size);

// A float32 tensor's shape and values, on the test's side.
struct HostTensor {
  std::vector<int64_t> shape;
  std::vector<float> values;
};
using Tensors = std::vector<HostTensor>;

TensorPtr make_tensor(const HostTensor& t);
TensorPtr make_tensor(hetero_dtype dtype, const std::vector<int64_t>& shape);
HostTensor read_tensor(hetero_tensor_t* t);

// Binds `inputs` by index; failures are test failures.
void set_inputs(hetero_infer_request_t* request, const Tensors& inputs);
Tensors read_outputs(hetero_infer_request_t* request, size_t count);
size_t output_count(const hetero_compiled_model_t* compiled);

// Equal shapes, and values equal (exact) or within rtol 1e-3 / atol 1e-4.
void expect_same(const Tensors& got, const Tensors& want, bool exact, const std::string& what);

// A call that must fail with `status` and a hetero_last_error() naming every
// one of `mentions`.
void expect_refused_at(const char* file, int line, const char* call, hetero_status got, hetero_status want,
                       std::initializer_list<std::string> mentions);
#define EXPECT_REFUSED(call, status, ...) \
  ::hetero::contract::expect_refused_at(__FILE__, __LINE__, #call, (call), (status), {__VA_ARGS__})
#define ASSERT_OK(call) ASSERT_EQ((call), HETERO_OK) << #call << ": " << hetero_last_error()
#define EXPECT_OK(call) EXPECT_EQ((call), HETERO_OK) << #call << ": " << hetero_last_error()

// `config` as the C ABI's key and value arrays, over a copy of its own (so a
// temporary Config may be given).
class ConfigArrays {
 public:
  explicit ConfigArrays(Config config);
  ConfigArrays(const ConfigArrays&) = delete;
  ConfigArrays& operator=(const ConfigArrays&) = delete;
  const char* const* keys() const { return keys_.data(); }
  const char* const* values() const { return values_.data(); }
  size_t size() const { return keys_.size(); }

 private:
  Config config_;
  std::vector<const char*> keys_, values_;
};

// A core with `config` (hetero_core_create pairs); a test failure when it
// cannot be made.
CorePtr make_core(const Config& config);

// ---- Fixtures ---------------------------------------------------------------

// The file name stem of a driver's module: "hetero_driver_level_zero".
std::string module_name(const std::string& driver);

// Tests of a driver module: they run wherever the module loaded, device or not.
class DriverTest : public ::testing::TestWithParam<DeviceCase> {
 protected:
  void SetUp() override;
  const DeviceCase& device_case() const { return GetParam(); }
  // The case's core, shared by every test of the case (a core loads every
  // driver module; PoCL's start-up alone takes a while).
  hetero_core_t* core() const;
  // The case's driver's index in hetero_core_get_driver, or -1.
  long driver_index() const;
  // Why the case's devices are not all on this machine; "" when they are.
  std::string absent_reason() const;
  // The helpers below work in core() unless given another `core`.
  ModelPtr read_model(const std::string& onnx_text, hetero_core_t* core = nullptr) const;
};

// Tests of a device: skipped or failed in SetUp where it is absent.
class DeviceTest : public DriverTest {
 protected:
  void SetUp() override;

  // Compiles (queries) for the case's device with its compile_config and
  // `config`: try_* return the status, compile() fails the test on an error.
  hetero_status try_compile(const hetero_model_t* model, const Config& config, hetero_compiled_model_t** out,
                            hetero_core_t* core = nullptr) const;
  CompiledPtr compile(const hetero_model_t* model, const Config& config = {}, hetero_core_t* core = nullptr) const;
  hetero_status try_query(const hetero_model_t* model, const Config& config, hetero_query_result_t** out) const;
  CompiledPtr compile_text(const std::string& onnx_text, hetero_core_t* core = nullptr) const;
  // A request on `compiled`; null, with a test failure, when none is made.
  RequestPtr new_request(hetero_compiled_model_t* compiled) const;
  // `onnx_text` compiled, and a request on it.
  struct Loaded {
    CompiledPtr compiled;
    RequestPtr request;
  };
  Loaded load(const std::string& onnx_text, hetero_core_t* core = nullptr) const;
  // One sync inference on a new request.
  Tensors infer(hetero_compiled_model_t* compiled, const Tensors& inputs) const;
  // The CPU driver's outputs for the same model and inputs: the reference.
  CompiledPtr compile_on_cpu(const std::string& onnx_text) const;
  Tensors reference(const std::string& onnx_text, const Tensors& inputs) const;
};

// Instantiates `fixture` for every DeviceCase, named by test_name.
#define HETERO_CONTRACT_INSTANTIATE(fixture)                                                          \
  INSTANTIATE_TEST_SUITE_P(Devices, fixture, ::testing::ValuesIn(::hetero::contract::device_cases()), \
                           [](const auto& info) { return info.param.test_name(); })

}  // namespace hetero::contract
