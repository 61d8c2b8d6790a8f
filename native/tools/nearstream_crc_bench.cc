// nearstream-crc-bench: the chunk checksum's throughput, Crc32c (three instruction chains joined
// by shift tables) against internal::Crc32cOneChain (one dependent chain, what it replaced), side
// by side over chunk-sized inputs. Usage: nearstream-crc-bench [MiB per measurement, default 512]
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "nearstream/common/crc32c.h"

namespace {

using CrcFn = uint32_t (*)(const void*, size_t, uint32_t);

// GB/s of checksumming `total` bytes as `chunk`-byte inputs cycling through `data`.
double Throughput(CrcFn crc, const std::vector<uint8_t>& data, size_t chunk, size_t total,
                  uint64_t* sink) {
  const auto start = std::chrono::steady_clock::now();
  size_t done = 0;
  size_t offset = 0;
  while (done < total) {
    if (offset + chunk > data.size()) offset = 0;
    *sink += crc(data.data() + offset, chunk, 0);
    offset += chunk;
    done += chunk;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return static_cast<double>(done) / seconds / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  const long mib = argc > 1 ? std::strtol(argv[1], nullptr, 10) : 512;
  if (argc > 2 || mib <= 0) {
    std::fprintf(stderr, "usage: nearstream-crc-bench [MiB per measurement > 0]\n");
    return 2;
  }
  const size_t total = static_cast<size_t>(mib) << 20;
  std::vector<uint8_t> data(1 << 20);  // cache-resident, as a chunk just received is
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 131 + 7);
  uint64_t sink = 0;
  std::printf("chunk_bytes,one_chain_gb_s,three_chains_gb_s,ratio\n");
  for (size_t chunk : {1024, 4096, 16384, 65536, 262144}) {
    // Warm both up, then measure them alternately.
    Throughput(nearstream::internal::Crc32cOneChain, data, chunk, total / 8, &sink);
    Throughput(nearstream::Crc32c, data, chunk, total / 8, &sink);
    const double one = Throughput(nearstream::internal::Crc32cOneChain, data, chunk, total, &sink);
    const double three = Throughput(nearstream::Crc32c, data, chunk, total, &sink);
    std::printf("%zu,%.1f,%.1f,%.2f\n", chunk, one, three, three / one);
  }
  // Printing what the checksums add up to keeps the compiler from dropping them.
  std::fprintf(stderr, "sum of all checksums: %llu\n", static_cast<unsigned long long>(sink));
  return 0;
}
