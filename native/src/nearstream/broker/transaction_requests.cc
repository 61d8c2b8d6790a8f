// The transaction requests (opcodes 30-36, docs/protocol.md "Transactions"): decode, run against
// the stream's StreamTransactions, answer. A commit wakes the readers of every streamlet it
// linked chunks into, as an append does.
#include "nearstream/broker/request_handler.h"
#include "nearstream/common/clock.h"
#include "nearstream/net/protocol.h"
#include "nearstream/storage/chunk.h"

namespace nearstream::broker {

void RequestHandler::TxnInit(const Request& req, Bytes* out) {
  auto m = net::DecodeTxnInitRequest(req.frame.body.data(), req.frame.body.size());
  if (!m.ok()) return Error(req, m.status(), out);
  auto stream = FindStream(m->stream);
  if (!stream.ok()) return Error(req, stream.status(), out);
  if ((*stream)->config().replication > 1) {
    // A transaction's parts live in private segments that followers do not hold yet: a
    // committed transaction would exist on its leader alone.
    return Error(req,
                 Status::InvalidArgument("stream '" + m->stream +
                                         "' is replicated: transactions on replicated streams "
                                         "are not supported yet"),
                 out);
  }
  auto r =
      (*stream)->transactions().Init(m->transactional_id, m->keep_prepared_through, WallNowMs());
  if (!r.ok()) return Error(req, r.status(), out);
  net::TxnInitResponse resp{r->first, r->second};
  Respond(req, out, [&](ByteWriter& w) { net::EncodeTxnInitResponse(w, resp); });
}

void RequestHandler::TxnBegin(const Request& req, Bytes* out) {
  auto m = net::DecodeTxnRef(req.frame.body.data(), req.frame.body.size());
  if (!m.ok()) return Error(req, m.status(), out);
  auto stream = FindStream(m->stream);
  if (!stream.ok()) return Error(req, stream.status(), out);
  auto serial = (*stream)->transactions().Begin(m->transactional_id, m->epoch, WallNowMs());
  if (!serial.ok()) return Error(req, serial.status(), out);
  net::TxnBeginResponse resp{*serial};
  Respond(req, out, [&](ByteWriter& w) { net::EncodeTxnBeginResponse(w, resp); });
}

void RequestHandler::TxnAppend(const Request& req, Bytes* out) {
  metrics_->txn_append_requests.Add(1);
  // Decoded whole first: a malformed request appends nothing.
  auto m = net::DecodeTxnAppendRequest(req.frame.body.data(), req.frame.body.size());
  if (!m.ok()) return Error(req, m.status(), out);
  auto stream = FindStream(m->txn.stream);
  if (!stream.ok()) return Error(req, stream.status(), out);
  storage::StreamTransactions& txns = (*stream)->transactions();
  const int64_t now = WallNowMs();
  auto txn = txns.ForAppend(m->txn.transactional_id, m->txn.epoch, m->txn.serial, now);
  if (!txn.ok()) return Error(req, txn.status(), out);
  net::AppendResponse r;
  r.results.reserve(m->entries.size());
  uint64_t chunks = 0, records = 0, bytes = 0;
  for (const auto& e : m->entries) {
    net::AppendResult res;
    res.streamlet = e.streamlet;
    auto served = Served(**stream, e.streamlet);
    auto h = storage::ValidateChunk(e.chunk, e.chunk_size);
    Result<bool> duplicate = !served.ok() ? Result<bool>(served.status())
                             : h.ok()     ? txns.Append(**txn, e.streamlet, e.chunk, *h, now)
                                          : Result<bool>(h.status());
    if (duplicate.ok()) {
      res.duplicate = *duplicate;
      if (!*duplicate) {
        ++chunks;
        records += h->record_count;
        bytes += e.chunk_size;
      }
    } else {
      res.status = static_cast<uint16_t>(duplicate.status().code());
      res.message = duplicate.status().message();
    }
    r.results.push_back(std::move(res));
  }
  metrics_->txn_append_chunks.Add(chunks);
  metrics_->txn_append_records.Add(records);
  metrics_->txn_append_bytes.Add(bytes);
  Respond(req, out, [&](ByteWriter& w) { net::EncodeAppendResponse(w, r); });
}

void RequestHandler::TxnEnd(const Request& req, Bytes* out) {
  auto m = net::DecodeTxnRef(req.frame.body.data(), req.frame.body.size());
  if (!m.ok()) return Error(req, m.status(), out);
  auto stream = FindStream(m->stream);
  if (!stream.ok()) return Error(req, stream.status(), out);
  storage::StreamTransactions& txns = (*stream)->transactions();
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
  net::TxnListResponse resp;
  for (const storage::TxnListing& t : (*stream)->transactions().List(m->id_prefix)) {
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
    resp.transactions.push_back(std::move(info));
  }
  Respond(req, out, [&](ByteWriter& w) { net::EncodeTxnListResponse(w, resp); });
}

}  // namespace nearstream::broker
