// Remote sources for the engine: media and manifests on S3 (and S3-compatible stores), plain
// HTTP(S) or local files, all through one io::ObjectStore (one curl-multi I/O thread, one retry
// path). StoreFetcher reads media whole; its asynchronous flavour lets the engine keep many
// requests in flight (read_and_fetch_async: the I/O pool thread only reads the record and takes
// byte budget, the sample goes to the CPU pool from the last read's callback). A remote manifest
// is streamed once into a local cached copy keyed by URI + ETag, then indexed like a local file.
// Thread-safe. Errors: those of io (NotFound, PermissionDenied, Unavailable, DeadlineExceeded, …).
#pragma once

#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/io/object_store.h"
#include "stoker/pipeline/fetcher.h"
#include "stoker/pipeline/prepare.h"

namespace stoker::pipeline {

// s3://, http://, https:// (file:// and plain paths are local).
bool is_remote_uri(const std::string& uri);

// Media of any scheme io::open_store serves, through `store` (shared with the manifest cache).
// `blocking`: asynchronous() is false, so the engine calls fetch() from its I/O pool — one request
// per pool thread; kept as the baseline the asynchronous path is measured against.
std::unique_ptr<Fetcher> make_store_fetcher(std::shared_ptr<io::ObjectStore> store,
                                            bool blocking = false);

// $STOKER_CACHE_DIR, else $XDG_CACHE_HOME/stoker, else ~/.cache/stoker, else /tmp/stoker-cache.
std::string default_cache_dir();

// The local copy of remote manifest `uri` under `cache_dir`: reused when a file for this URI and
// the object's current ETag and size exists; otherwise streamed (io::stream_object, one pass) to
// a temporary file and renamed into place. Its .stoker-index lands next to it.
Result<std::string> cache_remote_manifest(io::ObjectStore& store, const std::string& uri,
                                          const std::string& cache_dir);

// Fills ctx->index, ctx->fetcher and (any manifest remote) ctx->manifest_uris: all-local data
// keeps the pread LocalFetcher; otherwise one store (io::open_store: AWS env, ~/.aws) serves the
// remote manifests (cached under default_cache_dir()) and all media, asynchronously.
Status open_sources(const std::vector<std::string>& data, Context* ctx);

// read_stage, then every image of the sample read asynchronously; `done` runs once with the
// result — inline (record failure, no images, stop while waiting for budget) or on the store's
// I/O thread. Keep `done` short.
void read_and_fetch_async(const Context& ctx, const Item& item, std::stop_token stop,
                          std::function<void(Fetched&&)> done);

}  // namespace stoker::pipeline
