#include "drivers/gpu/shape_specializations.h"

#include <cstring>

#include "core/byte_io.h"
#include "core/error.h"
#include "core/ir_codec.h"
#include "core/onnx_import.h"

namespace hetero::gpu {

namespace {

constexpr char kMagic[8] = {'H', 'G', 'P', 'U', 'S', 'H', 'A', 'P'};
constexpr uint32_t kVersion = 1;

}  // namespace

ShapeSpecializations::ShapeSpecializations(std::vector<uint8_t> onnx, std::string source,
                                           std::vector<driver::Port> inputs, std::vector<driver::Port> outputs,
                                           std::shared_ptr<Device> device, BuildOptions options)
    : onnx_(std::move(onnx)),
      source_(std::move(source)),
      inputs_(std::move(inputs)),
      outputs_(std::move(outputs)),
      device_(std::move(device)),
      options_(options) {}

std::shared_ptr<const ProgramSet> ShapeSpecializations::get(const std::vector<core::Tensor>& inputs) {
  std::vector<core::Shape> shapes;
  for (const core::Tensor& t : inputs) shapes.push_back(t.shape());
  auto lookup = [&]() -> std::shared_ptr<const ProgramSet> {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(shapes);
    if (it == entries_.end()) return nullptr;
    it->second.last_use = ++uses_;
    if (!it->second.set) fail(it->second.status, it->second.error);
    return it->second.set;
  };
  if (auto set = lookup()) return set;
  std::lock_guard compiling(compile_mutex_);
  if (auto set = lookup()) return set;  // compiled meanwhile by another request
  core::ImportOptions options;
  for (size_t i = 0; i < inputs_.size() && i < shapes.size(); ++i) options.input_shapes[inputs_[i].name] = shapes[i];
  try {
    auto set = build_program_set(*core::import_onnx_bytes(onnx_, options, source_), device_, options_);
    std::lock_guard lock(mutex_);
    insert(std::move(shapes), {set, 0, HETERO_OK, {}});
    return set;
  } catch (const Failure& e) {
    // What these shapes cannot do is remembered like what they can: the
    // next inference of them fails at once instead of compiling again.
    if (e.status() == HETERO_NOT_SUPPORTED || e.status() == HETERO_INVALID_MODEL) {
      std::lock_guard lock(mutex_);
      insert(std::move(shapes), {nullptr, 0, e.status(), e.what()});
    }
    throw;
  }
}

void ShapeSpecializations::insert(std::vector<core::Shape> shapes, Entry entry) {
  if (entries_.size() >= kMaxShapeSpecializations) {
    auto oldest = entries_.begin();
    for (auto it = entries_.begin(); it != entries_.end(); ++it)
      if (it->second.last_use < oldest->second.last_use) oldest = it;
    entries_.erase(oldest);  // requests running it keep it until they are done
  }
  entry.last_use = ++uses_;
  entries_[std::move(shapes)] = std::move(entry);
}

std::vector<std::shared_ptr<const ProgramSet>> ShapeSpecializations::held() const {
  std::lock_guard lock(mutex_);
  std::vector<std::shared_ptr<const ProgramSet>> sets;
  for (const auto& [shapes, e] : entries_)
    if (e.set) sets.push_back(e.set);
  return sets;
}

bool ShapeSpecializations::is_blob(std::span<const uint8_t> bytes) {
  return bytes.size() >= sizeof kMagic && std::memcmp(bytes.data(), kMagic, sizeof kMagic) == 0;
}

std::vector<uint8_t> ShapeSpecializations::export_blob() const {
  core::ByteWriter w;
  for (char c : kMagic) w.u8(static_cast<uint8_t>(c));
  w.u32(kVersion);
  w.string(source_);
  core::encode_ports(w, inputs_);
  core::encode_ports(w, outputs_);
  w.sized(onnx_);
  std::lock_guard lock(mutex_);
  uint32_t built = 0;
  for (const auto& [shapes, e] : entries_) built += e.set != nullptr;
  w.u32(built);
  for (const auto& [shapes, e] : entries_) {
    if (!e.set) continue;  // a failure is this process's to remember
    w.u32(static_cast<uint32_t>(shapes.size()));
    for (const core::Shape& s : shapes) {
      w.u32(static_cast<uint32_t>(s.size()));
      for (int64_t d : s) w.i64(d);
    }
    w.sized(export_program_set(*e.set));
  }
  return std::move(w.bytes());
}

std::shared_ptr<ShapeSpecializations> ShapeSpecializations::import_blob(std::span<const uint8_t> bytes,
                                                                         std::shared_ptr<Device> device,
                                                                         BuildOptions options) {
  core::ByteReader r(bytes, device->name() + " blob");
  r.take(sizeof kMagic, "magic");
  const auto version = r.uint(4, "version");
  if (version != kVersion)
    r.corrupt("dynamic-shape format version " + std::to_string(version) + ", this driver reads " + std::to_string(kVersion));
  std::string source = r.string("source", 4096);
  auto inputs = core::decode_ports(r, "inputs");
  auto outputs = core::decode_ports(r, "outputs");
  const auto onnx = r.sized("model");
  auto result = std::make_shared<ShapeSpecializations>(std::vector<uint8_t>(onnx.begin(), onnx.end()), std::move(source),
                                                       std::move(inputs), std::move(outputs), device, options);
  const uint32_t count = r.count("shape sets", kMaxShapeSpecializations, 12);
  for (uint32_t k = 0; k < count; ++k) {
    std::vector<core::Shape> shapes(r.count("shape set", 4096, 4));
    if (shapes.size() != result->inputs_.size()) r.corrupt("a shape set does not have one shape per input");
    for (core::Shape& s : shapes) {
      s.resize(r.count("shape.rank", 64, 8));
      for (int64_t& d : s) {
        d = r.i64("shape.dim");
        if (d < 0) r.corrupt("a shape has a negative dimension");
      }
    }
    auto set = import_program_set(r.sized("programs"), device);
    std::lock_guard lock(result->mutex_);
    result->insert(std::move(shapes), {std::move(set), 0, HETERO_OK, {}});
  }
  if (r.remaining()) r.corrupt(std::to_string(r.remaining()) + " bytes after the end");
  return result;
}

}  // namespace hetero::gpu
