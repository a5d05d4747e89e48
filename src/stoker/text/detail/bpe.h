// Byte-level BPE model: GPT-2's byte↔unicode map, merges applied by rank, and a bounded word cache.
// Tokens are held as raw bytes (the byte-level strings of tokenizer.json mapped back), so encoding
// never builds the unicode form of a word. Immutable after build() except the cache, which is
// sharded and locked: encode_word() is safe from many threads.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::text::detail {

using Id = std::int32_t;

// GPT-2 bytes_to_unicode(): byte → code point of its printable stand-in, and back (-1: none).
char32_t byte_to_char(std::uint8_t b);
int char_to_byte(char32_t cp);

// Byte-level string (as in tokenizer.json) → raw bytes; false if a char has no byte.
bool byte_level_to_bytes(std::string_view token, std::string* bytes);

class BpeModel {
 public:
  struct Merge {
    Id left, right;  // ids of the two parts
  };
  // `byte_ids[b]`: id of the one-byte token b (all 256 must exist). `merges` in rank order with
  // `merged[i]` the id of merges[i].left + merges[i].right.
  BpeModel(const std::array<Id, 256>& byte_ids, const std::vector<Merge>& merges,
           const std::vector<Id>& merged, bool ignore_merges,
           std::unordered_map<std::string, Id> whole_words);
  BpeModel(const BpeModel&) = delete;
  BpeModel& operator=(const BpeModel&) = delete;

  // Appends the ids of one pre-tokenized word (raw bytes).
  void encode_word(std::string_view word, std::vector<Id>* out) const;
  // Uncached; `heap` forces the priority-queue algorithm (tests compare both paths).
  void encode_word_uncached(std::string_view word, std::vector<Id>* out, bool heap) const;

 private:
  struct Slot {
    std::uint64_t key;  // (left << 32) | right; kEmpty when free
    std::int32_t rank;
    Id id;
  };
  static constexpr std::uint64_t kEmpty = ~0ull;
  static constexpr std::size_t kSmallWord = 48;  // longer words take the heap path
  const Slot* find(Id left, Id right) const;
  void merge_small(std::vector<Id>& syms) const;
  void merge_heap(std::vector<Id>& syms) const;

  std::array<Id, 256> byte_ids_;
  std::vector<Slot> table_;
  std::uint64_t mask_ = 0;
  bool ignore_merges_;
  std::unordered_map<std::string, Id> whole_words_;  // only for ignore_merges

  struct SvHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Shard {
    std::mutex mu;
    std::unordered_map<std::string, std::vector<Id>, SvHash, std::equal_to<>> map;
  };
  static constexpr std::size_t kShards = 64;
  static constexpr std::size_t kShardCapacity = 4096;
  static constexpr std::size_t kMaxCachedWord = 256;
  std::unique_ptr<Shard[]> shards_;
};

}  // namespace stoker::text::detail
