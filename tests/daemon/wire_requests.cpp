#include "tests/daemon/wire_requests.h"

#include "hetero/hetero.h"

namespace hetero::test {

wire::Request infer_request(const std::string& model, const std::string& input, const std::vector<int64_t>& dims,
                            const std::vector<float>& values) {
  wire::Request r;
  r.mutable_infer()->set_model(model);
  wire::Tensor* t = r.mutable_infer()->add_inputs();
  t->set_name(input);
  t->set_dtype(HETERO_DTYPE_FLOAT32);
  for (int64_t d : dims) t->add_dims(d);
  t->set_inline_data(values.data(), values.size() * sizeof(float));
  return r;
}

wire::Request spin_request(uint64_t id, int64_t iterations, uint32_t timeout_ms, const std::string& model) {
  wire::Request r;
  r.set_id(id);
  wire::Infer* infer = r.mutable_infer();
  infer->set_model(model);
  infer->set_timeout_ms(timeout_ms);
  wire::Tensor* m = infer->add_inputs();
  m->set_name("m");
  m->set_dtype(HETERO_DTYPE_INT64);
  m->set_inline_data(&iterations, sizeof iterations);
  const std::vector<float> x = {1, -2, 3, -4};
  wire::Tensor* t = infer->add_inputs();
  t->set_name("x");
  t->set_dtype(HETERO_DTYPE_FLOAT32);
  t->add_dims(1);
  t->add_dims(4);
  t->set_inline_data(x.data(), x.size() * sizeof(float));
  return r;
}

wire::Request load_path_request(const std::string& name, const std::string& path, uint64_t id) {
  wire::Request r;
  r.set_id(id);
  r.mutable_load_model()->set_name(name);
  r.mutable_load_model()->set_path(path);
  return r;
}

wire::Request unload_request(const std::string& name, uint64_t id) {
  wire::Request r;
  r.set_id(id);
  r.mutable_unload_model()->set_name(name);
  return r;
}

std::vector<uint8_t> header_of(uint32_t length) {
  return {static_cast<uint8_t>(length), static_cast<uint8_t>(length >> 8), static_cast<uint8_t>(length >> 16),
          static_cast<uint8_t>(length >> 24), 0, 0, 0, 0};
}

}  // namespace hetero::test
