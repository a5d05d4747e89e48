// Synthetic videos encoded in memory with libavcodec/libavformat (no ffmpeg CLI, no temp files):
// a moving pattern (gradient, a travelling box, a little deterministic noise) in H.264
// (libx264), MPEG-4 Part 2, VP9 (libvpx) or AV1 (libaom) when this FFmpeg has the encoder;
// constant or variable frame rate, any GOP length, B-frames, odd sizes (4:4:4 then), a display-
// matrix rotation tag, an AAC audio track, and 0- or 1-frame files. Same spec → same bytes
// (single-threaded encoders). Thread-safe (no shared state). Errors: Unimplemented (no such
// encoder/muxer in this FFmpeg), InvalidArgument (spec), Internal (an FFmpeg call failed).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::synth {

struct VideoSpec {
  std::string codec = "h264";  // h264 | mpeg4 | vp9 | av1
  int width = 320, height = 240;
  int fps_num = 25, fps_den = 1;  // 24000/1001, 25, 30000/1001, 60 ...
  int frames = 50;
  int gop = 25;          // keyframe interval (frames)
  int bframes = 2;       // h264 / mpeg4
  bool vfr = false;      // irregular frame durations (pts jitter, a pause)
  bool audio = false;    // an AAC (mp4) / Opus-less: AAC only track next to the video
  int audio_rate = 16000, audio_channels = 1;
  std::string audio_content;  // empty: a 440 Hz sine; else synth/audio.h content (speech, tone, ...)
  int rotation = 0;      // display matrix, degrees counterclockwise (ffprobe "rotation"): 0/90/180/270
  std::uint64_t seed = 0;
  Status validate() const;
  std::string container() const { return codec == "vp9" || codec == "av1" ? "webm" : "mp4"; }
};

// Whether this FFmpeg can encode `codec` (the encoder library is present).
bool can_encode(const std::string& codec);

Result<std::vector<std::uint8_t>> encode_video(const VideoSpec& spec);

// The kinds `stoker synth --videos N` cycles through (all small, 1–3 s): long-GOP H.264 with
// B-frames, MPEG-4 at 29.97, VFR odd-size 4:4:4 H.264 at 23.976, 60 fps with an AAC track,
// a 90° rotation tag, short-GOP H.264, VP9 and AV1 when encodable. Spec k of the cycle.
VideoSpec video_kind(int k, std::uint64_t seed);
std::string video_kind_name(const VideoSpec& spec);  // e.g. "h264_25fps_gop250_bf2_320x180"

struct VideoMixResult {
  int records = 0;
  std::vector<std::string> paths;  // relative to out_dir
  std::int64_t bytes = 0;
};
// Writes out_dir/videos/<k>_<kind>.<ext> for k < count, appends one OpenAI-messages record per
// video to out_dir/data.jsonl ({"type":"video","video":path,"fps":..} + a question and an
// answer), and describes every file in out_dir/videos.jsonl. Also writes
// videos/one_frame.mp4 and videos/zero_frames.mp4 (listed, not referenced by records: tests
// use them; qwen-vl-utils refuses both). Deterministic.
Result<VideoMixResult> add_video_records(const std::string& out_dir, int count, std::uint64_t seed);

}  // namespace stoker::synth
