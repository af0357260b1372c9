#include "core/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace hetero::core {

namespace {

constexpr uint32_t kPolynomial = 0x82f63b78;  // reflected Castagnoli

uint32_t crc32c_table(uint32_t crc, const uint8_t* p, size_t n) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? kPolynomial ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  for (size_t i = 0; i < n; ++i) crc = table[(crc ^ p[i]) & 0xffu] ^ (crc >> 8);
  return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(uint32_t crc, const uint8_t* p, size_t n) {
  uint64_t c = crc;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t word;
    std::memcpy(&word, p, sizeof word);
    c = _mm_crc32_u64(c, word);
  }
  for (; n > 0; ++p, --n) c = _mm_crc32_u8(static_cast<uint32_t>(c), *p);
  return static_cast<uint32_t>(c);
}
#endif

}  // namespace

uint32_t crc32c(std::span<const uint8_t> bytes, uint32_t seed) {
  uint32_t crc = ~seed;
#if defined(__x86_64__)
  static const bool has_sse42 = __builtin_cpu_supports("sse4.2");
  if (has_sse42) return ~crc32c_sse42(crc, bytes.data(), bytes.size());
#endif
  return ~crc32c_table(crc, bytes.data(), bytes.size());
}

uint32_t crc32c_portable(std::span<const uint8_t> bytes, uint32_t seed) {
  return ~crc32c_table(~seed, bytes.data(), bytes.size());
}

}  // namespace hetero::core
