// Kernel variants: the ways a heavy node (Conv, MatMul) can be computed —
// which kernel template, its tile sizes and vector width, its work-group
// size — the candidates the tuner times for a node, and the variant a node
// gets without tuning. A variant is plain data so that the tuning cache and
// blobs keep it as text.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "drivers/gpu/device_api.h"

namespace hetero::gpu {

struct ProgramGraph;
struct ProgramNode;

struct KernelVariant {
  enum class Kind : uint8_t {
    Plain,    // conv.cl / matmul.cl: one work item per output
    Spatial,  // conv_spatial.cl: vectors along the output row
    Channel,  // conv_channel.cl: vectors along the output channels
    Gemm,     // gemm.cl: matrix tiles (MatMul, 1x1 convolutions)
    Library,  // the device's GEMM library (DeviceTraits::library_gemm), bias and post-ops after it
  };
  Kind kind = Kind::Plain;
  uint32_t vw = 1;    // vector width (lanes)
  uint32_t rows = 1;  // Spatial: output channels; Channel: channel vectors; Gemm: rows of a
  uint32_t cols = 1;  // Spatial: vectors along the row; Channel: output columns; Gemm: column vectors
  std::array<uint32_t, 3> local{0, 0, 0};  // work-group size; 0: the runtime chooses

  // "spatial vw16 r8 c2 l0x0x0": what blobs and the tuning cache store.
  std::string text() const;
  static std::optional<KernelVariant> parse(const std::string& text);
  bool operator==(const KernelVariant&) const = default;
};

// How much tuning a compile does: none (the default variant of each node),
// a few candidates of the heavy nodes, or every candidate of more nodes.
enum class Tuning : uint8_t { Off, Fast, Full };

// A convolution's sizes (1-D convolutions as 2-D ones of height 1); pads are
// the leading ones (the trailing ones only shorten the output).
struct ConvGeometry {
  int64_t n = 1, ic = 1, ih = 1, iw = 1, oc = 1, oh = 1, ow = 1, icg = 1, ocg = 1;
  int64_t kh = 1, kw = 1, sh = 1, sw = 1, dh = 1, dw = 1, ph = 0, pw = 0;
  bool pointwise = false;  // 1x1, stride 1, no padding, one group: a matrix product
};
ConvGeometry conv_geometry(const ProgramNode& node, const ProgramGraph& g);

// The library GEMM call that computes `node` (a MatMul, or a convolution
// that is a matrix product), before its bias and post-ops; none when the
// node's batch broadcasting or operands do not fit one strided call.
std::optional<LibraryGemm> library_gemm_of(const ProgramNode& node, const ProgramGraph& g);

// Whether `node` is a convolution that scales its input's channels first
// (a fourth input; passes::fuse_squeeze_excite): only gemm.cl does that.
bool scales_input(const ProgramNode& node);
// Whether `node` has variants at all (Conv and MatMul).
bool has_variants(const ProgramNode& node);
// Its multiply-adds times two: what decides whether tuning is worth it.
double node_flops(const ProgramNode& node, const ProgramGraph& g);
// The node's shapes and attributes that decide which variants can run and
// how fast: the tuning cache's key (without the device).
std::string variant_key(const ProgramNode& node, const ProgramGraph& g);
// The variant a node gets without tuning: what usually wins on such a
// device for such a shape.
KernelVariant default_variant(const ProgramNode& node, const ProgramGraph& g, const DeviceTraits& traits);
// How many work groups a tiled launch whose variant leaves the work-group
// size open should have (select_kernels()), 0 to leave the size to the
// runtime. On a CPU device, 4 per compute unit: PoCL's own choice is the
// largest group that divides the launch, which makes a small convolution one
// group on one thread while the others idle (the openWakeWord embedding ran
// 2.6-4.1 ms so, 2.0 ms split). Elsewhere the runtime's choice.
size_t min_work_groups(const DeviceTraits& traits);
// The candidates the tuner times, the default first.
std::vector<KernelVariant> candidate_variants(const ProgramNode& node, const ProgramGraph& g,
                                              const DeviceTraits& traits, Tuning level);
// Whether `v` can run `node` (a variant read from a cache or blob may not).
bool variant_fits(const KernelVariant& v, const ProgramNode& node, const ProgramGraph& g);

}  // namespace hetero::gpu
