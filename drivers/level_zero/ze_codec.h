// The parts of the Level Zero driver that need no device: the wrapper around
// a native binary in blobs, and launch geometry (group counts from a range and
// the group size zeKernelSuggestGroupSize gave).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "drivers/gpu/device_api.h"

namespace hetero::level_zero {

using DeviceUuid = std::array<uint8_t, 16>;

// A native binary (zeModuleGetNativeBinary) as blobs carry it: magic "HZEN",
// format version, the uuid of the device it was built for, size, SHA-256.
std::vector<uint8_t> encode_native_binary(std::span<const uint8_t> native, const DeviceUuid& device);
// The native binary inside `bytes`; fails naming what is wrong: BLOB_CORRUPT
// (not a Level Zero binary, truncated, checksum) or BLOB_MISMATCH (another
// format version, built for another device).
std::vector<uint8_t> decode_native_binary(std::span<const uint8_t> bytes, const DeviceUuid& device);

struct Launch {
  std::array<uint32_t, 3> group_size{1, 1, 1};
  std::array<uint32_t, 3> group_count{1, 1, 1};
};
// Group sizes and counts covering `range`: the group size is the plan's
// range.local where it sets one (a kernel may need it: the LSTM's steps meet
// at barriers in one group), else the one zeKernelSuggestGroupSize gave for
// the range's global size (`suggested`), else 1. The kernels check their
// bounds, so the global size is rounded up. INVALID_ARGUMENT for sizes over
// 32 bits.
Launch launch_geometry(const gpu::Range& range, const std::array<uint32_t, 3>& suggested);

}  // namespace hetero::level_zero
