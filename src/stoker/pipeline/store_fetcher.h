// The engine's sources: manifests (local, or remote and cached locally) and media of any
// scheme — relative or absolute paths, file://, s3://, http(s):// in any mix, in local or remote
// manifests — through one io::ObjectStore (one curl-multi I/O thread, one retry path, one byte
// budget, one error policy). Each manifest's references resolve through its io::MediaScope, the
// trust boundary (io/media_access.h). StoreFetcher reads media whole, capped at the object size
// limit; its asynchronous flavour lets the engine keep many requests in flight
// (read_and_fetch_async: the I/O pool thread only reads the record and takes byte budget, the
// sample goes to the CPU pool from the last read's callback). A remote manifest is streamed once
// into a local cached copy keyed by URI + ETag (If-Match on every range: never a mix of two
// versions), then indexed like a local file.
// Thread-safe. Errors: those of io (per object: NotFound, PermissionDenied, InvalidArgument,
// ResourceExhausted, DataLoss; outage: Unavailable, DeadlineExceeded).
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/dataset/record_source.h"
#include "stoker/io/media_access.h"
#include "stoker/io/object_store.h"
#include "stoker/pipeline/fetcher.h"
#include "stoker/pipeline/manifest_cache.h"
#include "stoker/pipeline/prepare.h"

namespace stoker::pipeline {

// Media of any scheme through `store` (shared with the manifest cache), at most
// `max_object_bytes` each. `blocking`: asynchronous() is false, so the engine calls fetch() from
// its I/O pool — one request per pool thread; kept as the baseline the asynchronous path is
// measured against.
std::unique_ptr<Fetcher> make_store_fetcher(std::shared_ptr<io::ObjectStore> store,
                                            std::int64_t max_object_bytes, bool blocking = false);

// A byte range of an object as a media URI: "stoker-range:OFFSET:LENGTH:" + uri (uri absolute:
// a path made absolute, s3://, http(s)://). The store fetcher reads it with one ranged read
// (a pread locally, a ranged GET remotely) — a medium inside a tar shard is never copied to a
// file. parse_range_uri: false for any other URI.
std::string range_uri(std::string_view uri, std::int64_t offset, std::int64_t length);
bool parse_range_uri(std::string_view text, std::string* uri, std::int64_t* offset, std::int64_t* length);

// Bytes of range URIs already in memory (a shard sample read whole holds its media): a record
// source offers them as it reads the record (offer), the store fetcher takes them instead of
// reading the range again (take: erased on use). Bounded (FIFO beyond kMaxEntries entries or
// kMaxBytes referenced bytes); a range no longer held is simply read. Thread-safe.
class RangeBytes {
 public:
  static constexpr std::size_t kMaxEntries = 4096;
  static constexpr std::int64_t kMaxBytes = std::int64_t{64} << 20;
  static RangeBytes& shared();
  void offer(std::string uri, std::shared_ptr<const std::vector<std::uint8_t>> buffer, std::int64_t offset,
             std::int64_t length);
  std::optional<std::vector<std::uint8_t>> take(const std::string& uri);

 private:
  struct Entry {
    std::shared_ptr<const std::vector<std::uint8_t>> buffer;
    std::int64_t offset = 0, length = 0;
  };
  std::mutex mu_;
  std::map<std::string, Entry> entries_;
  std::deque<std::string> order_;
  std::int64_t bytes_ = 0;
};

// The per-user cache folder: io::user_cache_dir() ($XDG_CACHE_HOME/stoker, else
// ~/.cache/stoker, else ${TMPDIR:-/tmp}/stoker-cache-<euid>). $STOKER_CACHE_DIR, the cache_dir
// option's fallback, is read where the configuration is built (config/options.cc), not here.
std::string default_cache_dir();

// How the sources are opened (from LoaderConfig).
struct SourceOptions {
  io::MediaAccess access;
  std::int64_t max_object_bytes = std::int64_t{256} << 20;
  std::int64_t max_record_bytes = std::int64_t{16} << 20;
  std::int64_t max_manifest_bytes = kDefaultMaxManifestBytes;  // a remote manifest's copy
  std::int64_t io_deadline_ms = 0;  // 0: io's default (120 s)
  int io_max_attempts = 0;          // 0: io's default
  std::string cache_dir;            // remote manifests' local copies; empty: default_cache_dir()
  std::int64_t manifest_chunk_bytes = kDefaultManifestChunkBytes;  // ranged GETs of a manifest
  bool fetch_blocking = false;      // one blocking read per I/O thread (the A/B baseline)
  bool imds = false;
};

// What a record source kind is opened with: the data specs of one run of that kind (paths or
// URIs as given), each one's media scope (the trust boundary its media references resolve in)
// and its name for errors (secrets redacted), the store every read goes through (shared with
// the fetcher) and the cache folder for local copies of remote files.
struct SourceEnv {
  std::vector<std::string> specs;
  std::vector<io::MediaScope> scopes;
  std::vector<std::string> names;
  const SourceOptions* options = nullptr;
  std::shared_ptr<io::ObjectStore> store;
  std::string cache_dir;
};

// A kind of record source (dataset/record_source.h) the engine can open: the registry. JSONL
// manifests (plain, .jsonl.gz, .jsonl.zst) are built in and take any spec no other kind accepts;
// WebDataset shard lists and Energon folders are built in too (shard_records.h); others register
// their own kind (from their own files, before the first Loader
// is made). Consecutive specs of one kind form one source; runs of different kinds are chained
// (dataset::ConcatSource), record ids running over the specs in the order given.
struct RecordSourceKind {
  std::string_view name;                       // "jsonl", for messages
  bool (*accepts)(std::string_view spec);      // this kind reads `spec`
  Result<std::unique_ptr<dataset::RecordSource>> (*open)(SourceEnv env);
  // The media scope of `spec`'s records — asked before the store is opened, since the store
  // may read local files only beneath the scopes' roots. Null: io::MediaScope::make(spec).
  Result<io::MediaScope> (*scope)(std::string_view spec, const io::MediaAccess& access) = nullptr;
};
// Later registrations are asked first. Not thread-safe against a concurrent open_sources.
void register_record_source(const RecordSourceKind* kind);
// The kind that reads `spec` (JSONL when no other accepts it).
const RecordSourceKind* record_source_kind(std::string_view spec);

// Fills ctx->records and ctx->fetcher: one store (io::open_store: AWS credentials chain, local
// reads restricted to the local specs' folders and the media roots unless trusted) serves the
// records (remote manifests are cached under options.cache_dir) and all media, asynchronously.
// The retry window: options.io_deadline_ms, else 120 s — retries until then, however many
// (options.io_max_attempts caps them, for tests). Reads no environment.
Status open_sources(const std::vector<std::string>& data, const SourceOptions& options,
                    Context* ctx);

// read_stage, then every image of the sample read asynchronously; `done` runs once with the
// result — inline (record failure, no images, stop while waiting for budget) or on the store's
// I/O thread. Keep `done` short.
void read_and_fetch_async(const Context& ctx, const Item& item, std::stop_token stop,
                          std::function<void(Fetched&&)> done);

}  // namespace stoker::pipeline
