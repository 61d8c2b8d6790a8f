// Test support: reading records back through the real Fetch RPC (testing/: linked by the tests
// only).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "nearstream/net/client.h"
#include "nearstream/storage/chunk.h"

namespace nearstream::testing {

// Appends the records of every chunk of `block` to `out`, validating each chunk (a corrupt one
// fails the test). Returns false on a corrupt chunk.
inline bool AppendRecords(const net::FetchBlock& block, std::vector<std::string>* out) {
  uint32_t off = 0;
  while (off < block.size) {
    uint32_t size = storage::kChunkHeaderSize + LoadLe32(block.data + off + 8);
    auto h = storage::ValidateChunk(block.data + off, size);
    EXPECT_TRUE(h.ok()) << "corrupt chunk at " << block.at << "+" << off << ": "
                        << h.status().ToString();
    if (!h.ok()) return false;
    storage::RecordIterator it(block.data + off + storage::kChunkHeaderSize, h->payload_length);
    std::string_view rec;
    while (it.Next(&rec)) out->emplace_back(rec);
    off += size;
  }
  return true;
}

// Every record of one streamlet from the earliest position until nothing is left, in order,
// fetching at most `max_bytes` per request.
inline std::vector<std::string> ReadAllRecords(net::Client& c, const std::string& stream,
                                               uint32_t streamlet, uint32_t max_bytes = 64 * 1024) {
  std::vector<std::string> out;
  storage::Position pos;
  for (;;) {
    net::FetchRequest req;
    req.stream = stream;
    req.entries.push_back({streamlet, pos, max_bytes});
    auto reply = c.Fetch(req);
    EXPECT_TRUE(reply.ok()) << reply.status().ToString();
    if (!reply.ok()) return out;
    const auto& r = reply->response.results.at(0);
    EXPECT_EQ(r.status, 0) << r.message;
    if (r.status != 0 || r.blocks.empty()) return out;
    for (const auto& b : r.blocks) {
      if (!AppendRecords(b, &out)) return out;
    }
    pos = r.next;
  }
}

}  // namespace nearstream::testing
