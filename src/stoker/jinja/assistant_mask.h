// Hugging Face's `return_assistant_tokens_mask`: which tokens of a rendered chat lie in its
// {% generation %} spans, computed exactly as transformers computes it from character offsets
// (so that labels equal what TRL's assistant_only_loss trains on). Read in huggingface/
// transformers at 598a3dc3 (tokenization_utils_base.apply_chat_template, the tokenizer path) and
// 00511f2b (processing_utils.apply_chat_template, the processor path):
//   kTokenizer: per span, from the first token covering `start` to the first token covering
//     `end - 1`; to the end of the sequence when that is no token or token 0 (transformers tests
//     `if end_token`); STOP at the first span whose start no token covers (truncation).
//   kProcessor: per span, bisect the token starts for `start` and `end`; a span whose start is
//     not inside the token found is SKIPPED (continue, not break); tokens [start_pos, end_pos)
//     are marked (to the end when end_pos is 0).
// Offsets and spans are byte offsets into `text`; token offsets are first widened to whole
// characters, as HF's character offsets are (two tokens splitting one emoji both cover it).
// Pure function, thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "stoker/jinja/template.h"

namespace stoker::jinja {

enum class MaskRule : std::uint8_t { kTokenizer, kProcessor };

// One flag per token (token_offsets.size()): 1 = the token is assistant output.
std::vector<std::uint8_t> assistant_mask(std::string_view text, std::span<const Span> spans,
                                         std::span<const Span> token_offsets,
                                         MaskRule rule = MaskRule::kTokenizer);

}  // namespace stoker::jinja
