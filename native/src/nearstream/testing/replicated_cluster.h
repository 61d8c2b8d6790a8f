// The three-broker cluster of three_broker_cluster.h with what tests of replicated streams ask
// of it: placements as a broker sees them, waits for a new leader or an in-sync set, metrics,
// numbered records and single-chunk appends. A broker paused with SIGSTOP (`paused_`) is resumed at
// the end.
#pragma once

#include <signal.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "nearstream/common/clock.h"
#include "nearstream/net/client.h"
#include "nearstream/storage/chunk.h"
#include "nearstream/testing/three_broker_cluster.h"

namespace nearstream::testing {

class ReplicatedCluster : public ThreeBrokerCluster {
 protected:
  TestBroker& Broker(uint32_t id) { return *brokers_[id - 1]; }

  // The bootstrap list of the brokers in `ids` (default: all).
  std::string List(const std::vector<uint32_t>& ids = {1, 2, 3}) {
    std::string out;
    for (uint32_t id : ids) out += (out.empty() ? "" : ",") + Broker(id).address();
    return out;
  }

  // The placement of `stream` as broker `asked` sees it.
  net::StreamPlacement Placement(uint32_t asked, const std::string& stream) {
    auto client = net::Client::Connect(Broker(asked).address());
    auto view = client.ok() ? client->ClusterMetadata({stream}) : client.status();
    if (!view.ok() || view->streams.size() != 1) return {};
    return view->streams[0];
  }

  // Waits until broker `asked` names a leader other than `old` for `streamlet`.
  net::StreamPlacement AwaitNewLeader(uint32_t asked, const std::string& stream, uint32_t streamlet,
                                      uint32_t old) {
    const int64_t deadline = MonotonicNowMs() + 30000;
    while (MonotonicNowMs() < deadline) {
      net::StreamPlacement p = Placement(asked, stream);
      if (streamlet < p.owners.size() && p.owners[streamlet] != old) return p;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "streamlet " << streamlet << " of " << stream << " kept its leader, broker "
                  << old;
    return {};
  }

  // Waits until broker `asked` sees `expected` as the in-sync set of `streamlet`.
  void AwaitIsr(uint32_t asked, const std::string& stream, uint32_t streamlet,
                const std::vector<uint32_t>& expected) {
    const int64_t deadline = MonotonicNowMs() + 60000;
    std::vector<uint32_t> isr;
    while (MonotonicNowMs() < deadline) {
      net::StreamPlacement p = Placement(asked, stream);
      if (streamlet < p.replicas.size()) {
        isr = p.replicas[streamlet].isr;
        std::vector<uint32_t> sorted = isr;
        std::sort(sorted.begin(), sorted.end());
        std::vector<uint32_t> want = expected;
        std::sort(want.begin(), want.end());
        if (sorted == want) return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::string text;
    for (uint32_t id : isr) text += std::to_string(id) + " ";
    ADD_FAILURE() << "the in-sync set of streamlet " << streamlet << " of " << stream
                  << " stayed { " << text << "}";
  }

  // Waits until broker `asked`'s placement of `stream` satisfies `done`, and returns it.
  template <typename Done>
  net::StreamPlacement AwaitPlacement(uint32_t asked, const std::string& stream, Done done,
                                      const std::string& what) {
    const int64_t deadline = MonotonicNowMs() + 30000;
    net::StreamPlacement p;
    while (MonotonicNowMs() < deadline) {
      p = Placement(asked, stream);
      if (!p.owners.empty() && done(p)) return p;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "broker " << asked << " never saw " << what << " for " << stream;
    return p;
  }

  // The segment files of broker `id`'s copy of `streamlet` of `stream`, by name.
  std::vector<std::string> SegmentFiles(uint32_t id, const std::string& stream,
                                        uint32_t streamlet) {
    std::vector<std::string> names;
    std::error_code ec;
    const std::string dir =
        Broker(id).data_dir() + "/streams/" + stream + "/" + std::to_string(streamlet);
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.size() > 4 && name.substr(name.size() - 4) == ".seg") names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  // How many segment files broker `id` holds of the first `streamlets` streamlets of `stream`.
  size_t StreamFiles(uint32_t id, const std::string& stream, uint32_t streamlets) {
    size_t n = 0;
    for (uint32_t s = 0; s < streamlets; ++s) n += SegmentFiles(id, stream, s).size();
    return n;
  }

  // Waits until broker `id` holds no segment file of the first `streamlets` streamlets of
  // `stream`: a broker that is no longer a replica removes its copy when its placement watch
  // fires, which may come after the other brokers already see the new placement.
  void AwaitNoStreamFiles(uint32_t id, const std::string& stream, uint32_t streamlets) {
    const int64_t deadline = MonotonicNowMs() + 30000;
    size_t left = 0;
    while (MonotonicNowMs() < deadline) {
      left = StreamFiles(id, stream, streamlets);
      if (left == 0) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ADD_FAILURE() << "broker " << id << " kept " << left << " segment files of " << stream;
  }

  // Appends one chunk of one record to `streamlet` of `stream` at broker `id`, over a connection
  // of its own; ok once acknowledged.
  Status AppendAt(uint32_t id, const std::string& stream, uint32_t streamlet) {
    auto client = net::Client::Connect(Broker(id).address());
    if (!client.ok()) return client.status();
    client->set_io_timeout_ms(30000);
    storage::ChunkBuilder builder;
    builder.Add("to streamlet " + std::to_string(streamlet));
    const Bytes chunk = builder.Finish(0, 0, 1000);
    net::AppendRequest req;
    req.stream = stream;
    req.entries.push_back({streamlet, chunk.data(), static_cast<uint32_t>(chunk.size())});
    auto resp = client->Append(req);
    if (!resp.ok()) return resp.status();
    if (resp->results.size() != 1) return Status::IoError("one result expected");
    return resp->results[0].status == 0
               ? Status::Ok()
               : Status(static_cast<StatusCode>(resp->results[0].status), resp->results[0].message);
  }

  static std::vector<std::string> Sorted(std::vector<std::string> lines) {
    std::sort(lines.begin(), lines.end());
    return lines;
  }

  uint64_t Stat(uint32_t id, const std::string& name) {
    auto client = net::Client::Connect(Broker(id).address());
    auto stats = client.ok() ? client->Stats() : client.status();
    if (!stats.ok()) return UINT64_MAX;
    for (const auto& [key, value] : stats->values) {
      if (key == name) return value;
    }
    return UINT64_MAX;
  }

  static std::string Numbered(int from, int to) {
    std::string input;
    for (int i = from; i < to; ++i) input += "record " + std::to_string(i) + "\n";
    return input;
  }

  void TearDown() override {
    if (paused_ > 0) kill(paused_, SIGCONT);  // or it outlives the test stopped
    ThreeBrokerCluster::TearDown();
  }

  pid_t paused_ = -1;
};

}  // namespace nearstream::testing
