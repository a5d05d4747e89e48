#include "stoker/text/detail/bpe.h"

#include <algorithm>
#include <functional>
#include <queue>

#include "stoker/text/detail/unicode.h"

namespace stoker::text::detail {
namespace {

struct ByteMap {
  char32_t to_char[256];
  std::unordered_map<char32_t, int> to_byte;
  ByteMap() {
    // GPT-2: printable Latin-1 bytes map to themselves, the rest to U+0100 + n in byte order.
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
      to_char[b] = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + n++);
      to_byte[to_char[b]] = b;
    }
  }
};

const ByteMap& byte_map() {
  static const ByteMap m;
  return m;
}

inline std::uint64_t hash_key(std::uint64_t k) { return k * 0x9E3779B97F4A7C15ull; }

}  // namespace

char32_t byte_to_char(std::uint8_t b) { return byte_map().to_char[b]; }

int char_to_byte(char32_t cp) {
  const auto& m = byte_map().to_byte;
  auto it = m.find(cp);
  return it == m.end() ? -1 : it->second;
}

bool byte_level_to_bytes(std::string_view token, std::string* bytes) {
  bytes->clear();
  if (!is_valid_utf8(token)) return false;
  const auto* p = reinterpret_cast<const unsigned char*>(token.data());
  const auto* end = p + token.size();
  while (p < end) {
    char32_t cp;
    p += decode_utf8(p, &cp);
    const int b = char_to_byte(cp);
    if (b < 0) return false;
    bytes->push_back(static_cast<char>(b));
  }
  return true;
}

BpeModel::BpeModel(const std::array<Id, 256>& byte_ids, const std::vector<Merge>& merges,
                   const std::vector<Id>& merged, bool ignore_merges,
                   std::unordered_map<std::string, Id> whole_words)
    : byte_ids_(byte_ids),
      ignore_merges_(ignore_merges),
      whole_words_(std::move(whole_words)),
      shards_(new Shard[kShards]) {
  std::size_t cap = 16;
  while (cap < merges.size() * 2 + 16) cap <<= 1;
  table_.assign(cap, Slot{kEmpty, 0, 0});
  mask_ = cap - 1;
  for (std::size_t r = 0; r < merges.size(); ++r) {
    const std::uint64_t key = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(merges[r].left)) << 32) |
                              static_cast<std::uint32_t>(merges[r].right);
    std::uint64_t h = hash_key(key) >> 32;
    while (true) {
      Slot& s = table_[h & mask_];
      if (s.key == kEmpty) {
        s = Slot{key, static_cast<std::int32_t>(r), merged[r]};
        break;
      }
      if (s.key == key) break;  // duplicate merge: the first (lowest rank) wins, as in HF
      ++h;
    }
  }
}

const BpeModel::Slot* BpeModel::find(Id left, Id right) const {
  const std::uint64_t key =
      (static_cast<std::uint64_t>(static_cast<std::uint32_t>(left)) << 32) | static_cast<std::uint32_t>(right);
  std::uint64_t h = hash_key(key) >> 32;
  while (true) {
    const Slot& s = table_[h & mask_];
    if (s.key == key) return &s;
    if (s.key == kEmpty) return nullptr;
    ++h;
  }
}

// Repeatedly merges the lowest-ranked adjacent pair (leftmost on ties): the result HF's
// priority-queue loop produces. The pair ranks are kept in an array so that a merge looks up only
// its two new neighbours; the scan for the minimum is then a plain loop — fastest for the short
// words that dominate.
void BpeModel::merge_small(std::vector<Id>& syms) const {
  constexpr std::int32_t kNone = INT32_MAX;
  std::int32_t rank[kSmallWord];
  Id merged[kSmallWord];
  std::size_t n = syms.size();
  auto look = [&](std::size_t i) {
    const Slot* s = find(syms[i], syms[i + 1]);
    rank[i] = s ? s->rank : kNone;
    merged[i] = s ? s->id : 0;
  };
  for (std::size_t i = 0; i + 1 < n; ++i) look(i);
  while (n > 1) {
    std::size_t best = 0;
    for (std::size_t i = 1; i + 1 < n; ++i)
      if (rank[i] < rank[best]) best = i;
    if (rank[best] == kNone) break;
    syms[best] = merged[best];
    for (std::size_t i = best + 1; i + 1 < n; ++i) {  // drop symbol best+1 and its pair
      syms[i] = syms[i + 1];
      rank[i] = rank[i + 1];
      merged[i] = merged[i + 1];
    }
    --n;
    if (best > 0) look(best - 1);
    if (best + 1 < n) look(best);
  }
  syms.resize(n);
}

// HF's algorithm (models/bpe/word.rs merge_all): a min-heap of (rank, position) over a linked
// list of symbols; stale entries are skipped when the pair at that position no longer yields the
// same merged id. O(n log n) for long words (CJK runs, long whitespace).
void BpeModel::merge_heap(std::vector<Id>& syms) const {
  const int n = static_cast<int>(syms.size());
  std::vector<int> prev(n), next(n);
  std::vector<bool> alive(n, true);
  for (int i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  struct Entry {
    std::int32_t rank;
    int pos;
    Id id;
    bool operator>(const Entry& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  for (int i = 0; i + 1 < n; ++i)
    if (const Slot* s = find(syms[i], syms[i + 1])) heap.push({s->rank, i, s->id});
  while (!heap.empty()) {
    const Entry top = heap.top();
    heap.pop();
    if (!alive[top.pos] || next[top.pos] < 0) continue;
    const int right = next[top.pos];
    const Slot* cur = find(syms[top.pos], syms[right]);
    if (!cur || cur->id != top.id) continue;
    syms[top.pos] = top.id;
    alive[right] = false;
    next[top.pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = top.pos;
    if (prev[top.pos] >= 0) {
      const int p = prev[top.pos];
      if (const Slot* s = find(syms[p], syms[top.pos])) heap.push({s->rank, p, s->id});
    }
    if (next[top.pos] >= 0) {
      if (const Slot* s = find(syms[top.pos], syms[next[top.pos]])) heap.push({s->rank, top.pos, s->id});
    }
  }
  std::size_t w = 0;
  for (int i = 0; i < n; ++i)
    if (alive[i]) syms[w++] = syms[i];
  syms.resize(w);
}

void BpeModel::encode_word_uncached(std::string_view word, std::vector<Id>* out, bool heap) const {
  if (ignore_merges_) {
    auto it = whole_words_.find(std::string(word));
    if (it != whole_words_.end()) {
      out->push_back(it->second);
      return;
    }
  }
  thread_local std::vector<Id> syms;
  syms.clear();
  for (unsigned char b : word) syms.push_back(byte_ids_[b]);
  if (heap || syms.size() > kSmallWord) {
    merge_heap(syms);
  } else {
    merge_small(syms);
  }
  out->insert(out->end(), syms.begin(), syms.end());
}

void BpeModel::encode_word(std::string_view word, std::vector<Id>* out) const {
  if (word.size() == 1) {
    out->push_back(byte_ids_[static_cast<unsigned char>(word[0])]);
    return;
  }
  if (word.size() > kMaxCachedWord) {
    encode_word_uncached(word, out, false);
    return;
  }
  const std::size_t h = std::hash<std::string_view>{}(word);
  Shard& shard = shards_[h % kShards];
  {
    std::lock_guard<std::mutex> lock(shard.mu);
    auto it = shard.map.find(word);
    if (it != shard.map.end()) {
      out->insert(out->end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const std::size_t before = out->size();
  encode_word_uncached(word, out, false);
  std::vector<Id> ids(out->begin() + static_cast<std::ptrdiff_t>(before), out->end());
  std::lock_guard<std::mutex> lock(shard.mu);
  if (shard.map.size() >= kShardCapacity) shard.map.clear();  // bounded: start over when full
  shard.map.emplace(std::string(word), std::move(ids));
}

}  // namespace stoker::text::detail
