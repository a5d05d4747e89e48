#include "stoker/pipeline/store_fetcher.h"

#include <mutex>
#include <optional>

#include "stoker/base/clock.h"
#include "stoker/base/redact.h"
#include "stoker/dataset/jsonl_file.h"
#include "stoker/dataset/manifest_source.h"
#include "stoker/io/private_dir.h"
#include "stoker/io/uri.h"
#include "stoker/pipeline/mixture_records.h"
#include "stoker/pipeline/shard_records.h"

namespace stoker::pipeline {
namespace {

class StoreFetcher final : public Fetcher {
 public:
  StoreFetcher(std::shared_ptr<io::ObjectStore> store, std::int64_t max_object_bytes,
               bool blocking)
      : store_(std::move(store)), max_object_bytes_(max_object_bytes), blocking_(blocking) {}

  Result<std::vector<std::uint8_t>> fetch(const std::string& uri) const override {
    if (auto held = RangeBytes::shared().take(uri)) return std::move(*held);
    std::string object;
    io::ReadOptions o;
    STOKER_RETURN_IF_ERROR(options_for(uri, &object, &o));
    return io::read_sync(*store_, object, o);
  }

  bool asynchronous() const override { return !blocking_; }

  void fetch_async(const std::string& uri,
                   std::function<void(Result<std::vector<std::uint8_t>>)> done) const override {
    if (auto held = RangeBytes::shared().take(uri)) {
      done(std::move(*held));
      return;
    }
    std::string object;
    io::ReadOptions o;
    if (Status st = options_for(uri, &object, &o); !st.ok()) {
      done(st.error());
      return;
    }
    store_->read(object, o, std::move(done));
  }

 private:
  // A range URI reads its range (capped like a whole object); any other, the whole object.
  Status options_for(const std::string& uri, std::string* object, io::ReadOptions* o) const {
    o->max_bytes = max_object_bytes_;
    if (!parse_range_uri(uri, object, &o->offset, &o->length)) {
      *object = uri;
      return ok_status();
    }
    if (o->length > max_object_bytes_) {
      return resource_exhausted(io::shown_uri(*object) + ": member of " + std::to_string(o->length) +
                                " bytes over the object cap of " + std::to_string(max_object_bytes_));
    }
    return ok_status();
  }
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
  std::optional<std::pair<std::size_t, Error>> error;  // the lowest-numbered fetch that failed
};


}  // namespace

std::unique_ptr<Fetcher> make_store_fetcher(std::shared_ptr<io::ObjectStore> store,
                                            std::int64_t max_object_bytes, bool blocking) {
  return std::make_unique<StoreFetcher>(std::move(store), max_object_bytes, blocking);
}

std::string default_cache_dir() { return io::user_cache_dir(); }

namespace {
constexpr std::string_view kRangePrefix = "stoker-range:";
}  // namespace

RangeBytes& RangeBytes::shared() {
  static RangeBytes* r = new RangeBytes();  // never destroyed: used from I/O threads at exit
  return *r;
}

void RangeBytes::offer(std::string uri, std::shared_ptr<const std::vector<std::uint8_t>> buffer,
                       std::int64_t offset, std::int64_t length) {
  if (!buffer || offset < 0 || length < 0 || offset + length > static_cast<std::int64_t>(buffer->size())) return;
  std::lock_guard lock(mu_);
  auto [it, fresh] = entries_.insert_or_assign(uri, Entry{std::move(buffer), offset, length});
  if (fresh) {
    order_.push_back(std::move(uri));
    bytes_ += length;
  }
  while (!order_.empty() &&
         (entries_.size() > kMaxEntries || bytes_ > kMaxBytes || order_.size() > 2 * kMaxEntries)) {
    auto old = entries_.find(order_.front());
    if (old != entries_.end()) {
      bytes_ -= old->second.length;
      entries_.erase(old);
    }
    order_.pop_front();
  }
}

std::optional<std::vector<std::uint8_t>> RangeBytes::take(const std::string& uri) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(uri);
  if (it == entries_.end()) return std::nullopt;
  const Entry& e = it->second;
  std::vector<std::uint8_t> out(e.buffer->begin() + e.offset, e.buffer->begin() + e.offset + e.length);
  bytes_ -= e.length;
  entries_.erase(it);  // its name stays in order_ until it comes up (find() then misses)
  return out;
}

std::string range_uri(std::string_view uri, std::int64_t offset, std::int64_t length) {
  return std::string(kRangePrefix) + std::to_string(offset) + ":" + std::to_string(length) + ":" + std::string(uri);
}

bool parse_range_uri(std::string_view text, std::string* uri, std::int64_t* offset, std::int64_t* length) {
  if (text.substr(0, kRangePrefix.size()) != kRangePrefix) return false;
  text.remove_prefix(kRangePrefix.size());
  std::int64_t v[2] = {0, 0};
  for (std::int64_t& x : v) {
    std::size_t i = 0;
    while (i < text.size() && text[i] >= '0' && text[i] <= '9' && i < 18) x = x * 10 + (text[i++] - '0');
    if (i == 0 || i >= text.size() || text[i] != ':') return false;
    text.remove_prefix(i + 1);
  }
  *offset = v[0];
  *length = v[1];
  *uri = std::string(text);
  return true;
}

namespace {

// JSONL manifests (dataset::ManifestSource): remote ones streamed once into the cache, then
// every file indexed (dataset/manifest.h).
Result<std::unique_ptr<dataset::RecordSource>> open_jsonl(SourceEnv env) {
  std::vector<std::string> local;
  dataset::DecompressOptions decompress;
  decompress.cache_dir = env.cache_dir;
  decompress.max_record_bytes = static_cast<std::uint64_t>(env.options->max_record_bytes);
  for (const std::string& d : env.specs) {
    // .jsonl.gz / .jsonl.zst: decompressed once into the cache folder, under the record caps.
    if (dataset::compression_of(d) != dataset::Compression::kNone) {
      Result<std::string> plain = io::is_remote_uri(d)
                                      ? decompress_remote_jsonl(*env.store, d, env.cache_dir, decompress)
                                      : dataset::decompress_jsonl_to_cache(d, decompress);
      if (!plain.ok()) return std::move(plain).error().with_context(redact_secrets(d));
      local.push_back(std::move(plain).value());
      continue;
    }
    if (!io::is_remote_uri(d)) {
      local.push_back(d);
      continue;
    }
    STOKER_ASSIGN_OR_RETURN(
        std::string path,
        cache_remote_manifest(*env.store, d, env.cache_dir,
                              {.max_bytes = env.options->max_manifest_bytes,
                               .chunk_bytes = env.options->manifest_chunk_bytes}));
    local.push_back(std::move(path));
  }
  dataset::ManifestOptions manifest_options;
  manifest_options.max_record_bytes = static_cast<std::uint64_t>(env.options->max_record_bytes);
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<dataset::ManifestIndex> index,
                          dataset::ManifestIndex::open(local, manifest_options));
  return std::unique_ptr<dataset::RecordSource>(new dataset::ManifestSource(
      std::move(index), std::move(env.names), std::move(env.scopes)));
}

const RecordSourceKind kJsonl = {"jsonl", [](std::string_view) { return true; }, open_jsonl};

std::mutex kinds_mu;
std::vector<const RecordSourceKind*>& kinds() {
  static std::vector<const RecordSourceKind*> k = {&kJsonl, wds_record_source_kind(),
                                                   energon_record_source_kind(),
                                                   mixture_record_source_kind()};
  return k;
}

const RecordSourceKind* kind_of(std::string_view spec) {
  std::lock_guard lock(kinds_mu);
  const auto& k = kinds();
  for (auto it = k.rbegin(); it != k.rend(); ++it) {
    if ((*it)->accepts(spec)) return *it;
  }
  return &kJsonl;
}

}  // namespace

const RecordSourceKind* record_source_kind(std::string_view spec) { return kind_of(spec); }

void register_record_source(const RecordSourceKind* kind) {
  std::lock_guard lock(kinds_mu);
  kinds().push_back(kind);
}

Status open_sources(const std::vector<std::string>& data, const SourceOptions& options,
                    Context* ctx) {
  // Each spec's trust boundary; the store may read beneath the union of the local ones'
  // roots (each scope still checks its own, the store enforces the union with openat2).
  io::StoreOptions store_options;
  store_options.local.restricted = !options.access.trust_media_paths;
  std::vector<io::MediaScope> scopes;
  for (const std::string& d : data) {
    const RecordSourceKind* kind = kind_of(d);
    STOKER_ASSIGN_OR_RETURN(io::MediaScope scope, kind->scope != nullptr
                                                      ? kind->scope(d, options.access)
                                                      : io::MediaScope::make(d, options.access));
    for (const io::MediaRoot& r : scope.roots()) store_options.local.roots.push_back(r.path);
    scopes.push_back(std::move(scope));
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
  // Runs of specs of one kind, each opened as one source; several runs are chained.
  std::vector<std::unique_ptr<dataset::RecordSource>> parts;
  for (std::size_t i = 0; i < data.size();) {
    const RecordSourceKind* kind = kind_of(data[i]);
    SourceEnv env;
    env.options = &options;
    env.store = store;
    env.cache_dir = cache_dir;
    for (; i < data.size() && kind_of(data[i]) == kind; ++i) {
      env.specs.push_back(data[i]);
      env.scopes.push_back(std::move(scopes[i]));
      env.names.push_back(redact_secrets(data[i]));
    }
    STOKER_ASSIGN_OR_RETURN(std::unique_ptr<dataset::RecordSource> part, kind->open(std::move(env)));
    parts.push_back(std::move(part));
  }
  if (parts.size() == 1) {
    ctx->records = std::move(parts[0]);
  } else {
    ctx->records = std::make_unique<dataset::ConcatSource>(std::move(parts));
  }
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
  fetched.bytes.resize(uris.size());
  // Budget first, on this (I/O pool) thread: backpressure waits here, never on the I/O thread.
  Result<SampleLease> lease = SampleLease::acquire(*ctx.budget, uris.size(), stop);
  if (!lease.ok()) {
    fetched.bytes.clear();
    fetched.failure = fetch_failure(ctx, fetched, 0, lease.error());
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
          p->fetched.bytes[i] = std::move(r).value();
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
        p->fetched.bytes.clear();
        p->fetched.lease.reset();  // returns the budget now
        p->fetched.failure = fetch_failure(*p->ctx, p->fetched, p->error->first, p->error->second);
      }
      p->done(std::move(p->fetched));
    });
  }
}

}  // namespace stoker::pipeline
