#include "nearstream/cluster/leader_epochs.h"

#include <limits>
#include <sstream>

namespace nearstream::cluster {

Result<std::vector<LeaderEpoch>> ReadLeaderEpochs(storage::Env* env, const std::string& dir) {
  const std::string path = dir + "/" + kLeaderEpochsFile;
  if (!env->Exists(path)) return std::vector<LeaderEpoch>{};
  ASSIGN_OR_RETURN(Bytes data, env->ReadFile(path));
  std::vector<LeaderEpoch> history;
  std::istringstream in(std::string(data.begin(), data.end()));
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    LeaderEpoch e;
    std::string rest;
    if (!(fields >> e.epoch >> e.start_group) || (fields >> rest) ||
        (!history.empty() &&
         (e.epoch <= history.back().epoch || e.start_group < history.back().start_group))) {
      std::string message = path;
      message.append(": line ").append(std::to_string(history.size() + 1)).append(" ('");
      message.append(line).append("') is not a later epoch and its start group");
      return Status::StorageError(std::move(message));
    }
    history.push_back(e);
  }
  return history;
}

Status WriteLeaderEpochs(storage::Env* env, const std::string& dir,
                         const std::vector<LeaderEpoch>& history) {
  std::string text;
  for (const LeaderEpoch& e : history) {
    text += std::to_string(e.epoch) + " " + std::to_string(e.start_group) + "\n";
  }
  return env->WriteFileAtomically(dir + "/" + kLeaderEpochsFile, Bytes(text.begin(), text.end()));
}

Result<uint64_t> DivergesAt(const std::vector<LeaderEpoch>& history, uint64_t epoch) {
  if (history.empty() || epoch < history.front().epoch || epoch > history.back().epoch) {
    return Status::InvalidArgument("the leader's epoch history does not cover epoch " +
                                   std::to_string(epoch));
  }
  for (const LeaderEpoch& e : history) {
    if (e.epoch > epoch) return e.start_group;
  }
  return std::numeric_limits<uint64_t>::max();
}

}  // namespace nearstream::cluster
