// Token offsets through NFC (Tokenizer::encode_with_offsets): where NFC changes a run of text,
// offsets of the normalised text are mapped back to the text it came from, chunk by chunk (a
// chunk starts at an NFC-stable code point: nothing before it can compose or reorder with it).
// Pure; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/text/tokenizer.h"

namespace stoker::text::detail {

// Normalised-text offsets -> offsets of the text it was normalised from. Identity (plus
// `base`) when NFC left the text alone; otherwise per chunk: a chunk starts at an NFC-stable
// code point (nothing before it can combine or reorder with it), so NFC works chunk by chunk;
// chunks NFC leaves alone map byte for byte, the others as a whole (a token starting inside
// one starts at its first original byte, one ending inside it ends at its last).
struct OffsetMap {
  struct Chunk {
    std::size_t ob, oe, nb, ne;
    bool same;
  };
  std::size_t base = 0;
  std::vector<Chunk> chunks;  // empty: identity
  TextSpan operator()(std::size_t b, std::size_t e) const;
};

// The chunks of OffsetMap for `s` whose NFC is `normalized`; one chunk for the whole text when
// chunk-wise NFC does not rebuild `normalized` (not expected; a safe answer).
std::vector<OffsetMap::Chunk> nfc_chunks(std::string_view s, const std::string& normalized);

}  // namespace stoker::text::detail
