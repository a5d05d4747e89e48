#include "stoker/bench/video_bench.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stoker/base/clock.h"
#include "stoker/base/file.h"
#include "stoker/bench/paths.h"
#include "stoker/bench/peer.h"
#include "stoker/synth/video.h"
#include "stoker/video/processor.h"

namespace stoker::bench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

video::VideoProcessorConfig processor_config(const std::string& model) {
  video::VideoProcessorConfig c;
  if (model == "qwen3-vl") {
    c.patch_size = 16;
    c.mean = {0.5f, 0.5f, 0.5f};
    c.std = {0.5f, 0.5f, 0.5f};
  }
  c.limits.threads = 1;  // one core: no FFmpeg helper threads
  return c;
}

struct StokerVideo {
  std::vector<std::int64_t> indices;
  std::vector<int> grid;
  std::int64_t kept = 0, decoded = 0, sent = 0, stream_frames = 0;
};

}  // namespace

Result<Outcome> run_video_bench(const VideoBenchOptions& in) {
  VideoBenchOptions o = in;
  if (o.videos <= 0) o.videos = o.quick ? 2 : 4;
  if (o.seconds <= 0) o.seconds = o.quick ? 3 : 6;
  if (o.model != "qwen2-vl" && o.model != "qwen2.5-vl" && o.model != "qwen3-vl") {
    return invalid_argument("--model: qwen2-vl | qwen2.5-vl | qwen3-vl");
  }
  const int core = o.core >= 0 ? o.core : last_allowed_cpu();
  STOKER_RETURN_IF_ERROR(pin_to_core(core));
  std::optional<TempDir> tmp;
  std::string work = o.dir;
  if (work.empty()) {
    STOKER_ASSIGN_OR_RETURN(TempDir t, TempDir::make("stoker-bench-video"));
    work = t.path();
    tmp.emplace(std::move(t));
  }
  fs::create_directories(work + "/peer");

  // The set: 1080p H.264, B-frames, sparse keyframes, encoded here with libavcodec.
  std::vector<std::vector<std::uint8_t>> blobs;
  std::string list;
  const int frames = static_cast<int>(o.seconds * 30);
  for (int k = 0; k < o.videos; ++k) {
    synth::VideoSpec s{.codec = "h264", .width = o.width, .height = o.height, .fps_num = 30,
                       .fps_den = 1, .frames = frames, .gop = o.gop, .bframes = 2,
                       .seed = static_cast<std::uint64_t>(k + 1)};
    STOKER_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes, synth::encode_video(s));
    const std::string path = work + "/video_" + std::to_string(k) + ".mp4";
    STOKER_RETURN_IF_ERROR(write_file(path, bytes));
    list += path + "\n";
    blobs.push_back(std::move(bytes));
  }
  STOKER_RETURN_IF_ERROR(write_file(work + "/list.txt",
                                    std::span<const std::uint8_t>(
                                        reinterpret_cast<const std::uint8_t*>(list.data()), list.size())));
  std::printf("stoker bench video: %d videos %dx%d H.264 30 fps, %.0f s (%d frames), B-frames 2, "
              "keyframe every %d frames; model %s, fps %.1f; core %d; %s (%s)\n",
              o.videos, o.width, o.height, o.seconds, frames, o.gop, o.model.c_str(), o.fps, core,
              o.repeat.text().c_str(), build_kind());
  std::fflush(stdout);

  // stoker: bytes in memory → open (scan) → plan → decode kept frames → resize → patchify.
  STOKER_ASSIGN_OR_RETURN(video::VideoProcessor proc, video::VideoProcessor::create(processor_config(o.model)));
  video::VideoOptions vopt;
  vopt.fps = o.fps;
  std::vector<StokerVideo> mine(blobs.size());
  BestOf stoker_time;
  std::vector<float> pixels;
  video::VideoFrames frames_out;
  for (int pass = -o.repeat.warmup; pass < o.repeat.passes; ++pass) {
    PassTime t;
    for (std::size_t k = 0; k < blobs.size(); ++k) {
      const double c0 = process_cpu_s();
      const std::int64_t w0 = now_ns();
      STOKER_ASSIGN_OR_RETURN(auto reader, video::VideoReader::open(blobs[k], proc.config().limits));
      STOKER_ASSIGN_OR_RETURN(video::VideoPlan plan, proc.plan(*reader, vopt));
      video::DecodeStats stats;
      pixels.resize(static_cast<std::size_t>(plan.rows() * proc.columns()));
      STOKER_RETURN_IF_ERROR(proc.process(*reader, plan, video::VideoDType::kFloat32, pixels.data(), &stats));
      t.cpu_s += process_cpu_s() - c0;
      t.wall_s += static_cast<double>(now_ns() - w0) * 1e-9;
      StokerVideo& v = mine[k];
      v.indices = plan.frames.indices;
      v.grid = {plan.grid_t, plan.grid_h, plan.grid_w};
      v.kept = stats.frames_converted;
      v.decoded = stats.frames_decoded;
      v.sent = stats.packets_sent;
      v.stream_frames = static_cast<std::int64_t>(reader->info().pts.size());
    }
    if (pass >= 0) stoker_time.add(t);
  }

  // The peer, on the same core (children inherit the pinning).
  STOKER_ASSIGN_OR_RETURN(fs::path script, find_bench_file("video_peer.py"));
  char fps_text[32];
  std::snprintf(fps_text, sizeof fps_text, "%.17g", o.fps);
  STOKER_ASSIGN_OR_RETURN(
      std::string out,
      run_capture({o.python, script.string(), "--model", o.model, "--warmup",
                   std::to_string(o.repeat.warmup), "--passes", std::to_string(o.repeat.passes),
                   "--list", work + "/list.txt", "--dump-dir", work + "/peer", "--fps", fps_text},
                  single_thread_env()));
  json peer = json::parse(last_json_line(out), nullptr, false);
  if (peer.is_discarded() || !peer.contains("passes")) {
    return internal_error("video peer: no JSON result in its output");
  }
  BestOf peer_time;
  for (const auto& p : peer["passes"]) peer_time.add({p["cpu_s"].get<double>(), p["wall_s"].get<double>()});

  // Same frames out: indices, grids; decoded RGB identical; resized within one level.
  Comparison cmp;
  std::int64_t values = 0, differing = 0, kept = 0, decoded = 0, sent = 0, peer_decoded = 0;
  int max_delta = 0;
  for (std::size_t k = 0; k < blobs.size(); ++k) {
    const json& pv = peer["videos"][k];
    const StokerVideo& v = mine[k];
    const std::string name = "video " + std::to_string(k);
    cmp.compared();
    cmp.expect_equal(v.indices, pv["indices"].get<std::vector<std::int64_t>>(), name + " frame indices");
    cmp.expect_equal(v.grid, pv["grid"].get<std::vector<int>>(), name + " video_grid_thw");
    kept += v.kept;
    decoded += v.decoded;
    sent += v.sent;
    peer_decoded += pv["total_frames"].get<std::int64_t>();
    // Decoded RGB of the kept frames (untimed, a separate decode).
    STOKER_ASSIGN_OR_RETURN(auto reader, video::VideoReader::open(blobs[k], proc.config().limits));
    STOKER_ASSIGN_OR_RETURN(video::VideoPlan plan, proc.plan(*reader, vopt));
    std::vector<std::uint8_t> raw;
    STOKER_RETURN_IF_ERROR(reader->decode(plan.stream_positions, [&](std::size_t, const video::RgbFrame& f) -> Status {
      for (int y = 0; y < f.height; ++y) {
        const std::uint8_t* row = f.data + static_cast<std::size_t>(y) * f.stride;
        raw.insert(raw.end(), row, row + static_cast<std::size_t>(f.width) * 3);
      }
      return {};
    }));
    STOKER_ASSIGN_OR_RETURN(std::vector<std::uint8_t> peer_raw, read_file(work + "/peer/" + std::to_string(k) + ".raw"));
    cmp.expect_equal(raw == peer_raw, true, name + " decoded RGB frames");
    STOKER_ASSIGN_OR_RETURN(auto reader2, video::VideoReader::open(blobs[k], proc.config().limits));
    STOKER_RETURN_IF_ERROR(proc.read_frames(*reader2, plan, &frames_out));
    STOKER_ASSIGN_OR_RETURN(std::vector<std::uint8_t> peer_frames, read_file(work + "/peer/" + std::to_string(k) + ".frames"));
    if (!cmp.expect_equal(peer_frames.size(), frames_out.pixels.size(), name + " resized size")) continue;
    for (std::size_t i = 0; i < peer_frames.size(); ++i) {
      int d = std::abs(static_cast<int>(peer_frames[i]) - static_cast<int>(frames_out.pixels[i]));
      if (d) ++differing;
      max_delta = std::max(max_delta, d);
    }
    values += static_cast<std::int64_t>(peer_frames.size());
  }
  if (max_delta > 1) cmp.differ("resized frames differ by " + std::to_string(max_delta) + " levels");

  const double n = static_cast<double>(blobs.size());
  std::printf("  reference: qwen-vl-utils 0.0.14 rules, torchvision %s read_video (PyAV) + transformers "
              "video processor, torch %s\n",
              peer["versions"]["torchvision"].get<std::string>().c_str(),
              peer["versions"]["torch"].get<std::string>().c_str());
  std::printf("  stoker   %8.3f videos/s  (%.3f s CPU per video)  frames decoded per frame kept %.2f "
              "(%lld packets decoded, %lld frames out of the decoder, %lld kept)\n",
              n / stoker_time.cpu_s(), stoker_time.cpu_s() / n,
              static_cast<double>(decoded) / static_cast<double>(std::max<std::int64_t>(kept, 1)),
              static_cast<long long>(sent), static_cast<long long>(decoded), static_cast<long long>(kept));
  std::printf("  python   %8.3f videos/s  (%.3f s CPU per video)  frames decoded per frame kept %.2f "
              "(every frame of the clip decoded and converted to RGB)\n",
              n / peer_time.cpu_s(), peer_time.cpu_s() / n,
              static_cast<double>(peer_decoded) / static_cast<double>(std::max<std::int64_t>(kept, 1)));
  std::printf("  wall: stoker %.3f s, python %.3f s per video\n", stoker_time.wall_s() / n, peer_time.wall_s() / n);
  std::printf("  frames: indices and grids equal; decoded RGB identical; resized uint8 %lld of %lld "
              "values differ by 1 (max |delta| %d: torch float32 summation order, video/resize.h)\n",
              static_cast<long long>(differing), static_cast<long long>(values), max_delta);
  return finish(cmp, "videos", "the Python reference path (one core, CPU time)",
                peer_time.cpu_s() / stoker_time.cpu_s());
}

}  // namespace stoker::bench
