// A response on its way out: its own bytes plus payloads spliced in from memory it does not own
// (fetched chunks stay in their segment; the kernel copies them straight into the socket with
// writev), kept alive by `keep` until the last byte is written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "nearstream/common/byte_io.h"

namespace nearstream::net {

struct OutFrame {
  struct Splice {
    size_t at;  // offset in `bytes` before which the payload goes
    const uint8_t* data;
    size_t size;
  };

  Bytes bytes;
  std::vector<Splice> splices;  // ascending `at`
  std::vector<std::shared_ptr<const void>> keep;

  size_t total_size() const {
    size_t n = bytes.size();
    for (const auto& s : splices) n += s.size;
    return n;
  }
  // Appends `next` after this frame's bytes and payloads: two responses in one write.
  void Append(OutFrame&& next) {
    const size_t base = bytes.size();
    bytes.insert(bytes.end(), next.bytes.begin(), next.bytes.end());
    for (const Splice& s : next.splices) splices.push_back(Splice{base + s.at, s.data, s.size});
    for (auto& k : next.keep) keep.push_back(std::move(k));
    next.Clear();
  }
  void Clear() {
    bytes.clear();
    splices.clear();
    keep.clear();
  }
};

}  // namespace nearstream::net
