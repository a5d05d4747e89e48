// The two loops a receiver of `stoker cluster` runs, with its Loaders' samples prepared by remote
// workers: `stoker run`'s (take batches, log them, hash them, save the state, simulate the
// trainer's step, print the summary) and `stoker serve`'s (every local rank's own shard, handed
// over zero-copy to the trainer processes that attach).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/config/settings.h"
#include "stoker/pipeline/loader.h"

namespace stoker::cli {

struct RunHooks {
  std::string name = "run";  // the summary's and errors' prefix ("stoker <name>: ...")
  // Appended to the paths of --state-file, --resume, --delivered-log, --batch-hashes and
  // --error-report (one set of files per receiver).
  std::string file_suffix;
  // Adjusts the config made from the flags (rank, world size, remote samples, threads).
  std::function<Status(pipeline::LoaderConfig&)> configure;
  pipeline::LoaderStats* stats = nullptr;  // out: the loader's stats at the end
  // The words typed after `stoker run` (for the resume command a Ctrl-C prints); empty: the
  // hint names --resume only.
  std::vector<std::string> command_line;
};

// `settings`: stoker run's (or a cluster receiver's) options (cli/options_cli.h). Returns the
// exit code (0 ok).
int run_loader(const config::Settings& settings, const RunHooks& hooks);
extern const char kRunHelp[];  // the usage line and what run does; the options: the schema

struct ServeHooks {
  // Adjusts the per-rank config (before the rank is set): remote samples, threads.
  std::function<Status(pipeline::LoaderConfig&)> configure;
};
// Serves until every rank finished (or SIGINT/SIGTERM).
Status serve_loader(const config::Settings& settings, const ServeHooks& hooks);
extern const char kServeHelp[];

}  // namespace stoker::cli
