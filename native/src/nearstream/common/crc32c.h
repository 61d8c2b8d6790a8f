// CRC32C (Castagnoli), the checksum of chunk headers and payloads. Uses the SSE4.2 instruction
// when the CPU has it (checked once at startup) and a table otherwise.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nearstream {

// Extends `crc` (0 for a fresh checksum) with `n` bytes.
uint32_t Crc32c(const void* data, size_t n, uint32_t crc = 0);

}  // namespace nearstream
