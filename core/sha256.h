// SHA-256 (FIPS 180-4): the source-model hash in blob headers and cache keys,
// where a collision would hand one model's compiled form to another.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace hetero::core {

using Sha256Digest = std::array<uint8_t, 32>;

class Sha256 {
 public:
  Sha256();
  Sha256& update(std::span<const uint8_t> bytes);
  Sha256& update(const std::string& text) {
    return update({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
  }
  // The digest of everything given; the object must not be updated after.
  Sha256Digest finish();

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buffer_{};
  size_t buffered_ = 0;
  uint64_t length_ = 0;  // bytes so far
};

Sha256Digest sha256(std::span<const uint8_t> bytes);
// Lower-case hex, 64 characters.
std::string to_hex(const Sha256Digest& digest);

}  // namespace hetero::core
