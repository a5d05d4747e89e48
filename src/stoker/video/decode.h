// Video decoding from memory with FFmpeg's libraries (libavformat/libavcodec/libswscale 5.1):
// a custom AVIOContext reads the fetched bytes (no files, no subprocess). open() demuxes the
// whole first video stream once without decoding (packet scan: pts, key flags; discard-flagged
// packets skipped) — frame counts come from the packets actually present, never from header
// claims. decode() then produces only the requested frames: it seeks to the keyframe at or
// before each wanted frame (from the scan, not the demuxer's guess), decodes forward inside a
// GOP, tells the decoder to drop non-reference frames that are not wanted
// (skip_frame = AVDISCARD_NONREF per packet), converts to RGB only the frames kept (swscale
// bilinear, default BT.601 coefficients — what PyAV's `to_rgb()` does) and hands each to a sink,
// so memory is bounded by what the sink keeps.
// Bounds: frame size (max_side, max_frame_pixels), scanned packets (max_frames), wall time
// (max_seconds). A VideoReader is single-threaded (one per video); FFmpeg may use `threads`
// decoder threads inside it. Errors: InvalidArgument (no video stream, absurd size),
// DataLoss (unreadable container, corrupt or missing frames, frames without timestamps),
// ResourceExhausted (limits), DeadlineExceeded (time budget), Unimplemented (no decoder).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::video {

struct DecodeLimits {
  int max_side = 16384;
  std::int64_t max_frame_pixels = std::int64_t{1} << 26;  // 8192 × 8192
  std::int64_t max_frames = std::int64_t{1} << 20;        // video packets scanned
  double max_seconds = 120;                               // wall clock per open + decode
  int threads = 1;                                        // decoder threads (0: FFmpeg's auto)
};

struct StreamInfo {
  int width = 0, height = 0;  // coded size as the decoder reports it (rotation is not applied)
  int tb_num = 1, tb_den = 1;
  double average_fps = 0;     // AVStream.avg_frame_rate (0 when unknown)
  std::string codec;
  std::vector<std::int64_t> pts;  // every frame's pts, ascending, unique
  std::int64_t keyframes = 0;
  // Display-matrix rotation, degrees counterclockwise in [0, 360) (what ffprobe prints as the side
  // data "rotation"); reported, not applied: PyAV/torchvision ignore it.
  int rotation = 0;
};

struct RgbFrame {
  int width = 0, height = 0;
  std::size_t stride = 0;  // bytes per row
  const std::uint8_t* data = nullptr;
  std::int64_t pts = 0;
};

struct DecodeStats {
  std::int64_t packets_sent = 0;      // packets given to the decoder
  std::int64_t packets_skipped = 0;   // demuxed but never decoded (before a seek target)
  std::int64_t frames_decoded = 0;    // frames the decoder returned
  std::int64_t frames_converted = 0;  // frames converted to RGB (= kept)
  std::int64_t seeks = 0;
};

class VideoReader {
 public:
  // `bytes` must outlive the reader.
  static Result<std::unique_ptr<VideoReader>> open(std::span<const std::uint8_t> bytes,
                                                   const DecodeLimits& limits = {});
  ~VideoReader();
  VideoReader(const VideoReader&) = delete;
  VideoReader& operator=(const VideoReader&) = delete;

  const StreamInfo& info() const;

  // Decodes the frames at `positions` (indices into info().pts, ascending; repeats allowed)
  // and calls sink(k, frame) for k = 0.. in order; the frame's memory is valid during the call.
  using Sink = std::function<Status(std::size_t k, const RgbFrame& frame)>;
  Status decode(std::span<const std::int64_t> positions, const Sink& sink,
                DecodeStats* stats = nullptr);

  struct Impl;

 private:
  explicit VideoReader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace stoker::video
