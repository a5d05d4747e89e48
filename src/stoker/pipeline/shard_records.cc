#include "stoker/pipeline/shard_records.h"

#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <list>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "stoker/base/clock.h"
#include "stoker/base/file.h"
#include "stoker/base/redact.h"
#include "stoker/base/sha256.h"
#include "stoker/dataset/byte_source.h"
#include "stoker/dataset/shard_source.h"
#include "stoker/io/uri.h"

namespace stoker::pipeline {
namespace {

namespace fs = std::filesystem;

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string parent_of(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string absolute_path(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::absolute(path, ec);
  return ec ? path : p.lexically_normal().string();
}

std::string strip_slashes(std::string s) {
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

// Writes `bytes` to `path` under a unique temporary name, then renames (concurrent ranks never
// see a torn file).
Status write_atomic(const std::string& path, std::span<const std::uint8_t> bytes) {
  static std::atomic<std::uint64_t> counter{0};
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  if (Status st = write_file(tmp, bytes); !st.ok()) {
    std::remove(tmp.c_str());
    return st;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return permission_denied(path + ": cannot rename into place: " + std::strerror(err));
  }
  return ok_status();
}

std::string cache_name(const std::string& uri, const io::ObjectInfo& info, std::string_view suffix) {
  std::string base = uri.substr(uri.rfind('/') + 1);
  if (base.size() > 64) base.resize(64);
  for (char& c : base)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) c = '_';
  return base + "-" + sha256_hex(uri + "\n" + info.etag + "\n" + std::to_string(info.size)).substr(0, 24) +
         std::string(suffix);
}

// Ranges of remote shards read ahead on a hint (ByteSource::prefetch, from the engine's
// RecordSource::prefetch): one ranged GET per hinted range (a run of adjacent samples), all in
// flight at once on the store's I/O thread; a read_at inside a range waits for it and copies
// from it. Bounded: at most kMaxBytes / kMaxRanges held by ranges not yet read — a hint beyond
// that is dropped (that read then goes out on its own, as without a hint); a range leaves once
// its bytes were read, or failed (the read then goes out on its own and reports its own error);
// a range left unread for kStaleNs (a hint whose read never came: a restarted engine) is
// dropped when room is needed. Never changes the bytes read_at returns: the same object version
// (If-Match), the same offsets, and the shard layer checks them as before.
class PrefetchPool {
 public:
  static constexpr std::int64_t kMaxBytes = std::int64_t{64} << 20;
  static constexpr std::size_t kMaxRanges = 1024;
  static constexpr std::int64_t kStaleNs = std::int64_t{5} * 1000 * 1000 * 1000;

  struct Range {
    std::uint64_t object = 0;
    std::int64_t offset = 0, length = 0;
    std::int64_t created_ns = 0;
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    bool ok = false;
    io::Bytes bytes;
    std::int64_t served = 0;  // under the pool's mutex
  };

  // A new range to start, or null (one covering it is there, or no room).
  std::shared_ptr<Range> add(std::uint64_t object, std::int64_t offset, std::int64_t length) {
    std::lock_guard lock(mu_);
    for (const auto& r : ranges_)
      if (r->object == object && r->offset <= offset && offset + length <= r->offset + r->length) return nullptr;
    const std::int64_t now = now_ns();
    if (bytes_ + length > kMaxBytes || ranges_.size() >= kMaxRanges) {
      for (auto it = ranges_.begin(); it != ranges_.end();) {
        bool stale = now - (*it)->created_ns > kStaleNs;
        if (stale) {
          std::lock_guard rl((*it)->mu);
          stale = (*it)->done;
        }
        if (stale) {
          bytes_ -= (*it)->length;
          it = ranges_.erase(it);
        } else {
          ++it;
        }
      }
      if (bytes_ + length > kMaxBytes || ranges_.size() >= kMaxRanges) return nullptr;
    }
    auto r = std::make_shared<Range>();
    r->object = object;
    r->offset = offset;
    r->length = length;
    r->created_ns = now;
    ranges_.push_back(r);
    bytes_ += length;
    return r;
  }

  std::shared_ptr<Range> find(std::uint64_t object, std::int64_t offset, std::int64_t length) {
    std::lock_guard lock(mu_);
    for (const auto& r : ranges_)
      if (r->object == object && r->offset <= offset && offset + length <= r->offset + r->length) return r;
    return nullptr;
  }

  // `n` bytes of `r` were read (all of it: `drop`); it leaves once all were.
  void served(const std::shared_ptr<Range>& r, std::int64_t n, bool drop) {
    std::lock_guard lock(mu_);
    r->served += n;
    if (!drop && r->served < r->length) return;
    for (auto it = ranges_.begin(); it != ranges_.end(); ++it) {
      if (*it == r) {
        bytes_ -= r->length;
        ranges_.erase(it);
        return;
      }
    }
  }

 private:
  std::mutex mu_;
  std::list<std::shared_ptr<Range>> ranges_;
  std::int64_t bytes_ = 0;
};

// A remote shard: HEAD's size and ETag, ranged GETs with If-Match, hinted ranges read ahead.
class RemoteShardBytes final : public dataset::ByteSource {
 public:
  RemoteShardBytes(std::shared_ptr<io::ObjectStore> store, std::string uri, std::string shown, io::ObjectInfo info,
                   std::shared_ptr<PrefetchPool> pool)
      : store_(std::move(store)), uri_(std::move(uri)), shown_(std::move(shown)), info_(std::move(info)),
        pool_(std::move(pool)) {
    static std::atomic<std::uint64_t> next_id{1};
    id_ = next_id++;
  }

  const std::string& name() const override { return shown_; }
  std::int64_t size() const override { return info_.size; }

  Status read_at(std::int64_t offset, std::span<std::uint8_t> out) const override {
    const auto n = static_cast<std::int64_t>(out.size());
    if (offset < 0 || offset + n > info_.size) return data_loss("truncated");
    if (std::shared_ptr<PrefetchPool::Range> r = pool_->find(id_, offset, n)) {
      bool ok = false;
      {
        std::unique_lock lock(r->mu);
        r->cv.wait(lock, [&] { return r->done; });
        ok = r->ok && static_cast<std::int64_t>(r->bytes.size()) == r->length;
        if (ok) std::memcpy(out.data(), r->bytes.data() + (offset - r->offset), out.size());
      }
      pool_->served(r, n, !ok);
      if (ok) return ok_status();
    }
    STOKER_ASSIGN_OR_RETURN(io::Bytes b, io::read_sync(*store_, uri_, {.offset = offset, .length = n, .if_match = info_.etag}));
    if (static_cast<std::int64_t>(b.size()) != n) return data_loss("short ranged read");
    std::memcpy(out.data(), b.data(), b.size());
    return ok_status();
  }

  void prefetch(std::int64_t offset, std::int64_t length) const override {
    if (offset < 0 || length <= 0 || offset + length > info_.size) return;
    std::shared_ptr<PrefetchPool::Range> r = pool_->add(id_, offset, length);
    if (!r) return;
    store_->read(uri_, {.offset = offset, .length = length, .if_match = info_.etag}, [r](Result<io::Bytes> b) {
      std::lock_guard lock(r->mu);
      r->ok = b.ok();
      if (b.ok()) r->bytes = std::move(b).value();
      r->done = true;
      r->cv.notify_all();
    });
  }

 private:
  std::shared_ptr<io::ObjectStore> store_;
  std::string uri_, shown_;
  io::ObjectInfo info_;
  std::shared_ptr<PrefetchPool> pool_;
  std::uint64_t id_ = 0;
};

// Shards of any scheme: local ones through dataset::open_local_shard (pread; index beside the
// shard or in the cache), remote ones through the store (HEAD, ranged GETs with If-Match).
dataset::ShardOpener store_shard_opener(std::shared_ptr<io::ObjectStore> store, std::string cache_dir,
                                        dataset::ShardOptions options, std::vector<std::string>* warnings,
                                        std::shared_ptr<std::mutex> mu) {
  auto pool = std::make_shared<PrefetchPool>();
  return [store, cache_dir, options, warnings, mu, pool](const std::string& path) -> Result<std::shared_ptr<dataset::WdsShard>> {
    std::vector<std::string> w;
    auto note = [&] {
      if (warnings != nullptr && !w.empty()) {
        std::lock_guard lock(*mu);
        warnings->insert(warnings->end(), w.begin(), w.end());
      }
    };
    if (!io::is_remote_uri(path)) {
      auto r = dataset::open_local_shard(path, options, {.cache_dir = cache_dir}, &w);
      note();
      return r;
    }
    // The index beside the shard is asked for with the HEAD (one round trip for both).
    exec::Future<io::Bytes> beside = store->read(dataset::tar_index_path(path), {.max_bytes = std::int64_t{256} << 20});
    STOKER_ASSIGN_OR_RETURN(io::ObjectInfo info, io::head_sync(*store, path));
    const std::string shown = redact_secrets(path);
    std::shared_ptr<const dataset::ByteSource> source =
        std::make_shared<RemoteShardBytes>(store, path, shown, info, pool);
    // The index beside the shard, else our cached one.
    const std::string cached = cache_dir.empty() ? std::string() : (fs::path(cache_dir) / cache_name(path, info, ".tar.idx")).string();
    // The index is checked against the shard by reading its first sample's headers and the
    // block after its end: both hinted first, so they go out together (one round trip).
    auto hint_index_checks = [&](std::span<const std::uint8_t> idx) {
      auto offsets = dataset::decode_tar_index(idx, info.size, path);
      if (!offsets.ok() || offsets->size() < 2) return;
      const auto first = static_cast<std::int64_t>(offsets->front());
      const auto end = static_cast<std::int64_t>(offsets->back());
      source->prefetch(first, std::min<std::int64_t>(dataset::kTarBlock * 4, info.size - first));
      if (end < info.size) source->prefetch(end, std::min<std::int64_t>(dataset::kTarBlock, info.size - end));
    };
    if (auto idx = std::move(beside.get()); idx.ok()) {
      hint_index_checks(*idx);
      auto s = dataset::WdsShard::from_index(source, *idx, options);
      if (s.ok()) return s;
      w.push_back(shown + ": its .tar.idx is not used: " + s.error().message() + " (scanning instead)");
    }
    if (!cached.empty()) {
      if (auto idx = read_file(cached); idx.ok()) {
        hint_index_checks(*idx);
        auto s = dataset::WdsShard::from_index(source, *idx, options);
        if (s.ok()) {
          note();
          return s;
        }
        w.push_back(cached + ": cached index not used: " + s.error().message());
      }
    }
    auto scanned = dataset::WdsShard::from_scan(source, options);
    if (scanned.ok() && (*scanned)->cacheable() && !cached.empty()) {
      std::error_code ec;
      fs::create_directories(cache_dir, ec);
      if (Status st = write_atomic(cached, (*scanned)->index_bytes()); !st.ok())
        w.push_back(shown + ": index not cached: " + st.error().message());
    }
    note();
    return scanned;
  };
}

dataset::TextReader store_text_reader(std::shared_ptr<io::ObjectStore> store) {
  return [store](const std::string& path) -> Result<std::string> {
    if (!io::is_remote_uri(path)) return dataset::local_text_reader()(path);
    STOKER_ASSIGN_OR_RETURN(io::Bytes b, io::read_sync(*store, path, {.max_bytes = std::int64_t{64} << 20}));
    return std::string(b.begin(), b.end());
  };
}

// One shard list or one Energon split as a RecordSource.
class ShardRecords final : public dataset::RecordSource {
 public:
  ShardRecords(std::unique_ptr<dataset::ShardSource> src, std::vector<io::MediaScope> scopes,
               std::vector<std::size_t> scope_of, std::vector<std::string> warnings, std::string kind)
      : src_(std::move(src)), scopes_(std::move(scopes)), scope_of_(std::move(scope_of)),
        warnings_(std::move(warnings)), kind_(std::move(kind)) {
    for (const auto& s : src_->shards()) {
      names_.push_back(redact_secrets(s.name));
      objects_.push_back(io::is_remote_uri(s.name) ? s.name : absolute_path(s.name));
    }
  }

  std::uint64_t size() const override { return static_cast<std::uint64_t>(src_->count()); }

  Status read(std::uint64_t id, std::string& out) const override {
    Slot& slot = slot_for(id);
    if (slot.error) return *slot.error;
    out = slot.text;
    return ok_status();
  }

  dataset::RecordOrigin origin(std::uint64_t id) const override {
    const auto [s, k] = src_->locate(static_cast<std::int64_t>(id));
    return {names_[s], static_cast<std::uint64_t>(k) + 1};
  }

  void prefetch(std::span<const std::uint64_t> ids) const override {
    std::vector<std::int64_t> samples(ids.begin(), ids.end());
    src_->prefetch(samples);
  }

  const dataset::MediaResolver& media(std::uint64_t id) const override {
    Slot& slot = t_slot;
    if (slot.owner != this || slot.id != id) (void)slot_for(id);
    return slot;
  }

  std::vector<std::string> warnings() const override {
    std::vector<std::string> w = src_->warnings();
    w.insert(w.end(), warnings_.begin(), warnings_.end());
    return w;
  }

  std::string identity() const override {
    std::string out;
    for (std::size_t i = 0; i < src_->shards().size(); ++i) {
      const auto& s = src_->shards()[i];
      out += kind_ + " " + objects_[i] + " samples=" + std::to_string(s.count);
      if (s.shard) out += " bytes=" + std::to_string(s.shard->source().size());
      out += " excluded=" + std::to_string(s.excluded.size()) + "\n";
    }
    return out;
  }

 private:
  // The record this thread read last, with its media context.
  struct Slot final : dataset::MediaResolver {
    const ShardRecords* owner = nullptr;
    std::uint64_t id = 0;
    std::size_t shard = 0;
    std::string text;
    std::vector<std::pair<std::string, dataset::ByteRange>> ranges;
    std::optional<Error> error;

    Result<std::string> resolve(std::string_view ref) const override {
      if (owner == nullptr) return failed_precondition("no record read on this thread");
      for (const auto& [r, range] : ranges) {
        if (r != ref) continue;
        if (range.object != owner->src_->shards()[shard].name)
          return invalid_argument(std::string(ref) + ": names bytes of another object");
        return range_uri(owner->objects_[shard], range.offset, range.length);
      }
      return owner->scopes_[owner->scope_of_[shard]].resolve(ref);
    }
  };
  static thread_local Slot t_slot;

  Slot& slot_for(std::uint64_t id) const {
    Slot& slot = t_slot;
    slot.owner = this;
    slot.id = id;
    slot.shard = src_->locate(static_cast<std::int64_t>(id)).first;
    slot.ranges.clear();
    slot.error.reset();
    Result<dataset::SourceRecord> r = src_->read(static_cast<std::int64_t>(id));
    if (!r.ok()) {
      slot.text.clear();
      slot.error = std::move(r).error();
      return slot;
    }
    slot.text = std::move(r->text);
    slot.ranges = std::move(r->media);
    // Media already in memory with the sample: the fetcher takes them from here (no second read).
    if (r->bytes) {
      const std::int64_t end = r->bytes_offset + static_cast<std::int64_t>(r->bytes->size());
      for (const auto& [ref, range] : slot.ranges) {
        if (range.object == src_->shards()[slot.shard].name && range.offset >= r->bytes_offset &&
            range.offset + range.length <= end) {
          RangeBytes::shared().offer(range_uri(objects_[slot.shard], range.offset, range.length), r->bytes,
                                     range.offset - r->bytes_offset, range.length);
        }
      }
    }
    return slot;
  }

  std::unique_ptr<dataset::ShardSource> src_;
  std::vector<io::MediaScope> scopes_;
  std::vector<std::size_t> scope_of_;  // per shard
  std::vector<std::string> warnings_;
  std::string kind_;
  std::vector<std::string> names_;    // per shard, redacted
  std::vector<std::string> objects_;  // per shard: absolute path or URI
};

thread_local ShardRecords::Slot ShardRecords::t_slot;

// Each shard's folder gets a scope (its media references resolve there), with the dataset's
// own folders (`extra_roots`) and the user's media roots as roots.
Result<std::pair<std::vector<io::MediaScope>, std::vector<std::size_t>>> shard_scopes(
    const dataset::ShardSource& src, const io::MediaAccess& access, const std::vector<std::string>& extra_roots) {
  io::MediaAccess a = access;
  for (const std::string& r : extra_roots) a.media_roots.push_back(r);
  std::vector<io::MediaScope> scopes;
  std::vector<std::size_t> scope_of;
  std::map<std::string, std::size_t> by_folder;
  for (const auto& s : src.shards()) {
    const std::string folder = parent_of(s.name);
    auto it = by_folder.find(folder);
    if (it == by_folder.end()) {
      // A missing folder (an Energon shard that is not there) gets the dataset's scope.
      Result<io::MediaScope> scope = io::MediaScope::make(s.name, a);
      if (!scope.ok() && !extra_roots.empty()) scope = io::MediaScope::make(extra_roots.front() + "/.nv-meta", a);
      if (!scope.ok()) return std::move(scope).error();
      it = by_folder.emplace(folder, scopes.size()).first;
      scopes.push_back(std::move(scope).value());
    }
    scope_of.push_back(it->second);
  }
  return std::make_pair(std::move(scopes), std::move(scope_of));
}

// The local folders a shard list's shards lie in (absolute), distinct, in order.
Result<std::vector<std::string>> shard_folders(std::string_view spec) {
  STOKER_ASSIGN_OR_RETURN(std::vector<std::string> names, dataset::expand_shard_list(spec));
  std::vector<std::string> out;
  for (const std::string& n : names) {
    if (io::is_remote_uri(n)) continue;
    std::string f = absolute_path(parent_of(n));
    bool seen = false;
    for (const auto& o : out) seen = seen || o == f;
    if (!seen) out.push_back(std::move(f));
  }
  return out;
}

dataset::ShardOptions shard_options(const SourceOptions& o) {
  dataset::ShardOptions s;
  s.limits.max_member_bytes = o.max_object_bytes;
  return s;
}

Result<io::MediaScope> wds_scope(std::string_view spec, const io::MediaAccess& access) {
  STOKER_ASSIGN_OR_RETURN(std::vector<std::string> names, dataset::expand_shard_list(spec));
  if (names.empty()) return invalid_argument("shard list '" + std::string(spec) + "' names no shard");
  if (io::is_remote_uri(names.front())) return io::MediaScope::make(names.front(), access);
  io::MediaAccess a = access;
  STOKER_ASSIGN_OR_RETURN(std::vector<std::string> folders, shard_folders(spec));
  for (const auto& f : folders) {
    if (!fs::is_directory(f)) return not_found("shard list '" + std::string(spec) + "': no folder " + f);
    a.media_roots.push_back(f);
  }
  return io::MediaScope::make(names.front(), a);
}

// Opens every shard of `names` with `opener`, up to 16 at once (remote shards: a HEAD and an
// index GET each, so a long list opens in a few round trips, not one per shard). The returned
// opener hands out those results by name (and opens any other name itself).
dataset::ShardOpener preopened(const dataset::ShardOpener& opener, const std::vector<std::string>& names) {
  using Opened = Result<std::shared_ptr<dataset::WdsShard>>;
  auto results = std::make_shared<std::map<std::string, Opened>>();
  const std::size_t n = names.size();
  const std::size_t workers = std::min<std::size_t>(16, n);
  std::vector<std::optional<Opened>> out(n);
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> threads;
  for (std::size_t w = 0; w + 1 < workers; ++w) {
    threads.emplace_back([&] {
      for (std::size_t i = next++; i < n; i = next++) out[i].emplace(opener(names[i]));
    });
  }
  for (std::size_t i = next++; i < n; i = next++) out[i].emplace(opener(names[i]));
  for (std::thread& t : threads) t.join();
  for (std::size_t i = 0; i < n; ++i) results->emplace(names[i], std::move(*out[i]));
  return [results, opener](const std::string& name) -> Opened {
    auto it = results->find(name);
    return it != results->end() ? it->second : opener(name);
  };
}

Result<std::unique_ptr<dataset::RecordSource>> open_one_shard_list(const std::string& spec, const SourceEnv& env) {
  auto warnings = std::make_shared<std::vector<std::string>>();
  auto mu = std::make_shared<std::mutex>();
  dataset::ShardOpener opener = store_shard_opener(env.store, env.cache_dir, shard_options(*env.options), warnings.get(), mu);
  // Remote lists are opened concurrently (local shards: a pread or two each, no need).
  if (io::is_remote_uri(spec)) {
    STOKER_ASSIGN_OR_RETURN(std::vector<std::string> names, dataset::expand_shard_list(spec));
    opener = preopened(opener, names);
  }
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<dataset::ShardSource> src, dataset::ShardSource::open_shards(spec, opener));
  std::vector<std::string> roots;
  if (auto f = shard_folders(spec); f.ok()) roots = *f;
  STOKER_ASSIGN_OR_RETURN(auto scopes, shard_scopes(*src, env.options->access, roots));
  return std::unique_ptr<dataset::RecordSource>(new ShardRecords(std::move(src), std::move(scopes.first),
                                                                 std::move(scopes.second), *warnings, "wds"));
}

Result<std::unique_ptr<dataset::RecordSource>> open_shard_lists(SourceEnv env) {
  std::vector<std::unique_ptr<dataset::RecordSource>> parts;
  for (const std::string& spec : env.specs) {
    STOKER_ASSIGN_OR_RETURN(auto part, open_one_shard_list(spec, env));
    parts.push_back(std::move(part));
  }
  if (parts.size() == 1) return std::move(parts[0]);
  return std::unique_ptr<dataset::RecordSource>(new dataset::ConcatSource(std::move(parts)));
}

std::string energon_root(std::string_view spec) {
  std::string root(spec);
  return io::is_remote_uri(root) ? root : strip_slashes(root);
}

Result<io::MediaScope> energon_scope(std::string_view spec, const io::MediaAccess& access) {
  const std::string root = energon_root(spec);
  if (io::is_remote_uri(root)) return io::MediaScope::make(dataset::join_path(root, ".nv-meta/dataset.yaml"), access);
  io::MediaAccess a = access;
  a.media_roots.push_back(root);
  return io::MediaScope::make(root + "/.nv-meta/dataset.yaml", a);
}

Result<std::unique_ptr<dataset::RecordSource>> open_energon(SourceEnv env) {
  std::vector<std::unique_ptr<dataset::RecordSource>> parts;
  for (const std::string& spec : env.specs) {
    STOKER_ASSIGN_OR_RETURN(auto part, open_energon_split(spec, "train", env));
    parts.push_back(std::move(part));
  }
  if (parts.size() == 1) return std::move(parts[0]);
  return std::unique_ptr<dataset::RecordSource>(new dataset::ConcatSource(std::move(parts)));
}

}  // namespace

Result<std::unique_ptr<dataset::RecordSource>> open_energon_split(const std::string& spec, const std::string& split_part,
                                                                  const SourceEnv& env) {
  const std::string root = energon_root(spec);
  auto warnings = std::make_shared<std::vector<std::string>>();
  auto mu = std::make_shared<std::mutex>();
  dataset::ShardOpener opener = store_shard_opener(env.store, env.cache_dir, shard_options(*env.options), warnings.get(), mu);
  STOKER_ASSIGN_OR_RETURN(dataset::EnergonFolder folder,
                          dataset::read_energon_folder(root, split_part, store_text_reader(env.store)));
  if (io::is_remote_uri(root)) {  // remote shards opened concurrently (preopened)
    std::vector<std::string> names;
    for (const auto& [name, count] : folder.shards) names.push_back(dataset::join_path(folder.root, name));
    opener = preopened(opener, names);
  }
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<dataset::ShardSource> src,
                          dataset::ShardSource::open_energon_folder(std::move(folder), opener));
  std::vector<std::string> roots;
  if (!io::is_remote_uri(root)) roots.push_back(absolute_path(root));
  STOKER_ASSIGN_OR_RETURN(auto scopes, shard_scopes(*src, env.options->access, roots));
  return std::unique_ptr<dataset::RecordSource>(new ShardRecords(std::move(src), std::move(scopes.first),
                                                                 std::move(scopes.second), *warnings, "energon"));
}

Result<io::MediaScope> energon_media_scope(std::string_view spec, const io::MediaAccess& access) {
  return energon_scope(spec, access);
}

namespace {

const RecordSourceKind kWds = {"webdataset", [](std::string_view s) { return is_shard_list_spec(s); },
                               open_shard_lists, wds_scope};
const RecordSourceKind kEnergon = {"energon", [](std::string_view s) { return is_energon_spec(s); }, open_energon,
                                   energon_scope};

}  // namespace

const RecordSourceKind* wds_record_source_kind() { return &kWds; }
const RecordSourceKind* energon_record_source_kind() { return &kEnergon; }

bool is_shard_list_spec(std::string_view spec) {
  if (spec.empty()) return false;
  std::size_t start = 0;
  for (;;) {
    const std::size_t sep = spec.find("::", start);
    const std::string_view part = spec.substr(start, sep == std::string_view::npos ? spec.npos : sep - start);
    // "x-{000..127}.tar", "{a,b}.tar", "{a.tar,b.tar}"
    if (!ends_with(part, ".tar") && !(ends_with(part, "}") && part.find(".tar") != part.npos)) return false;
    if (sep == std::string_view::npos) return true;
    start = sep + 2;
  }
}

bool is_energon_spec(std::string_view spec) {
  if (spec.empty()) return false;
  if (io::is_remote_uri(spec)) return spec.back() == '/';
  std::error_code ec;
  return fs::is_directory(fs::path(std::string(spec)) / ".nv-meta", ec);
}

Result<std::string> decompress_remote_jsonl(io::ObjectStore& store, const std::string& uri, const std::string& cache_dir,
                                            const dataset::DecompressOptions& options) {
  const dataset::Compression c = dataset::compression_of(uri);
  if (c == dataset::Compression::kNone) return invalid_argument(redact_secrets(uri) + ": not .jsonl.gz / .jsonl.zst");
  STOKER_ASSIGN_OR_RETURN(io::ObjectInfo head, io::head_sync(store, uri));
  std::string base = cache_name(uri, head, ".jsonl");
  const std::string out = (fs::path(cache_dir) / base).string();
  if (::access(out.c_str(), R_OK) == 0) return out;
  std::error_code ec;
  fs::create_directories(cache_dir, ec);
  static std::atomic<std::uint64_t> counter{0};
  const std::string tmp = out + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  FILE* f = nullptr;
  std::unique_ptr<dataset::JsonlDecompressor> dec;
  auto restart = [&]() -> Status {
    if (f != nullptr) std::fclose(f);
    f = std::fopen(tmp.c_str(), "wb");
    if (f == nullptr) return permission_denied(tmp + ": cannot create: " + std::strerror(errno));
    STOKER_ASSIGN_OR_RETURN(dec, dataset::JsonlDecompressor::create(
                                     c, redact_secrets(uri), options, [&f](std::span<const std::uint8_t> b) -> Status {
                                       if (std::fwrite(b.data(), 1, b.size(), f) != b.size())
                                         return resource_exhausted("cannot write the decompressed copy (disk full?)");
                                       return ok_status();
                                     }));
    return ok_status();
  };
  Status st = io::stream_object(store, uri, std::int64_t{8} << 20,
                                [&](std::span<const std::uint8_t> chunk, std::int64_t offset) -> Status {
                                  if (offset == 0 || !dec) STOKER_RETURN_IF_ERROR(restart());
                                  return dec->feed(chunk);
                                });
  if (st.ok() && dec) st = dec->finish();
  if (f != nullptr && std::fclose(f) != 0 && st.ok()) st = resource_exhausted(tmp + ": cannot write");
  if (st.ok() && std::rename(tmp.c_str(), out.c_str()) != 0) st = permission_denied(out + ": cannot rename into place");
  if (!st.ok()) {
    std::remove(tmp.c_str());
    return st.error();
  }
  return out;
}

}  // namespace stoker::pipeline
