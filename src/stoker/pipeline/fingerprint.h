// The order fingerprint a state carries (issue #28): what decides which samples form which batch
// — the data's identity (what the record source says identifies its records: each manifest's
// path, or URI and version, its size and record count; a mixture's spec), the seed, the batch
// size (padded batches), max_length and truncation (which samples fail, shifting the rest), the
// packing / token-budget options, and the model (its family's fingerprint of what decides token
// counts: processors, tokenizer, template). NOT the world size: a state resumes at another world
// size (pipeline/README.md "State and resume"); not the epochs (an epoch's order does not depend
// on how many follow), threads, modes or I/O settings.
//
// Named fields, so that a refused resume names what differs ("seed: the state's 1, this run's
// 2"). Text form inside the state line: " fp.NAME=VALUE" per field (loader_state.cc). Names are
// [a-z_]{1,32}; values [A-Za-z0-9._:/+-]{1,80}; at most kMaxFields fields.
// Pure functions (no engine, no model, no source: their identities come in as text); the fuzzer
// links this file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

// The records as their source identifies them (dataset::RecordSource::identity(): one line per
// file or shard, its place and version; a mixture's spec) and how many one epoch holds. Hashed
// into the "data" field as "RECORDS:HASH".
struct DataIdentity {
  std::uint64_t records = 0;
  std::string identity;
};
// The model as its family fingerprints it (model::Model::fingerprint(): what decides a sample's
// tokens and positions). The "model" field: "FAMILY:HASH".
struct ModelIdentity {
  std::string family;
  std::string key;
};

// This run's fingerprint.
Fingerprint order_fingerprint(const LoaderConfig& config, const DataIdentity& data,
                              const ModelIdentity& model);

}  // namespace stoker::pipeline
