// ShardSource: a record source over WebDataset shards — a brace-expanded shard list, or an
// Energon-prepared folder's split — with what the engine's record-source seam needs: count(),
// read(i) -> SourceRecord (the record's JSON, its location for errors, the media-resolution
// context of byte ranges), describe(i) without reading.
// Sample i runs over the shards in list/split order (Energon's order), less excluded samples.
// Shards are opened through a ShardOpener (local files: open_local_shard; remote: the caller's,
// over io::ObjectStore ranged reads), so this layer never does I/O of its own kind.
// Failures stay with their samples: a sample the scan flagged, a damaged range, a bad record
// shape fails read(i) naming shard, sample, key and member; an Energon shard that is missing or
// whose index disagrees with .info.json fails all of its samples (its count comes from .info,
// so the plan does not move). A plain shard list must open completely (its counts make the plan).
// Immutable after open: read() is thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/dataset/chatml.h"
#include "stoker/dataset/energon.h"
#include "stoker/dataset/source_record.h"
#include "stoker/dataset/wds.h"

namespace stoker::dataset {

using ShardOpener = std::function<Result<std::shared_ptr<WdsShard>>(const std::string& path)>;
// Local shards with their `.tar.idx` read, or built and cached (wds.h). Appends to `warnings`
// (may be null); the returned opener is thread-safe when `warnings` is only read afterwards.
ShardOpener local_shard_opener(ShardOptions options = {}, LocalIndexOptions index = {},
                               std::vector<std::string>* warnings = nullptr);

struct ShardSourceOptions {
  SampleFormat format = SampleFormat::kCrude;
  EnergonSampleConfig sample;  // field map for ChatML; subflavors
  PickleLimits pickle;
  std::uint64_t max_shards = kDefaultMaxBraceNames;
};

class ShardSource {
 public:
  // "dir/train-{000..127}.tar" (and "::"-separated lists).
  static Result<std::unique_ptr<ShardSource>> open_shards(const std::string& shard_list, const ShardOpener& opener,
                                                          ShardSourceOptions options = {});
  // ROOT/.nv-meta + its split part's shards.
  static Result<std::unique_ptr<ShardSource>> open_energon(const std::string& root, const std::string& split_part,
                                                           const ShardOpener& opener, const TextReader& read,
                                                           ShardSourceOptions options = {});
  // The same from metadata already read (read_energon_folder).
  static Result<std::unique_ptr<ShardSource>> open_energon_folder(EnergonFolder folder, const ShardOpener& opener,
                                                                  ShardSourceOptions options = {});

  std::int64_t count() const { return total_; }
  Result<SourceRecord> read(std::int64_t i) const;
  // A hint that these samples (< count()) will be read soon: grouped by shard, each shard's
  // WdsShard::prefetch (runs of adjacent samples as one range). No I/O of its own.
  void prefetch(std::span<const std::int64_t> samples) const;
  // "shard: sample k" for sample i, without I/O.
  std::string describe(std::int64_t i) const;
  // (shard number, sample index within the shard) of sample i.
  std::pair<std::size_t, std::int64_t> locate(std::int64_t i) const;

  struct Shard {
    std::string name;
    std::int64_t count = 0;                 // samples in the plan (.info count for Energon)
    std::shared_ptr<WdsShard> shard;        // null when it failed to open
    std::optional<Error> error;             // why every sample of it fails
    std::vector<std::int64_t> excluded;     // sorted in-shard indices left out
  };
  const std::vector<Shard>& shards() const { return shards_; }
  const std::vector<std::string>& warnings() const { return warnings_; }
  const ShardSourceOptions& options() const { return options_; }

 private:
  explicit ShardSource(ShardSourceOptions options) : options_(std::move(options)) {}
  void finish();

  ShardSourceOptions options_;
  std::vector<Shard> shards_;
  std::vector<std::int64_t> starts_;  // first global sample of each shard (kept samples)
  std::int64_t total_ = 0;
  std::vector<std::string> warnings_;
};

}  // namespace stoker::dataset
