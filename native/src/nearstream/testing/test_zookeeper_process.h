// A standalone Apache ZooKeeper server for tests of a broker cluster: the jars the
// zookeeper-server module assembles, in a JVM of its own (as scripts/zookeeper.sh starts it).
// Maven builds the native module before zookeeper-server, so tests that need it skip when
// ZooKeeperLib() is not there (a clean `mvn verify`) and run whenever it is (the tsan stage of
// CI, a developer's tree).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "nearstream/common/clock.h"
#include "nearstream/common/status.h"
#include "nearstream/testing/test_broker_process.h"

namespace nearstream::testing {

inline std::string RepositoryRoot() {
  std::error_code ec;
  return std::filesystem::weakly_canonical(
             std::filesystem::path(NEARSTREAM_TESTDATA_DIR).parent_path(), ec)
      .string();
}

// The java binary: $JAVA_HOME/bin/java, else the first java on $PATH; empty when there is none.
inline std::string FindJava() {
  const char* home = std::getenv("JAVA_HOME");
  if (home != nullptr && *home != '\0') {
    std::string java = std::string(home) + "/bin/java";
    if (access(java.c_str(), X_OK) == 0) return java;
  }
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path == nullptr ? "" : path);
  for (std::string dir; std::getline(dirs, dir, ':');) {
    std::string java = (dir.empty() ? "." : dir) + "/java";
    if (access(java.c_str(), X_OK) == 0) return java;
  }
  return "";
}

// ZooKeeper's answer to a four-letter word on 127.0.0.1:port ("" when it does not answer).
inline std::string FourLetterWord(uint16_t port, const std::string& word) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  timeval tv{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(port);
  std::string answer;
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      send(fd, word.data(), word.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(word.size())) {
    char buf[256];
    for (ssize_t n; (n = recv(fd, buf, sizeof(buf), 0)) > 0;) {
      answer.append(buf, static_cast<size_t>(n));
    }
  }
  close(fd);
  return answer;
}

// A standalone ZooKeeper server in a JVM of its own (as scripts/zookeeper.sh starts it), killed
// with its data on destruction.
class ZooKeeperProcess {
 public:
  ZooKeeperProcess() = default;
  ZooKeeperProcess(const ZooKeeperProcess&) = delete;
  ZooKeeperProcess& operator=(const ZooKeeperProcess&) = delete;
  ~ZooKeeperProcess() { Stop(); }

  Status Start(const std::string& java, const std::string& lib) {
    if (!temp_.ok()) return Status::IoError("cannot create a temp dir");
    for (int attempt = 0; attempt < 3; ++attempt) {  // the free port may be taken meanwhile
      port_ = FreeLoopbackPort();
      if (port_ == 0) return Status::IoError("no free port");
      Status s = Launch(java, lib);
      if (s.ok() || log().find("Address already in use") == std::string::npos) return s;
    }
    return Status::IoError("ZooKeeper found no free port; its output:\n" + log());
  }

  void Stop() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    const int64_t deadline = MonotonicNowMs() + 5000;
    int status = 0;
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (MonotonicNowMs() >= deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    pid_ = -1;
  }

  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string log() const { return internal::ReadFile(temp_.path() + "/zookeeper.log"); }

 private:
  Status Launch(const std::string& java, const std::string& lib) {
    const std::string config = temp_.path() + "/zoo.cfg";
    {
      std::ofstream out(config, std::ios::trunc);
      out << "tickTime=500\ndataDir=" << temp_.path() << "/data\nclientPortAddress=127.0.0.1\n"
          << "clientPort=" << port_ << "\nadmin.enableServer=false\n"
          << "4lw.commands.whitelist=ruok\nforceSync=no\n";
      if (!out) return Status::IoError("cannot write " + config);
    }
    std::vector<std::string> argv = {
        java,  "-Xmx256m", "-Djava.awt.headless=true",
        "-cp", lib + "/*", "org.apache.zookeeper.server.ZooKeeperServerMain",
        config};
    ASSIGN_OR_RETURN(pid_, Spawn(std::move(argv), temp_.path() + "/zookeeper.log"));
    const int64_t deadline = MonotonicNowMs() + 60000;  // a JVM on a loaded machine
    while (MonotonicNowMs() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return Status::IoError("ZooKeeper exited with code " +
                               std::to_string(internal::DecodeWaitStatus(status)) +
                               " before serving; its output:\n" + log());
      }
      if (FourLetterWord(port_, "ruok") == "imok") return Status::Ok();
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    Stop();
    return Status::IoError("ZooKeeper did not answer ruok on port " + std::to_string(port_) +
                           " within 60 s; its output:\n" + log());
  }

  TempDir temp_;
  pid_t pid_ = -1;
  uint16_t port_ = 0;
};

// Where the zookeeper-server module puts ZooKeeper's jars.
inline std::string ZooKeeperLib() { return RepositoryRoot() + "/zookeeper-server/target/lib"; }

}  // namespace nearstream::testing
