// Writes the IR encoding (core/ir_codec) of an ONNX model: a seed for
// fuzz_ir_decode.   make_ir_seed MODEL.onnx OUT.ir
#include <cstdio>
#include <fstream>

#include "core/error.h"
#include "core/ir_codec.h"
#include "core/onnx_import.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: make_ir_seed MODEL.onnx OUT.ir\n");
    return 2;
  }
  try {
    const auto bytes = hetero::core::encode_model(*hetero::core::import_onnx_file(argv[1]));
    std::ofstream out(argv[2], std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    return out ? 0 : 1;
  } catch (const hetero::Failure& e) {
    std::fprintf(stderr, "make_ir_seed: %s\n", e.what());
    return 1;
  }
}
