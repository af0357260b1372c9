// The driver module every GPU API shares: config keys, query, compile and
// import over drivers/gpu, infer requests with one network each, the common
// metrics. A driver module (drivers/opencl, drivers/level_zero) supplies
// only its DeviceFamily: how devices are found, named, described and opened.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/driver.h"
#include "drivers/gpu/device_api.h"

namespace hetero::gpu {

// The API-specific part of a GPU driver, over devices 0..device_count()-1.
class DeviceFamily {
 public:
  virtual ~DeviceFamily() = default;
  // "OPENCL", "LEVEL_ZERO": the driver name and device string prefix.
  virtual std::string name() const = 0;
  // Sets up the API and finds its devices (OpenCL platform enumeration,
  // zeInit): the driver's initialize(), called once before anything below.
  virtual void enumerate() = 0;
  virtual size_t device_count() const = 0;
  // Why there is no device, when there is none.
  virtual std::string no_device_reason() const = 0;
  virtual std::string full_name(size_t index) const = 0;
  virtual bool fp16(size_t index) const = 0;
  // Metrics of this family beyond the common ones: their names, and their
  // values (nothing for a name it does not know).
  virtual std::vector<std::string> extra_metric_names() const { return {}; }
  virtual std::optional<std::string> extra_metric(size_t, const std::string&) const { return std::nullopt; }
  // The device's context, made on first use so that listing stays cheap.
  virtual std::shared_ptr<Device> open(size_t index, const std::string& device_name) = 0;
  // Whether export must run every kernel once first, because the API
  // generates machine code at a kernel's first launch and the binaries carry
  // only what was generated (PoCL).
  virtual bool warm_up_before_export() const { return false; }
};

// The driver over `family` (throws Failure as driver constructors do).
std::unique_ptr<driver::Driver> make_driver(std::unique_ptr<DeviceFamily> family);

}  // namespace hetero::gpu
