// The loader flags `stoker run` and `stoker serve` share: one parser, so both commands accept
// the same names with the same meaning and errors. Each command adds its own flags (run: mode,
// threads, rank, error policy, state files; serve: socket, window, world size) and picks the
// defaults that differ (serve: 2 I/O threads and a 512 MB arena per rank).
#pragma once

#include <set>
#include <string>

#include "stoker/base/result.h"
#include "stoker/cli/args.h"
#include "stoker/pipeline/loader.h"

namespace stoker::cli {

struct LoaderFlagDefaults {
  long long io_threads = 4;
  long long arena_mb = 1024;
};

// Value flags read by loader_config_from_flags (merge into Args::parse's set).
std::set<std::string> loader_value_flags();
// Switch flags read by it: --bf16.
std::set<std::string> loader_switch_flags();

// DATA (positional, comma-separated), --model, --tokenizer (default: the model's bundled one),
// --batch-size, --max-length, --io-threads, --prefetch, --seed, --epochs, --arena-mb, --bf16,
// --worker-sched. InvalidArgument naming the flag for bad values.
Result<pipeline::LoaderConfig> loader_config_from_flags(const Args& args,
                                                        const LoaderFlagDefaults& defaults);

}  // namespace stoker::cli
