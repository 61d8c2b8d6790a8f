// Append requests (docs/protocol.md, "Append"). On a replicated stream the worker holds the
// chunks unpublished and answers once SettleAppends has them on the followers
// (append_batch.h); otherwise the chunk is published by the append itself.
#include <algorithm>
#include <utility>

#include "nearstream/broker/request_handler.h"
#include "nearstream/broker/response_writer.h"
#include "nearstream/common/clock.h"
#include "nearstream/net/protocol.h"

namespace nearstream::broker {

bool RequestHandler::Append(Request& req, Bytes* out, AppendBatch* appends) {
  metrics_->append_requests.Add(1);
  // The whole request is decoded before anything is appended: a malformed request changes
  // nothing.
  auto m = net::DecodeAppendRequest(req.frame.body.data(), req.frame.body.size());
  if (!m.ok()) {
    Error(req, m.status(), out);
    return true;
  }
  auto found = FindStream(m->stream);
  if (!found.ok()) {
    Error(req, found.status(), out);
    return true;
  }
  const std::shared_ptr<storage::Stream>& stream = *found;
  const int64_t now = WallNowMs();  // chunk timestamps are wall-clock times
  const bool replicated = cluster_ != nullptr && stream->config().replication > 1;
  // Built in the batch from the start, so that a flush this request's own chunks force (see
  // AppendHeld) settles the ones it held before. It is always the batch's last one (a flush
  // answers the others and keeps it), addressed by index as the vector may move.
  appends->deferred.push_back(DeferredAppend{});
  size_t self = appends->deferred.size() - 1;
  appends->deferred[self].response.results.reserve(m->entries.size());
  for (const auto& e : m->entries) {
    net::AppendResult res;
    res.streamlet = e.streamlet;
    auto served = Served(*stream, e.streamlet);
    storage::Streamlet* s = served.ok() ? *served : nullptr;
    Result<storage::AppendOutcome> outcome =
        s == nullptr ? Result<storage::AppendOutcome>(served.status()) : Status();
    storage::ChunkHeader header;
    bool held = false;
    if (s != nullptr) {
      auto h = storage::ValidateChunk(e.chunk, e.chunk_size);
      if (!h.ok()) {
        outcome = h.status();
      } else if (replicated) {
        header = *h;
        bool must_flush = false;
        outcome = s->AppendHeld(e.chunk, header, now, &appends->held, &must_flush);
        if (must_flush) {
          FlushAppends(appends);  // nothing is held after it, so the retry cannot ask again
          self = appends->deferred.size() - 1;
          outcome = s->AppendHeld(e.chunk, header, now, &appends->held, &must_flush);
        }
        if (!outcome.ok() && outcome.status().IsStorageError()) {
          cluster_->NoteStorageFailure(m->stream, e.streamlet);  // its disk fails: hand it over
        }
        held = outcome.ok() && !outcome->duplicate;
      } else {
        header = *h;
        outcome = s->Append(e.chunk, header, now);
      }
    }
    DeferredAppend& d = appends->deferred[self];
    AppendTally& t = d.tally;
    if (outcome.ok()) {
      res.position = outcome->position;
      res.duplicate = outcome->duplicate;
      if (outcome->duplicate) {
        ++t.duplicates;
      } else {
        ++t.chunks;
        t.records += header.record_count;
        t.bytes += e.chunk_size;
      }
    } else {
      ++t.rejected;
      res.status = static_cast<uint16_t>(outcome.status().code());
      res.message = outcome.status().message();
    }
    d.response.results.push_back(std::move(res));
    d.held.push_back(held ? s : nullptr);
    d.records.push_back(header.record_count);
    d.bytes.push_back(e.chunk_size);
  }
  DeferredAppend& d = appends->deferred[self];
  d.building = false;
  bool waits = false;
  for (const storage::Streamlet* s : d.held) waits = waits || s != nullptr;
  if (!waits) {
    FinishAppend(req, stream.get(), d.response, d.tally, out);
    appends->deferred.pop_back();
    return true;
  }
  d.req = std::move(req);
  d.stream = stream;
  return false;
}

void RequestHandler::FlushAppends(AppendBatch* appends) {
  SendAppends(appends);
  SettleAppends(appends, 0);
}

void RequestHandler::SendAppends(AppendBatch* appends) {
  const uint64_t number = appends->held.flight();
  // The leader's files first (a write that fails cuts the streamlet's chunks of the flight off
  // before a follower has them); each segment's chunks of the flight in one write.
  appends->held.WriteFiles(number);
  // Each streamlet's held chunks go to its followers together, all streamlets at once; the
  // outcome decides for all of one streamlet's chunks of the flight.
  std::vector<storage::Streamlet*> held = appends->held.streamlets(number);
  if (held.empty() && appends->deferred.empty()) {
    // Nothing to send; slots locked for chunks that turned out duplicates are let go.
    appends->held.ReleaseIdle();
    return;
  }
  AppendFlight flight;
  flight.number = number;
  std::vector<cluster::ZkCluster::ReplicaBatch> batches;
  for (storage::Streamlet* s : held) {
    flight.streamlets.push_back(s);
    if (Status failed = appends->held.failure(s, number); !failed.ok()) {
      if (failed.IsStorageError()) cluster_->NoteStorageFailure(s->config().name, s->id());
      flight.refused.emplace_back(std::move(failed));
      continue;
    }
    flight.refused.emplace_back(std::nullopt);
    batches.push_back({s->config().name, s->id(), appends->held.ChunksOf(s, number)});
  }
  flight.replicated = !batches.empty();
  if (flight.replicated) {
    cluster_->SendReplicas(&appends->replicas, batches);
    metrics_->replica_flights.Add(1);
    if (appends->replicas.size() > 1) metrics_->replica_flights_overlapped.Add(1);
  }
  flight.deferred = std::move(appends->deferred);
  appends->deferred.clear();
  appends->flights.push_back(std::move(flight));
  appends->held.CloseFlight();
}

namespace {

// Takes the chunks `d` held in `s` back from its answer: they were discarded with `status`.
void FailHeld(DeferredAppend& d, const storage::Streamlet* s, const Status& status) {
  for (size_t k = 0; k < d.held.size(); ++k) {
    if (d.held[k] != s) continue;
    net::AppendResult& res = d.response.results[k];
    res.status = static_cast<uint16_t>(status.code());
    res.message = status.message();
    res.position = storage::Position{};
    --d.tally.chunks;
    d.tally.records -= d.records[k];
    d.tally.bytes -= d.bytes[k];
    ++d.tally.rejected;
    d.held[k] = nullptr;
  }
}

}  // namespace

void RequestHandler::SettleAppends(AppendBatch* appends, size_t keep) {
  while (appends->flights.size() > keep) {
    AppendFlight flight = std::move(appends->flights.front());
    appends->flights.pop_front();
    std::vector<Status> replicated;
    if (flight.replicated) replicated = cluster_->AwaitReplicas(&appends->replicas);
    size_t next = 0;
    for (size_t k = 0; k < flight.streamlets.size(); ++k) {
      storage::Streamlet* s = flight.streamlets[k];
      const Status status = flight.refused[k].has_value() ? *flight.refused[k] : replicated[next++];
      if (status.ok()) {
        appends->held.Publish(s, flight.number);
        continue;
      }
      // Cut off with every later chunk of the streamlet, which the later flights and the
      // requests not sent yet answer with the same error.
      appends->held.Discard(s);
      for (DeferredAppend& d : flight.deferred) FailHeld(d, s, status);
      for (AppendFlight& later : appends->flights) {
        for (DeferredAppend& d : later.deferred) FailHeld(d, s, status);
      }
      for (DeferredAppend& d : appends->deferred) FailHeld(d, s, status);
    }
    appends->held.FlightSettled();
    appends->held.ReleaseIdle();

    ResponseWriter writer;
    for (DeferredAppend& d : flight.deferred) {
      std::fill(d.held.begin(), d.held.end(), nullptr);  // published
      if (d.building) {
        appends->deferred.push_back(std::move(d));
        continue;
      }
      net::OutFrame frame;
      FinishAppend(d.req, d.stream.get(), d.response, d.tally, &frame.bytes);
      writer.Add(d.req.conn, std::move(frame));  // a closed connection drops it
    }
    writer.Flush();
  }
}

void RequestHandler::FinishAppend(const Request& req, storage::Stream* stream,
                                  const net::AppendResponse& r, const AppendTally& tally,
                                  Bytes* out) {
  if (tally.chunks > 0) {
    // Each streamlet appended to (a chunk stored, not a duplicate): bump its generation (and the
    // stream's) before Wake, which re-queues only the fetches parked on those streamlets. A
    // streamlet listed twice is harmless (the second lookup finds nobody); runs are merged.
    std::vector<uint32_t> woken;
    for (const auto& res : r.results) {
      if (res.status != 0 || res.duplicate) continue;
      if (!woken.empty() && woken.back() == res.streamlet) continue;
      woken.push_back(res.streamlet);
      stream->NoteAppended(res.streamlet);
    }
    waiters_->Wake(stream, woken);
    if (push_ != nullptr) push_->NotifyAppend(stream);
  }
  metrics_->append_chunks.Add(tally.chunks);
  metrics_->append_records.Add(tally.records);
  metrics_->append_bytes.Add(tally.bytes);
  metrics_->append_rejected.Add(tally.rejected);
  metrics_->append_duplicates.Add(tally.duplicates);
  Respond(req, out, [&](ByteWriter& w) { net::EncodeAppendResponse(w, r); });
}

}  // namespace nearstream::broker
