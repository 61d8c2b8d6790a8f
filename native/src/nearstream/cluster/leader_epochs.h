// A replica's epoch history of one streamlet (docs/protocol.md, "Catching up by leader epoch"):
// for every leader epoch, the first group its leader created. Kept as the text file
// `leader-epochs` next to the streamlet's segment files ("<epoch> <start group>" per line,
// oldest first), replaced whole (write aside, rename) when it changes. A follower catching up
// compares its last epoch with its leader's history to tell which of its groups it may keep.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "nearstream/common/status.h"
#include "nearstream/storage/env.h"

namespace nearstream::cluster {

struct LeaderEpoch {
  uint64_t epoch = 0;
  uint64_t start_group = 0;  // every group of the epoch has an id at least this
  bool operator==(const LeaderEpoch&) const = default;
};

inline constexpr const char* kLeaderEpochsFile = "leader-epochs";

// The history in `dir`; empty when there is none. A file that does not parse is an error.
Result<std::vector<LeaderEpoch>> ReadLeaderEpochs(storage::Env* env, const std::string& dir);
Status WriteLeaderEpochs(storage::Env* env, const std::string& dir,
                         const std::vector<LeaderEpoch>& history);

// The first group a follower whose last epoch is `epoch` must drop, given its leader's
// `history`: the start of the first later epoch, or UINT64_MAX when `epoch` is the leader's
// last. An error when the history cannot tell (empty, or `epoch` before its first entry or after
// its last): the follower then copies the whole streamlet.
Result<uint64_t> DivergesAt(const std::vector<LeaderEpoch>& history, uint64_t epoch);

}  // namespace nearstream::cluster
