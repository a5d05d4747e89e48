// JSONL as hubs ship it: compressed (`.jsonl.gz` through zlib — concatenated gzip members too —
// and `.jsonl.zst` through libzstd) and with Energon's `.jsonl.idx`.
// A compressed manifest is decompressed once into the cache folder and then indexed and read
// like any JSONL file (ManifestIndex): streaming, bounded by the record caps — a line longer than
// `max_record_bytes`, more than `max_records` lines or more than `max_output_bytes` refuses the
// file at start with the reason (a decompression bomb never fills the disk). The cache file's
// name carries the source's identity (absolute path, size, mtime, inode), so a changed source is
// decompressed again; it is written under a temporary name and renamed (concurrent ranks never
// see a partial file). JsonlDecompressor is the same decoder for bytes that arrive in chunks
// (a remote object streamed by io::stream_object).
// `.jsonl.idx` (flavors/jsonl/ijsonl.py, jsonl_prepare.py): N+1 little-endian uint64, entry i the
// byte offset where record i starts (blank lines between records skipped, leading ones kept in
// record 0's range), the last the file size. Checked: ascending, last == the file's size.
// Thread-safe (no shared state). Errors: InvalidArgument (not gzip/zstd, malformed index),
// DataLoss (corrupt or truncated compressed data, naming the byte), ResourceExhausted (over a
// cap), those of file I/O.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::dataset {

enum class Compression { kNone, kGzip, kZstd };
// By suffix: ".gz" / ".gzip", ".zst" / ".zstd"; else kNone.
Compression compression_of(std::string_view path);

struct DecompressOptions {
  std::string cache_dir;  // required for decompress_jsonl_to_cache
  std::uint64_t max_record_bytes = std::uint64_t{16} << 20;  // the engine's record cap
  std::uint64_t max_records = std::uint64_t{1} << 32;        // lines
  std::uint64_t max_output_bytes = std::uint64_t{64} << 30;
};

class JsonlDecompressor {
 public:
  using Sink = std::function<Status(std::span<const std::uint8_t>)>;
  static Result<std::unique_ptr<JsonlDecompressor>> create(Compression compression, std::string name,
                                                           DecompressOptions options, Sink sink);
  virtual ~JsonlDecompressor() = default;
  // The next compressed bytes; decompressed output goes to the sink, checked against the caps.
  virtual Status feed(std::span<const std::uint8_t> input) = 0;
  // The input ended: DataLoss if the last stream/frame is incomplete.
  virtual Status finish() = 0;
  std::uint64_t output_bytes() const { return out_bytes_; }
  std::uint64_t lines() const { return lines_; }

 protected:
  JsonlDecompressor(std::string name, DecompressOptions options, Sink sink)
      : name_(std::move(name)), options_(options), sink_(std::move(sink)) {}
  Status emit(std::span<const std::uint8_t> out);  // cap checks, then the sink
  std::string name_;
  DecompressOptions options_;
  Sink sink_;
  std::uint64_t out_bytes_ = 0, lines_ = 0, line_bytes_ = 0;
};

// The decompressed file's path in options.cache_dir (written now, or reused when present).
// `reused` (may be null) says which.
Result<std::string> decompress_jsonl_to_cache(const std::string& path, const DecompressOptions& options,
                                              bool* reused = nullptr);

// Energon's index beside a JSONL file: "a/x.jsonl" -> "a/x.jsonl.idx".
std::string jsonl_index_path(const std::string& jsonl_path);
Result<std::vector<std::uint64_t>> decode_jsonl_index(std::span<const std::uint8_t> bytes, std::uint64_t file_size,
                                                      const std::string& name);
// Record i's bytes inside [offsets[i], offsets[i+1]): the range with surrounding JSON whitespace
// (leading blank lines, the line end, a CR) trimmed, as Energon's reader hands it to json.loads.
std::string_view trim_jsonl_record(std::string_view range);

}  // namespace stoker::dataset
