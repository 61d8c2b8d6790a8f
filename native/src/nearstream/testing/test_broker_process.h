// Test support for loopback tests: a temporary directory, a subprocess runner that captures
// output, and TestBroker, which starts the real nearstreamd on 127.0.0.1 with port 0, waits for
// its --port-file and kills it (and removes its data) on destruction.
//
//   ASSIGN_OR_FAIL-style use in a test:
//     auto broker = TestBroker::Start();
//     ASSERT_TRUE(broker.ok()) << broker.status().ToString();
//     RunProcess({NEARSTREAM_CLI_PATH, "--broker", (*broker)->address(), "list"});
//
// Header-only: it uses NEARSTREAMD_PATH, which only the test binary defines; like everything in
// testing/ it belongs to test binaries only. Children get PR_SET_PDEATHSIG(SIGKILL), so even a
// crashing test leaves no broker behind. Not thread-safe; use from the test's main thread.
#pragma once

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "nearstream/common/clock.h"
#include "nearstream/common/status.h"

namespace nearstream::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on destruction. Its name
// carries the creating process id (PREFIX-PID-XXXXXX), so SweepStale() can remove what a test
// process killed before its destructors ran left behind.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "nearstream-test") {
    std::string pattern = Base() + "/" + prefix + "-" + std::to_string(getpid()) + "-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) != nullptr) path_ = buf.data();
  }
  ~TempDir() {
    if (!path_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(path_, ec);
    }
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }

  // Removes this user's PREFIX-PID-* directories whose process no longer exists.
  static void SweepStale(const std::string& prefix = "nearstream-test") {
    std::error_code ec;
    const std::string head = prefix + "-";
    for (const auto& entry : std::filesystem::directory_iterator(Base(), ec)) {
      const std::string name = entry.path().filename().string();
      if (name.compare(0, head.size(), head) != 0) continue;
      char* end = nullptr;
      long pid = std::strtol(name.c_str() + head.size(), &end, 10);
      struct stat st;
      if (pid <= 0 || end == nullptr || *end != '-' || lstat(entry.path().c_str(), &st) != 0 ||
          !S_ISDIR(st.st_mode) || st.st_uid != getuid()) {
        continue;
      }
      if (kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
        std::filesystem::remove_all(entry.path(), ec);
      }
    }
  }

 private:
  static std::string Base() {
    const char* base = std::getenv("TMPDIR");
    return base != nullptr && *base != '\0' ? base : "/tmp";
  }

  std::string path_;
};

struct ProcessResult {
  int exit_code = -1;  // 128 + signal number when killed by a signal
  bool timed_out = false;
  std::string out;
  std::string err;
};

// The exit and the start of both outputs, for a failing expectation's message.
inline std::string Describe(const ProcessResult& r) {
  return "exit " + std::to_string(r.exit_code) + (r.timed_out ? " (timed out)" : "") +
         "\nstdout:\n" + r.out.substr(0, 4000) + "\nstderr:\n" + r.err.substr(0, 4000);
}

// A tool's output split into lines, without their line ends.
inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The key=value fields of nearstream-perf's RESULT lines.
inline std::map<std::string, std::string> ResultFields(const std::string& out) {
  std::map<std::string, std::string> fields;
  for (const std::string& line : Lines(out)) {
    if (line.rfind("RESULT ", 0) != 0) continue;
    std::istringstream in(line.substr(7));
    for (std::string kv; in >> kv;) {
      size_t eq = kv.find('=');
      if (eq != std::string::npos) fields[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  }
  return fields;
}

namespace internal {

inline int DecodeWaitStatus(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

inline std::vector<char*> ArgvPointers(std::vector<std::string>& args) {
  std::vector<char*> out;
  for (std::string& a : args) out.push_back(a.data());
  out.push_back(nullptr);
  return out;
}

// This process's environment with `overrides` ("NAME=value") put in: each replaces an inherited
// entry of its name or is added. Made before fork: the child may only make async-signal-safe
// calls.
inline std::vector<std::string> EnvironmentWith(const std::vector<std::string>& overrides) {
  std::vector<std::string> out;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const size_t eq = entry.find('=');
    const std::string name = eq == std::string::npos ? entry : entry.substr(0, eq + 1);
    bool replaced = false;
    for (const std::string& o : overrides) replaced = replaced || o.rfind(name, 0) == 0;
    if (!replaced) out.push_back(entry);
  }
  out.insert(out.end(), overrides.begin(), overrides.end());
  return out;
}

// In the child between fork and exec: die with the parent, then exec (only async-signal-safe
// calls here). `envp` null: the parent's environment.
[[noreturn]] inline void ExecChild(char** argv, pid_t parent, char** envp = nullptr) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(126);
  if (envp != nullptr) {
    execve(argv[0], argv, envp);
  } else {
    execv(argv[0], argv);
  }
  _exit(127);
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace internal

// Starts argv (argv[0] is a path) in the background, stdin from /dev/null, stdout and stderr
// appended to `log_path`, with `env` ("NAME=value") put into this process's environment; the
// child dies with this process. Returns its pid.
inline Result<pid_t> Spawn(std::vector<std::string> argv, const std::string& log_path,
                           const std::vector<std::string>& env = {}) {
  std::vector<char*> args = internal::ArgvPointers(argv);
  std::vector<std::string> environment = internal::EnvironmentWith(env);
  std::vector<char*> envp = internal::ArgvPointers(environment);
  int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (log_fd < 0 || null_fd < 0) {
    if (log_fd >= 0) close(log_fd);
    if (null_fd >= 0) close(null_fd);
    return Status::FromErrno(StatusCode::kIoError, "open " + log_path, errno);
  }
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    dup2(null_fd, 0);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    internal::ExecChild(args.data(), parent, env.empty() ? nullptr : envp.data());
  }
  close(log_fd);
  close(null_fd);
  if (pid < 0) return Status::FromErrno(StatusCode::kIoError, "fork", errno);
  return pid;
}

// A port of 127.0.0.1 that nothing listened on a moment ago (bound, never listened, closed):
// for a server the test starts, or for a peer that must not answer.
inline uint16_t FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  uint16_t port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

// Runs argv (argv[0] is a path) with `input` on stdin and returns its exit code and output.
// After `timeout_ms` the process is killed and timed_out is set.
inline ProcessResult RunProcess(std::vector<std::string> argv, const std::string& input = "",
                                int timeout_ms = 60000) {
  ProcessResult result;
  signal(SIGPIPE, SIG_IGN);  // a child that exits early must not kill the test via its stdin
  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0 || pipe2(out_pipe, O_CLOEXEC) != 0 ||
      pipe2(err_pipe, O_CLOEXEC) != 0) {
    result.err = "pipe2 failed";
    return result;
  }
  std::vector<char*> args = internal::ArgvPointers(argv);
  const pid_t parent = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    internal::ExecChild(args.data(), parent);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (pid < 0) {
    close(in_pipe[1]);
    close(out_pipe[0]);
    close(err_pipe[0]);
    result.err = "fork failed";
    return result;
  }
  int in_fd = in_pipe[1];
  fcntl(in_fd, F_SETFL, O_NONBLOCK);
  size_t written = 0;
  if (input.empty()) {
    close(in_fd);
    in_fd = -1;
  }
  int out_fd = out_pipe[0], err_fd = err_pipe[0];
  const int64_t deadline = MonotonicNowMs() + timeout_ms;
  char buf[65536];
  while (out_fd >= 0 || err_fd >= 0) {
    int64_t left = deadline - MonotonicNowMs();
    if (left <= 0) {
      result.timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    pollfd fds[3];
    int n = 0;
    int idx_in = -1, idx_out = -1, idx_err = -1;
    if (in_fd >= 0) fds[idx_in = n++] = {in_fd, POLLOUT, 0};
    if (out_fd >= 0) fds[idx_out = n++] = {out_fd, POLLIN, 0};
    if (err_fd >= 0) fds[idx_err = n++] = {err_fd, POLLIN, 0};
    if (poll(fds, n, static_cast<int>(std::min<int64_t>(left, 100))) < 0 && errno != EINTR) break;
    if (idx_in >= 0 && fds[idx_in].revents != 0) {
      ssize_t w = write(in_fd, input.data() + written, input.size() - written);
      if (w > 0) written += static_cast<size_t>(w);
      if (w < 0 && errno != EAGAIN && errno != EINTR) written = input.size();  // child closed it
      if (written == input.size()) {
        close(in_fd);
        in_fd = -1;
      }
    }
    for (auto [idx, fd, sink] :
         {std::tuple{idx_out, &out_fd, &result.out}, std::tuple{idx_err, &err_fd, &result.err}}) {
      if (idx < 0 || fds[idx].revents == 0) continue;
      ssize_t r = read(*fd, buf, sizeof(buf));
      if (r > 0) {
        sink->append(buf, static_cast<size_t>(r));
      } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
        close(*fd);
        *fd = -1;
      }
    }
  }
  for (int fd : {in_fd, out_fd, err_fd}) {
    if (fd >= 0) close(fd);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  result.exit_code = internal::DecodeWaitStatus(status);
  return result;
}

// The real broker in a subprocess. Its stdout and stderr go to broker.log in the data
// directory's parent temp dir (see log()).
class TestBroker {
 public:
  struct Options {
#ifdef NEARSTREAMD_PATH
    std::string binary = NEARSTREAMD_PATH;
#else
    std::string binary;
#endif
    int workers = 2;
    std::vector<std::string> extra_args;  // e.g. {"--push-threads", "1"}
    std::vector<std::string> env;         // "NAME=value" entries put into its environment
    std::string data_dir;                 // empty = a fresh temp dir owned by the TestBroker
    int start_timeout_ms = 20000;
  };

  static Result<std::unique_ptr<TestBroker>> Start() { return Start(Options()); }
  static Result<std::unique_ptr<TestBroker>> Start(Options options) {
    static const bool swept = (TempDir::SweepStale(), true);  // once per test process
    (void)swept;
    std::unique_ptr<TestBroker> b(new TestBroker(std::move(options)));
    if (!b->temp_.ok()) return Status::IoError("cannot create a temp dir");
    if (b->options_.data_dir.empty()) b->options_.data_dir = b->temp_.path() + "/data";
    RETURN_IF_ERROR(b->Launch());
    return b;
  }

  ~TestBroker() { Kill(); }
  TestBroker(const TestBroker&) = delete;
  TestBroker& operator=(const TestBroker&) = delete;

  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  uint16_t port() const { return port_; }
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }
  const std::string& data_dir() const { return options_.data_dir; }
  // Everything the broker printed so far (for failure messages).
  std::string log() const { return internal::ReadFile(log_path()); }

  // Sends `signal` and waits up to `timeout_ms` for the exit, then SIGKILLs. Returns the exit
  // code (128 + signal when killed).
  int Stop(int signal = SIGTERM, int timeout_ms = 10000) {
    if (pid_ <= 0) return exit_code_;
    kill(pid_, signal);
    const int64_t deadline = MonotonicNowMs() + timeout_ms;
    int status = 0;
    for (;;) {
      pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_ || (r < 0 && errno != EINTR)) break;
      if (MonotonicNowMs() >= deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    pid_ = -1;
    exit_code_ = internal::DecodeWaitStatus(status);
    return exit_code_;
  }
  // kill -9: what a crash looks like to the data directory.
  int Kill() { return Stop(SIGKILL); }

  // Starts the broker again on the same data directory (it gets a new port).
  Status Restart() {
    Stop();
    return Launch();
  }
  // As Restart, on the port it had, so that clients' address lists stay valid (a broker that
  // comes back as the same host:port); on a new port when that one is taken meanwhile.
  Status RestartOnSamePort() {
    const uint16_t port = port_;
    Stop();
    if (Launch(port).ok()) return Status::Ok();
    return Launch();
  }

 private:
  explicit TestBroker(Options options) : options_(std::move(options)) {}

  std::string log_path() const { return temp_.path() + "/broker.log"; }

  Status Launch(uint16_t port = 0) {
    const std::string port_file = temp_.path() + "/port";
    std::error_code ec;
    std::filesystem::remove(port_file, ec);
    std::filesystem::create_directories(options_.data_dir, ec);
    std::vector<std::string> argv = {
        options_.binary,   "--listen",  "127.0.0.1:" + std::to_string(port), "--data-dir",
        options_.data_dir, "--workers", std::to_string(options_.workers),    "--port-file",
        port_file};
    argv.insert(argv.end(), options_.extra_args.begin(), options_.extra_args.end());
    ASSIGN_OR_RETURN(pid_, Spawn(std::move(argv), log_path(), options_.env));

    const int64_t deadline = MonotonicNowMs() + options_.start_timeout_ms;
    while (MonotonicNowMs() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        exit_code_ = internal::DecodeWaitStatus(status);
        return Status::IoError("nearstreamd exited with code " + std::to_string(exit_code_) +
                               " before listening; its output:\n" + log());
      }
      std::string text = internal::ReadFile(port_file);
      if (!text.empty() && text.back() == '\n') {
        text.pop_back();
      }
      char* end = nullptr;
      long written = text.empty() ? 0 : std::strtol(text.c_str(), &end, 10);
      if (written > 0 && written < 65536 && end != nullptr && *end == '\0') {
        port_ = static_cast<uint16_t>(written);
        return Status::Ok();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    Kill();
    return Status::IoError("nearstreamd wrote no port file within " +
                           std::to_string(options_.start_timeout_ms) + " ms; its output:\n" +
                           log());
  }

  Options options_;
  TempDir temp_;
  pid_t pid_ = -1;
  int exit_code_ = -1;
  uint16_t port_ = 0;
};

}  // namespace nearstream::testing
