// CRC-32C (Castagnoli), the blob container's checksum: the SSE4.2 crc32
// instruction computes it at memory speed where the processor has it (a
// model's weights are checked at every import), a table where not.
#pragma once

#include <cstdint>
#include <span>

namespace hetero::core {

uint32_t crc32c(std::span<const uint8_t> bytes, uint32_t seed = 0);
// The table path alone, whatever the processor (for tests).
uint32_t crc32c_portable(std::span<const uint8_t> bytes, uint32_t seed = 0);

}  // namespace hetero::core
