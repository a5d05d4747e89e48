// A test-only second model family ("toy"), to show that the family seam carries a model that
// shares nothing model-specific with Qwen-VL: 1-D positions (one row, 0..L−1), another pad id
// (<|fim_pad|>), a trivial image processor (8-pixel patches, no temporal or spatial merge,
// mean/std 0.5), a one-line-per-message template ("user: …\n") whose image placeholder expands
// to one <|box_start|> per patch, and no video processor. It borrows the Qwen tokenizer files
// (any byte-level BPE vocabulary holding those two tokens works). Registered by the tests that
// use it (register_family); no file outside model/testing/ names it.
#pragma once

#include "stoker/model/family.h"

namespace stoker::model::testing {

inline constexpr const char* kToySpec = "toy";
// The toy model with audio: Qwen3-Omni's feature rules (a sample's clips padded to its longest:
// clips of different widths in one batch), one <|box_end|> per audio token in the template.
inline constexpr const char* kToyAudioSpec = "toy-audio";

const Family& toy_family();
// The toy processor's settings, for tests that check its pixels independently.
image::ImageProcessorConfig toy_image_config();

}  // namespace stoker::model::testing
