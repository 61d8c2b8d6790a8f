// CRC32C (Castagnoli), the checksum of chunk headers and payloads. Uses the SSE4.2 instruction
// when the CPU has it (checked once at startup) and a table otherwise.
#pragma once

#include <cstddef>
#include <cstdint>

namespace nearstream {

// Extends `crc` (0 for a fresh checksum) with `n` bytes.
uint32_t Crc32c(const void* data, size_t n, uint32_t crc = 0);

namespace internal {
// As Crc32c, one dependent chain of the instruction (or the table where there is none): what
// Crc32c does for short inputs and did for all, kept for its tests and for nearstream-crc-bench,
// which compares the two side by side.
uint32_t Crc32cOneChain(const void* data, size_t n, uint32_t crc = 0);
}  // namespace internal

}  // namespace nearstream
