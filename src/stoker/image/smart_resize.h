// smart_resize (spec/qwen-vl.md §1.1): the target size for an image so that both sides are
// multiples of `factor` (= patch · merge) and the pixel count lies in [min_pixels, max_pixels].
// Python's round-half-to-even and double arithmetic are reproduced exactly. Two transformers
// generations differ for small images (SmartResizeRules). Pure function, thread-safe.
// Errors: InvalidArgument naming the size and the rule (aspect ratio > 200; a side smaller than
// factor under kRefuseBelowFactor; a target transformers could not resize to).
#pragma once

#include <cstdint>

#include "stoker/base/result.h"

namespace stoker::image {

struct ResizedSize {
  int height = 0;
  int width = 0;
};

enum class SmartResizeRules {
  // transformers ≥ 4.53 (PR #38706): no size check; step 3 may round a side to 0, step 5 then
  // scales the image to min_pixels; step 4 keeps each side ≥ factor.
  kCurrent,
  // transformers ≤ 4.52: a side below `factor` is refused (ValueError); step 4 has no clamp.
  kRefuseBelowFactor,
};

Result<ResizedSize> smart_resize(int height, int width, int factor, std::int64_t min_pixels,
                                 std::int64_t max_pixels,
                                 SmartResizeRules rules = SmartResizeRules::kCurrent);

}  // namespace stoker::image
