// WebDataset shards: samples of a tar file grouped by key, Energon's `.tar.idx` (read, built,
// checked), and reading one sample by index as byte ranges of the shard.
// Grouping is Energon's (flavors/webdataset/config.py, prepare.py): only regular members count;
// names matching `__…__` at the start are skipped; a name splits at the first dot of its last
// path component into key ("dir/abc") and part ("jpg", "0.png", "conversation.json"; kept as
// written unless `lowercase_parts`, webdataset's default); names without such a dot are skipped;
// consecutive members with one key form a sample. `.tar.idx` = N+1 little-endian uint64: the
// offset of each sample's first header (extended headers included, tarfile's TarInfo.offset),
// then the end of the last member's data.
// Hostile shards: a key seen again after another key (split or duplicated), two members with one
// part name in a sample, a member over `max_member_bytes` fail their samples, named; a corrupt or
// truncated archive keeps the samples before the damage and fails the one in progress. An index
// that disagrees with its shard fails the sample whose range does not parse as exactly one
// sample. A scan with problems is never cached, so every run reports them the same way.
// WdsShard is immutable after open: read() is thread-safe. Errors: DataLoss / ResourceExhausted
// naming "shard: sample i (key 'k'): member 'm'", InvalidArgument for a malformed `.tar.idx`.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/dataset/byte_source.h"
#include "stoker/dataset/tar.h"

namespace stoker::dataset {

// Energon's split_name_re on a member name: (key, part), or nullopt when the name has no dot
// after the first character of its last component (such members are not sample parts).
std::optional<std::pair<std::string_view, std::string_view>> split_sample_name(std::string_view name);
// Energon's skip_meta_re, anchored at the start: "__x__" or "__x__/…".
bool is_meta_member(std::string_view name);

// `.tar.idx` bytes <-> offsets. decode checks: a whole number of uint64 (≥ 1), offsets strictly
// ascending, each a multiple of 512, the last within `shard_size`.
std::vector<std::uint8_t> encode_tar_index(std::span<const std::uint64_t> offsets);
Result<std::vector<std::uint64_t>> decode_tar_index(std::span<const std::uint8_t> bytes,
                                                    std::int64_t shard_size, const std::string& name);
// Energon's index path: the shard's last suffix replaced by ".tar.idx" ("a/x.tar" -> "a/x.tar.idx").
std::string tar_index_path(const std::string& shard_path);

struct ShardOptions {
  TarLimits limits;
  bool lowercase_parts = false;  // webdataset lower-cases parts; Energon (the default) does not
  // A sample whose byte range is at most this is read with one read (one GET), its parts then
  // served from memory; larger ones are walked header by header and their parts read on demand.
  std::int64_t whole_sample_bytes = std::int64_t{16} << 20;
  std::int64_t scan_chunk_bytes = std::int64_t{1} << 20;  // read size of a full scan
};

struct WdsPart {
  std::string name;    // the part: the member name after the key and its dot
  std::string member;  // the full member name
  std::int64_t offset = 0;  // data offset in the shard
  std::int64_t size = 0;
};

struct WdsSample {
  std::string key;
  std::int64_t index = 0;  // in its shard
  std::vector<WdsPart> parts;  // in member order
  // [bytes_offset, bytes_offset + bytes->size()) of the shard when the sample was read whole.
  std::shared_ptr<const std::vector<std::uint8_t>> bytes;
  std::int64_t bytes_offset = 0;

  const WdsPart* find(std::string_view part) const;
  // The part's bytes when they are in memory (a view into `bytes`), else nullopt.
  std::optional<std::span<const std::uint8_t>> data(const WdsPart& part) const;
};

struct SampleProblem {
  std::int64_t index = 0;
  Error error;
};

class WdsShard {
 public:
  // From a `.tar.idx` (checked: decode rules, the first sample's header parses, the index ends
  // where the archive does). A disagreement found here is an error for the whole index
  // (InvalidArgument naming it): the caller may rebuild by scanning.
  static Result<std::shared_ptr<WdsShard>> from_index(std::shared_ptr<const ByteSource> source,
                                                      std::span<const std::uint8_t> index_bytes,
                                                      const ShardOptions& options = {});
  // By reading every header (one pass, `scan_chunk_bytes` per read).
  static Result<std::shared_ptr<WdsShard>> from_scan(std::shared_ptr<const ByteSource> source,
                                                     const ShardOptions& options = {});

  const std::string& name() const { return source_->name(); }
  std::int64_t count() const { return static_cast<std::int64_t>(offsets_.size()) - 1; }
  const std::vector<std::uint64_t>& offsets() const { return offsets_; }
  std::vector<std::uint8_t> index_bytes() const { return encode_tar_index(offsets_); }
  // Known at scan: failed samples (sorted by index) and the damage that ended the scan early.
  const std::vector<SampleProblem>& problems() const { return problems_; }
  const std::optional<Error>& damage() const { return damage_; }
  // A scan without problems: its index may be written (WdsShard never writes it itself).
  bool cacheable() const { return scanned_ && problems_.empty() && !damage_; }
  bool scanned() const { return scanned_; }
  const ByteSource& source() const { return *source_; }

  // Sample i (< count()): its key and parts; errors name shard, sample, key and member.
  Result<WdsSample> read(std::int64_t i) const;
  // A hint that these samples (indices < count(), any order, repeats allowed) will be read soon:
  // runs of adjacent samples that would each be read whole become one ByteSource::prefetch of
  // their combined range, at most `whole_sample_bytes` each (the source may then serve them
  // from one ranged GET). Samples known bad or read part by part are left out. No I/O here.
  void prefetch(std::span<const std::int64_t> samples) const;
  // Only sample i's key: its first headers, a few KiB read.
  Result<std::string> key(std::int64_t i) const;
  // A part's bytes (from memory when the sample was read whole, else one read of its range).
  Result<std::vector<std::uint8_t>> read_part(const WdsSample& sample, const WdsPart& part) const;

 private:
  WdsShard(std::shared_ptr<const ByteSource> source, ShardOptions options)
      : source_(std::move(source)), options_(options) {}
  const Error* problem(std::int64_t i) const;

  std::shared_ptr<const ByteSource> source_;
  ShardOptions options_;
  std::vector<std::uint64_t> offsets_;
  std::vector<SampleProblem> problems_;
  std::optional<Error> damage_;
  bool scanned_ = false;
};

// A local shard: its `.tar.idx` beside it (or `<cache_dir>/<name>-<hash>.tar.idx`) is read when
// present and sound; else the shard is scanned and, when the scan is clean, the index written
// beside the shard (temporary name, then rename), else in `cache_dir`, else not at all (a
// warning). `warnings` gets one line per index trouble (stale, unwritable, problems found).
struct LocalIndexOptions {
  bool read = true;
  bool write = true;
  std::string cache_dir;  // empty: only beside the shard
};
Result<std::shared_ptr<WdsShard>> open_local_shard(const std::string& path,
                                                   const ShardOptions& options = {},
                                                   const LocalIndexOptions& index = {},
                                                   std::vector<std::string>* warnings = nullptr);

}  // namespace stoker::dataset
