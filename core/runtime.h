// The core: drivers, device strings and models, behind the C ABI, the daemon
// and the CLI alike.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/blob_container.h"
#include "core/device_string.h"
#include "core/driver.h"
#include "core/driver_registry.h"
#include "core/graph.h"

namespace hetero::core {

struct RuntimeOptions {
  std::string driver_path;  // colon-separated directories searched first
  driver::Config config;    // "DRIVER.KEY" entries go to that driver (e.g. CPU.num_threads)
};

// What a compiled model was made from, for its blob's header: the compile
// config and the source model's hash.
struct BlobOrigin {
  driver::Config config;
  Sha256Digest model_sha256{};
};

struct DeviceInfo {
  std::string name;       // "CPU", "OPENCL.1"
  std::string driver;     // "CPU"
  std::string id;         // "0"
  std::string full_name;  // FULL_DEVICE_NAME
};

class Runtime {
 public:
  explicit Runtime(const RuntimeOptions& options = {});

  const DriverRegistry& registry() const noexcept { return registry_; }
  // Every device of every loaded driver (which initialises them all).
  std::vector<DeviceInfo> devices() const;
  std::string metric(const std::string& device, const std::string& name) const;

  // The driver and device id a plain device name ("CPU", "CPU.1") refers to.
  // Fails with NOT_FOUND naming the device, with the driver's no-device reason
  // or load failure when there is one.
  std::pair<driver::Driver*, std::string> resolve(const DeviceName& device) const;
  // Whether `driver` names a driver module that was found, usable or not: a
  // name that is neither is a typo (HETERO refuses it instead of planning
  // without it).
  bool knows_driver(const std::string& driver) const;

  // Per-node support of `device` for `model` (plain device names only).
  std::vector<driver::NodeSupport> query(const Model& model, const std::string& device,
                                         const driver::Config& config = {}) const;
  std::unique_ptr<driver::CompiledModel> compile(const Model& model, const std::string& device,
                                                 const driver::Config& config = {}) const;
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
  // The cache key of compiling a model whose source hash is `model_sha256`
  // for `device` (plain or HETERO) with `config`: a hash of those, of this
  // library's version, and of each device's driver name and version, so that
  // an upgrade of any of them misses rather than imports a stale blob.
  Sha256Digest blob_key(const Sha256Digest& model_sha256, const std::string& device,
                        const driver::Config& config) const;

 private:
  DriverRegistry registry_;
};

}  // namespace hetero::core
