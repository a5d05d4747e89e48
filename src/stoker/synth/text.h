// Synthetic conversation text that stresses tokenizers and chat templates: English prose, CJK,
// Korean, Arabic, emoji (incl. ZWJ sequences, skin tones, flags), digits and numbers, code with
// tabs and indentation, runs of spaces / newlines / CRLF, unusual whitespace (NBSP, U+3000,
// U+FEFF, zero-width space), combining marks and punctuation runs — in lengths from one word to
// a few thousand bytes. All output is valid UTF-8. Deterministic given the Rng stream.
#pragma once

#include <string>

#include "stoker/synth/rng.h"

namespace stoker::synth {

std::string system_prompt(Rng& rng);
// A user turn's text about `images` images (0 = text-only).
std::string user_text(Rng& rng, int images);
std::string assistant_text(Rng& rng);

}  // namespace stoker::synth
