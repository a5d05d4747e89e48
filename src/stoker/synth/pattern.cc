#include "stoker/synth/pattern.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace stoker::synth {
namespace {

using image::RgbImage;

std::uint8_t clamp_u8(float v) {
  return static_cast<std::uint8_t>(v <= 0.f ? 0.f : (v >= 255.f ? 255.f : v + 0.5f));
}

struct Colour {
  float c[3];
};

Colour random_colour(Rng& rng) {
  return {{static_cast<float>(rng.below(256)), static_cast<float>(rng.below(256)),
           static_cast<float>(rng.below(256))}};
}

RgbImage blank(int w, int h) {
  RgbImage img;
  img.width = w;
  img.height = h;
  img.pixels.resize(static_cast<size_t>(w) * h * 3);
  return img;
}

// Smooth value noise: random values on a coarse lattice, smoothstep-interpolated.
class ValueNoise {
 public:
  ValueNoise(int w, int h, int cell, Rng& rng) : cell_(std::max(cell, 2)) {
    gw_ = w / cell_ + 2;
    gh_ = h / cell_ + 2;
    lattice_.resize(static_cast<size_t>(gw_) * gh_);
    for (float& v : lattice_) v = static_cast<float>(rng.uniform());
  }
  // Fills `out[x]` for one row with values in [0, 1].
  void row(int y, int w, float* out) const {
    int gy = y / cell_;
    float fy = smooth(static_cast<float>(y % cell_) / cell_);
    const float* r0 = &lattice_[static_cast<size_t>(gy) * gw_];
    const float* r1 = r0 + gw_;
    for (int x = 0; x < w; ++x) {
      int gx = x / cell_;
      float fx = smooth(static_cast<float>(x % cell_) / cell_);
      float a = r0[gx] + (r0[gx + 1] - r0[gx]) * fx;
      float b = r1[gx] + (r1[gx + 1] - r1[gx]) * fx;
      out[x] = a + (b - a) * fy;
    }
  }

 private:
  static float smooth(float t) { return t * t * (3.f - 2.f * t); }
  int cell_, gw_ = 0, gh_ = 0;
  std::vector<float> lattice_;
};

void gradient(RgbImage& img, Rng& rng) {
  const int w = img.width, h = img.height;
  float base[3], dx[3], dy[3];
  for (int c = 0; c < 3; ++c) {
    base[c] = static_cast<float>(rng.uniform(-64, 255));
    float span = static_cast<float>(rng.uniform(-300, 300));
    double angle = rng.uniform(0, 6.283185307179586);
    dx[c] = static_cast<float>(span * std::cos(angle) / std::max(w, 1));
    dy[c] = static_cast<float>(span * std::sin(angle) / std::max(h, 1));
  }
  for (int y = 0; y < h; ++y) {
    std::uint8_t* p = img.row(y);
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) *p++ = clamp_u8(base[c] + dx[c] * x + dy[c] * y);
  }
}

void noise(RgbImage& img, Rng& rng) {
  const std::uint64_t seed = rng.next();
  const int amplitude = rng.chance(0.5) ? 256 : rng.range(16, 96);
  Colour mid = random_colour(rng);
  const size_t n = img.pixels.size();
  for (size_t i = 0; i < n; i += 3) {
    std::uint64_t r = mix64(seed + i);
    for (int c = 0; c < 3; ++c) {
      int v = static_cast<int>((r >> (c * 16)) & 0xffff) % amplitude;
      img.pixels[i + c] = amplitude == 256
                              ? static_cast<std::uint8_t>(v)
                              : clamp_u8(mid.c[c] + static_cast<float>(v - amplitude / 2));
    }
  }
}

void checker(RgbImage& img, Rng& rng) {
  const int w = img.width, h = img.height;
  static const int kCells[] = {1, 2, 3, 4, 5, 7, 8, 13, 16, 32};
  const int cell = rng.pick(kCells);
  Colour a = random_colour(rng), b = random_colour(rng);
  if (rng.chance(0.5)) a = {{0, 0, 0}}, b = {{255, 255, 255}};
  // A band of 1-px alternating lines (horizontal or vertical) on top: the worst case for taps.
  const int band_x0 = rng.range(0, w - 1), band_x1 = std::min(w, band_x0 + rng.range(1, w));
  const int band_y0 = rng.range(0, h - 1), band_y1 = std::min(h, band_y0 + rng.range(1, h));
  const bool vertical_lines = rng.chance(0.5);
  for (int y = 0; y < h; ++y) {
    std::uint8_t* p = img.row(y);
    for (int x = 0; x < w; ++x) {
      bool on = ((x / cell) + (y / cell)) & 1;
      if (x >= band_x0 && x < band_x1 && y >= band_y0 && y < band_y1)
        on = vertical_lines ? (x & 1) : (y & 1);
      const Colour& col = on ? a : b;
      for (int c = 0; c < 3; ++c) *p++ = static_cast<std::uint8_t>(col.c[c]);
    }
  }
}

// Zone plate: cos(k·r²), local frequency rising to ~Nyquist at the far corner.
void rings(RgbImage& img, Rng& rng) {
  const int w = img.width, h = img.height;
  constexpr int kLut = 4096;
  static const std::array<float, kLut> lut = [] {
    std::array<float, kLut> t{};
    for (int i = 0; i < kLut; ++i) t[i] = static_cast<float>(std::cos(6.283185307179586 * i / kLut));
    return t;
  }();
  const double cx = rng.uniform(0, w), cy = rng.uniform(0, h);
  const double rmax = std::sqrt(std::max(cx, w - cx) * std::max(cx, w - cx) +
                                std::max(cy, h - cy) * std::max(cy, h - cy)) + 1;
  // phase(r) = k r² / 2π cycles; d/dr = k r / π cycles per px; = nyquist_frac at rmax.
  const double nyquist_frac = rng.uniform(0.3, 0.5);
  const double cycles_per_r2 = nyquist_frac / (2 * rmax);
  int offset[3];
  float gain[3];
  for (int c = 0; c < 3; ++c) {
    offset[c] = static_cast<int>(rng.below(kLut));
    gain[c] = static_cast<float>(rng.uniform(60, 127.5));
  }
  for (int y = 0; y < h; ++y) {
    std::uint8_t* p = img.row(y);
    const double dy2 = (y - cy) * (y - cy);
    for (int x = 0; x < w; ++x) {
      double r2 = (x - cx) * (x - cx) + dy2;
      double phase = r2 * cycles_per_r2;
      int idx = static_cast<int>((phase - std::floor(phase)) * kLut);
      for (int c = 0; c < 3; ++c) *p++ = clamp_u8(127.5f + gain[c] * lut[(idx + offset[c]) & (kLut - 1)]);
    }
  }
}

void fill_disc(RgbImage& img, double cx, double cy, double r, const Colour& col, float shade) {
  const int y0 = std::max(0, static_cast<int>(cy - r)), y1 = std::min(img.height - 1, static_cast<int>(cy + r));
  const int x0 = std::max(0, static_cast<int>(cx - r)), x1 = std::min(img.width - 1, static_cast<int>(cx + r));
  for (int y = y0; y <= y1; ++y) {
    std::uint8_t* p = img.row(y);
    for (int x = x0; x <= x1; ++x) {
      double d2 = (x - cx) * (x - cx) + (y - cy) * (y - cy);
      if (d2 > r * r) continue;
      float s = 1.f - shade * static_cast<float>(d2 / (r * r));
      for (int c = 0; c < 3; ++c) p[x * 3 + c] = clamp_u8(col.c[c] * s);
    }
  }
}

void fill_rect(RgbImage& img, int x0, int y0, int x1, int y1, const Colour& col, float ramp) {
  x0 = std::max(x0, 0), y0 = std::max(y0, 0);
  x1 = std::min(x1, img.width), y1 = std::min(img.height, y1);
  for (int y = y0; y < y1; ++y) {
    std::uint8_t* p = img.row(y);
    float s = 1.f + ramp * static_cast<float>(y - y0) / std::max(1, y1 - y0);
    for (int x = x0; x < x1; ++x)
      for (int c = 0; c < 3; ++c) p[x * 3 + c] = clamp_u8(col.c[c] * s);
  }
}

// Sky gradient over a textured ground, objects with hard edges, then sensor noise.
void photo(RgbImage& img, Rng& rng) {
  const int w = img.width, h = img.height;
  const int horizon = static_cast<int>(h * rng.uniform(0.2, 0.7));
  Colour sky_top = random_colour(rng), sky_low = random_colour(rng);
  Colour ground_a = random_colour(rng), ground_b = random_colour(rng);
  ValueNoise coarse(w, h, std::max(4, std::max(w, h) / rng.range(3, 8)), rng);
  ValueNoise fine(w, h, rng.range(3, 12), rng);
  std::vector<float> nc(w), nf(w);
  for (int y = 0; y < h; ++y) {
    std::uint8_t* p = img.row(y);
    if (y < horizon) {
      float t = static_cast<float>(y) / std::max(1, horizon);
      coarse.row(y, w, nc.data());
      for (int x = 0; x < w; ++x) {
        float cloud = nc[x] > 0.6f ? (nc[x] - 0.6f) * 2.5f : 0.f;
        for (int c = 0; c < 3; ++c)
          *p++ = clamp_u8((sky_top.c[c] + (sky_low.c[c] - sky_top.c[c]) * t) * (1 - cloud) + 245 * cloud);
      }
    } else {
      coarse.row(y, w, nc.data());
      fine.row(y, w, nf.data());
      for (int x = 0; x < w; ++x) {
        float t = nc[x] * 0.8f + nf[x] * 0.2f;
        for (int c = 0; c < 3; ++c) *p++ = clamp_u8(ground_a.c[c] + (ground_b.c[c] - ground_a.c[c]) * t);
      }
    }
  }
  const int shapes = rng.range(2, 9);
  for (int i = 0; i < shapes; ++i) {
    Colour col = random_colour(rng);
    if (rng.chance(0.5)) {
      double r = rng.uniform(0.02, 0.25) * std::min(w, h) + 1;
      fill_disc(img, rng.uniform(0, w), rng.uniform(0, h), r, col, static_cast<float>(rng.uniform(0, 0.6)));
    } else {
      int x0 = rng.range(0, w - 1), y0 = rng.range(0, h - 1);
      fill_rect(img, x0, y0, x0 + rng.range(1, std::max(1, w / 3)), y0 + rng.range(1, std::max(1, h / 3)), col,
                static_cast<float>(rng.uniform(-0.4, 0.4)));
    }
  }
  // Sensor noise: a triangular distribution from two hashed uniforms, amplitude 2–10.
  const std::uint64_t seed = rng.next();
  const int amp = rng.range(2, 10);
  for (size_t i = 0; i < img.pixels.size(); ++i) {
    std::uint64_t r = mix64(seed + i);
    int n = static_cast<int>(r & 0xff) + static_cast<int>((r >> 8) & 0xff) - 255;  // [-255, 255]
    int v = img.pixels[i] + n * amp / 255;
    img.pixels[i] = static_cast<std::uint8_t>(std::clamp(v, 0, 255));
  }
}

// A page: light background, lines of dark "glyph" strokes, a coloured header bar.
void document(RgbImage& img, Rng& rng) {
  const int w = img.width, h = img.height;
  const std::uint8_t bg = static_cast<std::uint8_t>(rng.range(225, 255));
  std::fill(img.pixels.begin(), img.pixels.end(), bg);
  const int line_h = std::max(3, h / rng.range(12, 60));
  const int margin = std::max(1, w / 20);
  const int header = rng.chance(0.5) ? line_h * 2 : 0;
  fill_rect(img, 0, 0, w, header, random_colour(rng), 0.f);
  Colour ink = rng.chance(0.7) ? Colour{{20, 20, 25}} : random_colour(rng);
  for (int top = header + line_h; top + line_h <= h - margin / 2; top += line_h + line_h / 2) {
    int x = margin;
    const int end = w - margin - rng.range(0, w / 4);
    const int glyph_h = std::max(1, line_h * 2 / 3);
    while (x < end) {
      int word = rng.range(2, 9);
      for (int g = 0; g < word && x < end; ++g) {
        int gw = std::max(1, line_h * rng.range(3, 7) / 10);
        int gh = glyph_h - static_cast<int>(rng.below(static_cast<std::uint32_t>(glyph_h / 3 + 1)));
        fill_rect(img, x, top + glyph_h - gh, std::min(x + gw, end), top + glyph_h, ink, 0.f);
        x += gw + std::max(1, line_h / 8);
      }
      x += std::max(2, line_h / 2);
    }
  }
}

}  // namespace

std::string_view content_name(Content c) {
  switch (c) {
    case Content::kGradient: return "gradient";
    case Content::kNoise: return "noise";
    case Content::kChecker: return "checker";
    case Content::kRings: return "rings";
    case Content::kPhoto: return "photo";
    case Content::kDocument: return "document";
  }
  return "?";
}

image::RgbImage render_content(Content kind, int width, int height, Rng& rng) {
  RgbImage img = blank(width, height);
  switch (kind) {
    case Content::kGradient: gradient(img, rng); break;
    case Content::kNoise: noise(img, rng); break;
    case Content::kChecker: checker(img, rng); break;
    case Content::kRings: rings(img, rng); break;
    case Content::kPhoto: photo(img, rng); break;
    case Content::kDocument: document(img, rng); break;
  }
  return img;
}

std::vector<std::uint8_t> render_alpha(int width, int height, Rng& rng) {
  std::vector<std::uint8_t> alpha(static_cast<size_t>(width) * height);
  const double cx = rng.uniform(0, width), cy = rng.uniform(0, height);
  const double r = rng.uniform(0.2, 0.6) * std::max(width, height) + 1;
  const double soft = rng.uniform(1, 0.2 * r + 2);
  const int cut = rng.range(0, width);  // columns left of `cut` in the top quarter are transparent
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      double d = std::sqrt((x - cx) * (x - cx) + (y - cy) * (y - cy));
      double a = std::clamp((r - d) / soft, 0.0, 1.0) * 255.0;
      if (y < height / 4 && x < cut) a = 0;
      alpha[static_cast<size_t>(y) * width + x] = static_cast<std::uint8_t>(a + 0.5);
    }
  }
  return alpha;
}

}  // namespace stoker::synth
