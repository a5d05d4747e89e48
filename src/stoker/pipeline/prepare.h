// The per-sample work before a batch is assembled, shared by every Loader mode: read_and_fetch
// (record pread → parse → validate → resolve media through the manifest's trust boundary → fetch
// bytes) and prepare (plan each image from its header → template + tokenize + labels with the
// max-length policy → mRoPE positions). Nothing is decoded here: after prepare the sample's sizes
// are known exactly (tokens, pixel rows), so the engine allocates the batch block and then runs
// every image through ImageProcessor::process — decode, resize, normalise, patchify — straight
// into its rows (engine.cc, emit). A sample keeps only its encoded bytes until then. A failure is
// a value (SampleFailure naming the stage), never an error of the run.
// Context is immutable and shared by all threads.
#pragma once

#include <cstdint>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "stoker/dataset/conversation.h"
#include "stoker/pipeline/context.h"
#include "stoker/pipeline/remote.h"
#include "stoker/text/labels.h"

namespace stoker::pipeline {

struct Fetched {
  Item item;
  std::optional<SampleFailure> failure;
  dataset::Conversation conversation;
  // One per image part, one per video file, one per frame of a video given as frames — in the
  // order of the conversation's parts (prepare walks the parts the same way).
  std::vector<std::vector<std::uint8_t>> media;
  SampleLease lease;  // the fetch budget their bytes take until prepare
};

struct Prepared {
  Item item;
  std::optional<SampleFailure> failure;
  std::vector<image::ImagePlan> plans;       // images the sample keeps
  std::vector<std::vector<std::uint8_t>> encoded;  // their bytes, decoded only into the batch
  text::TokenizedSample tokens;
  std::vector<std::int64_t> positions;     // 3 × tokens.input_ids.size()
  std::int64_t pixel_rows = 0;
  // Prepared elsewhere (LoaderConfig::remote): the pixel rows arrive at emit (RemoteSamples).
  std::optional<RemotePixels> remote;
  // Videos the sample keeps: planned here (packet scan / frame headers), decoded into the batch.
  struct Video {
    video::VideoPlan plan;
    std::vector<std::vector<std::uint8_t>> encoded;  // the file, or the frames (frame lists)
    bool frame_list = false;
    int frame_width = 0, frame_height = 0;  // frame lists: each frame after its image resize
  };
  std::vector<Video> videos;
  std::int64_t video_rows = 0;
};

// Decodes one prepared video into `out` (plan.rows() × columns of `dtype`: its rows of
// pixel_values_videos), at emit: a file streamed through the VideoReader (memory: one temporal
// group of frames); a frame list as qwen-vl-utils does (each frame an image: decoded,
// smart_resize'd with the image bounds and resized with Pillow's bicubic, then resized as a
// video frame).
Status process_video(const Context& ctx, const Prepared::Video& v, video::VideoDType dtype,
                     void* out);

Fetched read_and_fetch(const Context& ctx, const Item& item, std::stop_token stop);
// The read half alone (record → conversation → media URIs); for the asynchronous fetch path.
Fetched read_stage(const Context& ctx, const Item& item, std::vector<std::string>* uris);
SampleFailure fetch_failure(const Context& ctx, const Item& item, std::size_t image,
                            const Error& e);
// `item`'s failure at `stage`, named by its manifest and line.
SampleFailure sample_failure(const Context& ctx, const Item& item, FailureStage stage,
                             const Error& e);
// A failure of image `image` of `item` while it was decoded into its batch.
SampleFailure decode_failure(const Context& ctx, const Item& item, std::size_t image,
                             const Error& e);
Prepared prepare(const Context& ctx, Fetched&& fetched);

}  // namespace stoker::pipeline
