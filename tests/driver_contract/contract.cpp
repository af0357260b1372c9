#include "tests/driver_contract/contract.h"

#include <cctype>
#include <cmath>
#include <cstring>

#include "tests/unit/model_text.h"

namespace hetero::contract {

bool DeviceCase::hetero() const { return device.rfind("HETERO:", 0) == 0; }

std::vector<std::string> DeviceCase::members() const {
  if (!hetero()) return {device};
  std::vector<std::string> out;
  std::string list = device.substr(std::strlen("HETERO:"));
  for (size_t start = 0, comma; start <= list.size(); start = comma + 1) {
    comma = std::min(list.find(',', start), list.size());
    out.push_back(list.substr(start, comma - start));
  }
  return out;
}

std::string DeviceCase::driver() const { return members().front().substr(0, members().front().find('.')); }

std::string DeviceCase::test_name() const {
  std::string name = device;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

Config DeviceCase::driver_key(const std::string& key, const std::string& value) const {
  return {{hetero() ? driver() + ":" + key : key, value}};
}

Config DeviceCase::compile_config_with(const Config& config) const {
  Config all = compile_config;
  for (const auto& [key, value] : config) all[key] = value;
  return all;
}

const std::vector<DeviceCase>& device_cases() {
  static const std::vector<DeviceCase> cases = [] {
    const std::vector<std::string> cpu_keys = {"optimize",         "ops",         "num_threads", "device_count",
                                               "performance_hint", "num_streams", "pin_threads", "stream_nice",
                                               "lane_nice",        "max_inference_mb", "priority"};
    const std::vector<std::string> gpu_keys = {"optimize", "ops", "kernels_per_batch", "tuning", "priority"};
    const std::vector<std::pair<std::string, std::string>> cpu_bad = {
        {"optimize", "maybe"},        {"num_threads", "x"},     {"num_threads", "-1"}, {"device_count", "0"},
        {"performance_hint", "fast"}, {"num_streams", "65"},    {"priority", "high"}};
    const std::vector<std::pair<std::string, std::string>> gpu_bad = {
        {"optimize", "maybe"}, {"kernels_per_batch", "0"}, {"kernels_per_batch", "x"}, {"tuning", "maybe"}};
    // The CPU.1 and HETERO cases run under the throughput hint, with a
    // stream per core: the contract's concurrent requests then really run
    // side by side on one compiled model.
    const Config two_cpus = {{"CPU.device_count", "2"}, {"CPU.performance_hint", "throughput"}};
    DeviceCase cpu{.device = "CPU", .config_keys = cpu_keys, .bad_values = cpu_bad};
    DeviceCase cpu1{.device = "CPU.1", .core_config = two_cpus, .config_keys = cpu_keys, .bad_values = cpu_bad};
    // CPU.1 runs the ops listed, CPU the rest: every test model is cut in
    // several parts (Relu, Neg, Add, GlobalAveragePool and Softmax go to CPU).
    DeviceCase hetero{.device = "HETERO:CPU.1,CPU",
                      .core_config = two_cpus,
                      .compile_config = {{"CPU.1:ops", "MatMul,Sub,Mul,Identity,Conv,MaxPool,Flatten"}},
                      .config_keys = cpu_keys,
                      .bad_values = cpu_bad};
    DeviceCase opencl{.device = "OPENCL",
                      .exact = false,
                      .deterministic_blobs = false,
                      .config_keys = gpu_keys,
                      .bad_values = gpu_bad};
    DeviceCase level_zero{.device = "LEVEL_ZERO",
                          .must_be_present = false,
                          .exact = false,
                          .deterministic_blobs = false,
                          .config_keys = gpu_keys,
                          .bad_values = gpu_bad};
    return std::vector<DeviceCase>{cpu, cpu1, hetero, opencl, level_zero};
  }();
  return cases;
}

void PrintTo(const DeviceCase& c, std::ostream* out) { *out << c.device; }

// ---- Handles and tensors ------------------------------------------------------

std::string take_string(char* text) {
  std::unique_ptr<char, LibraryFree> owned(text);
  return text ? std::string(text) : std::string();
}

std::vector<uint8_t> take_bytes(void* data, size_t size) {
  std::unique_ptr<void, LibraryFree> owned(data);
  const auto* bytes = static_cast<const uint8_t*>(data);
  return data ? std::vector<uint8_t>(bytes, bytes + size) : std::vector<uint8_t>();
}

TensorPtr make_tensor(hetero_dtype dtype, const std::vector<int64_t>& shape) {
  hetero_tensor_t* t = nullptr;
  EXPECT_OK(hetero_tensor_create(&t, dtype, shape.data(), shape.size()));
  return TensorPtr(t);
}

TensorPtr make_tensor(const HostTensor& host) {
  TensorPtr t = make_tensor(HETERO_DTYPE_FLOAT32, host.shape);
  void* data = nullptr;
  size_t count = 0;
  if (!t || hetero_tensor_get_data(t.get(), &data) != HETERO_OK ||
      hetero_tensor_get_element_count(t.get(), &count) != HETERO_OK || count != host.values.size()) {
    ADD_FAILURE() << "cannot fill a tensor of " << host.values.size() << " values: " << hetero_last_error();
    return t;
  }
  if (count) std::memcpy(data, host.values.data(), count * sizeof(float));
  return t;
}

HostTensor read_tensor(hetero_tensor_t* t) {
  HostTensor host;
  hetero_dtype dtype = HETERO_DTYPE_UNDEFINED;
  const int64_t* dims = nullptr;
  size_t rank = 0, count = 0;
  void* data = nullptr;
  EXPECT_OK(hetero_tensor_get_dtype(t, &dtype));
  EXPECT_EQ(dtype, HETERO_DTYPE_FLOAT32) << "the contract's models have float32 outputs";
  EXPECT_OK(hetero_tensor_get_shape(t, &dims, &rank));
  EXPECT_OK(hetero_tensor_get_element_count(t, &count));
  EXPECT_OK(hetero_tensor_get_data(t, &data));
  if (dims) host.shape.assign(dims, dims + rank);
  if (data && dtype == HETERO_DTYPE_FLOAT32)
    host.values.assign(static_cast<float*>(data), static_cast<float*>(data) + count);
  return host;
}

void set_inputs(hetero_infer_request_t* request, const Tensors& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    TensorPtr t = make_tensor(inputs[i]);
    EXPECT_OK(hetero_infer_request_set_input(request, i, t.get()));
  }
}

size_t output_count(const hetero_compiled_model_t* compiled) {
  size_t count = 0;
  EXPECT_OK(hetero_compiled_model_get_output_count(compiled, &count));
  return count;
}

Tensors read_outputs(hetero_infer_request_t* request, size_t count) {
  Tensors out;
  for (size_t i = 0; i < count; ++i) {
    hetero_tensor_t* t = nullptr;
    EXPECT_OK(hetero_infer_request_get_output(request, &t, i));
    TensorPtr owned(t);
    out.push_back(t ? read_tensor(t) : HostTensor{});
  }
  return out;
}

void expect_same(const Tensors& got, const Tensors& want, bool exact, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t k = 0; k < want.size(); ++k) {
    ASSERT_EQ(got[k].shape, want[k].shape) << what << ", output " << k;
    ASSERT_EQ(got[k].values.size(), want[k].values.size()) << what << ", output " << k;
    size_t bad = 0, worst = 0;
    double worst_error = -1;
    for (size_t i = 0; i < want[k].values.size(); ++i) {
      const double w = want[k].values[i], g = got[k].values[i];
      const double error = std::fabs(w - g);
      const bool close = exact ? (w == g || (std::isnan(w) && std::isnan(g))) : error <= 1e-4 + 1e-3 * std::fabs(w);
      if (close) continue;
      if (error > worst_error) worst = i, worst_error = error;
      ++bad;
    }
    EXPECT_EQ(bad, 0u) << what << ", output " << k << ": " << bad << " of " << want[k].values.size()
                       << " values differ; worst at " << worst << ": want " << want[k].values[worst] << ", got "
                       << got[k].values[worst];
  }
}

void expect_refused_at(const char* file, int line, const char* call, hetero_status got, hetero_status want,
                       std::initializer_list<std::string> mentions) {
  const std::string message = hetero_last_error();
  if (got != want) {
    ADD_FAILURE_AT(file, line) << call << " returned " << hetero_status_name(got) << ", expected "
                               << hetero_status_name(want) << (got == HETERO_OK ? "" : ": " + message);
    return;
  }
  for (const std::string& part : mentions)
    if (message.find(part) == std::string::npos)
      ADD_FAILURE_AT(file, line) << call << ": '" << part << "' is not named in: " << message;
}

ConfigArrays::ConfigArrays(Config config) : config_(std::move(config)) {
  for (const auto& [key, value] : config_) {
    keys_.push_back(key.c_str());
    values_.push_back(value.c_str());
  }
}

CorePtr make_core(const Config& config) {
  const ConfigArrays pairs(config);
  hetero_core_t* core = nullptr;
  EXPECT_OK(hetero_core_create(&core, pairs.keys(), pairs.values(), pairs.size()));
  return CorePtr(core);
}

// ---- Fixtures -----------------------------------------------------------------

std::string module_name(const std::string& driver) {
  std::string name = "hetero_driver_" + driver;
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

hetero_core_t* DriverTest::core() const {
  static std::map<Config, CorePtr> cores;
  CorePtr& core = cores[device_case().core_config];
  if (!core) core = make_core(device_case().core_config);
  return core.get();
}

long DriverTest::driver_index() const {
  size_t count = 0;
  if (hetero_core_get_driver_count(core(), &count) != HETERO_OK) return -1;
  for (size_t i = 0; i < count; ++i) {
    const char* name = nullptr;
    if (hetero_core_get_driver(core(), &name, nullptr, nullptr, i) == HETERO_OK && device_case().driver() == name)
      return static_cast<long>(i);
  }
  return -1;
}

std::string DriverTest::absent_reason() const {
  const long index = driver_index();
  if (index < 0) {
    // Not loaded: a module that failed says why.
    size_t failures = 0;
    hetero_core_get_driver_failure_count(core(), &failures);
    for (size_t i = 0; i < failures; ++i) {
      const char *path = nullptr, *reason = nullptr;
      if (hetero_core_get_driver_failure(core(), &path, &reason, i) == HETERO_OK &&
          std::strstr(path, module_name(device_case().driver()).c_str()))
        return std::string(path) + ": " + reason;
    }
    return "no " + device_case().driver() + " driver module was found";
  }
  size_t count = 0;
  hetero_core_get_device_count(core(), &count);
  for (const std::string& member : device_case().members()) {
    bool listed = false;
    for (size_t i = 0; i < count && !listed; ++i) {
      const char* name = nullptr;
      listed = hetero_core_get_device_name(core(), &name, i) == HETERO_OK && member == name;
    }
    if (listed) continue;
    const char* why = nullptr;
    hetero_core_get_driver_no_device_reason(core(), &why, static_cast<size_t>(index));
    return member + " is not on this machine" + (why && *why ? std::string(": ") + why : std::string());
  }
  return {};
}

void DriverTest::SetUp() {
  if (driver_index() >= 0) return;
  if (device_case().must_be_present) GTEST_FAIL() << absent_reason();
  GTEST_SKIP() << absent_reason();
}

void DeviceTest::SetUp() {
  DriverTest::SetUp();
  if (IsSkipped() || HasFailure()) return;
  const std::string why = absent_reason();
  if (why.empty()) return;
  if (device_case().must_be_present) GTEST_FAIL() << why;
  GTEST_SKIP() << why;
}

ModelPtr DriverTest::read_model(const std::string& onnx_text, hetero_core_t* core) const {
  const std::vector<uint8_t> bytes = test::onnx_bytes(onnx_text.c_str());
  hetero_model_t* model = nullptr;
  EXPECT_OK(hetero_model_read_memory(&model, core ? core : this->core(), bytes.data(), bytes.size(), nullptr, nullptr,
                                     nullptr, 0));
  return ModelPtr(model);
}

hetero_status DeviceTest::try_compile(const hetero_model_t* model, const Config& config, hetero_compiled_model_t** out,
                                      hetero_core_t* core) const {
  const ConfigArrays pairs(device_case().compile_config_with(config));
  return hetero_compile(out, core ? core : this->core(), model, device_case().device.c_str(), pairs.keys(),
                        pairs.values(), pairs.size());
}

CompiledPtr DeviceTest::compile(const hetero_model_t* model, const Config& config, hetero_core_t* core) const {
  hetero_compiled_model_t* compiled = nullptr;
  EXPECT_OK(try_compile(model, config, &compiled, core));
  return CompiledPtr(compiled);
}

hetero_status DeviceTest::try_query(const hetero_model_t* model, const Config& config,
                                    hetero_query_result_t** out) const {
  const ConfigArrays pairs(device_case().compile_config_with(config));
  return hetero_query(out, core(), model, device_case().device.c_str(), pairs.keys(), pairs.values(), pairs.size());
}

CompiledPtr DeviceTest::compile_text(const std::string& onnx_text, hetero_core_t* core) const {
  ModelPtr model = read_model(onnx_text, core);
  return model ? compile(model.get(), {}, core) : nullptr;
}

RequestPtr DeviceTest::new_request(hetero_compiled_model_t* compiled) const {
  hetero_infer_request_t* request = nullptr;
  EXPECT_OK(hetero_infer_request_create(&request, compiled));
  return RequestPtr(request);
}

DeviceTest::Loaded DeviceTest::load(const std::string& onnx_text, hetero_core_t* core) const {
  Loaded loaded;
  loaded.compiled = compile_text(onnx_text, core);
  if (loaded.compiled) loaded.request = new_request(loaded.compiled.get());
  return loaded;
}

Tensors DeviceTest::infer(hetero_compiled_model_t* compiled, const Tensors& inputs) const {
  RequestPtr request = new_request(compiled);
  if (!request) return {};
  set_inputs(request.get(), inputs);
  EXPECT_OK(hetero_infer_request_infer(request.get()));
  return read_outputs(request.get(), output_count(compiled));
}

CompiledPtr DeviceTest::compile_on_cpu(const std::string& onnx_text) const {
  ModelPtr model = read_model(onnx_text);
  hetero_compiled_model_t* compiled = nullptr;
  EXPECT_OK(hetero_compile(&compiled, core(), model.get(), "CPU", nullptr, nullptr, 0));
  return CompiledPtr(compiled);
}

Tensors DeviceTest::reference(const std::string& onnx_text, const Tensors& inputs) const {
  CompiledPtr compiled = compile_on_cpu(onnx_text);
  return compiled ? infer(compiled.get(), inputs) : Tensors{};
}

}  // namespace hetero::contract
