// credential_process: run the profile's command the way botocore's ProcessProvider does (the
// string split like a POSIX shell, executed without one, stdout parsed as JSON Version 1), with
// the bounds botocore lacks: a wall-clock limit and an stdout cap, past which the process group is
// killed. stderr goes to /dev/null rather than into our error messages: a helper may well print
// the secret it is about to hand over.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "stoker/io/detail/credential_sources.h"

extern char** environ;

namespace stoker::io::detail {
namespace {

using Clock = std::chrono::steady_clock;

// Reads the child's stdout until EOF, the deadline or the cap. Returns "" on success, else why not.
std::string read_bounded(int fd, Clock::time_point deadline, std::size_t cap, std::string* out) {
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return "timed out";
    pollfd p{fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return ready == 0 ? "timed out" : "poll failed";
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return "read failed";
    if (n == 0) return "";
    if (out->size() + static_cast<std::size_t>(n) > cap) return "printed more than the cap";
    out->append(buf, static_cast<std::size_t>(n));
  }
}

// Waits for the child until the deadline; past it, kills its process group. Returns the status.
int reap(pid_t pid, Clock::time_point deadline, bool kill_now) {
  int status = 0;
  if (kill_now) ::kill(-pid, SIGKILL);
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, kill_now ? 0 : WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return -1;
    if (!kill_now && Clock::now() >= deadline) {
      ::kill(-pid, SIGKILL);
      kill_now = true;
    } else if (!kill_now) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
}

// posix_spawnp with stdout → the pipe, stderr → /dev/null, a process group of its own (so a
// timeout kills what it started too), default SIGPIPE and an empty signal mask.
int spawn(const std::vector<std::string>& words, int out_fd, pid_t* pid) {
  std::vector<char*> argv;
  for (const std::string& w : words) argv.push_back(const_cast<char*>(w.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty, def;
  sigemptyset(&empty);
  sigemptyset(&def);
  sigaddset(&def, SIGPIPE);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &def);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                      POSIX_SPAWN_SETSIGDEF);
  const int rc = posix_spawnp(pid, argv[0], &fa, &attr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  return rc;
}

}  // namespace

Result<std::vector<std::string>> shell_split(const std::string& command) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  const std::size_t n = command.size();
  for (std::size_t i = 0; i < n; ++i) {
    const char c = command[i];
    if (c == '\'') {
      const std::size_t end = command.find('\'', i + 1);
      if (end == std::string::npos) return invalid_argument("credential_process: unmatched '");
      cur += command.substr(i + 1, end - i - 1);
      i = end;
      in_word = true;
    } else if (c == '"') {
      for (++i;; ++i) {
        if (i >= n) return invalid_argument("credential_process: unmatched \"");
        if (command[i] == '"') break;
        if (command[i] == '\\' && i + 1 < n && (command[i + 1] == '"' || command[i + 1] == '\\')) {
          cur += command[++i];
        } else {
          cur += command[i];
        }
      }
      in_word = true;
    } else if (c == '\\') {
      if (i + 1 >= n) return invalid_argument("credential_process: trailing backslash");
      cur += command[++i];
      in_word = true;
    } else if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      if (in_word) words.push_back(std::move(cur));
      cur.clear();
      in_word = false;
    } else {
      cur += c;
      in_word = true;
    }
  }
  if (in_word) words.push_back(std::move(cur));
  return words;
}

Result<AwsCredentials> run_credential_process(const ProcessSource& source) {
  STOKER_ASSIGN_OR_RETURN(std::vector<std::string> words, shell_split(source.command));
  if (words.empty()) return invalid_argument("credential_process of profile '" + source.profile +
                                             "' is empty");
  // Only the program is named: arguments may carry secrets of their own.
  const std::string what =
      "credential_process of profile '" + source.profile + "' (" + words[0] + ")";
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return unavailable(what + ": pipe: " + std::strerror(errno));
  pid_t pid = -1;
  const int rc = spawn(words, fds[1], &pid);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    return Error(rc == ENOENT ? ErrorCode::kNotFound : ErrorCode::kUnavailable,
                 what + ": cannot run it: " + std::strerror(rc));
  }
  const auto deadline = Clock::now() + source.timeout;
  std::string out;
  const std::string failed = read_bounded(fds[0], deadline, source.max_output, &out);
  ::close(fds[0]);
  const int status = reap(pid, deadline, /*kill_now=*/!failed.empty());
  if (!failed.empty()) {
    const std::string limits = " (limits: " + std::to_string(source.timeout.count()) + " ms, " +
                               std::to_string(source.max_output) + " bytes); killed";
    return Error(failed == "timed out" ? ErrorCode::kDeadlineExceeded : ErrorCode::kUnavailable,
                 what + ": " + failed + limits);
  }
  const std::string hidden = " (its stderr is not shown: it may hold secrets)";
  if (status < 0) return unavailable(what + " could not be waited for");
  if (WIFSIGNALED(status))
    return unavailable(what + " was killed by signal " + std::to_string(WTERMSIG(status)) + hidden);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return unavailable(what + " exited with status " + std::to_string(WEXITSTATUS(status)) + hidden);
  Result<AwsCredentials> c = parse_process_credentials(out);
  if (!c.ok()) return std::move(c).error().with_context(what);
  return c;
}

}  // namespace stoker::io::detail
