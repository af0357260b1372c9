// The core: drivers, device strings and models, behind the C ABI, the daemon
// and the CLI alike.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/blob_cache.h"
#include "core/blob_container.h"
#include "core/device_string.h"
#include "core/driver.h"
#include "core/driver_registry.h"
#include "core/graph.h"
#include "core/onnx_import.h"

namespace hetero::core {

class Runtime;

struct RuntimeOptions {
  std::string driver_path;  // colon-separated directories searched first
  driver::Config config;    // "DRIVER.KEY" entries go to that driver (e.g. CPU.num_threads)
  // A directory of compiled blobs: load() of a model compiled before imports
  // its blob instead of compiling.
  std::optional<BlobCacheOptions> cache;
  // The HETERO driver (partition/hetero_driver.h), made with the Runtime it
  // compiles its parts through. It lives in the layer above the core, so the
  // one who links it passes it in; without it a HETERO device is refused.
  std::function<std::unique_ptr<driver::Driver>(const Runtime&)> make_hetero_driver;
};

// What a compiled model was made from, for its blob's header: the compile
// config and the source model's hash.
struct BlobOrigin {
  driver::Config config;
  Sha256Digest model_sha256{};
};

// A compiled model with its origin, and whether the cache gave it.
struct LoadedModel {
  std::unique_ptr<driver::CompiledModel> compiled;
  BlobOrigin origin;
  bool from_cache = false;
};

struct DeviceInfo {
  std::string name;       // "CPU", "OPENCL.1"
  std::string driver;     // "CPU"
  std::string id;         // "0"
  std::string full_name;  // FULL_DEVICE_NAME
};

// Every device string (plain or HETERO) goes through the same calls: the
// string is parsed once, here, and the driver it names (HETERO for a list)
// is given its device id.
class Runtime {
 public:
  explicit Runtime(const RuntimeOptions& options = {});
  ~Runtime();
  // The HETERO driver keeps a reference to its Runtime.
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const DriverRegistry& registry() const noexcept { return registry_; }
  // Every device of every loaded driver (which initialises them all).
  std::vector<DeviceInfo> devices() const;
  std::string metric(const std::string& device, const std::string& name) const;

  // The driver and device id a plain device name ("CPU", "CPU.1") refers to.
  // Fails with NOT_FOUND naming the device, with the driver's no-device reason
  // or load failure when there is one.
  std::pair<driver::Driver*, std::string> resolve(const DeviceName& device) const;
  // The same for any device string: a HETERO list is the HETERO driver's,
  // its id the list ("CPU.1,CPU").
  std::pair<driver::Driver*, std::string> resolve(const DeviceString& device) const;
  // Whether `driver` names a driver module that was found, usable or not: a
  // name that is neither is a typo (HETERO refuses it instead of planning
  // without it).
  bool knows_driver(const std::string& driver) const;

  // Per-node support of `device` for `model`.
  std::vector<driver::NodeSupport> query(const Model& model, const std::string& device,
                                         const driver::Config& config = {}) const;
  std::unique_ptr<driver::CompiledModel> compile(const Model& model, const std::string& device,
                                                 const driver::Config& config = {}) const;
  // compile(), through the blob cache when there is one: a hit is imported,
  // a miss compiled and written back; a refused entry is logged, removed and
  // compiled again, and a cache that cannot be written never fails the load.
  LoadedModel load(const Model& model, const std::string& device, const driver::Config& config) const;
  // The same for a model file; a hit is keyed by the file's bytes and never
  // parses the model.
  LoadedModel load_file(const std::string& path, const ImportOptions& options, const std::string& device,
                        const driver::Config& config) const;
  // Blobs in the container of core/blob_container.h, the driver's export
  // in its one section, "driver".
  std::vector<uint8_t> export_blob(const driver::CompiledModel& compiled, const BlobOrigin& origin) const;
  // What every import checks of a blob's header: that this library wrote it
  // and that `config` contradicts none of its compile config (BLOB_MISMATCH
  // naming the field). Returns the blob's config with `config` added.
  driver::Config check_blob_header(const BlobHeader& header, const driver::Config& config) const;
  // Refuses, with BLOB_MISMATCH naming the field, a blob of another library
  // or driver version, for a device that is not here or is driven by another
  // driver, or compiled with a config value that `config` contradicts.
  // `origin`, when given, receives the blob's.
  std::unique_ptr<driver::CompiledModel> import_blob(std::span<const uint8_t> blob, const driver::Config& config = {},
                                                     BlobOrigin* origin = nullptr) const;
  // The same for a blob read_blob() has parsed already.
  std::unique_ptr<driver::CompiledModel> import_blob(const BlobView& view, const driver::Config& config,
                                                     BlobOrigin* origin) const;

 private:
  std::unique_ptr<driver::CompiledModel> compile(const Model& model, const DeviceString& device,
                                                 const driver::Config& config) const;
  // The cache key of compiling a model whose source hash is `model_sha256`
  // for `device` (plain or HETERO) with `config`: a hash of those, of the
  // files the config names (Driver::config_contents), of this library's
  // version, and of each device's driver name and version, so that an
  // upgrade or an edit of any of them misses rather than imports a stale blob.
  Sha256Digest blob_key(const Sha256Digest& model_sha256, const DeviceString& device,
                        const driver::Config& config) const;
  LoadedModel cached(const Sha256Digest& key, const Sha256Digest& model_sha256, const driver::Config& config) const;
  LoadedModel compile_and_cache(const Model& model, const Sha256Digest& key, const DeviceString& device,
                                const driver::Config& config) const;

  DriverRegistry registry_;
  std::optional<BlobCache> cache_;
  std::unique_ptr<driver::Driver> hetero_;
};

}  // namespace hetero::core
