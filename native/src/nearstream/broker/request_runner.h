// The step a thread that executes requests takes for each of them, and the state that step
// keeps across a batch: the request workers (Server::WorkerLoop), the ns-replica thread
// (Server::ReplicaLoop) and the queue-only threads (Server::QueueLoop) each run their requests
// through one of these, one per thread.
#pragma once

#include <deque>
#include <memory>
#include <utility>

#include "nearstream/broker/append_batch.h"
#include "nearstream/broker/replica_write_batch.h"
#include "nearstream/broker/request.h"
#include "nearstream/broker/request_handler.h"
#include "nearstream/broker/response_writer.h"
#include "nearstream/net/out_frame.h"

namespace nearstream::broker {

class RequestRunner {
 public:
  explicit RequestRunner(RequestHandler* handler) : handler_(handler) {}
  RequestRunner(const RequestRunner&) = delete;
  RequestRunner& operator=(const RequestRunner&) = delete;

  // Runs `req` and queues its answer, unless the handler parked it. The ReplicaAppends staged
  // so far are written and answered first, unless `req` is one more: consecutive ones go to
  // their files together, a run at a time, and any other request must see them written.
  //
  // Likewise the TxnAppends taken so far are sent to the followers and answered first unless
  // `req` is one more (a commit must find them acknowledged): their answers are queued after
  // those of the requests before them and before `req`'s, so a connection's answers keep their
  // order (docs/protocol.md).
  void Run(Request& req) {
    const auto opcode = static_cast<net::Opcode>(req.frame.header.opcode);
    if (opcode != net::Opcode::kReplicaAppend) handler_->AnswerReplicas(&replicas_, &writer_);
    if (opcode != net::Opcode::kTxnAppend && !appends_.txn_appends.empty()) {
      handler_->SettleTxnAppends(&appends_, &writer_);
    }
    std::shared_ptr<net::Connection> conn = req.conn;  // a parked request is moved away
    response_.Clear();
    if (handler_->Handle(req, &response_, &appends_, &replicas_)) {
      writer_.Add(conn, std::move(response_));
      response_ = net::OutFrame();
    }
  }

  // Runs the requests a thread's queue held, in order, and empties `batch`. A closed
  // connection's requests are let go unrun: nobody would read their answers.
  void RunQueued(std::deque<Request>* batch) {
    for (Request& req : *batch) {
      if (req.conn->closed()) {
        req.conn->RequestDone();
        continue;
      }
      Run(req);
    }
    batch->clear();
  }

  // Ends a batch: the staged ReplicaAppends written and answered, the TxnAppends' writes sent
  // to the followers and answered, every queued answer sent.
  void EndBatch() {
    handler_->AnswerReplicas(&replicas_, &writer_);
    if (!appends_.txn_appends.empty()) handler_->SettleTxnAppends(&appends_, &writer_);
    writer_.Flush();
  }

  // The appends to replicated streams this thread's requests took (a request worker's only);
  // their TxnAppends are settled by EndBatch, their Appends by the worker's flights.
  AppendBatch& appends() { return appends_; }

 private:
  RequestHandler* const handler_;
  net::OutFrame response_;
  ResponseWriter writer_;
  AppendBatch appends_;         // appends to replicated streams, answered by SettleAppends
  ReplicaWriteBatch replicas_;  // a follower's ReplicaAppends, answered by AnswerReplicas
};

}  // namespace nearstream::broker
