// RecordSource: where the engine's records come from — a fixed, ordered set of N records (global
// ids 0 .. N-1) that the plan permutes, shards and resumes over (order.h), whatever holds them:
// JSONL manifests today (ManifestSource, manifest_source.h); tar shards, Energon folders and
// mixtures implement the same interface. For record i a source gives its text (one JSON object,
// parsed by conversation.h), its origin for errors (the name a report gives the file or shard
// and the line or record number in it) and the context its media references resolve in (which
// URI a reference names, and whether it may be read at all: the trust boundary).
// ConcatSource chains sources, ids running over them in order.
// Sources are immutable once opened and thread-safe; read() blocks (a pread, typically).
// Errors of read(): the implementation's (ManifestSource: ResourceExhausted for a record over
// its size cap, DataLoss when the file shrank since it was indexed).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::dataset {

// Where a record is, for error messages and reports ("data.jsonl:17").
struct RecordOrigin {
  std::string_view name;  // as the user gave the file or URI (secrets redacted); lives as long
                          // as the source
  std::uint64_t line = 0; // 1-based
};

// How a record's media references become what the fetcher reads: a URI (a path made absolute,
// file://, s3://, http(s)://), or PermissionDenied / InvalidArgument naming the rule it broke.
class MediaResolver {
 public:
  virtual ~MediaResolver() = default;
  virtual Result<std::string> resolve(std::string_view ref) const = 0;
};

class RecordSource {
 public:
  virtual ~RecordSource() = default;
  virtual std::uint64_t size() const = 0;
  // Record `id` (< size(); out of range is a bug) into `out` (reused: no allocation once large
  // enough).
  virtual Status read(std::uint64_t id, std::string& out) const = 0;
  virtual RecordOrigin origin(std::uint64_t id) const = 0;
  virtual const MediaResolver& media(std::uint64_t id) const = 0;
  // A hint from the engine: these records (< size()) are about to be read, on any threads. A
  // source whose reads are round trips (remote shards) starts them now, several in flight and
  // adjacent records as one request, so read() later waits less or not at all. Must not block
  // on I/O, nor change what read() returns. Default: nothing.
  virtual void prefetch(std::span<const std::uint64_t> ids) const { (void)ids; }
  // Things worth a line on stderr that did not stop the source (an index cache not written).
  virtual std::vector<std::string> warnings() const { return {}; }
  // What identifies these records and their order, as text: one line per file or shard — where
  // it is (a local file's canonical path; a remote one's URI and version) and what was read of
  // it (bytes, records); a mixture its spec. Two sources with the same identity give the same
  // record for every id. A state's order fingerprint hashes it (pipeline/fingerprint.h, the
  // "data" field: a resume over other data is refused). Default: empty (a source that cannot
  // say: only its record count is compared).
  virtual std::string identity() const { return {}; }
};

// Sources one after another: ids of parts[0] first, then parts[1]'s, ...
// RecordSource::prefetch for a source made of parts: part p holds global ids [firsts[p],
// firsts[p] + parts[p]->size()) (firsts ascending, as ConcatSource and a mixture lay them out);
// each part gets the ids that fall in it as its own local ids, in the order given. O(ids · log
// parts): a job over thousands of files pays nothing per part that holds none of the ids.
void prefetch_parts(std::span<const std::uint64_t> ids, std::span<const std::uint64_t> firsts,
                    std::span<const std::unique_ptr<RecordSource>> parts);

class ConcatSource final : public RecordSource {
 public:
  explicit ConcatSource(std::vector<std::unique_ptr<RecordSource>> parts);
  std::uint64_t size() const override { return total_; }
  Status read(std::uint64_t id, std::string& out) const override;
  RecordOrigin origin(std::uint64_t id) const override;
  const MediaResolver& media(std::uint64_t id) const override;
  void prefetch(std::span<const std::uint64_t> ids) const override;  // each part its own ids
  std::vector<std::string> warnings() const override;
  std::string identity() const override;  // the parts', in order

 private:
  // The part holding `id` and the id within it.
  std::pair<const RecordSource*, std::uint64_t> find(std::uint64_t id) const;
  std::vector<std::unique_ptr<RecordSource>> parts_;
  std::vector<std::uint64_t> first_;  // global id of each part's first record
  std::uint64_t total_ = 0;
};

}  // namespace stoker::dataset
