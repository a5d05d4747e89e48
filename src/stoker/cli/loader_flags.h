// The loader flags `stoker run` and `stoker serve` share: one parser, so both commands accept
// the same names with the same meaning and errors. Each command adds its own flags (run: mode,
// threads, rank, error policy, state files; serve: socket, window, world size) and picks the
// defaults that differ (serve: 2 I/O threads and a 512 MB arena per rank).
// The media/I-O flags (what a manifest's records may read, and how much) are a part of their own
// that `stoker inspect` shares too, since it reads manifests and their media as well.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/cli/args.h"
#include "stoker/model/model_config.h"
#include "stoker/pipeline/loader.h"

namespace stoker::cli {

// --media-root DIR (repeatable), --trust-media-paths, --allow-bucket NAME (repeatable; "*": any),
// --max-object-bytes N, --max-record-bytes N, --max-manifest-bytes N, --io-deadline-ms MS, --imds. Defaults are
// pipeline::LoaderConfig's; io_deadline_ms 0 = $STOKER_IO_DEADLINE_MS, else 120 s (the engine
// resolves it).
struct MediaFlags {
  std::vector<std::string> media_roots;
  bool trust_media_paths = false;
  std::vector<std::string> allow_buckets;
  std::int64_t max_object_bytes = pipeline::LoaderConfig{}.max_object_bytes;
  std::int64_t max_record_bytes = pipeline::LoaderConfig{}.max_record_bytes;
  std::int64_t max_manifest_bytes = pipeline::LoaderConfig{}.max_manifest_bytes;
  std::int64_t max_media_per_record = pipeline::LoaderConfig{}.max_media_per_record;
  std::int64_t io_deadline_ms = 0;
  bool imds = false;

  void apply_to(pipeline::LoaderConfig& c) const;
};

// Flag names read by media_flags_from (merge into Args::parse's sets).
std::set<std::string> media_value_flags();
std::set<std::string> media_repeat_flags();
std::set<std::string> media_switch_flags();

// The help lines of the media/I-O flags, for each command's --help.
extern const char kMediaFlagsHelp[];

// InvalidArgument naming the flag for a bad value. With --trust-media-paths it prints one
// warning line to stderr (the user widened what a manifest may read: say so every run).
Result<MediaFlags> media_flags_from(const Args& args);

// --packing | --token-budget, --max-tokens, --pack-format, --pack-window, --pack-align,
// --position-rows (read by loader_config_from_flags; the packing options need one of the two).
Result<pipeline::PackingOptions> packing_from_flags(const Args& args);
extern const char kPackingFlagsHelp[];

// The one tokenizer rule of every command (run, serve, inspect, render, tokenize, and Python's
// tokenizer=None): --tokenizer DIR when given, else the model's own — a model folder's files,
// or for a preset the Qwen tokenizer installed with stoker (model::default_tokenizer_dir).
Result<std::string> tokenizer_dir_from_flags(const Args& args, const model::ModelConfig& model);

struct LoaderFlagDefaults {
  int io_threads = 4;
  std::int64_t arena_mb = 1024;
};

// Value flags read by loader_config_from_flags, media flags included (merge into Args::parse's
// sets; repeatable ones from loader_repeat_flags).
std::set<std::string> loader_value_flags();
std::set<std::string> loader_repeat_flags();
// Switch flags read by it: --bf16 and the media switches.
std::set<std::string> loader_switch_flags();

// DATA (positional, comma-separated), --model, --tokenizer (default: the model's bundled one),
// --batch-size, --max-length, --io-threads, --prefetch, --seed, --epochs, --arena-mb, --bf16,
// --worker-sched, and the media flags. InvalidArgument naming the flag for bad values.
Result<pipeline::LoaderConfig> loader_config_from_flags(const Args& args,
                                                        const LoaderFlagDefaults& defaults);

}  // namespace stoker::cli
