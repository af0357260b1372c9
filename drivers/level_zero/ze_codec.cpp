#include "drivers/level_zero/ze_codec.h"

#include <cstring>
#include <limits>
#include <string>

#include "core/error.h"
#include "core/sha256.h"

namespace hetero::level_zero {

namespace {
constexpr uint8_t kMagic[4] = {'H', 'Z', 'E', 'N'};
constexpr uint32_t kVersion = 1;
constexpr size_t kHeader = 4 + 4 + 16 + 8 + 32;

template <typename T>
T get_le(const uint8_t* p) {
  T v = 0;
  for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(p[i]) << (8 * i);
  return v;
}
template <typename T>
void put_le(uint8_t* p, T v) {
  for (size_t i = 0; i < sizeof(T); ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
}  // namespace

std::vector<uint8_t> encode_native_binary(std::span<const uint8_t> native, const DeviceUuid& device) {
  // Written at fixed offsets into a buffer of the final size (GCC 12 warns
  // falsely on byte-wise vector inserts at -O3).
  std::vector<uint8_t> out(kHeader + native.size());
  uint8_t* p = out.data();
  std::memcpy(p, kMagic, 4);
  put_le<uint32_t>(p + 4, kVersion);
  std::memcpy(p + 8, device.data(), device.size());
  put_le<uint64_t>(p + 24, native.size());
  const core::Sha256Digest digest = core::sha256(native);
  std::memcpy(p + 32, digest.data(), digest.size());
  if (!native.empty()) std::memcpy(p + kHeader, native.data(), native.size());
  return out;
}

std::vector<uint8_t> decode_native_binary(std::span<const uint8_t> bytes, const DeviceUuid& device) {
  const std::string what = "Level Zero program binary: ";
  if (bytes.size() < kHeader || std::memcmp(bytes.data(), kMagic, 4) != 0)
    fail(HETERO_BLOB_CORRUPT, what + "not a Level Zero native binary (no HZEN header)");
  const uint32_t version = get_le<uint32_t>(bytes.data() + 4);
  if (version != kVersion)
    fail(HETERO_BLOB_MISMATCH, what + "format version " + std::to_string(version) + ", this driver reads " +
                                  std::to_string(kVersion));
  if (std::memcmp(bytes.data() + 8, device.data(), device.size()) != 0)
    fail(HETERO_BLOB_MISMATCH, what + "built for another device (its uuid differs); compile the model again");
  const uint64_t size = get_le<uint64_t>(bytes.data() + 24);
  if (size != bytes.size() - kHeader)
    fail(HETERO_BLOB_CORRUPT, what + "says " + std::to_string(size) + " bytes, holds " +
                                  std::to_string(bytes.size() - kHeader));
  const auto native = bytes.subspan(kHeader);
  const core::Sha256Digest digest = core::sha256(native);
  if (std::memcmp(digest.data(), bytes.data() + 32, digest.size()) != 0)
    fail(HETERO_BLOB_CORRUPT, what + "checksum mismatch (the binary is damaged)");
  return {native.begin(), native.end()};
}

Launch launch_geometry(const gpu::Range& range, const std::array<uint32_t, 3>& suggested) {
  if (range.dims < 1 || range.dims > 3) fail(HETERO_INVALID_ARGUMENT, "launch: dims must be 1..3");
  Launch l;
  for (uint32_t d = 0; d < 3; ++d) {
    const size_t global = d < range.dims ? range.global[d] : 1;
    size_t local = d < range.dims ? (range.local[d] ? range.local[d] : suggested[d]) : 1;
    if (local == 0) local = 1;
    const size_t count = (global + local - 1) / local;
    if (local > std::numeric_limits<uint32_t>::max() || count > std::numeric_limits<uint32_t>::max())
      fail(HETERO_INVALID_ARGUMENT, "launch: " + std::to_string(global) + " work items along dimension " +
                                        std::to_string(d) + " do not fit Level Zero's 32-bit group counts");
    l.group_size[d] = static_cast<uint32_t>(local);
    l.group_count[d] = static_cast<uint32_t>(count == 0 ? 1 : count);
  }
  return l;
}

}  // namespace hetero::level_zero
