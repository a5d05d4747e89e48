// Pixel content for synthetic images: the kinds of signal that make resampling and colour bugs
// visible — smooth gradients (banding, rounding), white noise (worst case for codecs, exposes
// off-by-one filter taps), checkerboards and 1-px lines (edges, ringing, phase shifts), a zone
// plate (every frequency up to Nyquist: aliasing, wrong antialias support), "photo-like" scenes
// (smooth fields + shapes with hard edges + sensor noise) and document pages (thin dark strokes).
// Pure functions of (kind, size, rng stream): deterministic, thread-safe, no errors.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "stoker/image/decode.h"
#include "stoker/synth/rng.h"

namespace stoker::synth {

enum class Content { kGradient, kNoise, kChecker, kRings, kPhoto, kDocument };
inline constexpr int kContentCount = 6;
std::string_view content_name(Content c);

// A width × height RGB image of the given kind (width, height ≥ 1).
image::RgbImage render_content(Content kind, int width, int height, Rng& rng);

// A width*height alpha plane with fully transparent, fully opaque and soft-edged regions.
std::vector<std::uint8_t> render_alpha(int width, int height, Rng& rng);

}  // namespace stoker::synth
