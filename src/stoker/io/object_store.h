// ObjectStore: read objects by URI, whatever holds them — local files (`file://`, plain paths),
// S3 and S3-compatible stores (`s3://bucket/key`), plain HTTP(S) servers. read() (whole object or
// a byte range), head() (size, ETag) and write() return an exec::Future at once; the callback
// flavour runs on the I/O thread (or inline for local files). Remote backends share one
// HttpClient — one I/O thread, one retrying-request path (see http_client.h).
// Thread-safe: call from any thread. Errors are classed by what they mean for the object:
// per object — NotFound, PermissionDenied (with the server's code; also a local path outside the
// store's roots), InvalidArgument (bad URI, not a regular file, symlink loop, name too long,
// unsatisfiable range, other 4xx), ResourceExhausted (over the size cap), FailedPrecondition
// (If-Match: replaced), DataLoss (short, truncated or persistently broken response while the
// store answers other requests); store outage — Unavailable / DeadlineExceeded (the retry window
// spent with the store unreachable, EIO and the like). Unimplemented: a scheme or verb a backend
// lacks.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/exec/future.h"
#include "stoker/io/aws_config.h"
#include "stoker/io/credentials.h"
#include "stoker/io/http_client.h"

namespace stoker::io {

using Bytes = std::vector<std::uint8_t>;

// What to read of an object: the byte range [offset, offset + length) (length -1 = to the end),
// only while the object still has ETag `if_match` (if set: a replaced object gives
// FailedPrecondition, never a mix of two versions), and at most
// `max_bytes` (-1: no cap) — an object or response over the cap fails with ResourceExhausted
// before its bytes are read (size from fstat / Content-Length) or as soon as they exceed it.
struct ReadOptions {
  std::int64_t offset = 0;
  std::int64_t length = -1;
  std::string if_match = {};
  std::int64_t max_bytes = -1;
  bool whole() const { return offset == 0 && length < 0; }
};

struct ObjectInfo {
  std::int64_t size = 0;
  std::string etag;  // S3/HTTP: the server's ETag without quotes; files: "mtime_ns-size"
};

class ObjectStore {
 public:
  virtual ~ObjectStore();
  virtual exec::Future<Bytes> read(const std::string& uri, ReadOptions options = {}) = 0;
  virtual exec::Future<ObjectInfo> head(const std::string& uri) = 0;
  virtual exec::Future<void> write(const std::string& uri, Bytes data);  // Unimplemented here
  // Callback flavour of read(): `done` runs once, on the I/O thread or inline.
  void read(const std::string& uri, ReadOptions options, std::function<void(Result<Bytes>)> done);
  // Counters of the shared request path (zeros for a local-only store).
  virtual HttpClientStats stats() const { return {}; }
};

// Which local files a store may open. Unrestricted by default (tools, benchmarks); the engine
// restricts it to the folders of its local manifests and the media roots (media_access.h).
struct LocalAccess {
  bool restricted = false;
  std::vector<std::string> roots = {};  // folders; a read must lie beneath one (openat2 BENEATH)
};

// Where a store's remote requests go and how S3 is reached.
struct StoreOptions {
  HttpClientOptions http;
  LocalAccess local;
  // S3 settings; unset = resolved from the AWS environment variables and ~/.aws files, and
  // requests signed by the default credential chain (credentials.h). Set = its keys, fixed.
  std::optional<AwsConfig> aws;
  // EC2 instance metadata as a credential source (IMDSv2): off unless true or
  // $AWS_EC2_METADATA_SERVICE_ENDPOINT is set — stoker never contacts it on its own initiative.
  bool imds = false;
  // Refresh timing and credential_process bounds of the chain (credentials.h).
  CredentialOptions credentials;
};

// The store to use: routes each URI by scheme to the local, S3 or HTTP backend.
Result<std::unique_ptr<ObjectStore>> open_store(const StoreOptions& options = {});

// Single backends (the conformance suite runs each on its own). Remote ones share `client`.
// Errors: InvalidArgument for a root that cannot be opened.
Result<std::unique_ptr<ObjectStore>> make_local_store(const LocalAccess& access = {});
std::unique_ptr<ObjectStore> make_http_store(std::shared_ptr<HttpClient> client);
std::unique_ptr<ObjectStore> make_s3_store(std::shared_ptr<HttpClient> client, AwsConfig aws);
// Signs each request with what `credentials` hands out at that moment (anonymous: unsigned).
std::unique_ptr<ObjectStore> make_s3_store(std::shared_ptr<HttpClient> client, AwsConfig aws,
                                           std::shared_ptr<CredentialProvider> credentials);

// Reads `uri` front to back in `chunk_bytes` pieces (ranged reads, the next one in flight while
// `consume` handles the current), after a head() whose size and ETag land in `info` — the way a
// manifest is indexed once and its index cached under its ETag. Every ranged read carries
// If-Match with that ETag: when the object is replaced mid-stream the whole stream restarts from
// byte 0 with the new version (at most `max_restarts` times), so `consume` must treat offset 0
// as "start over" — the bytes consumed are never a mix of two versions. Stops at the first
// other error from the store or from `consume` (offset = position of the chunk in the object).
Status stream_object(ObjectStore& store, const std::string& uri, std::int64_t chunk_bytes,
                     const std::function<Status(std::span<const std::uint8_t> chunk,
                                                std::int64_t offset)>& consume,
                     ObjectInfo* info = nullptr, int max_restarts = 3);

// Blocking conveniences for tools and tests.
Result<Bytes> read_sync(ObjectStore& store, const std::string& uri, ReadOptions options = {});
Result<ObjectInfo> head_sync(ObjectStore& store, const std::string& uri);

}  // namespace stoker::io
