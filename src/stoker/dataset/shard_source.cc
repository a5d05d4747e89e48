#include "stoker/dataset/shard_source.h"

#include <algorithm>
#include <mutex>
#include <unordered_map>

#include "stoker/dataset/brace.h"

namespace stoker::dataset {

ShardOpener local_shard_opener(ShardOptions options, LocalIndexOptions index, std::vector<std::string>* warnings) {
  auto mu = std::make_shared<std::mutex>();
  return [options, index, warnings, mu](const std::string& path) -> Result<std::shared_ptr<WdsShard>> {
    std::vector<std::string> w;
    auto r = open_local_shard(path, options, index, &w);
    if (warnings && !w.empty()) {
      std::lock_guard lock(*mu);
      warnings->insert(warnings->end(), w.begin(), w.end());
    }
    return r;
  };
}

Result<std::unique_ptr<ShardSource>> ShardSource::open_shards(const std::string& shard_list, const ShardOpener& opener,
                                                              ShardSourceOptions options) {
  STOKER_ASSIGN_OR_RETURN(auto names, expand_shard_list(shard_list, options.max_shards));
  if (names.empty()) return invalid_argument("shard list '" + shard_list + "' names no shard");
  std::unique_ptr<ShardSource> src(new ShardSource(std::move(options)));
  for (const std::string& name : names) {
    auto shard = opener(name);
    if (!shard.ok()) return std::move(shard).error().with_context("opening shard list '" + shard_list + "'");
    Shard s;
    s.name = name;
    s.count = (*shard)->count();
    s.shard = std::move(*shard);
    if (s.shard->damage())
      src->warnings_.push_back(name + ": damaged: " + s.shard->damage()->message() + " (" +
                               std::to_string(s.count) + " samples before it are kept)");
    src->shards_.push_back(std::move(s));
  }
  src->finish();
  return src;
}

Result<std::unique_ptr<ShardSource>> ShardSource::open_energon(const std::string& root, const std::string& split_part,
                                                               const ShardOpener& opener, const TextReader& read,
                                                               ShardSourceOptions options) {
  STOKER_ASSIGN_OR_RETURN(EnergonFolder folder, read_energon_folder(root, split_part, read, options.max_shards));
  return open_energon_folder(std::move(folder), opener, std::move(options));
}

Result<std::unique_ptr<ShardSource>> ShardSource::open_energon_folder(EnergonFolder folder, const ShardOpener& opener,
                                                                      ShardSourceOptions options) {
  options.format = folder.sample.format;
  options.sample = folder.sample;
  std::unique_ptr<ShardSource> src(new ShardSource(std::move(options)));
  src->warnings_ = folder.warnings;
  // "<shard>/<key>" excludes, grouped by shard.
  std::unordered_map<std::string, std::vector<std::string>> keys_of;
  for (const std::string& e : folder.sample_excludes) {
    for (const auto& [name, count] : folder.shards) {
      if (e.size() > name.size() + 1 && e.compare(0, name.size(), name) == 0 && e[name.size()] == '/') {
        keys_of[name].push_back(e.substr(name.size() + 1));
        break;
      }
    }
  }
  for (const auto& [name, count] : folder.shards) {
    Shard s;
    s.name = join_path(folder.root, name);
    s.count = count;
    auto shard = opener(s.name);
    if (!shard.ok()) {
      s.error = std::move(shard).error();
    } else if ((*shard)->count() != count) {
      s.error = data_loss(s.name + ": its index has " + std::to_string((*shard)->count()) + " samples but .info lists " +
                          std::to_string(count));
    } else {
      s.shard = std::move(*shard);
    }
    if (s.error) src->warnings_.push_back("every sample of " + s.name + " fails: " + s.error->message());
    if (auto it = keys_of.find(name); it != keys_of.end()) {
      if (!s.shard) {
        src->warnings_.push_back(s.name + ": cannot apply its sample excludes (the shard failed)");
      } else {
        std::vector<std::string> wanted = it->second;
        for (std::int64_t i = 0; i < s.shard->count() && !wanted.empty(); ++i) {
          auto key = s.shard->key(i);
          if (!key.ok()) continue;  // a failing sample fails anyway
          auto w = std::find(wanted.begin(), wanted.end(), *key);
          if (w == wanted.end()) continue;
          s.excluded.push_back(i);
          wanted.erase(w);
        }
        for (const std::string& k : wanted)
          src->warnings_.push_back(s.name + ": exclude '" + name + "/" + k + "' matches no sample key");
      }
    }
    src->shards_.push_back(std::move(s));
  }
  src->finish();
  return src;
}

void ShardSource::finish() {
  starts_.clear();
  total_ = 0;
  for (const Shard& s : shards_) {
    starts_.push_back(total_);
    total_ += s.count - static_cast<std::int64_t>(s.excluded.size());
  }
}

std::pair<std::size_t, std::int64_t> ShardSource::locate(std::int64_t i) const {
  const auto it = std::upper_bound(starts_.begin(), starts_.end(), i);
  const std::size_t shard = static_cast<std::size_t>(it - starts_.begin()) - 1;
  std::int64_t k = i - starts_[shard];
  for (std::int64_t e : shards_[shard].excluded) {  // sorted: skip the excluded ones at or before k
    if (e <= k) ++k;
    else break;
  }
  return {shard, k};
}

void ShardSource::prefetch(std::span<const std::int64_t> samples) const {
  std::vector<std::pair<std::size_t, std::int64_t>> at;
  at.reserve(samples.size());
  for (std::int64_t i : samples)
    if (i >= 0 && i < total_) at.push_back(locate(i));
  std::sort(at.begin(), at.end());
  std::vector<std::int64_t> in_shard;
  for (std::size_t k = 0; k < at.size();) {
    const std::size_t s = at[k].first;
    in_shard.clear();
    for (; k < at.size() && at[k].first == s; ++k) in_shard.push_back(at[k].second);
    if (shards_[s].shard) shards_[s].shard->prefetch(in_shard);
  }
}

std::string ShardSource::describe(std::int64_t i) const {
  if (i < 0 || i >= total_) return "sample " + std::to_string(i) + " (out of range)";
  const auto [s, k] = locate(i);
  return shards_[s].name + ": sample " + std::to_string(k);
}

Result<SourceRecord> ShardSource::read(std::int64_t i) const {
  if (i < 0 || i >= total_)
    return invalid_argument("sample " + std::to_string(i) + " out of range (" + std::to_string(total_) + " samples)");
  const auto [s, k] = locate(i);
  const Shard& shard = shards_[s];
  if (!shard.shard) return Error(shard.error->code(), shard.name + ": sample " + std::to_string(k) + ": " + shard.error->message());
  STOKER_ASSIGN_OR_RETURN(WdsSample sample, shard.shard->read(k));
  Result<SourceRecord> r = options_.format == SampleFormat::kChatML
                               ? chatml_record(*shard.shard, sample, options_.sample, options_.pickle)
                               : crude_record(*shard.shard, sample);
  if (r.ok() && r->subflavors.empty() && options_.sample.subflavors != "{}") r->subflavors = options_.sample.subflavors;
  if (r.ok() && sample.bytes) {
    r->bytes = sample.bytes;
    r->bytes_offset = sample.bytes_offset;
  }
  return r;
}

}  // namespace stoker::dataset
