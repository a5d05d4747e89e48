// smart_resize (spec/qwen-vl.md §1.1, transformers v4.5x semantics): the target size for an
// image so that both sides are multiples of `factor` (= patch · merge) and the pixel count lies
// in [min_pixels, max_pixels]. Python's round-half-to-even and double arithmetic are reproduced
// exactly. Pure function, thread-safe. Errors: InvalidArgument naming the size and the rule
// (aspect ratio > 200, a side smaller than factor).
#pragma once

#include <cstdint>

#include "stoker/base/result.h"

namespace stoker::image {

struct ResizedSize {
  int height = 0;
  int width = 0;
};

Result<ResizedSize> smart_resize(int height, int width, int factor, std::int64_t min_pixels,
                                 std::int64_t max_pixels);

}  // namespace stoker::image
