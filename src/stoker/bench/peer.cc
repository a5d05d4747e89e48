#include "stoker/bench/peer.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

namespace stoker::bench {
namespace {

// Process groups to kill on SIGINT/SIGTERM as well as on normal and error exits.
constexpr int kMaxServers = 8;
volatile sig_atomic_t g_groups[kMaxServers] = {};

void kill_groups() {
  for (int i = 0; i < kMaxServers; ++i)
    if (g_groups[i] > 0) ::kill(-g_groups[i], SIGKILL);
}

void on_signal(int sig) {
  kill_groups();
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

std::vector<char*> c_argv(const std::vector<std::string>& argv) {
  std::vector<char*> out;
  for (const std::string& a : argv) out.push_back(const_cast<char*>(a.c_str()));
  out.push_back(nullptr);
  return out;
}

// In the child, after fork: add env entries, exec; 127 if that fails.
[[noreturn]] void exec_child(const std::vector<std::string>& argv,
                             const std::vector<std::string>& env) {
  for (const std::string& kv : env) ::putenv(const_cast<char*>(kv.c_str()));
  std::vector<char*> args = c_argv(argv);
  ::execvp(args[0], args.data());
  std::fprintf(stderr, "stoker bench: cannot run %s: %s\n", args[0], std::strerror(errno));
  ::_exit(127);
}

std::string command_text(const std::vector<std::string>& argv) {
  std::string s;
  for (const std::string& a : argv) s += (s.empty() ? "" : " ") + a;
  return s;
}

}  // namespace

std::vector<std::string> single_thread_env() {
  return {"OMP_NUM_THREADS=1",     "OPENBLAS_NUM_THREADS=1", "MKL_NUM_THREADS=1",
          "NUMEXPR_NUM_THREADS=1", "TOKENIZERS_PARALLELISM=false", "RAYON_NUM_THREADS=1"};
}

Result<std::string> run_capture(const std::vector<std::string>& argv,
                                const std::vector<std::string>& env) {
  if (argv.empty()) return invalid_argument("run_capture: empty command");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return unavailable("pipe failed");
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return unavailable("fork failed");
  }
  if (pid == 0) {
    ::dup2(fds[1], 1);
    exec_child(argv, env);
  }
  ::close(fds[1]);
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n > 0) out.append(buf, static_cast<std::size_t>(n));
    else if (n == 0 || errno != EINTR) break;
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return internal_error("peer failed (" +
                          (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                             : "signal " + std::to_string(WTERMSIG(status))) +
                          "): " + command_text(argv));
  return out;
}

Result<int> run_passthrough(const std::vector<std::string>& argv,
                            const std::vector<std::string>& env) {
  if (argv.empty()) return invalid_argument("run_passthrough: empty command");
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) return unavailable("fork failed");
  if (pid == 0) exec_child(argv, env);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

bool have_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return ::access(name.c_str(), X_OK) == 0;
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  std::size_t start = 0;
  while (start <= p.size()) {
    std::size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    std::string dir = p.substr(start, end - start);
    if (!dir.empty() && ::access((dir + "/" + name).c_str(), X_OK) == 0) return true;
    start = end + 1;
  }
  return false;
}

std::string last_json_line(const std::string& text) {
  std::size_t end = text.size();
  while (end > 0) {
    std::size_t begin = text.rfind('\n', end - 1);
    begin = begin == std::string::npos ? 0 : begin + 1;
    if (begin < end && text[begin] == '{') return text.substr(begin, end - begin);
    if (begin == 0) break;
    end = begin - 1;
  }
  return {};
}

Result<Server> Server::start(const std::vector<std::string>& argv, const std::string& log,
                             const std::vector<std::string>& env) {
  static const bool handlers = [] {
    ::signal(SIGINT, on_signal);
    ::signal(SIGTERM, on_signal);
    std::atexit(kill_groups);
    return true;
  }();
  (void)handlers;
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t pid = ::fork();
  if (pid < 0) return unavailable("fork failed");
  if (pid == 0) {
    ::setpgid(0, 0);
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    exec_child(argv, env);
  }
  ::setpgid(pid, pid);
  for (int i = 0; i < kMaxServers; ++i) {
    if (g_groups[i] == 0) {
      g_groups[i] = pid;
      break;
    }
  }
  Server s;
  s.pid_ = pid;
  s.log_ = log;
  return s;
}

Server::Server(Server&& o) noexcept : pid_(o.pid_), log_(std::move(o.log_)) { o.pid_ = -1; }

Server& Server::operator=(Server&& o) noexcept {
  if (this != &o) {
    stop();
    pid_ = o.pid_;
    log_ = std::move(o.log_);
    o.pid_ = -1;
  }
  return *this;
}

void Server::stop() {
  if (pid_ <= 0) return;
  ::kill(-pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  for (int i = 0; i < kMaxServers; ++i)
    if (g_groups[i] == pid_) g_groups[i] = 0;
  pid_ = -1;
}

bool Server::alive() const { return pid_ > 0 && ::waitpid(pid_, nullptr, WNOHANG) == 0; }

std::string Server::log_tail() const {
  std::ifstream in(log_);
  std::string all((std::istreambuf_iterator<char>(in)), {});
  return all.size() > 600 ? all.substr(all.size() - 600) : all;
}

Status Server::wait_for_port(int port, const std::string& what) const {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < end) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<std::uint16_t>(port));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    ::close(fd);
    if (ok) return ok_status();
    if (!alive()) return unavailable(what + " exited: " + log_tail());
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return unavailable(what + " did not listen on port " + std::to_string(port) + ": " + log_tail());
}

}  // namespace stoker::bench

namespace stoker::bench {

std::map<pid_t, double> group_cpu_s(pid_t pgid) {
  std::map<pid_t, double> out;
  if (pgid <= 0) return out;
  const double tick = static_cast<double>(::sysconf(_SC_CLK_TCK));
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream f(e.path() / "stat");
    std::string text;
    if (!std::getline(f, text)) continue;
    const std::size_t close = text.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(text.substr(close + 2));
    // Fields after the name: state ppid pgrp session tty tpgid flags minflt cminflt majflt
    // cmajflt utime stime.
    std::string state;
    long long ppid = 0, pgrp = 0, skip = 0, utime = 0, stime = 0;
    rest >> state >> ppid >> pgrp;
    if (!rest || pgrp != pgid) continue;
    for (int i = 0; i < 8; ++i) rest >> skip;
    rest >> utime >> stime;
    if (rest) out[static_cast<pid_t>(std::stoll(name))] = static_cast<double>(utime + stime) / tick;
  }
  return out;
}

}  // namespace stoker::bench
