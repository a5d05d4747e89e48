#include "stoker/cli/interrupt.h"

#include <atomic>
#include <csignal>

namespace stoker::cli {
namespace {

std::atomic<int> g_signal{0};
struct sigaction g_old_int {}, g_old_term {};

void on_signal(int sig) { g_signal.store(sig); }

}  // namespace

InterruptGuard::InterruptGuard() {
  g_signal.store(0);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sa.sa_flags = SA_RESETHAND;  // a second Ctrl-C: the default action (exit at once)
  ::sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, &g_old_int);
  ::sigaction(SIGTERM, &sa, &g_old_term);
}

InterruptGuard::~InterruptGuard() {
  ::sigaction(SIGINT, &g_old_int, nullptr);
  ::sigaction(SIGTERM, &g_old_term, nullptr);
}

bool InterruptGuard::requested() { return g_signal.load() != 0; }
int InterruptGuard::signal_number() { return g_signal.load(); }
const char* InterruptGuard::signal_name() {
  switch (g_signal.load()) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    default: return "a signal";
  }
}

std::string shell_quote(const std::string& w) {
  if (!w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789@%+=:,./_-") == std::string::npos) {
    return w;
  }
  std::string out = "'";
  for (char c : w) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

std::string resume_command(const std::vector<std::string>& run_args, const std::string& state_file) {
  std::string cmd = "stoker run";
  for (std::size_t i = 0; i < run_args.size(); ++i) {
    const std::string& a = run_args[i];
    if (a == "--resume") {
      ++i;  // and its value
      continue;
    }
    if (a.rfind("--resume=", 0) == 0) continue;
    // Piece by piece: a chain of string + string trips GCC 12's -Wrestrict false positive.
    cmd += ' ';
    cmd += shell_quote(a);
  }
  cmd += " --resume ";
  cmd += shell_quote(state_file);
  return cmd;
}

}  // namespace stoker::cli
