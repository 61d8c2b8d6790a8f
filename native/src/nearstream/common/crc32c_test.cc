#include "nearstream/common/crc32c.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace nearstream {
namespace {

// Bit by bit from the definition (reflected Castagnoli polynomial, inverted in and out): slow,
// obviously right, and shares no code with the table or the instruction paths.
uint32_t ReferenceCrc(const uint8_t* p, size_t n, uint32_t crc) {
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

TEST(Crc32cTest, MatchesTheStandardCheckValues) {
  const std::string digits = "123456789";
  EXPECT_EQ(Crc32c(digits.data(), digits.size()), 0xE3069283u);  // RFC 3720's check value
  EXPECT_EQ(Crc32c(nullptr, 0), 0u);
  const std::vector<uint8_t> zeros(32, 0);
  EXPECT_EQ(Crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);  // RFC 3720 B.4: 32 zero bytes
  const std::vector<uint8_t> ones(32, 0xFF);
  EXPECT_EQ(Crc32c(ones.data(), ones.size()), 0x62A8AB43u);  // and 32 bytes of 0xFF
}

// Long inputs go through three chains joined by shift tables, in rounds of 1536 bytes with a
// single-chain tail: every length around those edges, any alignment, and chained calls must give
// the definition's answer.
TEST(Crc32cTest, EveryLengthAlignmentAndChainingMatchesTheDefinition) {
  std::mt19937 rng(7);
  std::vector<uint8_t> data(3 * 1536 + 64);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  for (size_t n = 0; n + 8 <= data.size(); n += (n < 3200 ? 1 : 37)) {
    for (size_t offset : {size_t{0}, size_t{1}, size_t{5}}) {
      if (offset + n > data.size()) continue;
      const uint8_t* p = data.data() + offset;
      ASSERT_EQ(Crc32c(p, n), ReferenceCrc(p, n, 0)) << "n=" << n << " offset=" << offset;
      ASSERT_EQ(internal::Crc32cOneChain(p, n), ReferenceCrc(p, n, 0)) << "n=" << n;
    }
  }
  for (size_t split : {size_t{0}, size_t{100}, size_t{1536}, size_t{2000}, data.size()}) {
    const uint32_t first = Crc32c(data.data(), split);
    EXPECT_EQ(Crc32c(data.data() + split, data.size() - split, first),
              ReferenceCrc(data.data(), data.size(), 0))
        << "split at " << split;
  }
}

TEST(Crc32cTest, LargeBuffersMatchTheDefinition) {
  std::mt19937 rng(11);
  std::vector<uint8_t> data(1 << 20);
  for (auto& b : data) b = static_cast<uint8_t>(rng());
  EXPECT_EQ(Crc32c(data.data(), data.size()), ReferenceCrc(data.data(), data.size(), 0));
  EXPECT_EQ(Crc32c(data.data() + 3, data.size() - 3, 0x12345678u),
            ReferenceCrc(data.data() + 3, data.size() - 3, 0x12345678u));
}

}  // namespace
}  // namespace nearstream
