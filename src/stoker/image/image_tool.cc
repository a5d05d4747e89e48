// Developer driver for the image module: parity checks against Pillow and single-thread timings.
// Not installed, not part of the CLI.
//   image_tool decode IN OUT.rgb            → OUT.rgb = "W H\n" + raw RGB bytes
//   image_tool resize IN.rgb W H OUT.rgb    (IN/OUT in the same raw format)
//   image_tool encode IN.rgb KIND OUT       KIND: jpeg[:q[:prog[:444|gray|cmyk]]], png:COLOR:DEPTH[:i][:t], webp[:q|ll][:a]
//   image_tool process IN P MIN MAX OUT.f32 (CLIP mean/std, T=2, m=2; writes rows×cols float32)
//   image_tool bench IN [ITERS] [P MIN MAX]  → ms per stage
#include <algorithm>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "stoker/base/file.h"
#include "stoker/image/decode.h"
#include "stoker/image/encode.h"
#include "stoker/image/exif.h"
#include "stoker/image/processor.h"
#include "stoker/image/resample.h"

using namespace stoker;
using namespace stoker::image;

namespace {

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "image_tool: %s\n", msg.c_str());
  std::exit(1);
}

template <typename T>
T get(Result<T> r) {
  if (!r.ok()) die(r.error().to_string());
  return std::move(r).value();
}

RgbImage read_raw(const std::string& path) {
  auto bytes = get(read_file(path));
  int w = 0, h = 0;
  auto nl = std::find(bytes.begin(), bytes.end(), std::uint8_t('\n'));
  if (nl == bytes.end()) die("bad raw header in " + path);
  const std::string hdr(bytes.begin(), nl);
  if (std::sscanf(hdr.c_str(), "%d %d", &w, &h) != 2) die("bad raw header in " + path);
  const long off = nl - bytes.begin() + 1;
  RgbImage img;
  img.width = w;
  img.height = h;
  img.pixels.assign(bytes.begin() + off, bytes.end());
  if (img.pixels.size() != size_t(w) * h * 3) die("raw size mismatch in " + path);
  return img;
}

void write_raw(const std::string& path, const RgbImage& img) {
  std::string hdr = std::to_string(img.width) + " " + std::to_string(img.height) + "\n";
  std::vector<std::uint8_t> out(hdr.begin(), hdr.end());
  out.insert(out.end(), img.pixels.begin(), img.pixels.end());
  if (auto s = write_file(path, out); !s.ok()) die(s.error().to_string());
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> parts;
  size_t a = 0;
  while (true) {
    size_t b = s.find(':', a);
    parts.push_back(s.substr(a, b - a));
    if (b == std::string::npos) break;
    a = b + 1;
  }
  return parts;
}

std::vector<std::uint8_t> encode(const RgbImage& img, const std::string& kind) {
  auto p = split(kind);
  if (p[0] == "jpeg") {
    JpegOptions o;
    if (p.size() > 1) o.quality = std::atoi(p[1].c_str());
    if (p.size() > 2) o.progressive = p[2] == "prog";
    if (p.size() > 3) {
      o.subsample_420 = p[3] != "444";
      o.grayscale = p[3] == "gray";
      o.cmyk = p[3] == "cmyk";
    }
    return get(encode_jpeg(img, o));
  }
  if (p[0] == "png") {
    PngOptions o;
    const std::string c = p.size() > 1 ? p[1] : "rgb";
    o.color = c == "rgba" ? PngColor::kRgba : c == "gray" ? PngColor::kGray
            : c == "ga" ? PngColor::kGrayAlpha : c == "p" ? PngColor::kPalette : PngColor::kRgb;
    if (p.size() > 2) o.bit_depth = std::atoi(p[2].c_str());
    for (size_t i = 3; i < p.size(); ++i) {
      if (p[i] == "i") o.interlaced = true;
      if (p[i] == "t") o.palette_trns = true;
    }
    return get(encode_png(img, o));
  }
  if (p[0] == "webp") {
    WebpOptions o;
    for (size_t i = 1; i < p.size(); ++i) {
      if (p[i] == "ll") o.lossless = true;
      else if (p[i] == "a") o.with_alpha = true;
      else o.quality = std::strtof(p[i].c_str(), nullptr);
    }
    return get(encode_webp(img, o));
  }
  die("unknown kind " + kind);
}

// Thread CPU time: on a shared machine, wall time mostly measures the neighbours.
double cpu_ms() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

ImageProcessorConfig config_from(int argc, char** argv, int at) {
  ImageProcessorConfig c;
  if (argc > at + 2) {
    c.patch_size = std::atoi(argv[at]);
    c.min_pixels = std::atoll(argv[at + 1]);
    c.max_pixels = std::atoll(argv[at + 2]);
  } else {
    c.min_pixels = 3136;
    c.max_pixels = 12845056;
  }
  return c;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) die("usage: see the comment at the top of image_tool.cc");
  const std::string cmd = argv[1];
  if (cmd == "decode" && argc == 4) {
    auto bytes = get(read_file(argv[2]));
    write_raw(argv[3], get(decode_rgb(bytes)));
  } else if (cmd == "probe") {
    auto bytes = get(read_file(argv[2]));
    auto h = get(probe_image(bytes));
    std::printf("%s %dx%d %s depth=%d progressive=%d\n", std::string(format_name(h.format)).c_str(),
                h.width, h.height, h.mode.c_str(), h.bit_depth, int(h.progressive));
  } else if (cmd == "resize" && argc == 6) {
    RgbImage src = read_raw(argv[2]), dst;
    resize_bicubic_exact(src, std::atoi(argv[3]), std::atoi(argv[4]), &dst);
    write_raw(argv[5], dst);
  } else if (cmd == "encode" && argc == 5) {
    auto out = encode(read_raw(argv[2]), argv[3]);
    if (auto s = write_file(argv[4], out); !s.ok()) die(s.error().to_string());
  } else if (cmd == "process" && argc == 7) {
    auto proc = get(ImageProcessor::create(config_from(argc, argv, 3)));
    auto bytes = get(read_file(argv[2]));
    auto plan = get(proc.plan(bytes));
    std::vector<float> out(plan.rows() * proc.columns());
    ImageScratch scratch;
    if (auto s = proc.process(bytes, plan, PixelDType::kFloat32, out.data(), &scratch); !s.ok()) {
      die(s.error().to_string());
    }
    std::printf("%d %d %d %d %d\n", plan.height, plan.width, plan.grid_t, plan.grid_h, plan.grid_w);
    if (auto s = write_file(argv[6], std::span(reinterpret_cast<const std::uint8_t*>(out.data()),
                                               out.size() * sizeof(float)));
        !s.ok()) {
      die(s.error().to_string());
    }
  } else if (cmd == "bench") {
    const int iters = argc > 3 ? std::atoi(argv[3]) : 20;
    auto proc = get(ImageProcessor::create(config_from(argc, argv, 4)));
    auto bytes = get(read_file(argv[2]));
    auto plan = get(proc.plan(bytes));
    std::vector<float> out(plan.rows() * proc.columns());
    std::vector<std::uint16_t> out16(plan.rows() * proc.columns());
    // The uint8 pixels (finishing on the device) go to 8 buffers in turn, as a batch's images go
    // to different arena memory: not the same warm bytes every iteration.
    constexpr int kU8Buffers = 8;
    std::vector<std::vector<std::uint8_t>> out8(
        kU8Buffers, std::vector<std::uint8_t>(plan.rows() * proc.columns(PixelDType::kUInt8)));
    ImageScratch s;
    constexpr int kStages = 9;
    double best[kStages], sum[kStages] = {};
    std::fill(best, best + kStages, 1e9);
    PhaseTimes phases[2];  // the fused path's phases (wall ns), f32 and u8, summed over iterations
    for (int i = 0; i < iters; ++i) {
      double d[kStages] = {};
      double t0 = cpu_ms();
      if (!proc.plan(bytes).ok()) die("plan failed");  // probe + EXIF orientation
      d[0] = cpu_ms() - t0;
      t0 = cpu_ms();
      if (!decode_rgb(bytes, {}, &s.stored).ok()) die("decode failed");
      d[1] = cpu_ms() - t0;
      t0 = cpu_ms();
      apply_orientation(plan.orientation, s.stored, &s.decoded);  // a copy for orientation 1
      d[2] = plan.orientation == 1 ? 0 : cpu_ms() - t0;
      t0 = cpu_ms();
      resize_bicubic_exact(s.decoded, plan.width, plan.height, &s.resized);
      d[3] = cpu_ms() - t0;
      t0 = cpu_ms();
      proc.normalize_patchify(s.resized, plan, PixelDType::kFloat32, out.data());
      d[4] = cpu_ms() - t0;
      t0 = cpu_ms();
      proc.normalize_patchify(s.resized, plan, PixelDType::kBFloat16, out16.data());
      d[5] = cpu_ms() - t0;
      t0 = cpu_ms();
      s.phases = &phases[0];
      if (!proc.process(bytes, plan, PixelDType::kFloat32, out.data(), &s).ok()) die("process");
      d[6] = cpu_ms() - t0;
      s.phases = &phases[1];
      t0 = cpu_ms();
      proc.normalize_patchify(s.resized, plan, PixelDType::kUInt8, out8[i % kU8Buffers].data());
      d[7] = cpu_ms() - t0;
      t0 = cpu_ms();
      if (!proc.process(bytes, plan, PixelDType::kUInt8, out8[(i + 1) % kU8Buffers].data(), &s)
               .ok()) {
        die("process");
      }
      d[8] = cpu_ms() - t0;
      s.phases = nullptr;
      for (int k = 0; k < kStages; ++k) best[k] = std::min(best[k], d[k]), sum[k] += d[k];
    }
    const char* names[kStages] = {"plan (probe + EXIF)", "decode", "exif_transform", "resize",
                                  "normalize_patchify_f32", "normalize_patchify_bf16",
                                  "process_total_f32", "copy_u8 (wire -> rows)", "process_total_u8"};
    std::printf("image %dx%d -> %dx%d, orientation %d, %d iters (thread CPU ms: best / mean)\n",
                plan.src_width, plan.src_height, plan.width, plan.height, plan.orientation, iters);
    for (int k = 0; k < kStages; ++k) {
      std::printf("  %-24s %7.3f / %7.3f\n", names[k], best[k], sum[k] / iters);
    }
    std::printf("  ratio process/decode (best) %.2f\n", best[6] / best[1]);
    for (int k = 0; k < 2; ++k) {
      std::printf("  process_total_%s phases (wall, mean): decode %.3f resize %.3f %s %.3f\n",
                  k == 0 ? "f32" : "u8", 1e-6 * phases[k].decode_ns / iters,
                  1e-6 * phases[k].resize_ns / iters, k == 0 ? "normalise+patchify" : "patchify",
                  1e-6 * phases[k].normalise_ns / iters);
    }
  } else {
    die("bad command or argument count");
  }
  return 0;
}
