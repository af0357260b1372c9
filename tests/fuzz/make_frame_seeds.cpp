// Writes seed inputs for fuzz_frame_decode into the directory argv[1]: frames
// as a client sends them (Hello, Infer with inline tensors of several dtypes,
// LoadModel, the other requests), one stream per file.
#include <fstream>
#include <string>
#include <vector>

#include "protocol/frame.h"
#include "protocol/heterod.pb.h"

namespace {

void append(std::vector<uint8_t>& out, const hetero::wire::Request& request) {
  const std::vector<uint8_t> frame = hetero::wire::encode_frame(request);
  out.insert(out.end(), frame.begin(), frame.end());
}

void write(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                             static_cast<std::streamsize>(bytes.size()));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::string dir = argv[1];
  namespace w = hetero::wire;

  std::vector<uint8_t> session;
  w::Request hello;
  hello.set_id(1);
  hello.mutable_hello()->set_min_version(1);
  hello.mutable_hello()->set_max_version(1);
  hello.mutable_hello()->set_client("seed");
  append(session, hello);
  w::Request infer;
  infer.set_id(2);
  infer.mutable_infer()->set_model("demo");
  w::Tensor* x = infer.mutable_infer()->add_inputs();
  x->set_name("x");
  x->set_dtype(1);
  x->add_dims(2);
  x->add_dims(3);
  x->set_inline_data(std::string(24, '\1'));
  w::Tensor* ids = infer.mutable_infer()->add_inputs();
  ids->set_name("ids");
  ids->set_dtype(7);
  ids->add_dims(4);
  ids->set_inline_data(std::string(32, '\2'));
  append(session, infer);
  write(dir + "/session.bin", session);

  std::vector<uint8_t> admin;
  w::Request r;
  r.set_id(3);
  w::LoadModel* load = r.mutable_load_model();
  load->set_name("m");
  load->set_path("/models/m.onnx");
  load->set_device("HETERO:CPU.1,CPU");
  (*load->mutable_config())["CPU.1:ops"] = "Conv";
  append(admin, r);
  r.Clear();
  r.set_id(4);
  r.mutable_load_model()->set_name("up");
  r.mutable_load_model()->set_model_bytes(std::string(64, '\3'));
  append(admin, r);
  for (int k = 0; k < 6; ++k) {
    r.Clear();
    r.set_id(10 + static_cast<uint64_t>(k));
    switch (k) {
      case 0: r.mutable_list_devices(); break;
      case 1: r.mutable_list_models(); break;
      case 2: r.mutable_unload_model()->set_name("m"); break;
      case 3: r.mutable_stats(); break;
      case 4: r.mutable_health(); break;
      default: r.mutable_reload(); break;
    }
    append(admin, r);
  }
  write(dir + "/admin.bin", admin);

  // A memfd reference with no descriptor: must be refused, not followed.
  std::vector<uint8_t> memfd;
  infer.mutable_infer()->mutable_inputs(0)->mutable_memfd()->set_size(24);
  append(memfd, infer);
  write(dir + "/memfd.bin", memfd);
  return 0;
}
