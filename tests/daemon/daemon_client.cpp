#include "tests/daemon/daemon_client.h"

#include <gtest/gtest.h>

#include <cstring>

#include "tests/daemon/daemon_process.h"

namespace hetero::test {

std::vector<float> seeded_input(size_t count, uint64_t seed) {
  std::vector<float> v(count);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (float& x : v) {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    x = static_cast<float>((s * 0x2545F4914F6CDD1Dull) >> 40) * 0x1p-24f;
  }
  return v;
}

hetero_status infer_once(hetero_infer_request_t* request, const std::vector<int64_t>& dims,
                         const std::vector<float>& input, std::vector<float>& output, std::string* error) {
  hetero_tensor_t* tensor = nullptr;
  hetero_status status = hetero_tensor_wrap(&tensor, HETERO_DTYPE_FLOAT32, dims.data(), dims.size(),
                                            const_cast<float*>(input.data()), input.size() * sizeof(float));
  if (status == HETERO_OK) status = hetero_infer_request_set_input(request, 0, tensor);
  hetero_tensor_release(tensor);
  if (status == HETERO_OK) status = hetero_infer_request_infer(request);
  hetero_tensor_t* out = nullptr;
  if (status == HETERO_OK) status = hetero_infer_request_get_output(request, &out, 0);
  if (status == HETERO_OK) {
    void* data = nullptr;
    size_t count = 0;
    hetero_tensor_get_data(out, &data);
    hetero_tensor_get_element_count(out, &count);
    output.assign(static_cast<float*>(data), static_cast<float*>(data) + count);
  }
  hetero_tensor_release(out);
  if (status != HETERO_OK && error) *error = hetero_last_error();
  return status;
}

hetero_status infer_served(const std::string& socket, const std::string& model, const std::vector<int64_t>& dims,
                           const std::vector<float>& input, std::vector<float>& output) {
  hetero_core_t* core = connect_or_fail(socket);
  if (!core) return HETERO_CONNECTION_ERROR;
  hetero_compiled_model_t* compiled = nullptr;
  hetero_infer_request_t* request = nullptr;
  std::string error;
  hetero_status status = hetero_compiled_model_open(&compiled, core, model.c_str());
  if (status == HETERO_OK) status = hetero_infer_request_create(&request, compiled);
  if (status != HETERO_OK) error = hetero_last_error();
  if (status == HETERO_OK) status = infer_once(request, dims, input, output, &error);
  if (status != HETERO_OK) ADD_FAILURE() << "inference of '" << model << "' through the daemon: " << error;
  hetero_infer_request_release(request);
  hetero_compiled_model_release(compiled);
  hetero_core_release(core);
  return status;
}

LocalReference::LocalReference(const std::string& model, const std::vector<int64_t>& dims) : dims_(dims) {
  EXPECT_EQ(hetero_core_create(&core_, nullptr, nullptr, 0), HETERO_OK) << hetero_last_error();
  const char* name = nullptr;
  hetero_model_t* m = nullptr;
  EXPECT_EQ(hetero_model_read_file(&m, core_, model.c_str(), nullptr, nullptr, nullptr, 0), HETERO_OK)
      << hetero_last_error();
  hetero_model_get_input_name(m, &name, 0);
  const std::string input = name;
  hetero_model_release(m);
  const char* names[] = {input.c_str()};
  const int64_t* shapes[] = {dims_.data()};
  const size_t ranks[] = {dims_.size()};
  EXPECT_EQ(hetero_compile_file(&compiled_, core_, model.c_str(), names, shapes, ranks, 1, "CPU", nullptr, nullptr, 0),
            HETERO_OK)
      << hetero_last_error();
  EXPECT_EQ(hetero_infer_request_create(&request_, compiled_), HETERO_OK) << hetero_last_error();
}

LocalReference::~LocalReference() {
  hetero_infer_request_release(request_);
  hetero_compiled_model_release(compiled_);
  hetero_core_release(core_);
}

std::vector<float> LocalReference::run(const std::vector<float>& input) {
  std::vector<float> out;
  std::string error;
  EXPECT_EQ(infer_once(request_, dims_, input, out, &error), HETERO_OK) << error;
  return out;
}

}  // namespace hetero::test
