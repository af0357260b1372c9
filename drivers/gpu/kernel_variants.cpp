#include "drivers/gpu/kernel_variants.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <set>

#include "drivers/gpu/program.h"

namespace hetero::gpu {

namespace {

const char* kind_name(KernelVariant::Kind k) {
  switch (k) {
    case KernelVariant::Kind::Plain: return "plain";
    case KernelVariant::Kind::Spatial: return "spatial";
    case KernelVariant::Kind::Channel: return "channel";
    case KernelVariant::Kind::Gemm: return "gemm";
    case KernelVariant::Kind::Library: return "library";
  }
  return "?";
}

uint32_t pow2_at_least(int64_t n) {
  uint32_t p = 1;
  while (p < n && p < 16) p *= 2;
  return p;
}

// The device's vector width as one of 1, 2, 4, 8, 16.
uint32_t device_width(const DeviceTraits& t) {
  uint32_t w = 1;
  while (w * 2 <= std::min<uint32_t>(16, std::max<uint32_t>(1, t.vector_width))) w *= 2;
  return w;
}

bool valid_width(uint32_t w) { return w == 1 || w == 2 || w == 4 || w == 8 || w == 16; }

bool constant(const ProgramGraph& g, const std::string& v) { return g.constants.count(v) != 0; }

// Whether a MatMul's b can be read row-major [K, N] by gemm.cl: as given,
// or given transposed but constant (stored transposed back once).
bool gemm_reads_b(const ProgramNode& n, const ProgramGraph& g) {
  const bool given_transposed = !n.prim.attrs.perm.empty() && n.prim.attrs.perm[0] == 1;
  return !given_transposed || (constant(g, n.prim.inputs[1]) && g.shapes.at(n.prim.inputs[1]).size() == 2);
}

}  // namespace

ConvGeometry conv_geometry(const ProgramNode& node, const ProgramGraph& g) {
  // From the attributes, not the weights' shape: reorder_weights may have
  // stored them in another layout.
  const Primitive& p = node.prim;
  const core::Shape& x = g.shapes.at(p.inputs[0]);
  const core::Shape& y = g.shapes.at(p.output);
  const bool two_d = x.size() == 4;
  const auto& a = p.attrs;
  // 1-D convolutions are 2-D ones of height 1.
  auto hw = [&](const std::vector<int64_t>& v, size_t i, int64_t one) { return two_d ? v[i] : (i == 0 ? one : v[0]); };
  ConvGeometry c;
  c.n = x[0];
  c.ic = x[1];
  c.ih = two_d ? x[2] : 1;
  c.iw = x.back();
  c.oc = y[1];
  c.oh = two_d ? y[2] : 1;
  c.ow = y.back();
  c.icg = x[1] / a.group;
  c.ocg = y[1] / a.group;
  c.kh = hw(a.kernel, 0, 1);
  c.kw = hw(a.kernel, 1, 1);
  c.sh = hw(a.strides, 0, 1);
  c.sw = hw(a.strides, 1, 1);
  c.dh = hw(a.dilations, 0, 1);
  c.dw = hw(a.dilations, 1, 1);
  c.ph = two_d ? a.pads[0] : 0;
  c.pw = two_d ? a.pads[1] : a.pads[0];
  c.pointwise = c.kh == 1 && c.kw == 1 && c.sh == 1 && c.sw == 1 && a.group == 1 &&
                std::all_of(a.pads.begin(), a.pads.end(), [](int64_t v) { return v == 0; });
  return c;
}

bool scales_input(const ProgramNode& node) {
  return node.prim.kind == PrimKind::Conv && node.prim.inputs.size() > 3 && !node.prim.inputs[3].empty();
}

std::optional<LibraryGemm> library_gemm_of(const ProgramNode& node, const ProgramGraph& g) {
  auto fits32 = [](int64_t v) { return v >= 0 && v <= INT32_MAX; };
  if (scales_input(node)) return std::nullopt;
  if (node.prim.kind == PrimKind::Conv) {
    const ConvGeometry c = conv_geometry(node, g);
    const std::string& bias = node.prim.inputs[2];
    if (!c.pointwise || (!bias.empty() && !constant(g, bias))) return std::nullopt;
    const int64_t plane = c.oh * c.ow;
    if (!fits32(c.oc) || !fits32(plane) || !fits32(c.ic) || !fits32(c.n)) return std::nullopt;
    return LibraryGemm{static_cast<uint32_t>(c.oc), static_cast<uint32_t>(plane), static_cast<uint32_t>(c.ic),
                       static_cast<uint32_t>(c.n), 0, static_cast<uint64_t>(c.ic * plane),
                       static_cast<uint64_t>(c.oc * plane)};
  }
  if (node.prim.kind != PrimKind::MatMul || !gemm_reads_b(node, g)) return std::nullopt;
  const core::Shape& a = g.shapes.at(node.prim.inputs[0]);
  const core::Shape& y = g.shapes.at(node.prim.output);
  const int64_t m = y[y.size() - 2], n = y.back(), k = a.back();
  const auto batch_of = [](const core::Shape& s) { return static_cast<int64_t>(core::shape_numel(s) / (s[s.size() - 2] * s.back())); };
  const int64_t batch = batch_of(y), a_batch = batch_of(a);
  // b's batch: from its shape as the model gives it (reorders keep it 2-D).
  const core::Shape& bs = g.shapes.at(node.prim.inputs[1]);
  const int64_t b_batch = static_cast<int64_t>(core::shape_numel(bs) / static_cast<size_t>(k * n));
  if ((a_batch != batch && a_batch != 1) || (b_batch != batch && b_batch != 1)) return std::nullopt;
  if (!fits32(m) || !fits32(n) || !fits32(k) || !fits32(batch)) return std::nullopt;
  return LibraryGemm{static_cast<uint32_t>(m), static_cast<uint32_t>(n), static_cast<uint32_t>(k),
                     static_cast<uint32_t>(batch), a_batch == 1 ? 0 : static_cast<uint64_t>(m * k),
                     b_batch == 1 ? 0 : static_cast<uint64_t>(k * n), static_cast<uint64_t>(m * n)};
}

std::string KernelVariant::text() const {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%s vw%u r%u c%u l%ux%ux%u", kind_name(kind), vw, rows, cols, local[0], local[1],
                local[2]);
  return buf;
}

std::optional<KernelVariant> KernelVariant::parse(const std::string& text) {
  char kind[16] = {};
  KernelVariant v;
  int used = 0;
  if (std::sscanf(text.c_str(), "%15s vw%u r%u c%u l%ux%ux%u%n", kind, &v.vw, &v.rows, &v.cols, &v.local[0],
                  &v.local[1], &v.local[2], &used) != 7 ||
      used != static_cast<int>(text.size()))
    return std::nullopt;
  const std::string k = kind;
  if (k == "plain") v.kind = Kind::Plain;
  else if (k == "spatial") v.kind = Kind::Spatial;
  else if (k == "channel") v.kind = Kind::Channel;
  else if (k == "gemm") v.kind = Kind::Gemm;
  else if (k == "library") v.kind = Kind::Library;
  else return std::nullopt;
  return v;
}

bool has_variants(const ProgramNode& node) {
  return node.prim.kind == PrimKind::Conv || node.prim.kind == PrimKind::MatMul;
}

double node_flops(const ProgramNode& node, const ProgramGraph& g) {
  const double out = static_cast<double>(core::shape_numel(g.shapes.at(node.prim.output)));
  if (node.prim.kind == PrimKind::Conv) {
    const ConvGeometry c = conv_geometry(node, g);
    return 2 * out * static_cast<double>(c.icg * c.kh * c.kw);
  }
  if (node.prim.kind == PrimKind::MatMul) return 2 * out * static_cast<double>(g.shapes.at(node.prim.inputs[0]).back());
  return out;
}

std::string variant_key(const ProgramNode& node, const ProgramGraph& g) {
  std::string key = prim_kind_name(node.prim.kind);
  auto dims = [&](const std::string& v) {
    std::string s = " [";
    for (int64_t d : g.shapes.at(v)) s += std::to_string(d) + ",";
    return s + "]";
  };
  for (const std::string& in : node.prim.inputs)
    if (!in.empty()) key += dims(in) + (constant(g, in) ? "c" : "");
  key += " ->" + dims(node.prim.output);
  const PrimAttrs& a = node.prim.attrs;
  auto list = [](const std::vector<int64_t>& v) {
    std::string s;
    for (int64_t d : v) s += std::to_string(d) + ",";
    return s;
  };
  if (node.prim.kind == PrimKind::Conv)
    key += " g" + std::to_string(a.group) + " s" + list(a.strides) + " d" + list(a.dilations) + " p" + list(a.pads);
  else
    key += " t" + list(a.perm);
  return key;
}

bool variant_fits(const KernelVariant& v, const ProgramNode& node, const ProgramGraph& g) {
  // At most 32 accumulator vectors per work item (registers).
  if (!valid_width(v.vw) || v.rows < 1 || v.cols < 1 || v.rows * v.cols > 32) return false;
  if (scales_input(node) && v.kind != KernelVariant::Kind::Gemm) return false;
  if (v.kind == KernelVariant::Kind::Plain || v.kind == KernelVariant::Kind::Library) {
    if (v.vw != 1 || v.rows != 1 || v.cols != 1) return false;
    if (v.kind == KernelVariant::Kind::Library) return library_gemm_of(node, g).has_value();
    return true;
  }
  if (node.prim.kind == PrimKind::MatMul) return v.kind == KernelVariant::Kind::Gemm && gemm_reads_b(node, g);
  if (node.prim.kind != PrimKind::Conv) return false;
  const ConvGeometry c = conv_geometry(node, g);
  switch (v.kind) {
    case KernelVariant::Kind::Gemm: return c.pointwise;
    case KernelVariant::Kind::Channel: return constant(g, node.prim.inputs[1]);
    case KernelVariant::Kind::Spatial: {
      // A work item at the border copies the part of each input row it
      // reads into private memory: keep that small.
      const int64_t read = (v.vw * v.cols - 1) * c.sw + (c.kw - 1) * c.dw + 1 + (c.sw == 2 ? v.vw * v.cols : 0);
      return read <= 512;
    }
    case KernelVariant::Kind::Plain:
    case KernelVariant::Kind::Library: break;
  }
  return false;
}

KernelVariant default_variant(const ProgramNode& node, const ProgramGraph& g, const DeviceTraits& traits) {
  using K = KernelVariant::Kind;
  const uint32_t width = device_width(traits);
  KernelVariant v;
  if (node.prim.kind == PrimKind::MatMul) {
    if (!gemm_reads_b(node, g)) return v;
    const core::Shape& y = g.shapes.at(node.prim.output);
    v.kind = K::Gemm;
    v.vw = std::min(width, pow2_at_least(y.back()));
    v.rows = static_cast<uint32_t>(std::min<int64_t>(4, y[y.size() - 2]));
    return v;
  }
  if (node.prim.kind != PrimKind::Conv) return v;
  const ConvGeometry c = conv_geometry(node, g);
  if (c.pointwise) {
    v.kind = K::Gemm;
    v.vw = std::min(width, pow2_at_least(c.oh * c.ow));
    v.rows = static_cast<uint32_t>(std::min<int64_t>(8, c.oc));
    return v;
  }
  // Along the row when most tiles lie inside it (a tile at the border copies
  // its input rows first), else along the channels (inputs are scalars
  // there, checked one by one); depthwise along the row.
  const uint32_t row_width = c.sw == 1 ? width : std::min(width, 8u);
  const KernelVariant spatial{K::Spatial, std::min(row_width, pow2_at_least(c.ow)),
                              static_cast<uint32_t>(std::min<int64_t>(8, c.ocg)), 1};
  const KernelVariant channel{K::Channel, std::min(width, pow2_at_least(c.ocg)), 1,
                              static_cast<uint32_t>(std::min<int64_t>(8, c.ow))};
  const bool mostly_inside = c.sw <= 2 && c.ow >= 4 * static_cast<int64_t>(spatial.vw);
  if ((c.ocg == 1 || mostly_inside || !variant_fits(channel, node, g)) && variant_fits(spatial, node, g)) return spatial;
  return variant_fits(channel, node, g) ? channel : v;
}

size_t min_work_groups(const DeviceTraits& traits) { return traits.cpu ? 4 * size_t(std::max(1u, traits.compute_units)) : 0; }

std::vector<KernelVariant> candidate_variants(const ProgramNode& node, const ProgramGraph& g,
                                              const DeviceTraits& traits, Tuning level) {
  using K = KernelVariant::Kind;
  std::vector<KernelVariant> out;
  std::set<std::string> seen;
  auto add = [&](KernelVariant v) {
    if (variant_fits(v, node, g) && seen.insert(v.text()).second) out.push_back(v);
  };
  add(default_variant(node, g, traits));
  const uint32_t width = device_width(traits);
  const uint32_t half = std::max(1u, width / 2);
  const bool full = level == Tuning::Full;
  // Tiles no larger than the output allows (a tile twice too big still runs,
  // at the cost of idle lanes and rows).
  auto fits = [](int64_t extent, int64_t tile) { return tile <= std::max<int64_t>(1, 2 * extent - 1); };
  // Fast: three tiles that often win (more rows per work item, or two
  // vectors along the row, or the narrower vector); full: every combination.
  const std::vector<std::array<uint32_t, 3>> fast_tiles = {{width, 8, 1}, {width, 4, 2}, {half, 8, 1}};
  std::vector<std::array<uint32_t, 3>> tiles = fast_tiles;
  if (full) {
    tiles.clear();
    for (uint32_t w : {width, half})
      for (uint32_t r : {2u, 4u, 8u, 12u})
        for (uint32_t c : {1u, 2u}) tiles.push_back({w, r, c});
  }
  if (full) add({});  // the plain kernel, as a baseline
  // The device's GEMM library: tuned for GPUs; on a CPU device (PoCL, where
  // it runs kernels tuned for no such device) only when tuning fully.
  if (traits.library_gemm && (full || !traits.cpu)) add({KernelVariant::Kind::Library});

  if (node.prim.kind == PrimKind::MatMul) {
    const core::Shape& y = g.shapes.at(node.prim.output);
    const int64_t m = y[y.size() - 2], n = y.back();
    for (const auto& [w, r, c] : tiles)
      if (fits(m, r) && fits(n, w * c)) add({K::Gemm, w, r, c});
    return out;
  }
  const ConvGeometry c = conv_geometry(node, g);
  if (c.pointwise) {
    for (const auto& [w, r, cols] : tiles)
      if (fits(c.oc, r) && fits(c.oh * c.ow, w * cols)) add({K::Gemm, w, r, cols});
    if (!full) return out;  // gemm wins on these; full tuning tries the convolutions too
  }
  // Along the row: depthwise tiles hold one channel, others several (fast:
  // eight, at both widths).
  const std::vector<std::array<uint32_t, 3>> row_tiles =
      full || c.ocg == 1 ? tiles : std::vector<std::array<uint32_t, 3>>{{width, 8, 1}, {half, 8, 1}};
  for (const auto& [w, r, cols] : row_tiles) {
    const uint32_t rows = c.ocg == 1 ? 1 : r;
    if (fits(c.ow, w * cols) && fits(c.ocg, rows)) add({K::Spatial, w, rows, cols});
  }
  // Along the channels: one or two channel vectors, several columns.
  if (c.ocg > 1) {
    const uint32_t cw = std::min(width, pow2_at_least(c.ocg));
    const std::vector<std::array<uint32_t, 2>> channel_tiles =
        full ? std::vector<std::array<uint32_t, 2>>{{1, 4}, {1, 8}, {1, 12}, {2, 4}, {2, 8}}
             : std::vector<std::array<uint32_t, 2>>{{1, 8}, {2, 8}};
    for (uint32_t w : {cw, std::max(1u, cw / 2)})
      for (const auto& [r, cols] : channel_tiles)
        if (fits(c.ocg, w * r) && fits(c.ow, cols) && (full || w == cw)) add({K::Channel, w, r, cols});
  }
  return out;
}

}  // namespace hetero::gpu
