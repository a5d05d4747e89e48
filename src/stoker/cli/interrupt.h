// Ctrl-C and SIGTERM for `stoker run`: the first one asks the loop to stop after the batch in
// hand (next() is interrupted while it waits), so the run can say where its state is and how to
// resume; a second one kills as before (SA_RESETHAND). resume_command() spells the command that
// resumes: the one typed, its --resume replaced. Process-wide (signal handlers); one guard at a
// time.
#pragma once

#include <string>
#include <vector>

namespace stoker::cli {

class InterruptGuard {
 public:
  InterruptGuard();   // installs the SIGINT/SIGTERM handlers
  ~InterruptGuard();  // restores the previous ones
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  static bool requested();
  static int signal_number();  // 0 when none came
  static const char* signal_name();
};

// Shell-quoted words, as a user can paste them: `stoker run ARGS --resume STATE`.
std::string shell_quote(const std::string& word);
std::string resume_command(const std::vector<std::string>& run_args, const std::string& state_file);

}  // namespace stoker::cli
