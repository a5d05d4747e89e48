#include "stoker/image/smart_resize.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace stoker::image {
namespace {

// Python's round() on a double: nearest integer, ties to even (std::round would go away from 0).
double round_half_even(double x) {
  double r = std::floor(x);
  double diff = x - r;
  if (diff > 0.5) return r + 1.0;
  if (diff < 0.5) return r;
  return std::fmod(r, 2.0) == 0.0 ? r : r + 1.0;
}

std::string size_str(int height, int width) {
  return "height " + std::to_string(height) + ", width " + std::to_string(width);
}

}  // namespace

Result<ResizedSize> smart_resize(int height, int width, int factor, std::int64_t min_pixels,
                                 std::int64_t max_pixels, SmartResizeRules rules) {
  if (factor <= 0) return invalid_argument("smart_resize: factor must be positive");
  if (height <= 0 || width <= 0) {
    return invalid_argument("smart_resize: empty image (" + size_str(height, width) + ")");
  }
  const bool legacy = rules == SmartResizeRules::kRefuseBelowFactor;
  // transformers ≤ 4.52 checks the size first, then the aspect ratio; later ones only the ratio.
  if (legacy && (height < factor || width < factor)) {
    return invalid_argument("smart_resize: " + size_str(height, width) +
                            " must be larger than factor " + std::to_string(factor) +
                            " (transformers <= 4.52 rule)");
  }
  const double aspect =
      static_cast<double>(std::max(height, width)) / static_cast<double>(std::min(height, width));
  if (aspect > 200.0) {
    return invalid_argument("smart_resize: absolute aspect ratio must be smaller than 200, got " +
                            std::to_string(aspect) + " (" + size_str(height, width) + ")");
  }
  const double h = height, w = width, f = factor;
  // Step 3 can give 0 for a side below f/2 (current rules); 0 · x < min_pixels (≥ 1), so step 5
  // always takes over then.
  double h_bar = round_half_even(h / f) * f;
  double w_bar = round_half_even(w / f) * f;
  // Python ints are exact; h*w < 2^62 here so int64 is exact too, and its conversion to double
  // matches Python's correctly rounded int/int true division for these magnitudes.
  const std::int64_t area = std::int64_t{height} * width;
  if (h_bar * w_bar > static_cast<double>(max_pixels)) {
    const double beta = std::sqrt(static_cast<double>(area) / static_cast<double>(max_pixels));
    h_bar = std::floor(h / beta / f) * f;
    w_bar = std::floor(w / beta / f) * f;
    if (!legacy) {  // max(factor, floor(...) * factor)
      h_bar = std::max(h_bar, f);
      w_bar = std::max(w_bar, f);
    }
  } else if (h_bar * w_bar < static_cast<double>(min_pixels)) {
    const double beta = std::sqrt(static_cast<double>(min_pixels) / static_cast<double>(area));
    h_bar = std::ceil(h * beta / f) * f;
    w_bar = std::ceil(w * beta / f) * f;
  }
  // Only legacy step 4 can floor to 0 (transformers then fails in resize); the bound keeps the
  // int conversion defined for absurd min_pixels.
  if (h_bar < f || w_bar < f || h_bar > 1e9 || w_bar > 1e9) {
    return invalid_argument("smart_resize: " + size_str(height, width) + " gives an unusable " +
                            "target " + std::to_string(static_cast<long long>(h_bar)) + "x" +
                            std::to_string(static_cast<long long>(w_bar)) + " (factor " +
                            std::to_string(factor) + ")");
  }
  return ResizedSize{.height = static_cast<int>(h_bar), .width = static_cast<int>(w_bar)};
}

}  // namespace stoker::image
