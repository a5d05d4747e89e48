// ManifestIndex: where every record of a JSONL manifest lives — one or many local files, one
// record per non-blank line — so a record can be read (pread) only when its sample is scheduled.
// JSON is not parsed here. Global record ids run contiguously over the files in the given order.
// Each record keeps its physical line number (1-based, blank lines counted) for "file:line" errors.
// The index of each file is cached next to it as "<file>.stoker-index" (or in options.cache_dir),
// keyed by the file's size, mtime and inode plus a hash of its first and last 4 KiB; a stale or
// corrupt cache is rebuilt, never trusted; an unwritable cache is a warning, not an error.
// Energon's "<name>.jsonl.idx" beside a file takes precedence over both (no scan): checked
// (size, ascending offsets, last = the file's size, every record ending with a newline, none
// blank; a record is its range with JSON whitespace trimmed, as the scan's line) and
// refused with InvalidArgument naming it when it disagrees; its records' "line" is the record
// number (1-based), the index having no line numbers.
// Owns one open descriptor per file. Immutable after open(): all reads are thread-safe.
// Errors: NotFound / PermissionDenied (opening), InvalidArgument (not a regular file, a record
// over 4 GiB), Unavailable (file changed while indexing), DataLoss (file shrank after indexing).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::dataset {

enum class IndexCacheMode {
  kReadWrite,  // load a valid cache; (re)build and save otherwise. Default.
  kReadOnly,   // load a valid cache; otherwise build in memory, write nothing
  kOff,        // always scan, never touch cache files
};

struct ManifestOptions {
  IndexCacheMode cache = IndexCacheMode::kReadWrite;
  // Empty: "<file>.stoker-index" next to each file. Otherwise caches go here, named
  // "<basename>-<hash of the absolute path>.stoker-index" (for read-only dataset mounts).
  std::string cache_dir = "";
  std::size_t scan_chunk_bytes = std::size_t{4} << 20;  // read() size of the scan
  // A longer record is never read: read_record() fails it with ResourceExhausted (one bad line
  // cannot stall the pipeline or take gigabytes). Indexing itself streams, whatever the lengths.
  std::uint64_t max_record_bytes = std::uint64_t{16} << 20;
  // Energon's "<name>.jsonl.idx" beside a file (N+1 little-endian uint64 offsets) indexes it when
  // present, checked against the file first; one that disagrees refuses the manifest at start.
  bool use_jsonl_idx = true;

  Status validate() const;
};

struct RecordLocation {
  std::uint32_t file = 0;    // index into ManifestIndex::files()
  std::uint64_t offset = 0;  // of the record's first byte
  std::uint32_t length = 0;  // bytes, without "\n" / "\r\n"
  std::uint64_t line = 0;    // 1-based physical line
};

enum class CacheOutcome {
  kLoaded,          // a valid cache was used
  kBuilt,           // no cache existed (or caching is off): scanned
  kRebuiltStale,    // the file changed since the cache was written: scanned
  kRebuiltCorrupt,  // the cache was unreadable or inconsistent: scanned (also a warning)
  kJsonlIdx,        // Energon's "<name>.jsonl.idx" beside the file was used (no scan, no cache)
};

struct ManifestFile {
  std::string path;
  std::string cache_path;  // empty when caching is off
  std::uint64_t first_record = 0;  // global id of this file's first record
  std::uint64_t num_records = 0;
  std::uint64_t num_lines = 0;  // physical lines, blank ones included
  std::uint64_t size_bytes = 0;
  CacheOutcome cache = CacheOutcome::kBuilt;
  bool cache_written = false;
  // Why the cache could not be used or saved (a warning; the index itself is fine). OK otherwise.
  Status cache_status;
};

class ManifestIndex {
 public:
  static Result<std::unique_ptr<ManifestIndex>> open(const std::vector<std::string>& paths,
                                                     const ManifestOptions& options = {});
  ~ManifestIndex();
  ManifestIndex(const ManifestIndex&) = delete;
  ManifestIndex& operator=(const ManifestIndex&) = delete;

  std::uint64_t size() const { return total_records_; }
  const std::vector<ManifestFile>& files() const { return files_; }

  // id < size(); out of range is a bug (aborts).
  RecordLocation location(std::uint64_t id) const;
  // "path:line", for error messages.
  std::string describe(std::uint64_t id) const;

  // The record's bytes (no line terminator). `out` is reused: no allocation once it is large
  // enough. InvalidArgument for id >= size(); ResourceExhausted for a record over
  // max_record_bytes (nothing read); DataLoss if the file shrank since it was indexed.
  Status read_record(std::uint64_t id, std::string& out) const;
  Result<std::string> read_record(std::uint64_t id) const;

  // One line per file whose cache could not be used or saved; empty when all is well.
  std::vector<std::string> warnings() const;

  // On-disk record layout, also the in-memory one (16 bytes per record).
  struct PackedRecord {
    std::uint64_t offset;
    std::uint32_t length;
    std::uint32_t line;
  };

 private:
  ManifestIndex() = default;
  std::size_t file_of(std::uint64_t id) const;

  std::vector<ManifestFile> files_;
  std::vector<std::vector<PackedRecord>> records_;  // per file
  std::vector<int> fds_;                            // per file
  std::uint64_t total_records_ = 0;
  std::uint64_t max_record_bytes_ = 0;
};

}  // namespace stoker::dataset
