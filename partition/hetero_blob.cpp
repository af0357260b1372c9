#include "partition/hetero_blob.h"

#include "core/byte_io.h"
#include "core/device_string.h"
#include "core/error.h"
#include "core/ir_codec.h"
#include "partition/plan.h"

namespace hetero::partition {

namespace {

std::string part_name(size_t k) { return "part" + std::to_string(k); }

constexpr uint32_t kPlanMagic = 0x314c5048;  // "HPL1"
constexpr uint32_t kMaxCount = 1u << 20;

// ---- The plan section ------------------------------------------------------

void put_source(core::ByteWriter& w, const Source& s) {
  w.u8(static_cast<uint8_t>(s.kind));
  w.u32(static_cast<uint32_t>(s.part));
  w.u32(static_cast<uint32_t>(s.index));
  if (s.kind == Source::Kind::Constant) core::encode_tensor(w, s.constant);
}

Source get_source(core::ByteReader& r, const std::string& what) {
  Source s;
  const uint8_t kind = r.u8(what + " kind");
  if (kind > static_cast<uint8_t>(Source::Kind::Constant)) r.corrupt(what + " has kind " + std::to_string(kind));
  s.kind = static_cast<Source::Kind>(kind);
  s.part = r.uint(4, what + " part");
  s.index = r.uint(4, what + " index");
  if (s.kind != Source::Kind::Constant) return s;
  // A copy: the plan's bytes belong to the blob, which the import does not keep.
  const core::Tensor view = core::decode_tensor(r, what, nullptr);
  if (view.empty()) r.corrupt(what + " is a constant with no value");
  s.constant = view.clone();
  return s;
}

// Where each part's inputs and the model's outputs come from must name
// parts that run before, and outputs and inputs that exist.
void check_source(const core::ByteReader& r, const Source& s, size_t before_part, size_t model_inputs,
                  const std::vector<size_t>& part_outputs, const std::string& what) {
  if (s.kind == Source::Kind::GraphInput && s.index >= model_inputs) r.corrupt(what + " names no model input");
  if (s.kind == Source::Kind::PartOutput && (s.part >= before_part || s.index >= part_outputs[s.part]))
    r.corrupt(what + " names no output of an earlier part");
}

}  // namespace

std::vector<uint8_t> encode_hetero_plan(const HeteroCompiledModel::Layout& layout) {
  core::ByteWriter w;
  w.u32(kPlanMagic);
  core::encode_ports(w, layout.inputs);
  core::encode_ports(w, layout.outputs);
  w.u32(static_cast<uint32_t>(layout.stages.size()));
  for (const auto& stage : layout.stages) {
    w.string(stage.device);
    w.string(stage.driver);
    w.string(stage.driver_version);
    w.u32(static_cast<uint32_t>(stage.compiled->outputs().size()));
    w.u32(static_cast<uint32_t>(stage.inputs.size()));
    for (const Source& s : stage.inputs) put_source(w, s);
  }
  w.u32(static_cast<uint32_t>(layout.output_sources.size()));
  for (const Source& s : layout.output_sources) put_source(w, s);
  return std::move(w.bytes());
}

std::vector<driver::ExportedSection> export_hetero_sections(const HeteroCompiledModel::Layout& layout) {
  std::vector<driver::ExportedSection> sections{{"plan", "", encode_hetero_plan(layout)}};
  for (size_t k = 0; k < layout.stages.size(); ++k)
    sections.push_back({part_name(k), layout.stages[k].device, layout.stages[k].compiled->export_blob()});
  return sections;
}

HeteroCompiledModel::Layout import_hetero_sections(const core::Runtime& runtime, const core::BlobView& blob,
                                                   const core::DeviceString& device, const driver::Config& config) {
  const std::vector<driver::Config> device_config = split_device_config(device, config);
  core::ByteReader r(blob.section("plan").bytes, "HETERO blob plan");
  if (r.uint(4, "magic") != kPlanMagic) r.corrupt("not a HETERO plan (bad magic)");
  HeteroCompiledModel::Layout layout;
  layout.inputs = core::decode_ports(r, "model input");
  layout.outputs = core::decode_ports(r, "model output");
  const uint32_t stage_count = r.count("part count", kMaxCount, 16);
  std::vector<size_t> part_outputs;
  std::vector<size_t> stage_device;  // index into device.devices
  for (uint32_t k = 0; k < stage_count; ++k) {
    const std::string what = "part " + std::to_string(k);
    HeteroCompiledModel::Stage stage;
    stage.device = r.string(what + " device");
    stage.driver = r.string(what + " driver");
    stage.driver_version = r.string(what + " driver_version");
    part_outputs.push_back(r.count(what + " output count", kMaxCount, 0));
    stage.inputs.resize(r.count(what + " input count", kMaxCount, 9));
    for (Source& s : stage.inputs) {
      s = get_source(r, what + " input");
      check_source(r, s, k, layout.inputs.size(), part_outputs, what + " input");
    }
    // The part's device must be one of the blob's.
    size_t index = device.devices.size();
    for (size_t d = 0; d < device.devices.size(); ++d)
      if (device.devices[d].to_string() == stage.device) index = d;
    if (index == device.devices.size())
      r.corrupt(what + " runs on " + stage.device + ", not a device of " + device.to_string());
    stage_device.push_back(index);
    layout.stages.push_back(std::move(stage));
  }
  layout.output_sources.resize(r.count("model output source count", kMaxCount, 9));
  if (layout.output_sources.size() != layout.outputs.size()) r.corrupt("model output sources do not match its outputs");
  for (Source& s : layout.output_sources) {
    s = get_source(r, "model output source");
    check_source(r, s, layout.stages.size(), layout.inputs.size(), part_outputs, "model output source");
  }
  if (r.remaining() != 0) r.corrupt(std::to_string(r.remaining()) + " bytes after the plan");
  // Each part, imported by its device's driver, which must be the one that
  // compiled it.
  for (size_t k = 0; k < layout.stages.size(); ++k) {
    HeteroCompiledModel::Stage& stage = layout.stages[k];
    const std::string what = "part " + std::to_string(k);
    auto [d, id] = runtime.resolve(device.devices[stage_device[k]]);
    if (d->name() != stage.driver || d->version() != stage.driver_version)
      fail(HETERO_BLOB_MISMATCH, "blob " + what + " (" + stage.device + ") was compiled by " + stage.driver + " " +
                                     stage.driver_version + ", the loaded driver is " + d->name() + " " + d->version());
    stage.compiled = d->import_blob(blob.section(part_name(k)).bytes, id, device_config[stage_device[k]]);
    if (stage.compiled->outputs().size() != part_outputs[k])
      r.corrupt(what + " has " + std::to_string(stage.compiled->outputs().size()) + " outputs, the plan says " +
                std::to_string(part_outputs[k]));
  }
  return layout;
}

}  // namespace hetero::partition
