// Device strings, the same everywhere (C ABI, CLI, daemon config, blobs):
//   CPU           the first CPU device
//   OPENCL.1      device "1" of the OPENCL driver
//   HETERO:OPENCL,CPU   a model split across devices, in priority order
#pragma once

#include <string>
#include <vector>

namespace hetero::core {

struct DeviceName {
  std::string driver;  // "CPU"
  std::string id;      // "" for the driver's first device, else "1", ...
  std::string to_string() const { return id.empty() ? driver : driver + "." + id; }
};

struct DeviceString {
  bool hetero = false;
  std::vector<DeviceName> devices;  // one unless hetero
  std::string to_string() const;
  // The driver that compiles for it ("HETERO" for a list) and the device id
  // that driver is given: "1" for CPU.1, "" for CPU (its first device),
  // "CPU.1,CPU" for HETERO:CPU.1,CPU.
  std::string driver() const;
  std::string id() const;
};

inline constexpr const char* kHeteroDriverName = "HETERO";

// Fails with INVALID_ARGUMENT saying what is wrong with `text`.
DeviceString parse_device_string(const std::string& text);

// Fails with BLOB_MISMATCH unless a blob compiled for `blob_device` is one
// for `wanted` (compared as parsed, so "CPU.0" and "CPU" differ but
// spellings of one device do not): a blob opened where a device is asked
// for must not run on another one.
void check_blob_device(const std::string& blob_device, const std::string& wanted);

}  // namespace hetero::core
