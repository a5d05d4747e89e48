// A Hugging Face byte-level BPE tokenizer (Qwen2 / Qwen2.5 / Qwen3 family) loaded from a model
// folder's tokenizer.json (+ tokenizer_config.json): added tokens split out first, NFC, the Split
// pre-tokenizer regex with Oniguruma semantics, byte-level mapping, BPE by merge rank, no BOS.
// Other tokenizer types are refused with a clear error rather than mis-encoded.
// Immutable after load; encode()/decode() are thread-safe (the word cache is sharded + locked).
// Errors: NotFound (files), InvalidArgument (unsupported type, corrupt JSON).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::text {

using TokenId = std::int32_t;

// Byte offsets [begin, end) into a text.
struct TextSpan {
  std::size_t begin = 0, end = 0;
  bool operator==(const TextSpan&) const = default;
};

class Tokenizer {
 public:
  // `folder` holds tokenizer.json (and optionally tokenizer_config.json).
  static Result<std::unique_ptr<Tokenizer>> load(const std::string& folder);
  static Result<std::unique_ptr<Tokenizer>> from_json(std::string_view tokenizer_json,
                                                      std::string_view tokenizer_config_json = {});
  virtual ~Tokenizer();

  // Appends the ids of `text` to `out`. Invalid UTF-8: see the README (defined behaviour).
  virtual void encode(std::string_view text, std::vector<TokenId>* out) const = 0;
  std::vector<TokenId> encode(std::string_view text) const;
  // encode(), and for each id appended the bytes of `text` it comes from (appended to
  // `offsets`): in order, together covering the text. What HF's offsets say, in bytes: a token
  // made from text NFC changed covers the original bytes of the characters it was made from
  // (resolved per run of characters NFC changes together); bytes an invalid UTF-8 repair replaced
  // map to the bytes they replaced. Two tokens splitting one character both cover its bytes
  // partially (jinja::assistant_mask widens them to the character, as HF's char offsets are).
  virtual void encode_with_offsets(std::string_view text, std::vector<TokenId>* ids,
                                   std::vector<TextSpan>* offsets) const = 0;

  virtual std::string decode(std::span<const TokenId> ids) const = 0;
  virtual std::optional<TokenId> token_to_id(std::string_view token) const = 0;
  virtual std::size_t vocab_size() const = 0;
};

}  // namespace stoker::text
