#include "stoker/pipeline/store_fetcher.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <unistd.h>

#include "stoker/base/clock.h"
#include "stoker/base/redact.h"
#include "stoker/io/private_dir.h"
#include "stoker/io/uri.h"

namespace stoker::pipeline {
namespace {

class StoreFetcher final : public Fetcher {
 public:
  StoreFetcher(std::shared_ptr<io::ObjectStore> store, std::int64_t max_object_bytes,
               bool blocking)
      : store_(std::move(store)), max_object_bytes_(max_object_bytes), blocking_(blocking) {}

  Result<std::vector<std::uint8_t>> fetch(const std::string& uri) const override {
    return io::read_sync(*store_, uri, {.max_bytes = max_object_bytes_});
  }

  bool asynchronous() const override { return !blocking_; }

  void fetch_async(const std::string& uri,
                   std::function<void(Result<std::vector<std::uint8_t>>)> done) const override {
    store_->read(uri, {.max_bytes = max_object_bytes_}, std::move(done));
  }

 private:
  std::shared_ptr<io::ObjectStore> store_;
  std::int64_t max_object_bytes_;
  bool blocking_;
};

// One sample's reads in flight; the last callback hands the sample on.
struct PendingSample {
  const Context* ctx = nullptr;
  Fetched fetched;
  std::function<void(Fetched&&)> done;
  std::mutex mu;
  std::size_t left = 0;
  std::optional<std::pair<std::size_t, Error>> error;  // the lowest-numbered image that failed
};

}  // namespace

std::unique_ptr<Fetcher> make_store_fetcher(std::shared_ptr<io::ObjectStore> store,
                                            std::int64_t max_object_bytes, bool blocking) {
  return std::make_unique<StoreFetcher>(std::move(store), max_object_bytes, blocking);
}

std::string default_cache_dir() { return io::user_cache_dir(); }

SourceOptions source_options(const LoaderConfig& config) {
  SourceOptions o;
  o.access = {.media_roots = config.media_roots,
              .trust_media_paths = config.trust_media_paths,
              .allow_buckets = config.allow_buckets};
  o.max_object_bytes = config.max_object_bytes;
  o.max_record_bytes = config.max_record_bytes;
  o.max_manifest_bytes = config.max_manifest_bytes;
  o.io_deadline_ms = config.io_deadline_ms;
  o.io_max_attempts = config.io_max_attempts;
  o.cache_dir = config.cache_dir;
  o.manifest_chunk_bytes = config.manifest_chunk_bytes;
  o.fetch_blocking = config.fetch_blocking;
  o.imds = config.imds;
  return o;
}

Status open_sources(const std::vector<std::string>& data, const SourceOptions& options,
                    Context* ctx) {
  // Each manifest's trust boundary; the store may read beneath the union of the local ones'
  // roots (each scope still checks its own, the store enforces the union with openat2).
  io::StoreOptions store_options;
  store_options.local.restricted = !options.access.trust_media_paths;
  for (const std::string& d : data) {
    STOKER_ASSIGN_OR_RETURN(io::MediaScope scope, io::MediaScope::make(d, options.access));
    for (const io::MediaRoot& r : scope.roots()) store_options.local.roots.push_back(r.path);
    ctx->scopes.push_back(std::move(scope));
    ctx->manifest_names.push_back(redact_secrets(d));
  }
  // The retry window of every request: a span of time, not an attempt count.
  if (options.io_deadline_ms > 0) {
    store_options.http.deadline = std::chrono::milliseconds(options.io_deadline_ms);
  }
  if (options.io_max_attempts > 0) store_options.http.backoff.max_attempts = options.io_max_attempts;
  store_options.imds = options.imds;  // EC2 instance metadata: only when asked for
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<io::ObjectStore> opened, io::open_store(store_options));
  std::shared_ptr<io::ObjectStore> store = std::move(opened);
  const std::string cache_dir = options.cache_dir.empty() ? default_cache_dir() : options.cache_dir;
  std::vector<std::string> local;
  for (const std::string& d : data) {
    if (!io::is_remote_uri(d)) {
      local.push_back(d);
      continue;
    }
    STOKER_ASSIGN_OR_RETURN(std::string path, cache_remote_manifest(*store, d, cache_dir,
                                                  {.max_bytes = options.max_manifest_bytes,
                                                   .chunk_bytes = options.manifest_chunk_bytes}));
    local.push_back(std::move(path));
  }
  dataset::ManifestOptions manifest_options;
  manifest_options.max_record_bytes = static_cast<std::uint64_t>(options.max_record_bytes);
  STOKER_ASSIGN_OR_RETURN(ctx->index, dataset::ManifestIndex::open(local, manifest_options));
  // fetch_blocking: one blocking read per I/O pool thread (the A/B baseline).
  ctx->fetcher = make_store_fetcher(std::move(store), options.max_object_bytes,
                                    options.fetch_blocking);
  return ok_status();
}

void read_and_fetch_async(const Context& ctx, const Item& item, std::stop_token stop,
                          std::function<void(Fetched&&)> done) {
  std::vector<std::string> uris;
  Fetched fetched = read_stage(ctx, item, &uris);
  if (fetched.failure || uris.empty()) {
    done(std::move(fetched));
    return;
  }
  auto p = std::make_shared<PendingSample>();
  p->ctx = &ctx;
  p->done = std::move(done);
  p->left = uris.size();
  fetched.media.resize(uris.size());
  // Budget first, on this (I/O pool) thread: backpressure waits here, never on the I/O thread.
  Result<SampleLease> lease = SampleLease::acquire(*ctx.budget, uris.size(), stop);
  if (!lease.ok()) {
    fetched.media.clear();
    fetched.failure = fetch_failure(ctx, item, 0, lease.error());
    p->done(std::move(fetched));
    return;
  }
  fetched.lease = std::move(lease).value();
  p->fetched = std::move(fetched);
  // Fetch latency is not CPU time: the sample counts, its latency is recorded at completion
  // (and traced as an async span: requests overlap on the store's I/O thread).
  const std::int64_t t0 = now_ns();
  for (std::size_t i = 0; i < uris.size(); ++i) {
    if (ctx.io_delay_hook) ctx.io_delay_hook(item.sample, static_cast<int>(i));
    ctx.fetcher->fetch_async(uris[i], [p, i, t0](Result<std::vector<std::uint8_t>> r) {
      {
        std::lock_guard lock(p->mu);
        if (r.ok()) {
          p->fetched.lease.arrived(static_cast<std::int64_t>(r->size()));
          p->fetched.media[i] = std::move(r).value();
        } else if (!p->error || i < p->error->first) {
          p->error.emplace(i, r.error());
        }
        if (--p->left > 0) return;
      }
      const std::int64_t t1 = now_ns();
      p->ctx->counters.add_waited(kFetch, t1 - t0);
      if (obs::Tracer* trace = p->ctx->trace_for(p->fetched.item)) {
        trace->async_span("fetch", p->fetched.item.seq, t0, t1);
      }
      if (p->error) {
        p->fetched.media.clear();
        p->fetched.lease.reset();  // returns the budget now
        p->fetched.failure =
            fetch_failure(*p->ctx, p->fetched.item, p->error->first, p->error->second);
      }
      p->done(std::move(p->fetched));
    });
  }
}

}  // namespace stoker::pipeline
