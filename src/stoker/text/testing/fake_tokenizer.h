// Test-only: a tokenizer whose ids can be counted by hand (labels_test.cc, jinja_chat_test.cc).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/text/tokenizer.h"

namespace stoker::text::testing {

// A stand-in tokenizer whose ids can be counted by hand: the Qwen special tokens are atomic
// (real ids), "\n\n" is one token (271, as in Qwen's vocabulary — so an answer starting with
// "\n" straddles the prompt/answer boundary exactly as with the real BPE), every other byte is
// one token whose id is the byte value.
class FakeTokenizer : public Tokenizer {
 public:
  using Tokenizer::encode;
  void encode(std::string_view text, std::vector<TokenId>* out) const override {
    std::vector<TextSpan> offsets;
    encode_with_offsets(text, out, &offsets);
  }
  void encode_with_offsets(std::string_view text, std::vector<TokenId>* out,
                           std::vector<TextSpan>* offsets) const override {
    std::size_t i = 0;
    while (i < text.size()) {
      bool matched = false;
      for (const auto& [tok, id] : kSpecial) {
        if (text.substr(i, tok.size()) == tok) {
          out->push_back(id);
          offsets->push_back({i, i + tok.size()});
          i += tok.size();
          matched = true;
          break;
        }
      }
      if (matched) continue;
      if (text.substr(i, 2) == "\n\n") {
        out->push_back(271);
        offsets->push_back({i, i + 2});
        i += 2;
        continue;
      }
      out->push_back(static_cast<unsigned char>(text[i]));
      offsets->push_back({i, i + 1});
      ++i;
    }
  }
  std::string decode(std::span<const TokenId>) const override { return {}; }
  std::optional<TokenId> token_to_id(std::string_view token) const override {
    auto it = kSpecial.find(std::string(token));
    if (it == kSpecial.end()) return std::nullopt;
    return it->second;
  }
  std::size_t vocab_size() const override { return 151669; }

 private:
  inline static const std::map<std::string, TokenId> kSpecial = {
      {"<|im_start|>", 151644},   {"<|im_end|>", 151645},    {"<|vision_start|>", 151652},
      {"<|vision_end|>", 151653}, {"<|image_pad|>", 151655}, {"<|video_pad|>", 151656},
      {"<tool_response>", 151665}, {"</tool_response>", 151666}, {"<think>", 151667},
      {"</think>", 151668}};
};

}  // namespace stoker::text::testing
