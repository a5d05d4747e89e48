#include "stoker/pipeline/store_fetcher.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <optional>
#include <unistd.h>

#include "stoker/io/uri.h"

namespace stoker::pipeline {
namespace {

// Charged per media read before its size is known; corrected when the bytes arrive.
constexpr std::int64_t kSizeEstimate = std::int64_t{1} << 20;

class StoreFetcher final : public Fetcher {
 public:
  StoreFetcher(std::shared_ptr<io::ObjectStore> store, bool blocking)
      : store_(std::move(store)), blocking_(blocking) {}

  Status fetch(const std::string& uri, ByteBudget& budget, std::stop_token stop,
               FetchedMedia* out) const override {
    STOKER_ASSIGN_OR_RETURN(out->lease, budget.acquire(kSizeEstimate, stop));
    STOKER_ASSIGN_OR_RETURN(out->bytes, io::read_sync(*store_, uri));
    out->lease.resize(static_cast<std::int64_t>(out->bytes.size()));
    return ok_status();
  }

  bool asynchronous() const override { return !blocking_; }

  void fetch_async(const std::string& uri,
                   std::function<void(Result<std::vector<std::uint8_t>>)> done) const override {
    store_->read(uri, {}, std::move(done));
  }

 private:
  std::shared_ptr<io::ObjectStore> store_;
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

std::uint64_t fnv1a(const std::string& s) {
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ULL;
  return h;
}

}  // namespace

bool is_remote_uri(const std::string& uri) {
  return uri.rfind("s3://", 0) == 0 || uri.rfind("http://", 0) == 0 ||
         uri.rfind("https://", 0) == 0;
}

std::unique_ptr<Fetcher> make_store_fetcher(std::shared_ptr<io::ObjectStore> store, bool blocking) {
  return std::make_unique<StoreFetcher>(std::move(store), blocking);
}

std::string default_cache_dir() {
  if (const char* d = std::getenv("STOKER_CACHE_DIR"); d != nullptr && *d != '\0') return d;
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d != nullptr && *d != '\0') {
    return std::string(d) + "/stoker";
  }
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
    return std::string(h) + "/.cache/stoker";
  }
  return "/tmp/stoker-cache";
}

Result<std::string> cache_remote_manifest(io::ObjectStore& store, const std::string& uri,
                                          const std::string& cache_dir) {
  Result<io::ObjectInfo> info = io::head_sync(store, uri);
  if (!info.ok()) return std::move(info.error().with_context("manifest " + uri));
  std::string base = uri.substr(uri.rfind('/') + 1);
  for (char& c : base) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-' && c != '_') c = '_';
  }
  char key[17];
  std::snprintf(key, sizeof key, "%016llx",
                static_cast<unsigned long long>(
                    fnv1a(uri + "\n" + info->etag + "\n" + std::to_string(info->size))));
  const std::string path = cache_dir + "/" + base + "-" + key + ".jsonl";
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec) &&
      static_cast<std::int64_t>(std::filesystem::file_size(path, ec)) == info->size && !ec) {
    return path;
  }
  std::filesystem::create_directories(cache_dir, ec);
  if (ec) return unavailable("creating manifest cache " + cache_dir + ": " + ec.message());
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return unavailable("writing manifest cache " + tmp);
  io::ObjectInfo streamed;
  Status st = io::stream_object(
      store, uri, std::int64_t{8} << 20,
      [&](std::span<const std::uint8_t> chunk, std::int64_t) -> Status {
        if (std::fwrite(chunk.data(), 1, chunk.size(), f) != chunk.size()) {
          return unavailable("writing manifest cache " + tmp);
        }
        return ok_status();
      },
      &streamed);
  const bool closed = std::fclose(f) == 0;
  if (st.ok() && !closed) st = unavailable("writing manifest cache " + tmp);
  if (st.ok() && (streamed.etag != info->etag || streamed.size != info->size)) {
    st = unavailable("manifest " + uri + " changed while it was downloaded; run again");
  }
  if (!st.ok()) {
    std::filesystem::remove(tmp, ec);
    Error e = st.error();
    return std::move(e.with_context("caching manifest " + uri));
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) return unavailable("renaming manifest cache " + tmp + ": " + ec.message());
  return path;
}

Status open_sources(const std::vector<std::string>& data, Context* ctx) {
  bool remote = false;
  for (const std::string& d : data) remote = remote || is_remote_uri(d);
  if (!remote) {
    STOKER_ASSIGN_OR_RETURN(ctx->index, dataset::ManifestIndex::open(data));
    ctx->fetcher = make_local_fetcher();
    return ok_status();
  }
  // The retry window of every request: STOKER_IO_DEADLINE_MS (default 120 s) and
  // STOKER_IO_MAX_ATTEMPTS (default 8) — what a store outage may last without stopping the run.
  io::StoreOptions options;
  if (const char* v = std::getenv("STOKER_IO_DEADLINE_MS"); v != nullptr && std::atol(v) > 0) {
    options.http.deadline = std::chrono::milliseconds(std::atol(v));
  }
  if (const char* v = std::getenv("STOKER_IO_MAX_ATTEMPTS"); v != nullptr && std::atoi(v) > 0) {
    options.http.backoff.max_attempts = std::atoi(v);
  }
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<io::ObjectStore> opened, io::open_store(options));
  std::shared_ptr<io::ObjectStore> store = std::move(opened);
  const std::string cache_dir = default_cache_dir();
  std::vector<std::string> local;
  for (const std::string& d : data) {
    if (!is_remote_uri(d)) {
      local.push_back(d);
      continue;
    }
    STOKER_ASSIGN_OR_RETURN(std::string path, cache_remote_manifest(*store, d, cache_dir));
    local.push_back(std::move(path));
  }
  STOKER_ASSIGN_OR_RETURN(ctx->index, dataset::ManifestIndex::open(local));
  ctx->manifest_uris = data;
  // STOKER_FETCH_BLOCKING=1: one blocking read per I/O pool thread (the A/B baseline).
  const char* blocking = std::getenv("STOKER_FETCH_BLOCKING");
  ctx->fetcher = make_store_fetcher(std::move(store), blocking != nullptr && *blocking == '1');
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
  for (FetchedMedia& m : fetched.media) {
    Result<ByteBudget::Lease> lease = ctx.budget->acquire(kSizeEstimate, stop);
    if (!lease.ok()) {
      fetched.media.clear();
      fetched.failure = fetch_failure(ctx, item, 0, lease.error());
      p->done(std::move(fetched));
      return;
    }
    m.lease = std::move(lease).value();
  }
  p->fetched = std::move(fetched);
  ctx.counters.add(kFetch, 0);  // fetch latency is not CPU time: count the sample only
  for (std::size_t i = 0; i < uris.size(); ++i) {
    ctx.fetcher->fetch_async(uris[i], [p, i](Result<std::vector<std::uint8_t>> r) {
      {
        std::lock_guard lock(p->mu);
        if (r.ok()) {
          FetchedMedia& m = p->fetched.media[i];
          m.lease.resize(static_cast<std::int64_t>(r->size()));
          m.bytes = std::move(r).value();
        } else if (!p->error || i < p->error->first) {
          p->error.emplace(i, r.error());
        }
        if (--p->left > 0) return;
      }
      if (p->error) {
        p->fetched.media.clear();  // returns the budget now
        p->fetched.failure =
            fetch_failure(*p->ctx, p->fetched.item, p->error->first, p->error->second);
      }
      p->done(std::move(p->fetched));
    });
  }
}

}  // namespace stoker::pipeline
