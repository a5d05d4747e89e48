#include "stoker/dataset/wds.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <unordered_map>

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "stoker/base/file.h"
#include "stoker/base/mix.h"

namespace stoker::dataset {
namespace {

std::string quote(std::string_view s) {
  std::string out = "'";
  for (char c : s.substr(0, 200)) out += (static_cast<unsigned char>(c) < 0x20) ? '?' : c;
  if (s.size() > 200) out += "...";
  return out + "'";
}

std::string sample_name(const std::string& shard, std::int64_t i, std::string_view key = {}) {
  std::string s = shard + ": sample " + std::to_string(i);
  if (!key.empty()) s += " (key " + quote(key) + ")";
  return s;
}

std::string lower_ascii(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

}  // namespace

std::optional<std::pair<std::string_view, std::string_view>> split_sample_name(std::string_view name) {
  // ^((?:.*/|)[^.]+)[.]([^/]*)$ — the regex engine tries the longest "…/" prefix first, then
  // shorter ones, then none; for each, the key runs to the first dot after the prefix (at least
  // one character) and the part after that dot must hold no '/'.
  const std::size_t last_slash = name.rfind('/');
  for (std::size_t pre = name.size() + 1; pre-- > 0;) {
    if (pre > 0 && name[pre - 1] != '/') continue;
    const std::size_t dot = name.find('.', pre);
    if (dot == std::string_view::npos) return std::nullopt;  // shorter prefixes find no dot either
    if (dot == pre) continue;                                  // empty key: try a shorter prefix
    if (last_slash != std::string_view::npos && dot < last_slash) return std::nullopt;
    return std::pair{name.substr(0, dot), name.substr(dot + 1)};
  }
  return std::nullopt;
}

bool is_meta_member(std::string_view name) {
  if (name.size() < 4 || name.compare(0, 2, "__") != 0) return false;
  const std::size_t slash = name.find('/');
  const std::string_view seg = name.substr(0, slash);
  return seg.size() >= 4 && seg.compare(seg.size() - 2, 2, "__") == 0;
}

std::vector<std::uint8_t> encode_tar_index(std::span<const std::uint64_t> offsets) {
  std::vector<std::uint8_t> out(offsets.size() * 8);
  for (std::size_t i = 0; i < offsets.size(); ++i)
    for (int b = 0; b < 8; ++b) out[i * 8 + b] = static_cast<std::uint8_t>(offsets[i] >> (8 * b));
  return out;
}

Result<std::vector<std::uint64_t>> decode_tar_index(std::span<const std::uint8_t> bytes,
                                                    std::int64_t shard_size, const std::string& name) {
  if (bytes.size() < 8 || bytes.size() % 8 != 0)
    return invalid_argument(name + ": " + std::to_string(bytes.size()) +
                            " bytes is not a .tar.idx (N+1 little-endian uint64)");
  std::vector<std::uint64_t> out(bytes.size() / 8);
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::uint64_t v = 0;
    for (int b = 7; b >= 0; --b) v = (v << 8) | bytes[i * 8 + b];
    if (v % kTarBlock != 0)
      return invalid_argument(name + ": entry " + std::to_string(i) + " (" + std::to_string(v) +
                              ") is not at a 512-byte header boundary");
    if (i > 0 && v <= out[i - 1])
      return invalid_argument(name + ": entry " + std::to_string(i) + " (" + std::to_string(v) +
                              ") does not follow entry " + std::to_string(i - 1) + " (" +
                              std::to_string(out[i - 1]) + ")");
    out[i] = v;
  }
  if (out.back() > static_cast<std::uint64_t>(shard_size))
    return invalid_argument(name + ": ends at byte " + std::to_string(out.back()) +
                            " but the shard has " + std::to_string(shard_size) + " (stale index)");
  return out;
}

std::string tar_index_path(const std::string& shard_path) {
  const std::size_t slash = shard_path.rfind('/');
  const std::size_t dot = shard_path.rfind('.');
  const bool has_suffix = dot != std::string::npos && (slash == std::string::npos || dot > slash + 1);
  return (has_suffix ? shard_path.substr(0, dot) : shard_path) + ".tar.idx";
}

const WdsPart* WdsSample::find(std::string_view part) const {
  for (const WdsPart& p : parts)
    if (p.name == part) return &p;
  return nullptr;
}

std::optional<std::span<const std::uint8_t>> WdsSample::data(const WdsPart& part) const {
  if (!bytes || part.offset < bytes_offset ||
      part.offset - bytes_offset + part.size > static_cast<std::int64_t>(bytes->size()))
    return std::nullopt;
  return std::span<const std::uint8_t>(bytes->data() + (part.offset - bytes_offset),
                                       static_cast<std::size_t>(part.size));
}

Result<std::shared_ptr<WdsShard>> WdsShard::from_scan(std::shared_ptr<const ByteSource> source,
                                                      const ShardOptions& options) {
  std::shared_ptr<WdsShard> shard(new WdsShard(std::move(source), options));
  shard->scanned_ = true;
  const std::string& name = shard->name();
  TarReader reader(*shard->source_, options.limits, 0, options.scan_chunk_bytes);
  std::map<std::int64_t, Error> problems;
  std::unordered_map<std::string, std::int64_t> first_index;  // key -> first sample holding it
  std::vector<std::string> parts;  // of the sample in progress
  std::string key;
  bool in_sample = false;
  auto flag = [&](std::int64_t i, Error e) { problems.emplace(i, std::move(e)); };
  for (;;) {
    auto next = reader.next();
    if (!next.ok()) {
      Error damage = std::move(next).error();
      // The sample in progress is complete only when the damaged member is known to be another's.
      bool other = false;
      if (const auto& dm = reader.damaged_member()) {
        const auto split = split_sample_name(*dm);
        other = is_meta_member(*dm) || !split || split->first != key;
      }
      if (in_sample && !other) {
        const std::int64_t i = static_cast<std::int64_t>(shard->offsets_.size()) - 1;
        problems.insert_or_assign(i, Error(damage.code(), sample_name(name, i, key) +
                                           ": the shard is damaged before its end: " + damage.message()));
      }
      // A readable header of another sample whose data is cut off (a truncated shard): that
      // sample is in the shard as far as its writer knew — it fails, named, instead of vanishing.
      if (other && reader.damaged_member() && !is_meta_member(*reader.damaged_member())) {
        const std::string dm = *reader.damaged_member();
        if (const auto split = split_sample_name(dm)) {
          const std::int64_t at = reader.offset();
          shard->offsets_.push_back(static_cast<std::uint64_t>(at));
          const std::int64_t i = static_cast<std::int64_t>(shard->offsets_.size()) - 1;
          problems.insert_or_assign(i, Error(damage.code(), sample_name(name, i, std::string(split->first)) +
                                                 ": member " + quote(dm) + ": " + damage.message()));
          shard->offsets_.push_back(static_cast<std::uint64_t>(at + kTarBlock));
          shard->damage_ = std::move(damage);
          break;
        }
      }
      shard->offsets_.push_back(static_cast<std::uint64_t>(reader.offset()));
      shard->damage_ = std::move(damage);
      break;
    }
    if (!next->has_value()) {
      shard->offsets_.push_back(static_cast<std::uint64_t>(reader.offset()));
      break;
    }
    const TarMember& m = **next;
    if (!m.regular || is_meta_member(m.name)) continue;
    const auto split = split_sample_name(m.name);
    if (!split) continue;
    const std::string part = options.lowercase_parts ? lower_ascii(split->second) : std::string(split->second);
    if (!in_sample || split->first != key) {
      key.assign(split->first);
      in_sample = true;
      parts.clear();
      const std::int64_t i = static_cast<std::int64_t>(shard->offsets_.size());
      shard->offsets_.push_back(static_cast<std::uint64_t>(m.offset));
      auto [it, fresh] = first_index.emplace(key, i);
      if (!fresh) {
        const std::string why = "key " + quote(key) + " is held by samples " +
                                std::to_string(it->second) + " and " + std::to_string(i) +
                                " of this shard (member " + quote(m.name) + " at byte " +
                                std::to_string(m.offset) +
                                "): a sample's members must be adjacent and its key unique";
        flag(it->second, data_loss(sample_name(name, it->second, key) + ": " + why));
        flag(i, data_loss(sample_name(name, i, key) + ": " + why));
      }
    }
    const std::int64_t i = static_cast<std::int64_t>(shard->offsets_.size()) - 1;
    if (std::find(parts.begin(), parts.end(), part) != parts.end())
      flag(i, data_loss(sample_name(name, i, key) + ": two members named " + quote(m.name)));
    parts.push_back(part);
    if (m.size > options.limits.max_member_bytes)
      flag(i, resource_exhausted(sample_name(name, i, key) + ": member " + quote(m.name) + " is " +
                                 std::to_string(m.size) + " bytes, over the cap of " +
                                 std::to_string(options.limits.max_member_bytes)));
  }
  for (auto& [i, e] : problems) shard->problems_.push_back({i, std::move(e)});
  return shard;
}

Result<std::shared_ptr<WdsShard>> WdsShard::from_index(std::shared_ptr<const ByteSource> source,
                                                       std::span<const std::uint8_t> index_bytes,
                                                       const ShardOptions& options) {
  std::shared_ptr<WdsShard> shard(new WdsShard(std::move(source), options));
  const std::string idx_name = tar_index_path(shard->name());
  STOKER_ASSIGN_OR_RETURN(shard->offsets_,
                          decode_tar_index(index_bytes, shard->source_->size(), idx_name));
  const ByteSource& src = *shard->source_;
  if (shard->count() > 0) {
    TarReader r(src, options.limits, static_cast<std::int64_t>(shard->offsets_[0]), kTarBlock * 4);
    auto first = r.next();
    if (!first.ok() || !first->has_value())
      return invalid_argument(idx_name + ": disagrees with the shard: no member header at byte " +
                              std::to_string(shard->offsets_[0]) +
                              (first.ok() ? std::string() : ": " + first.error().message()));
  }
  const std::int64_t end = static_cast<std::int64_t>(shard->offsets_.back());
  if (end != src.size()) {
    std::vector<std::uint8_t> block(static_cast<std::size_t>(std::min<std::int64_t>(kTarBlock, src.size() - end)));
    STOKER_RETURN_IF_ERROR(src.read_at(end, block));
    if (block.size() < static_cast<std::size_t>(kTarBlock) ||
        !std::all_of(block.begin(), block.end(), [](std::uint8_t b) { return b == 0; }))
      return invalid_argument(idx_name + ": disagrees with the shard: the archive does not end at byte " +
                              std::to_string(end) + " (stale index?)");
  }
  return shard;
}

const Error* WdsShard::problem(std::int64_t i) const {
  auto it = std::lower_bound(problems_.begin(), problems_.end(), i,
                             [](const SampleProblem& p, std::int64_t v) { return p.index < v; });
  return it != problems_.end() && it->index == i ? &it->error : nullptr;
}

Result<WdsSample> WdsShard::read(std::int64_t i) const {
  if (i < 0 || i >= count())
    return invalid_argument(sample_name(name(), i) + ": out of range (" + std::to_string(count()) + " samples)");
  if (const Error* e = problem(i)) return *e;
  const std::int64_t b = static_cast<std::int64_t>(offsets_[i]);
  const std::int64_t e = static_cast<std::int64_t>(offsets_[i + 1]);
  WdsSample sample;
  sample.index = i;
  TarReader reader(*source_, options_.limits, b, 4 * kTarBlock);
  if (e - b <= options_.whole_sample_bytes) {
    auto bytes = read_range(*source_, b, e - b);
    if (!bytes.ok()) return std::move(bytes).error().with_context(sample_name(name(), i));
    sample.bytes = std::make_shared<const std::vector<std::uint8_t>>(std::move(*bytes));
    sample.bytes_offset = b;
    reader.set_window(sample.bytes, b);
  }
  auto disagree = [&](const std::string& why) {
    return data_loss(sample_name(name(), i, sample.key) + ": the index disagrees with the shard: " + why);
  };
  while (reader.offset() < e) {
    auto next = reader.next();
    if (!next.ok()) return std::move(next).error().with_context(sample_name(name(), i, sample.key));
    if (!next->has_value())
      return disagree("the archive ends at byte " + std::to_string(reader.offset()) +
                      ", inside the sample's range [" + std::to_string(b) + ", " + std::to_string(e) + ")");
    const TarMember& m = **next;
    if (m.end > e)
      return disagree("member " + quote(m.name) + " at byte " + std::to_string(m.offset) +
                      " runs past the sample's end (" + std::to_string(e) + ")");
    if (!m.regular || is_meta_member(m.name)) continue;
    const auto split = split_sample_name(m.name);
    if (!split) continue;
    if (sample.key.empty()) {
      sample.key.assign(split->first);
    } else if (split->first != sample.key) {
      return disagree("its range holds members of two keys, " + quote(sample.key) + " and " +
                      quote(split->first) + " (member " + quote(m.name) + ")");
    }
    std::string part = options_.lowercase_parts ? lower_ascii(split->second) : std::string(split->second);
    if (sample.find(part))
      return data_loss(sample_name(name(), i, sample.key) + ": two members named " + quote(m.name));
    if (m.size > options_.limits.max_member_bytes)
      return resource_exhausted(sample_name(name(), i, sample.key) + ": member " + quote(m.name) +
                                " is " + std::to_string(m.size) + " bytes, over the cap of " +
                                std::to_string(options_.limits.max_member_bytes));
    sample.parts.push_back({std::move(part), m.name, m.data_offset, m.size});
  }
  if (reader.offset() != e)
    return disagree("its last member ends at byte " + std::to_string(reader.offset()) + ", not at " +
                    std::to_string(e));
  if (sample.parts.empty()) return disagree("its range [" + std::to_string(b) + ", " + std::to_string(e) + ") holds no sample member");
  return sample;
}

void WdsShard::prefetch(std::span<const std::int64_t> samples) const {
  std::vector<std::int64_t> sorted;
  sorted.reserve(samples.size());
  for (std::int64_t i : samples) {
    if (i < 0 || i >= count() || problem(i) != nullptr) continue;
    if (static_cast<std::int64_t>(offsets_[i + 1] - offsets_[i]) > options_.whole_sample_bytes) continue;
    sorted.push_back(i);
  }
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::size_t k = 0;
  while (k < sorted.size()) {
    const std::int64_t b = static_cast<std::int64_t>(offsets_[sorted[k]]);
    std::int64_t e = static_cast<std::int64_t>(offsets_[sorted[k] + 1]);
    std::size_t j = k + 1;
    while (j < sorted.size() && sorted[j] == sorted[j - 1] + 1 &&
           static_cast<std::int64_t>(offsets_[sorted[j] + 1]) - b <= options_.whole_sample_bytes) {
      e = static_cast<std::int64_t>(offsets_[sorted[j] + 1]);
      ++j;
    }
    source_->prefetch(b, e - b);
    k = j;
  }
}

Result<std::string> WdsShard::key(std::int64_t i) const {
  if (i < 0 || i >= count()) return invalid_argument(sample_name(name(), i) + ": out of range");
  TarReader reader(*source_, options_.limits, static_cast<std::int64_t>(offsets_[i]), 4 * kTarBlock);
  while (reader.offset() < static_cast<std::int64_t>(offsets_[i + 1])) {
    auto next = reader.next();
    if (!next.ok()) return std::move(next).error().with_context(sample_name(name(), i));
    if (!next->has_value()) break;
    const TarMember& m = **next;
    if (!m.regular || is_meta_member(m.name)) continue;
    if (const auto split = split_sample_name(m.name)) return std::string(split->first);
  }
  return data_loss(sample_name(name(), i) + ": the index disagrees with the shard: no sample member in its range");
}

Result<std::vector<std::uint8_t>> WdsShard::read_part(const WdsSample& sample, const WdsPart& part) const {
  if (auto d = sample.data(part)) return std::vector<std::uint8_t>(d->begin(), d->end());
  auto r = read_range(*source_, part.offset, part.size);
  if (!r.ok())
    return std::move(r).error().with_context(sample_name(name(), sample.index, sample.key) +
                                             ": member " + quote(part.member));
  return r;
}

namespace {

std::string cache_index_path(const std::string& dir, const std::string& shard_path) {
  std::error_code ec;
  const std::string abs = std::filesystem::absolute(shard_path, ec).string();
  std::uint64_t h = 0x6a09e667f3bcc908ULL;
  for (unsigned char c : abs) h = mix64(h ^ c);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  const std::string base = std::filesystem::path(tar_index_path(shard_path)).filename().string();
  return (std::filesystem::path(dir) / (base.substr(0, base.size() - 8) + "-" + hex + ".tar.idx")).string();
}

// Written to a name no other process uses, then renamed: ranks indexing one shard at once never
// see (or leave) a torn index.
Status write_atomic(const std::string& path, std::span<const std::uint8_t> bytes) {
  static std::atomic<std::uint64_t> counter{0};
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return permission_denied(tmp + ": cannot create: " + std::strerror(errno));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return data_loss(tmp + ": write failed: " + std::strerror(e));
    }
    done += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0 || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return data_loss(path + ": cannot rename into place: " + std::strerror(e));
  }
  return ok_status();
}

}  // namespace

Result<std::shared_ptr<WdsShard>> open_local_shard(const std::string& path, const ShardOptions& options,
                                                   const LocalIndexOptions& index,
                                                   std::vector<std::string>* warnings) {
  STOKER_ASSIGN_OR_RETURN(std::shared_ptr<const ByteSource> source, open_file_source(path));
  std::vector<std::string> candidates = {tar_index_path(path)};
  if (!index.cache_dir.empty()) candidates.push_back(cache_index_path(index.cache_dir, path));
  auto warn = [&](std::string w) {
    if (warnings) warnings->push_back(std::move(w));
  };
  if (index.read) {
    for (const std::string& idx : candidates) {
      auto bytes = read_file(idx);
      if (!bytes.ok()) {
        if (bytes.error().code() != ErrorCode::kNotFound) warn(bytes.error().to_string() + " (scanning the shard instead)");
        continue;
      }
      auto shard = WdsShard::from_index(source, *bytes, options);
      if (shard.ok()) return shard;
      warn(shard.error().to_string() + " (scanning the shard instead)");
    }
  }
  STOKER_ASSIGN_OR_RETURN(auto shard, WdsShard::from_scan(source, options));
  if (!shard->cacheable()) {
    warn(path + ": " + std::to_string(shard->problems().size()) + " bad sample(s)" +
         (shard->damage() ? ", damaged: " + shard->damage()->message() : std::string()) +
         "; its index is not cached, so every run scans and reports it");
    return shard;
  }
  if (!index.write) return shard;
  const auto bytes = shard->index_bytes();
  std::string why;
  for (const std::string& idx : candidates) {
    Status s = write_atomic(idx, bytes);
    if (s.ok()) return shard;
    why += (why.empty() ? "" : "; ") + s.error().to_string();
  }
  warn(path + ": index not cached: " + why);
  return shard;
}

}  // namespace stoker::dataset
