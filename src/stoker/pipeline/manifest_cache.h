// The local copy of a remote manifest (s3://, http(s)://), in the per-user cache folder
// (io::user_cache_dir(), an io::PrivateDir: this user's, mode 0700, verified on every use).
// A copy is named by URI + ETag + size and carries a sidecar (<copy>.sha256: SHA-256, size, ETag,
// URI) written at download; it is reused only when the sidecar matches the object's current ETag
// and size AND the copy's bytes hash to the recorded digest — never on size alone. Downloads are
// capped (max_bytes: the object's claimed size before a byte is written, and the bytes streamed)
// and refused when the folder's file system lacks the room. Blocking; thread-safe for distinct
// URIs. Errors: those of io (NotFound, PermissionDenied, Unavailable, ...), PermissionDenied for a
// cache folder another user could touch, ResourceExhausted for a manifest over the cap or no room.
#pragma once

#include <cstdint>
#include <string>

#include "stoker/base/result.h"
#include "stoker/io/object_store.h"

namespace stoker::pipeline {

// The default cap on a remote manifest's size: 4 GiB (--max-manifest-bytes, max_manifest_bytes).
inline constexpr std::int64_t kDefaultMaxManifestBytes = std::int64_t{4} << 30;
// Ranged GETs of a remote manifest: 8 MiB (--manifest-chunk-bytes / $STOKER_MANIFEST_CHUNK_BYTES,
// a test knob read by the option schema: a small manifest in many ranges, to replace it between
// two of them).
inline constexpr std::int64_t kDefaultManifestChunkBytes = std::int64_t{8} << 20;
// Free space kept on the cache's file system beyond the copy itself.
inline constexpr std::int64_t kCacheFreeReserveBytes = std::int64_t{64} << 20;

struct ManifestCacheOptions {
  std::int64_t max_bytes = kDefaultMaxManifestBytes;
  std::int64_t chunk_bytes = kDefaultManifestChunkBytes;  // bytes per ranged GET
};

// Reused when a verified copy of this URI's current version exists; otherwise streamed
// (io::stream_object: If-Match on every range, restarted from byte 0 if the object is replaced
// meanwhile) into a temporary file, fsync'ed and renamed — the copy is always exactly one version.
// Its .stoker-index lands next to it. Returns the copy's path.
Result<std::string> cache_remote_manifest(io::ObjectStore& store, const std::string& uri,
                                          const std::string& cache_dir,
                                          const ManifestCacheOptions& options = {});

}  // namespace stoker::pipeline
