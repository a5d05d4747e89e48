// The order fingerprint a state carries (issue #28): what decides which samples form which batch
// — the data's identity (each manifest's path, or URI and ETag, its size and record count; or a
// mixture spec's hash), the seed, the batch size (padded batches), max_length and truncation
// (which samples fail, shifting the rest), the packing / token-budget options, and the model
// (family, image processor sizes, chat template, tokenizer: token counts). NOT the world size:
// a state resumes at another world size (pipeline/README.md "State and resume"); not the epochs
// (an epoch's order does not depend on how many follow), threads, modes or I/O settings.
//
// Named fields, so that a refused resume names what differs ("seed: the state's 1, this run's
// 2"). Text form inside the state line: " fp.NAME=VALUE" per field (loader_state.cc). Names are
// [a-z_]{1,32}; values [A-Za-z0-9._:/+-]{1,80}; at most kMaxFields fields.
// Pure functions (no engine): the fuzzer links this file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace stoker::model {
struct ModelConfig;
}

namespace stoker::pipeline {

struct LoaderConfig;

struct Fingerprint {
  static constexpr std::size_t kMaxFields = 16;
  static constexpr std::size_t kMaxName = 32, kMaxValue = 80;
  std::vector<std::pair<std::string, std::string>> fields;  // in a fixed order

  bool empty() const { return fields.empty(); }
  const std::string* find(std::string_view name) const;
  bool operator==(const Fingerprint&) const = default;
  static bool valid_name(std::string_view name);
  static bool valid_value(std::string_view value);
};

// One field that differs; an empty side: the field is absent there.
struct FieldDiff {
  std::string name, saved, now;
};
std::vector<FieldDiff> differences(const Fingerprint& saved, const Fingerprint& now);
// "seed: the state's 1, this run's 2; batch_size: the state's 8, this run's 4"
std::string describe(const std::vector<FieldDiff>& diffs);

// One manifest as the engine indexed it.
struct DataFile {
  std::string name;        // as given (secrets redacted): a local path or a URI
  std::string local_path;  // the file indexed: the manifest itself, or a remote one's cached
                           // copy (its file name carries the hash of URI + ETag + size)
  bool remote = false;
  std::uint64_t size_bytes = 0, records = 0;
};

// This run's fingerprint. `mixture_hash`: the record-source integration's hook — a mixture
// spec's hash (sources, weights, seed of the mix); when given it is a field of its own, next to
// the manifests'. `vocab_size`: the tokenizer's (0: unknown).
Fingerprint order_fingerprint(const LoaderConfig& config, const model::ModelConfig& model,
                              std::size_t vocab_size, const std::vector<DataFile>& files,
                              std::string_view mixture_hash = {});

}  // namespace stoker::pipeline
