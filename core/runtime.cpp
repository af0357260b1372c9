#include "core/runtime.h"

#include <map>

#include "core/blob_container.h"
#include "core/error.h"
#include "core/log.h"
#include "core/mapped_file.h"
#include "core/priority.h"
#include "core/progress.h"
#include "hetero_build_config.h"

namespace hetero::core {

namespace {

// "CPU.num_threads" → ("CPU", "num_threads"); keys without a driver prefix
// are refused, so a typo never passes silently.
std::map<std::string, driver::Config> split_config(const driver::Config& config) {
  std::map<std::string, driver::Config> per_driver;
  for (const auto& [key, value] : config) {
    const size_t dot = key.find('.');
    if (dot == std::string::npos || dot == 0 || dot + 1 == key.size())
      fail(HETERO_INVALID_ARGUMENT,
           "config key '" + key + "' must name its driver, as in CPU.num_threads");
    per_driver[key.substr(0, dot)][key.substr(dot + 1)] = value;
  }
  return per_driver;
}

// The failure of the module that would have driven `driver_name`: the one
// that loaded but failed to initialise, else one named after the driver.
std::string failure_for(const DriverRegistry& registry, const std::string& driver_name) {
  std::string path;
  for (const LoadedDriver& ld : registry.drivers())
    if (ld.driver->name() == driver_name) path = ld.path;
  std::string lower = driver_name;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const DriverFailure& f : registry.failures())
    if (path.empty() ? f.path.find("hetero_driver_" + lower) != std::string::npos : f.path == path)
      return f.path + ": " + f.reason;
  return {};
}

}  // namespace

Runtime::Runtime(const RuntimeOptions& options) : registry_(driver_search_path(options.driver_path)) {
  for (const auto& [name, config] : split_config(options.config)) {
    // Config is no use of a device: it does not initialise the driver.
    driver::Driver* d = registry_.loaded(name);
    if (!d) fail(HETERO_NOT_FOUND, "config names driver '" + name + "', which is not loaded");
    d->set_config(config);
  }
  if (options.cache) cache_.emplace(*options.cache);
  if (options.make_hetero_driver) hetero_ = options.make_hetero_driver(*this);
}

Runtime::~Runtime() = default;

std::vector<DeviceInfo> Runtime::devices() const {
  std::vector<DeviceInfo> out;
  for (const LoadedDriver& ld : registry_.drivers()) {
    const driver::Driver* d = registry_.find(ld.driver->name());
    if (!d) continue;  // its initialisation failed: registry_.failures() says why
    const auto ids = d->devices();
    for (size_t i = 0; i < ids.size(); ++i) {
      DeviceInfo info;
      info.driver = d->name();
      info.id = ids[i];
      // The first device answers to the bare driver name too; list it so.
      info.name = i == 0 ? info.driver : info.driver + "." + ids[i];
      info.full_name = d->metric(ids[i], driver::kMetricFullDeviceName);
      out.push_back(std::move(info));
    }
  }
  return out;
}

bool Runtime::knows_driver(const std::string& driver) const {
  return registry_.loaded(driver) || !failure_for(registry_, driver).empty();
}

std::pair<driver::Driver*, std::string> Runtime::resolve(const DeviceName& device) const {
  driver::Driver* d = registry_.find(device.driver);
  if (!d) {
    const std::string why = failure_for(registry_, device.driver);
    if (registry_.loaded(device.driver) || !why.empty())
      fail(HETERO_NOT_FOUND, "device " + device.to_string() + ": the " + device.driver + " driver cannot be used" +
                                 (why.empty() ? "" : " (" + why + ")"));
    // Not a driver at all: a typo, or another runtime's name for a device
    // (OpenVINO's GPU); list what there is.
    std::string known;
    for (const DeviceInfo& info : devices()) known += (known.empty() ? "" : ", ") + info.name;
    fail(HETERO_NOT_FOUND, "device " + device.to_string() + ": no " + device.driver + " driver is loaded (devices: " +
                               (known.empty() ? "none" : known) + ")" +
                               (device.driver == "GPU" ? "; heterod names GPUs by their API: OPENCL, LEVEL_ZERO" : ""));
  }
  const auto ids = d->devices();
  if (ids.empty()) {
    const std::string why = d->no_device_reason();
    fail(HETERO_NOT_FOUND, "device " + device.to_string() + ": the " + device.driver + " driver has no device" +
                               (why.empty() ? "" : ": " + why));
  }
  if (device.id.empty()) return {d, ids.front()};
  for (const std::string& id : ids)
    if (id == device.id) return {d, id};
  std::string known;
  for (const std::string& id : ids) known += (known.empty() ? "" : ", ") + device.driver + "." + id;
  fail(HETERO_NOT_FOUND, "device " + device.to_string() + " does not exist (devices: " + known + ")");
}

std::pair<driver::Driver*, std::string> Runtime::resolve(const DeviceString& device) const {
  if (!device.hetero) return resolve(device.devices.front());
  if (!hetero_)
    fail(HETERO_NOT_SUPPORTED, "device " + device.to_string() + ": this program was built without the HETERO driver");
  return {hetero_.get(), device.id()};
}

std::string Runtime::metric(const std::string& device, const std::string& name) const {
  auto [d, id] = resolve(parse_device_string(device));
  return d->metric(id, name);
}

std::vector<driver::NodeSupport> Runtime::query(const Model& model, const std::string& device,
                                                const driver::Config& config) const {
  auto [d, id] = resolve(parse_device_string(device));
  return d->query(model, id, config);
}

std::unique_ptr<driver::CompiledModel> Runtime::compile(const Model& model, const std::string& device,
                                                        const driver::Config& config) const {
  return compile(model, parse_device_string(device), config);
}

std::unique_ptr<driver::CompiledModel> Runtime::compile(const Model& model, const DeviceString& device,
                                                        const driver::Config& config) const {
  auto [d, id] = resolve(device);
  return d->compile(model, id, config);
}

LoadedModel Runtime::load(const Model& model, const std::string& device, const driver::Config& config) const {
  const DeviceString parsed = parse_device_string(device);
  if (!cache_) return {compile(model, parsed, config), {config, model.source_sha256}};
  const Sha256Digest key = blob_key(model.source_sha256, parsed, config);
  if (LoadedModel hit = cached(key, model.source_sha256, config); hit.compiled) return hit;
  return compile_and_cache(model, key, parsed, config);
}

LoadedModel Runtime::load_file(const std::string& path, const ImportOptions& options, const std::string& device,
                               const driver::Config& config) const {
  if (!cache_) return load(*import_onnx_file(path, options), device, config);
  const DeviceString parsed = parse_device_string(device);
  Sha256Digest hash;
  {
    const MappedBytes bytes = map_file(path);
    hash = source_sha256({bytes.data, bytes.size}, options.input_shapes);
  }
  const Sha256Digest key = blob_key(hash, parsed, config);
  if (LoadedModel hit = cached(key, hash, config); hit.compiled) return hit;
  return compile_and_cache(*import_onnx_file(path, options), key, parsed, config);
}

LoadedModel Runtime::cached(const Sha256Digest& key, const Sha256Digest& model_sha256,
                            const driver::Config& config) const {
  auto hit = cache_->get(key);
  if (!hit) return {};
  try {
    LoadedModel loaded;
    loaded.compiled = import_blob({hit->data, hit->size}, config, &loaded.origin);
    if (loaded.origin.model_sha256 != model_sha256) fail(HETERO_BLOB_MISMATCH, "it was compiled from another model");
    loaded.from_cache = true;
    return loaded;
  } catch (const Failure& e) {
    log(LogLevel::Warning, "cache entry " + cache_->path_of(key) + " refused (" + e.what() + "); compiling again");
    cache_->remove(key);
    return {};
  }
}

LoadedModel Runtime::compile_and_cache(const Model& model, const Sha256Digest& key, const DeviceString& device,
                                       const driver::Config& config) const {
  LoadedModel loaded{compile(model, device, config), {config, model.source_sha256}};
  try {
    report_progress("writing blob", 0, 1);
    cache_->put(key, export_blob(*loaded.compiled, loaded.origin));
    report_progress("writing blob", 1, 1);
  } catch (const Failure& e) {  // a full disk must not fail the compile itself
    log(LogLevel::Warning, std::string("cannot write a cache entry: ") + e.what());
  }
  return loaded;
}

std::vector<uint8_t> Runtime::export_blob(const driver::CompiledModel& compiled, const BlobOrigin& origin) const {
  // The driver's own refusal speaks first.
  const std::vector<driver::ExportedSection> exported = compiled.export_sections();
  driver::Driver* d = resolve(parse_device_string(compiled.device())).first;
  BlobHeader header;
  header.driver = d->name();
  header.driver_version = d->version();
  header.device = compiled.device();
  for (const auto& [key, value] : origin.config)
    if (!is_scheduling_key(key)) header.config.emplace_back(key, value);
  header.model_sha256 = origin.model_sha256;
  std::vector<BlobSection> sections;
  for (const driver::ExportedSection& e : exported) sections.push_back({e.name, e.device, e.bytes});
  return write_blob(header, sections);
}

driver::Config Runtime::check_blob_header(const BlobHeader& h, const driver::Config& config) const {
  if (h.library_version != HETERO_VERSION)
    fail(HETERO_BLOB_MISMATCH, "blob library_version is " + h.library_version + ", this library is " +
                                   std::string(HETERO_VERSION));
  // The blob's compile config, and what the import adds to it; a key given
  // both ways must agree.
  driver::Config merged(h.config.begin(), h.config.end());
  for (const auto& [key, value] : config) {
    auto [it, added] = merged.emplace(key, value);
    if (!added && it->second != value)
      fail(HETERO_BLOB_MISMATCH, "blob config " + key + " is " + it->second + ", the import asks for " + value);
  }
  return merged;
}

Sha256Digest Runtime::blob_key(const Sha256Digest& model_sha256, const DeviceString& device,
                               const driver::Config& config) const {
  // Files the config names are read first: their errors (a policy that is
  // a FIFO) are the ones a compile without a cache would give.
  const std::string contents = resolve(device).first->config_contents(config);
  // Fields are length-prefixed, so no two different inputs hash the same text.
  Sha256 h;
  auto field = [&](const std::string& s) { h.update(std::to_string(s.size()) + ":" + s); };
  field("heterod blob key 2");
  field(HETERO_VERSION);
  field(device.to_string());
  for (const DeviceName& d : device.devices) {
    driver::Driver* drv = resolve(d).first;
    field(drv->name());
    field(drv->version());
  }
  for (const auto& [key, value] : config) {  // std::map: sorted
    if (is_scheduling_key(key)) continue;
    field(key);
    field(value);
  }
  field(contents);
  h.update(model_sha256);
  return h.finish();
}

std::unique_ptr<driver::CompiledModel> Runtime::import_blob(std::span<const uint8_t> blob,
                                                            const driver::Config& config, BlobOrigin* origin) const {
  return import_blob(read_blob(blob), config, origin);
}

std::unique_ptr<driver::CompiledModel> Runtime::import_blob(const BlobView& view, const driver::Config& config,
                                                            BlobOrigin* origin) const {
  const BlobHeader& h = view.header;
  const driver::Config merged = check_blob_header(h, config);
  const DeviceString device = parse_device_string(h.device);
  if (device.driver() != h.driver)
    fail(HETERO_BLOB_MISMATCH, "blob driver is " + h.driver + ", but its device " + h.device + " is not one of it");
  auto [d, id] = resolve(device);
  if (d->version() != h.driver_version)
    fail(HETERO_BLOB_MISMATCH, "blob driver_version is " + h.driver_version + ", the loaded " + d->name() +
                                   " driver is " + d->version());
  auto compiled = d->import_sections(view, id, merged);
  // Re-exporting the import writes the same blob: the blob's own config.
  if (origin) *origin = {driver::Config(h.config.begin(), h.config.end()), h.model_sha256};
  return compiled;
}

}  // namespace hetero::core
