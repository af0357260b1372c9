#include "partition/hetero_blob.h"

#include "core/priority.h"
#include "core/byte_io.h"
#include "core/device_string.h"
#include "core/error.h"
#include "core/ir_codec.h"
#include "core/priority.h"
#include "hetero_build_config.h"
#include "partition/plan.h"

namespace hetero::partition {

namespace {

constexpr uint32_t kPlanMagic = 0x314c5048;  // "HPL1"
constexpr uint32_t kMaxCount = 1u << 20;

std::string part_name(size_t k) { return "part" + std::to_string(k); }

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

std::vector<uint8_t> export_hetero_blob(const core::Runtime& runtime, const HeteroCompiledModel& model,
                                        const core::BlobOrigin& origin) {
  const auto& stages = model.stages();
  core::ByteWriter plan;
  plan.u32(kPlanMagic);
  core::encode_ports(plan, model.inputs());
  core::encode_ports(plan, model.outputs());
  plan.u32(static_cast<uint32_t>(stages.size()));
  std::vector<std::vector<uint8_t>> parts;
  for (const auto& stage : stages) {
    driver::Driver* d = runtime.resolve(core::parse_device_string(stage.device).devices.front()).first;
    plan.string(stage.device);
    plan.string(d->name());
    plan.string(d->version());
    plan.u32(static_cast<uint32_t>(stage.compiled->outputs().size()));
    plan.u32(static_cast<uint32_t>(stage.inputs.size()));
    for (const Source& s : stage.inputs) put_source(plan, s);
    parts.push_back(stage.compiled->export_blob());
  }
  plan.u32(static_cast<uint32_t>(model.output_sources().size()));
  for (const Source& s : model.output_sources()) put_source(plan, s);

  std::vector<core::BlobSection> sections{{"plan", "", plan.bytes()}};
  for (size_t k = 0; k < parts.size(); ++k) sections.push_back({part_name(k), stages[k].device, parts[k]});
  core::BlobHeader header;
  header.driver = kHeteroDriver;
  header.driver_version = HETERO_VERSION;
  header.device = model.device();
  for (const auto& [key, value] : origin.config)
    if (!core::is_scheduling_key(key)) header.config.emplace_back(key, value);
  header.model_sha256 = origin.model_sha256;
  return core::write_blob(header, sections);
}

std::unique_ptr<HeteroCompiledModel> import_hetero_blob(const core::Runtime& runtime, const core::BlobView& view,
                                                        const driver::Config& config) {
  const core::BlobHeader& h = view.header;
  const driver::Config merged = runtime.check_blob_header(h, config);
  if (h.driver != kHeteroDriver || h.driver_version != HETERO_VERSION)
    fail(HETERO_BLOB_MISMATCH, "blob driver is " + h.driver + " " + h.driver_version + ", not HETERO " +
                                   std::string(HETERO_VERSION));
  const core::DeviceString ds = core::parse_device_string(h.device);
  if (!ds.hetero) fail(HETERO_BLOB_CORRUPT, "HETERO blob names the plain device " + h.device);
  const std::vector<driver::Config> device_config = split_device_config(ds, merged);

  core::ByteReader r(view.section("plan").bytes, "HETERO blob plan");
  if (r.uint(4, "magic") != kPlanMagic) r.corrupt("not a HETERO plan (bad magic)");
  HeteroCompiledModel::Layout layout;
  layout.inputs = core::decode_ports(r, "model input");
  layout.outputs = core::decode_ports(r, "model output");
  const uint32_t stage_count = r.count("part count", kMaxCount, 16);
  std::vector<size_t> part_outputs;
  for (uint32_t k = 0; k < stage_count; ++k) {
    const std::string what = "part " + std::to_string(k);
    HeteroCompiledModel::Stage stage;
    stage.device = r.string(what + " device");
    const std::string driver_name = r.string(what + " driver"), driver_version = r.string(what + " driver_version");
    const uint32_t outputs = r.count(what + " output count", kMaxCount, 0);
    stage.inputs.resize(r.count(what + " input count", kMaxCount, 9));
    for (Source& s : stage.inputs) {
      s = get_source(r, what + " input");
      check_source(r, s, k, layout.inputs.size(), part_outputs, what + " input");
    }
    // The part's device must be one of the blob's, here, and driven as it was.
    const core::DeviceName name = core::parse_device_string(stage.device).devices.front();
    size_t device_index = ds.devices.size();
    for (size_t d = 0; d < ds.devices.size(); ++d)
      if (ds.devices[d].to_string() == name.to_string()) device_index = d;
    if (device_index == ds.devices.size()) r.corrupt(what + " runs on " + stage.device + ", not a device of " + h.device);
    auto [d, id] = runtime.resolve(name);
    if (d->name() != driver_name || d->version() != driver_version)
      fail(HETERO_BLOB_MISMATCH, "blob " + what + " (" + stage.device + ") was compiled by " + driver_name + " " +
                                     driver_version + ", the loaded driver is " + d->name() + " " + d->version());
    const core::BlobSection& section = view.section(part_name(k));
    stage.compiled = d->import_blob(section.bytes, id, device_config[device_index]);
    if (stage.compiled->outputs().size() != outputs)
      r.corrupt(what + " has " + std::to_string(stage.compiled->outputs().size()) + " outputs, the plan says " +
                std::to_string(outputs));
    part_outputs.push_back(outputs);
    layout.stages.push_back(std::move(stage));
  }
  layout.output_sources.resize(r.count("model output source count", kMaxCount, 9));
  if (layout.output_sources.size() != layout.outputs.size()) r.corrupt("model output sources do not match its outputs");
  for (Source& s : layout.output_sources) {
    s = get_source(r, "model output source");
    check_source(r, s, layout.stages.size(), layout.inputs.size(), part_outputs, "model output source");
  }
  if (r.remaining() != 0) r.corrupt(std::to_string(r.remaining()) + " bytes after the plan");
  return std::make_unique<HeteroCompiledModel>(ds.to_string(), std::move(layout));
}

}  // namespace hetero::partition
