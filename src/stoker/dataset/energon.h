// Energon-prepared folders as Energon reads them (megatron-energon flavors/webdataset/metadata.py,
// config.py, structs.py): `.nv-meta/dataset.yaml` (the sample class and its field map),
// `.nv-meta/split.yaml` (or split.json: `split_parts: {train: [...]}`, `exclude: [...]`),
// `.nv-meta/.info.json` (7.4+; else `.info.yaml`: `shard_counts` in shard order). Facts kept:
// - the split's shards are its entries brace-expanded, in order, minus `exclude` entries equal to
//   a shard name; an empty result is an error (Energon's EmptyDatasetError);
// - an `exclude` entry "<shard>/<key>" drops the sample whose KEY is <key> in that shard (Energon
//   compares "<shard>/<sample key>"; its docs' "shards/shard_001.tar/000032" is a key that looks
//   like an index) — resolved to sample indices when the source opens;
// - every split shard must be listed in the info file; its count there is the shard's size in
//   the plan (a shard that is missing or whose index disagrees fails its samples, named).
// Files are read through a TextReader, so local folders and s3:// / http(s):// prefixes are the
// same here. Pure parsing otherwise; thread-safe. Errors: InvalidArgument naming file:line:col
// (malformed YAML/JSON, wrong shapes), NotFound (no .info file), those of the reader.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/dataset/brace.h"

namespace stoker::dataset {

// Reads a small text file by path or URI; NotFound when it does not exist.
using TextReader = std::function<Result<std::string>(const std::string& path)>;
TextReader local_text_reader(std::int64_t max_bytes = std::int64_t{64} << 20);

enum class SampleFormat {
  kCrude,   // CrudeWebdataset: stoker's convention (chatml.h): the `json` part is the record
  kChatML,  // Megatron-Bridge ChatMLWebdataset: conversation + imgs / videos (chatml.h)
};

struct EnergonSampleConfig {
  SampleFormat format = SampleFormat::kCrude;
  std::string module, class_name;
  std::vector<std::pair<std::string, std::string>> field_map;  // sample field -> part name
  std::string subflavors = "{}";                                // JSON
  const std::string* field(std::string_view name) const;
};

struct EnergonFolder {
  std::string root;                                          // without a trailing '/'
  std::string split_part;
  EnergonSampleConfig sample;
  std::vector<std::pair<std::string, std::int64_t>> shards;  // relative name, count (.info)
  std::vector<std::string> sample_excludes;                  // "<shard>/<key>" entries
  std::vector<std::string> warnings;
};

Result<EnergonSampleConfig> parse_dataset_yaml(std::string_view text, const std::string& name);

// Reads ROOT/.nv-meta/{dataset.yaml, split.yaml|split.json, .info.json|.info.yaml}.
Result<EnergonFolder> read_energon_folder(const std::string& root, const std::string& split_part,
                                          const TextReader& read,
                                          std::uint64_t max_names = kDefaultMaxBraceNames);

// "a/b" + "c" -> "a/b/c" (no change when `rel` is absolute or a URI).
std::string join_path(const std::string& dir, const std::string& rel);

}  // namespace stoker::dataset
