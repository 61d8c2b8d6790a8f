// Broker counters, shared by all threads. Each is a relaxed atomic: these are statistics, not
// synchronization. Per-thread busy time sits on its own cache line so threads don't contend.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace nearstream::broker {

struct alignas(64) PaddedCounter {
  std::atomic<uint64_t> value{0};
  void Add(uint64_t n) { value.fetch_add(n, std::memory_order_relaxed); }
  uint64_t Get() const { return value.load(std::memory_order_relaxed); }
};

struct BrokerMetrics {
  explicit BrokerMetrics(int workers) : worker_busy_ns(workers) {}

  PaddedCounter requests;
  PaddedCounter request_errors;   // responses with a non-OK status (whole request)
  PaddedCounter protocol_errors;  // broken framing: connection closed
  PaddedCounter connections_accepted;
  PaddedCounter connections_closed;
  PaddedCounter append_requests;
  PaddedCounter append_chunks;
  PaddedCounter append_records;
  PaddedCounter append_bytes;
  PaddedCounter append_rejected;  // entries refused (bad CRC, out of order, storage error...)
  PaddedCounter append_duplicates;
  PaddedCounter replica_appends;  // chunks this broker took as a follower (ReplicaAppend)
  PaddedCounter replica_writes;   // the file writes they took (a run of chunks each)
  // Batches of held chunks a leader's workers sent to followers, and those of them sent while
  // the worker's previous batch was still on its way (append_batch.h).
  PaddedCounter replica_flights;
  PaddedCounter replica_flights_overlapped;
  // Connections the dispatcher handed to the ns-replica thread (replica_connections.cc).
  PaddedCounter replica_connections_handed;
  PaddedCounter txn_append_requests;
  PaddedCounter txn_append_chunks;
  PaddedCounter txn_append_records;
  PaddedCounter txn_append_bytes;
  // Rounds of SettleTxnAppends: one send to the followers for every TxnAppend a worker took
  // together (each round sends each scope's staged writes once).
  PaddedCounter txn_append_sends;
  PaddedCounter fetch_requests;
  PaddedCounter fetch_chunks;
  PaddedCounter fetch_records;
  PaddedCounter fetch_bytes;
  PaddedCounter fetch_parked;
  PaddedCounter fetch_follower_chunks;  // served from this broker's copy of a followed streamlet
  PaddedCounter async_flush_failures;
  PaddedCounter dispatcher_busy_ns;
  std::vector<PaddedCounter> worker_busy_ns;
};

using MetricValues = std::vector<std::pair<std::string, uint64_t>>;

// Prometheus text exposition of `values`: names ending in _total are counters, others gauges.
std::string RenderPrometheus(const MetricValues& values);

// CPU time consumed by this process so far (all threads), in nanoseconds.
uint64_t ProcessCpuNanos();

}  // namespace nearstream::broker
