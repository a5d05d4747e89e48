// `stoker bench video`: stoker's video path (video::VideoReader + VideoProcessor: packet scan,
// keyframe seeks, non-reference frames skipped, only kept frames converted, torch-exact resize,
// temporal patching) against the path a user runs today — qwen-vl-utils 0.0.14's rules on its
// torchvision backend (read_video on PyAV decodes and converts every frame of the clip) plus the
// transformers video processor (bench/video_peer.py + video_reference.py) — on the same files,
// the same pinned core, the same warm-up and repetitions. Set: 1080p H.264 with B-frames and
// sparse keyframes (one keyframe per 10 s), encoded here with libavcodec (synth/video.h).
// Same frames out: indices and grids per video and pass; the peer's decoded RGB frames (before
// resize) byte-identical; resized frames within 1 level (video/resize.h). Blocking; runs the
// Python peer as a child. Errors: those of synth, the decoder and the peer.
#pragma once

#include <string>

#include "stoker/base/result.h"
#include "stoker/bench/harness.h"
#include "stoker/model/family.h"

namespace stoker::bench {

struct VideoBenchOptions {
  bool quick = false;
  std::string model{model::kDefaultModel};
  int core = -1;
  std::string python = "/usr/bin/python3";
  std::string dir;          // keep the videos here (default: temp, removed)
  int videos = 0;           // 0: 2 quick, 4 full
  double seconds = 0;       // clip length; 0: 3 s quick, 6 s full
  int width = 1920, height = 1080;
  int gop = 300;            // keyframe interval in frames (30 fps: 10 s)
  double fps = 2.0;         // qwen-vl-utils sampling rate
  Repeat repeat;
};

Result<Outcome> run_video_bench(const VideoBenchOptions& options);

}  // namespace stoker::bench
