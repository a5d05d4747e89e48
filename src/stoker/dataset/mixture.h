// The mixture spec: which sources a run reads and in what proportion — Energon's MetadatasetV2
// YAML (the subset below) or a JSON list for JSONL files — flattened to leaves.
// MetadatasetV2 (megatron-energon metadataset/metadataset_v2.py, docs basic/metadataset.md,
// advanced/epochized_blending.md): `splits: {train: X}` where X is `blend: [{weight, path, …}]`
// (weights relative, default 1), `blend_epochized: [{repetitions, path, …}]` (default 1,
// fractions allowed) or one `{path, …}`. Entry keys: path (relative to the YAML's folder),
// split_part (default: the split being read), subflavors (a map; outer levels override inner
// keys, as Energon merges them), weight / repetitions; shuffle_over_epochs_multiplier is
// accepted and ignored (warned). A path ending in .yaml is a nested metadataset: its leaves'
// weights are normalised within it and multiplied by the entry's share (Energon's
// MetadatasetBlend), repetitions multiplied (MetadatasetBlendEpochized); blend and
// blend_epochized cannot be mixed. Paths ending in .jsonl / .jsonl.gz / .jsonl.zst are JSONL
// files; other paths are Energon-prepared folders. Refused with file:line:col: join, aux,
// subset, dataset_config, split_config, unknown keys, a weight or repetition count that is not
// a number >= 0, nesting deeper than 16 or a file that includes itself.
// JSON form: [{"path": "a.jsonl", "weight": 2}, ...] or [{"path": ..., "repeat": 1.5}, ...]
// (not both), optional "split_part" and "subflavors", paths relative to the JSON file.
// The same leaf (path, split part, subflavors) reached twice is ONE source with the weights /
// repetitions summed, and a warning: two identical loaders would otherwise read the same samples
// in the same order (Energon#266). `hash` identifies the flattened mixture (not its text).
// Pure apart from reading files through the TextReader; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/dataset/energon.h"

namespace stoker::dataset {

enum class MixMode {
  kEpochized,  // blend_epochized / "repeat": each source floor(r·N) samples per epoch
  kWeighted,   // blend / "weight": an endless stream, each position drawn by weight
};
std::string_view mix_mode_name(MixMode m);  // "epochized", "weighted"

struct MixtureLeaf {
  enum class Kind { kJsonl, kEnergonFolder };
  Kind kind = Kind::kJsonl;
  std::string path;             // resolved: relative paths joined to the spec's folder
  std::string split_part;       // for Energon folders
  double weight = 0;            // kWeighted: shares summing to 1
  double repetitions = 0;       // kEpochized
  std::string subflavors = "{}";  // JSON object
  std::string where;            // "spec.yaml:12:9", for messages
};

struct MixtureSpec {
  MixMode mode = MixMode::kEpochized;
  std::vector<MixtureLeaf> leaves;
  std::vector<std::string> warnings;
  std::uint64_t hash = 0;
  std::string hash_hex() const;
};

struct MixtureOptions {
  std::string split_part = "train";
  int max_depth = 16;
  std::size_t max_leaves = 4096;
};

// By extension: .json -> the JSON form, else MetadatasetV2 YAML.
Result<MixtureSpec> load_mixture(const std::string& path, const TextReader& read, const MixtureOptions& options = {});
Result<MixtureSpec> parse_metadataset(std::string_view text, const std::string& path, const TextReader& read,
                                      const MixtureOptions& options = {});
Result<MixtureSpec> parse_mixture_json(std::string_view text, const std::string& path, const MixtureOptions& options = {});
// Plain sources (JSONL files and folders as given on a command line): one epochized pass each.
MixtureSpec plain_mixture(const std::vector<std::string>& paths, const std::string& split_part = "train");

}  // namespace stoker::dataset
