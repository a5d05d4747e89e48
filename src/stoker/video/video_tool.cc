// stoker_video_tool FILE [--model qwen2vl|qwen25vl|qwen3vl] [--fps F | --nframes N]
//   [--min-frames N] [--max-frames N] [--video-start S] [--video-end S] [--min-pixels N]
//   [--max-pixels N] [--total-pixels N] [--threads N] [--max-side N] [--out PREFIX] [--raw] [--repeat N]
// Prints the plan as one JSON line (frame indices, grid, second_per_grid_t, timestamps, decode
// counters, seconds). --out writes PREFIX.frames (resized uint8 T×H×W×3) and PREFIX.pixels
// (float32 pixel_values_videos); --raw also PREFIX.raw (the decoded RGB of the kept frames).
// Exit 1 with the error on stderr. For tests/video/parity_test.py and manual checks.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "stoker/base/file.h"
#include "stoker/video/processor.h"

using namespace stoker;
using namespace stoker::video;

namespace {

void write_file(const std::string& path, const void* data, std::size_t n) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(data, 1, n, f) != n) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::exit(1);
  }
  std::fclose(f);
}

std::string join(const std::vector<std::int64_t>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

std::string num(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: stoker_video_tool FILE [options]\n");
    return 2;
  }
  std::string path = argv[1], model = "qwen25vl", out;
  VideoOptions o;
  int threads = 1, repeat = 1, max_side = 16384;
  bool raw = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> double {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return std::atof(argv[++i]);
    };
    if (a == "--model") model = argv[++i];
    else if (a == "--fps") o.fps = val();
    else if (a == "--nframes") o.nframes = val();
    else if (a == "--min-frames") o.min_frames = val();
    else if (a == "--max-frames") o.max_frames = val();
    else if (a == "--video-start") o.video_start = val();
    else if (a == "--video-end") o.video_end = val();
    else if (a == "--min-pixels") o.min_pixels = val();
    else if (a == "--max-pixels") o.max_pixels = val();
    else if (a == "--total-pixels") o.total_pixels = val();
    else if (a == "--threads") threads = static_cast<int>(val());
    else if (a == "--max-side") max_side = static_cast<int>(val());
    else if (a == "--repeat") repeat = static_cast<int>(val());
    else if (a == "--out") out = argv[++i];
    else if (a == "--raw") raw = true;
    else {
      std::fprintf(stderr, "unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  VideoProcessorConfig cfg;
  if (model == "qwen3vl") {
    cfg.patch_size = 16;
    cfg.mean = {0.5f, 0.5f, 0.5f};
    cfg.std = {0.5f, 0.5f, 0.5f};
  } else if (model != "qwen2vl" && model != "qwen25vl") {
    std::fprintf(stderr, "unknown model %s\n", model.c_str());
    return 2;
  }
  cfg.limits.threads = threads;
  cfg.limits.max_side = max_side;
  auto proc = VideoProcessor::create(cfg);
  if (!proc) {
    std::fprintf(stderr, "%s\n", proc.error().to_string().c_str());
    return 1;
  }
  auto bytes = read_file(path);
  if (!bytes) {
    std::fprintf(stderr, "%s\n", bytes.error().to_string().c_str());
    return 1;
  }
  auto t0 = std::chrono::steady_clock::now();
  std::optional<Result<ProcessedVideo>> result;
  for (int r = 0; r < repeat; ++r) result.emplace(process_video(*bytes, *proc, o));
  Result<ProcessedVideo>& v = *result;
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / repeat;
  if (!v) {
    std::fprintf(stderr, "%s\n", v.error().to_string().c_str());
    return 1;
  }
  const VideoPlan& p = v->plan;
  std::string ts;
  for (std::size_t i = 0; i < p.group_seconds.size(); ++i) ts += (i ? "," : "") + num(p.group_seconds[i]);
  std::printf(
      "{\"total_frames\":%lld,\"video_fps\":%s,\"indices\":[%s],\"sample_fps\":%s,"
      "\"height\":%d,\"width\":%d,\"grid\":[%d,%d,%d],\"second_per_grid_t\":%s,"
      "\"group_seconds\":[%s],\"stream_frames\":%zu,\"keyframes\":%lld,\"codec\":\"%s\","
      "\"rotation\":%d,\"packets_sent\":%lld,\"packets_skipped\":%lld,\"frames_decoded\":%lld,"
      "\"frames_converted\":%lld,\"seeks\":%lld,\"seconds\":%s}\n",
      static_cast<long long>(p.frames.total_frames), num(p.frames.video_fps).c_str(),
      join(p.frames.indices).c_str(), num(p.frames.sample_fps).c_str(), p.frames.height,
      p.frames.width, p.grid_t, p.grid_h, p.grid_w, num(p.second_per_grid_t).c_str(), ts.c_str(),
      v->info.pts.size(), static_cast<long long>(v->info.keyframes), v->info.codec.c_str(),
      v->info.rotation, static_cast<long long>(v->stats.packets_sent),
      static_cast<long long>(v->stats.packets_skipped), static_cast<long long>(v->stats.frames_decoded),
      static_cast<long long>(v->stats.frames_converted), static_cast<long long>(v->stats.seeks),
      num(secs).c_str());
  if (!out.empty()) {
    write_file(out + ".frames", v->frames.pixels.data(), v->frames.pixels.size());
    write_file(out + ".pixels", v->pixel_values.data(), v->pixel_values.size() * sizeof(float));
    if (raw) {
      auto reader = VideoReader::open(*bytes, cfg.limits);
      if (!reader) return 1;
      std::vector<std::uint8_t> all;
      Status s = (*reader)->decode(p.stream_positions, [&](std::size_t, const RgbFrame& f) -> Status {
        for (int y = 0; y < f.height; ++y) {
          const std::uint8_t* row = f.data + static_cast<std::size_t>(y) * f.stride;
          all.insert(all.end(), row, row + static_cast<std::size_t>(f.width) * 3);
        }
        return {};
      });
      if (!s.ok()) {
        std::fprintf(stderr, "%s\n", s.error().to_string().c_str());
        return 1;
      }
      write_file(out + ".raw", all.data(), all.size());
    }
  }
  return 0;
}
