#include "nearstream/common/crc32c.h"

#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>
#endif

namespace nearstream {
namespace {

constexpr uint32_t kPoly = 0x82F63B78u;  // reflected Castagnoli polynomial

struct Table {
  uint32_t t[8][256];
  Table() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (kPoly & (0u - (c & 1u)));
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i) {
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
    }
  }
};

uint32_t SoftwareCrc(const uint8_t* p, size_t n, uint32_t crc) {
  static const Table table;
  const auto& t = table.t;
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    w ^= crc;
    crc = t[7][w & 0xFF] ^ t[6][(w >> 8) & 0xFF] ^ t[5][(w >> 16) & 0xFF] ^ t[4][(w >> 24) & 0xFF] ^
          t[3][(w >> 32) & 0xFF] ^ t[2][(w >> 40) & 0xFF] ^ t[1][(w >> 48) & 0xFF] ^ t[0][w >> 56];
    p += 8;
    n -= 8;
  }
  while (n--) crc = (crc >> 8) ^ t[0][(crc ^ *p++) & 0xFF];
  return crc;
}

#if defined(__x86_64__)
// One chain of the crc32 instruction: 8 bytes per step, each step waiting for the last (3 cycles).
__attribute__((target("sse4.2"))) uint32_t SingleChainCrc(const uint8_t* p, size_t n,
                                                          uint32_t crc) {
  uint64_t c = crc;
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c = _mm_crc32_u64(c, w);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c);
  while (n--) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}

// Appends checksum every chunk they store, and a single chain was a third of an append worker's
// CPU. Three chains over three adjacent stripes run in parallel (the instruction retires one per
// cycle), then are joined: the CRC register is linear, so for stripes A, B, C of length L
//   R(c, A|B|C) = Shift(R(c, A), 2L) ^ Shift(R(0, B), L) ^ R(0, C)
// where Shift(x, m) = R(x, m zero bytes) is a linear map of x's 32 bits, tabulated per byte.
constexpr size_t kStripe = 512;

struct ShiftTables {
  uint32_t by_one[4][256];  // Shift(x, kStripe), x's byte k at [k]
  uint32_t by_two[4][256];  // Shift(x, 2 * kStripe)

  ShiftTables() {
    static const uint8_t zeros[2 * kStripe] = {};
    uint32_t one[32], two[32];  // the shifts of each bit of x
    for (int bit = 0; bit < 32; ++bit) {
      one[bit] = SingleChainCrc(zeros, kStripe, 1u << bit);
      two[bit] = SingleChainCrc(zeros, 2 * kStripe, 1u << bit);
    }
    for (int k = 0; k < 4; ++k) {
      for (uint32_t b = 0; b < 256; ++b) {
        uint32_t s1 = 0, s2 = 0;
        for (int i = 0; i < 8; ++i) {
          if (b & (1u << i)) {
            s1 ^= one[8 * k + i];
            s2 ^= two[8 * k + i];
          }
        }
        by_one[k][b] = s1;
        by_two[k][b] = s2;
      }
    }
  }

  static uint32_t Apply(const uint32_t (&t)[4][256], uint32_t x) {
    return t[0][x & 0xFF] ^ t[1][(x >> 8) & 0xFF] ^ t[2][(x >> 16) & 0xFF] ^ t[3][x >> 24];
  }
};

__attribute__((target("sse4.2"))) uint32_t HardwareCrc(const uint8_t* p, size_t n, uint32_t crc) {
  if (n >= 3 * kStripe) {
    static const ShiftTables shift;
    do {
      uint64_t a = crc, b = 0, c = 0;
      for (size_t i = 0; i < kStripe; i += 8) {
        uint64_t wa, wb, wc;
        std::memcpy(&wa, p + i, 8);
        std::memcpy(&wb, p + kStripe + i, 8);
        std::memcpy(&wc, p + 2 * kStripe + i, 8);
        a = _mm_crc32_u64(a, wa);
        b = _mm_crc32_u64(b, wb);
        c = _mm_crc32_u64(c, wc);
      }
      crc = ShiftTables::Apply(shift.by_two, static_cast<uint32_t>(a)) ^
            ShiftTables::Apply(shift.by_one, static_cast<uint32_t>(b)) ^ static_cast<uint32_t>(c);
      p += 3 * kStripe;
      n -= 3 * kStripe;
    } while (n >= 3 * kStripe);
  }
  return SingleChainCrc(p, n, crc);
}

bool CpuHasSse42() {
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
  return (ecx & bit_SSE4_2) != 0;
}
#endif

// The register update, inverted in and out: `hardware` where the CPU has SSE4.2, the table
// otherwise.
using RegisterUpdate = uint32_t (*)(const uint8_t*, size_t, uint32_t);

uint32_t Checksum(const void* data, size_t n, uint32_t crc, RegisterUpdate hardware) {
#if defined(__x86_64__)
  static const bool hw = CpuHasSse42();
  const RegisterUpdate update = hw ? hardware : SoftwareCrc;
#else
  const RegisterUpdate update = SoftwareCrc;
  (void)hardware;
#endif
  return ~update(static_cast<const uint8_t*>(data), n, ~crc);
}

#if defined(__x86_64__)
constexpr RegisterUpdate kThreeChains = HardwareCrc;
constexpr RegisterUpdate kOneChain = SingleChainCrc;
#else
constexpr RegisterUpdate kThreeChains = SoftwareCrc;
constexpr RegisterUpdate kOneChain = SoftwareCrc;
#endif

}  // namespace

uint32_t Crc32c(const void* data, size_t n, uint32_t crc) {
  return Checksum(data, n, crc, kThreeChains);
}

namespace internal {
uint32_t Crc32cOneChain(const void* data, size_t n, uint32_t crc) {
  return Checksum(data, n, crc, kOneChain);
}
}  // namespace internal

}  // namespace nearstream
