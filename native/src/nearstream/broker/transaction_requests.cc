// The transaction requests (opcodes 30-36, docs/protocol.md "Transactions"): decode, run against
// the stream's StreamTransactions, answer. A commit wakes the readers of every streamlet it
// linked chunks into, as an append does.
#include "nearstream/broker/request_handler.h"
#include "nearstream/broker/response_writer.h"
#include "nearstream/common/clock.h"
#include "nearstream/net/protocol.h"
#include "nearstream/storage/chunk.h"

namespace nearstream::broker {

static_assert(net::kBrokerScope == storage::kBrokerTxnScope);

// The broker scope on a stream without replication, a streamlet scope on a replicated one
// (docs/protocol.md, "Transaction scopes"), served by the streamlet's leader.
Result<storage::StreamTransactions*> RequestHandler::ScopeOf(storage::Stream& stream,
                                                             uint32_t scope) const {
  storage::StreamTransactions* txns = stream.transactions_of(scope);
  if (txns != nullptr) {
    if (scope != net::kBrokerScope) RETURN_IF_ERROR(Served(stream, scope).status());
    return txns;
  }
  const std::string& name = stream.config().name;
  if (stream.config().replication > 1) {
    if (scope == net::kBrokerScope) {
      return Status::InvalidArgument("stream '" + name +
                                     "' is replicated: its transactions take a streamlet scope");
    }
    return Status::StreamletNotFound("stream '" + name + "' has no streamlet " +
                                     std::to_string(scope));
  }
  return Status::InvalidArgument("stream '" + name +
                                 "' is not replicated: its transactions take the broker scope "
                                 "(0xFFFFFFFF), not streamlet " +
                                 std::to_string(scope));
}

void RequestHandler::NoteTxnStorageFailure(const storage::Stream& stream, uint32_t scope,
                                           const Status& status) {
  // A streamlet scope's writes failed on this broker's disk: its leadership goes to an in-sync
  // follower, which holds every transactional write acknowledged here (leader_handover.cc).
  if (cluster_ != nullptr && status.IsStorageError() && scope != net::kBrokerScope) {
    cluster_->NoteStorageFailure(stream.config().name, scope);
  }
}

void RequestHandler::TxnInit(const Request& req, Bytes* out) {
  auto m = net::DecodeTxnInitRequest(req.frame.body.data(), req.frame.body.size());
  if (!m.ok()) return Error(req, m.status(), out);
  auto stream = FindStream(m->stream);
  if (!stream.ok()) return Error(req, stream.status(), out);
  auto txns = ScopeOf(**stream, m->scope);
  if (!txns.ok()) return Error(req, txns.status(), out);
  auto r = (*txns)->Init(m->transactional_id, m->keep_prepared_through, WallNowMs());
  NoteTxnStorageFailure(**stream, m->scope, r.status());
  if (!r.ok()) return Error(req, r.status(), out);
  net::TxnInitResponse resp{r->first, r->second};
  Respond(req, out, [&](ByteWriter& w) { net::EncodeTxnInitResponse(w, resp); });
}

void RequestHandler::TxnBegin(const Request& req, Bytes* out) {
  auto m = net::DecodeTxnRef(req.frame.body.data(), req.frame.body.size());
  if (!m.ok()) return Error(req, m.status(), out);
  auto stream = FindStream(m->stream);
  if (!stream.ok()) return Error(req, stream.status(), out);
  auto scoped = ScopeOf(**stream, m->scope);
  if (!scoped.ok()) return Error(req, scoped.status(), out);
  auto serial = (*scoped)->Begin(m->transactional_id, m->epoch, WallNowMs());
  NoteTxnStorageFailure(**stream, m->scope, serial.status());
  if (!serial.ok()) return Error(req, serial.status(), out);
  net::TxnBeginResponse resp{*serial};
  Respond(req, out, [&](ByteWriter& w) { net::EncodeTxnBeginResponse(w, resp); });
}

bool RequestHandler::TxnAppend(Request& req, Bytes* out, AppendBatch* appends) {
  metrics_->txn_append_requests.Add(1);
  // Decoded whole first: a malformed request appends nothing.
  auto m = net::DecodeTxnAppendRequest(req.frame.body.data(), req.frame.body.size());
  auto answer = [&](const Status& s) {
    Error(req, s, out);
    return true;
  };
  if (!m.ok()) return answer(m.status());
  auto stream = FindStream(m->txn.stream);
  if (!stream.ok()) return answer(stream.status());
  auto scoped = ScopeOf(**stream, m->txn.scope);
  if (!scoped.ok()) return answer(scoped.status());
  storage::StreamTransactions& txns = **scoped;
  const int64_t now = WallNowMs();
  auto txn = txns.ForAppend(m->txn.transactional_id, m->txn.epoch, m->txn.serial, now);
  NoteTxnStorageFailure(**stream, m->txn.scope, txn.status());
  if (!txn.ok()) return answer(txn.status());
  DeferredTxnAppend d;
  d.scope = &txns;
  d.response.results.reserve(m->entries.size());
  bool waits = false;
  for (const auto& e : m->entries) {
    net::AppendResult res;
    res.streamlet = e.streamlet;
    auto served = Served(**stream, e.streamlet);
    auto h = storage::ValidateChunk(e.chunk, e.chunk_size);
    uint64_t ticket = 0;
    Result<bool> duplicate = !served.ok() ? Result<bool>(served.status())
                             : h.ok() ? txns.Append(**txn, e.streamlet, e.chunk, *h, now, &ticket)
                                      : Result<bool>(h.status());
    if (duplicate.ok()) {
      res.duplicate = *duplicate;
    } else {
      NoteTxnStorageFailure(**stream, m->txn.scope, duplicate.status());
      res.status = static_cast<uint16_t>(duplicate.status().code());
      res.message = duplicate.status().message();
    }
    const bool stored = duplicate.ok() && !*duplicate;
    d.records.push_back(stored ? h->record_count : 0);
    d.bytes.push_back(stored ? e.chunk_size : 0);
    d.tickets.push_back(duplicate.ok() ? ticket : 0);
    waits = waits || d.tickets.back() > 0;
    d.response.results.push_back(std::move(res));
  }
  if (!waits) {
    FinishTxnAppend(req, d.response, Tally(d), out);
    return true;
  }
  d.req = std::move(req);
  d.stream = *stream;
  appends->txn_appends.push_back(std::move(d));
  return false;
}

void RequestHandler::SettleTxnAppends(AppendBatch* appends, ResponseWriter* writer) {
  std::vector<storage::StreamTransactions*> scopes;
  for (const DeferredTxnAppend& d : appends->txn_appends) scopes.push_back(d.scope);
  storage::StreamTransactions::SendStaged(std::move(scopes));
  metrics_->txn_append_sends.Add(1);
  for (DeferredTxnAppend& d : appends->txn_appends) {
    for (size_t k = 0; k < d.tickets.size(); ++k) {
      if (d.tickets[k] == 0) continue;
      Status copied = d.scope->Copied(d.tickets[k]);
      if (copied.ok()) continue;
      // On the leader's disk but maybe not on a follower: not acknowledged. A retry finds it
      // stored and is acknowledged once the followers are known to hold it (or have left).
      net::AppendResult& res = d.response.results[k];
      res.status = static_cast<uint16_t>(copied.code());
      res.message = copied.message();
      res.duplicate = false;
      d.records[k] = d.bytes[k] = 0;
    }
    net::OutFrame frame;
    FinishTxnAppend(d.req, d.response, Tally(d), &frame.bytes);
    writer->Add(d.req.conn, std::move(frame));  // a closed connection drops it
  }
  appends->txn_appends.clear();
}

AppendTally RequestHandler::Tally(const DeferredTxnAppend& d) {
  AppendTally t;
  for (size_t k = 0; k < d.records.size(); ++k) {
    if (d.bytes[k] == 0) continue;
    ++t.chunks;
    t.records += d.records[k];
    t.bytes += d.bytes[k];
  }
  return t;
}

void RequestHandler::FinishTxnAppend(const Request& req, const net::AppendResponse& r,
                                     const AppendTally& tally, Bytes* out) {
  metrics_->txn_append_chunks.Add(tally.chunks);
  metrics_->txn_append_records.Add(tally.records);
  metrics_->txn_append_bytes.Add(tally.bytes);
  Respond(req, out, [&](ByteWriter& w) { net::EncodeAppendResponse(w, r); });
}

void RequestHandler::TxnEnd(const Request& req, Bytes* out) {
  auto m = net::DecodeTxnRef(req.frame.body.data(), req.frame.body.size());
  if (!m.ok()) return Error(req, m.status(), out);
  auto stream = FindStream(m->stream);
  if (!stream.ok()) return Error(req, stream.status(), out);
  auto scoped = ScopeOf(**stream, m->scope);
  if (!scoped.ok()) return Error(req, scoped.status(), out);
  storage::StreamTransactions& txns = **scoped;
  Status s;
  std::vector<uint32_t> linked;
  switch (static_cast<net::Opcode>(req.frame.header.opcode)) {
    case net::Opcode::kTxnPrepare:
      s = txns.Prepare(m->transactional_id, m->epoch, m->serial);
      break;
    case net::Opcode::kTxnCommit:
      s = txns.Commit(m->transactional_id, m->epoch, m->serial, WallNowMs(), &linked);
      break;
    default: s = txns.Abort(m->transactional_id, m->epoch, m->serial); break;
  }
  NoteTxnStorageFailure(**stream, m->scope, s);
  if (!s.ok()) return Error(req, s, out);
  if (!linked.empty()) {
    // The committed chunks are readable now: wake the long polls and push threads of their
    // streamlets, exactly as after an append to them.
    for (uint32_t streamlet : linked) (*stream)->NoteAppended(streamlet);
    waiters_->Wake(stream->get(), linked);
    if (push_ != nullptr) push_->NotifyAppend(stream->get());
  }
  Respond(req, out, [](ByteWriter&) {});
}

void RequestHandler::TxnList(const Request& req, Bytes* out) {
  auto m = net::DecodeTxnListRequest(req.frame.body.data(), req.frame.body.size());
  if (!m.ok()) return Error(req, m.status(), out);
  auto stream = FindStream(m->stream);
  if (!stream.ok()) return Error(req, stream.status(), out);
  std::vector<storage::StreamTransactions*> scopes;
  if (m->scope == net::kBrokerScope) {
    scopes = (*stream)->all_transactions();  // in scope order
  } else {
    auto scoped = ScopeOf(**stream, m->scope);
    if (!scoped.ok()) return Error(req, scoped.status(), out);
    scopes.push_back(*scoped);
  }
  if ((*stream)->config().replication > 1 && m->scope == net::kBrokerScope) {
    // Every scope: those of the streamlets this broker leads (followers keep files only).
    std::erase_if(
        scopes, [&](storage::StreamTransactions* t) { return !Served(**stream, t->scope()).ok(); });
  }
  net::TxnListResponse resp;
  for (storage::StreamTransactions* scope : scopes) {
    for (const storage::TxnListing& t : scope->List(m->id_prefix)) {
      net::TxnInfo info;
      info.transactional_id = t.id;
      info.epoch = t.epoch;
      info.serial = t.serial;
      info.state =
          t.phase == storage::TxnPhase::kPrepared ? net::TxnState::kPrepared : net::TxnState::kOpen;
      info.bytes = t.bytes;
      info.chunks = t.chunks;
      info.streamlets = t.streamlets;
      info.started_ms = t.started_ms;
      info.scope = scope->scope();
      resp.transactions.push_back(std::move(info));
    }
  }
  Respond(req, out, [&](ByteWriter& w) { net::EncodeTxnListResponse(w, resp); });
}

void RequestHandler::ReplicaTxn(const Request& req, Bytes* out) {
  auto m = net::DecodeReplicaTxnRequest(req.frame.body.data(), req.frame.body.size());
  if (!m.ok()) return Error(req, m.status(), out);
  if (cluster_ == nullptr) {
    return Error(req,
                 Status::InvalidArgument("a standalone broker follows no leader: nothing to "
                                         "replicate here"),
                 out);
  }
  Status s = cluster_->AcceptReplicaTxn(*m);
  if (!s.ok()) return Error(req, s, out);
  Respond(req, out, [](ByteWriter&) {});
}

void RequestHandler::ReplicaTxnFiles(const Request& req, Bytes* out) {
  auto m = net::DecodeReplicaTxnFilesRequest(req.frame.body.data(), req.frame.body.size());
  if (!m.ok()) return Error(req, m.status(), out);
  if (cluster_ == nullptr) {
    return Error(req, Status::InvalidArgument("a standalone broker has no followers"), out);
  }
  // Room for the frame's header and the response's status.
  const size_t room = options_.max_frame_bytes > 4096 ? options_.max_frame_bytes - 4096 : 0;
  auto r = cluster_->TxnFiles(*m, room);
  if (!r.ok()) return Error(req, r.status(), out);
  Respond(req, out, [&](ByteWriter& w) { net::EncodeReplicaTxnFilesResponse(w, *r); });
}

}  // namespace nearstream::broker
