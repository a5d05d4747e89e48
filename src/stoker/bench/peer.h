// Running the other side of a benchmark: a peer program run to completion with its stdout
// captured (the Python reference, boto3, node + HF tokenizers), and long-lived helper servers
// (s3rver, nginx) in their own process groups. Children inherit the calling thread's CPU
// affinity (pin first, then run the peer on the same core). Every server started here is killed
// (its whole process group) when its Server object dies, at exit and on SIGINT/SIGTERM.
// Not thread-safe: one benchmark thread drives its peers. Errors: Unavailable (fork/exec, a
// server that died or never listened), Internal (a peer that failed, with its exit status).
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::bench {

// OMP/OpenBLAS/MKL/numexpr/tokenizers pools held to one thread: a peer gets the one core it is
// pinned to, no hidden helper threads.
std::vector<std::string> single_thread_env();

// Runs argv (argv[0] looked up on PATH) with `env` added to this process's environment,
// stdout captured, stderr passed through. Internal error when it exits non-zero; the message
// names the command.
Result<std::string> run_capture(const std::vector<std::string>& argv,
                                const std::vector<std::string>& env = {});

// Runs argv with `env` added, stdout and stderr passed through; returns its exit status (128 +
// the signal for a killed child).
Result<int> run_passthrough(const std::vector<std::string>& argv,
                            const std::vector<std::string>& env = {});

// True when `name` is an executable on PATH (or an absolute path that is executable).
bool have_program(const std::string& name);

// The last line of `text` that starts with '{' (a peer's JSON result among its other output).
std::string last_json_line(const std::string& text);

// CPU seconds (user + system) so far of every live process in process group `pgid`, by pid
// (/proc/PID/stat): a server's own processes, for its CPU use during a timed run.
std::map<pid_t, double> group_cpu_s(pid_t pgid);

// A helper server: argv run in its own process group with stdout+stderr to `log`.
class Server {
 public:
  static Result<Server> start(const std::vector<std::string>& argv, const std::string& log,
                              const std::vector<std::string>& env = {});
  Server() = default;
  Server(Server&& o) noexcept;
  Server& operator=(Server&& o) noexcept;  // stops the server it held
  ~Server() { stop(); }

  void stop();  // SIGKILL to the group, reaped; idempotent
  bool alive() const;
  std::string log_tail() const;  // the last 600 bytes of its log
  // Waits until 127.0.0.1:port accepts connections (20 s), or the server has exited.
  Status wait_for_port(int port, const std::string& what) const;
  pid_t group() const { return pid_; }  // its process group (every process it started)

 private:
  pid_t pid_ = -1;
  std::string log_;
};

}  // namespace stoker::bench
