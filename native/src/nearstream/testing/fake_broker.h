// Test support: a scripted fake broker for client and tool tests (testing/: linked by the tests
// only). It speaks only what its script reads and writes, so a test can check the exact request
// a client sends and answer anything, including what the real broker answers only in a race.
// Where the real broker can give the answer, test against it (test_broker_process.h) instead.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <thread>

#include "nearstream/common/byte_io.h"
#include "nearstream/common/status.h"
#include "nearstream/net/protocol.h"

namespace nearstream::testing {

// Listens on 127.0.0.1:0, accepts one client and runs `script` with the accepted socket on its
// own thread.
class FakeBroker {
 public:
  explicit FakeBroker(std::function<void(FakeBroker&)> script) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), len), 0);
    EXPECT_EQ(listen(listen_fd_, 4), 0);
    EXPECT_EQ(getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this, script = std::move(script)] {
      fd_ = accept(listen_fd_, nullptr, nullptr);
      if (fd_ >= 0) script(*this);
    });
  }
  ~FakeBroker() {
    thread_.join();
    if (fd_ >= 0) close(fd_);
    close(listen_fd_);
  }

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

  struct Request {
    net::FrameHeader header;
    Bytes body;
  };
  // Reads one request frame; header.opcode is 0 when the client went away.
  Request Read() {
    Request r;
    uint8_t prefix[net::kFrameLengthPrefix + net::kFrameHeaderSize];
    if (!ReadExact(prefix, sizeof(prefix))) return r;
    r.header = net::DecodeFrameHeader(prefix + net::kFrameLengthPrefix);
    r.body.resize(LoadLe32(prefix) - net::kFrameHeaderSize);
    if (!ReadExact(r.body.data(), r.body.size())) r.header.opcode = 0;
    return r;
  }
  void Respond(const Request& to, const Status& status, const Bytes& body = {}) {
    RespondRaw(to.header.opcode, to.header.request_id, status, body);
  }
  void RespondRaw(uint16_t opcode, uint64_t id, const Status& status, const Bytes& body) {
    Bytes frame;
    size_t start = net::BeginResponse(&frame, opcode, id, status);
    frame.insert(frame.end(), body.begin(), body.end());
    net::FinishFrame(&frame, start);
    WriteRaw(frame);
  }
  void WriteRaw(const Bytes& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t n = write(fd_, bytes.data() + done, bytes.size() - done);
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  }
  void Hangup() {
    close(fd_);
    fd_ = -1;
  }

 private:
  bool ReadExact(uint8_t* p, size_t n) {
    while (n > 0) {
      ssize_t r = read(fd_, p, n);
      if (r <= 0) return false;
      p += r;
      n -= static_cast<size_t>(r);
    }
    return true;
  }

  int listen_fd_ = -1;
  int fd_ = -1;
  uint16_t port_ = 0;
  std::thread thread_;
};

// One message body, encoded: what a script passes to Respond.
template <typename T>
Bytes Encode(void (*encode)(ByteWriter&, const T&), const T& message) {
  Bytes body;
  ByteWriter w(&body);
  encode(w, message);
  return body;
}

}  // namespace nearstream::testing
