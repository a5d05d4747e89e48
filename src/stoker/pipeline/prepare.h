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

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include "stoker/batch/mrope.h"
#include "stoker/dataset/conversation.h"
#include "stoker/dataset/manifest.h"
#include "stoker/image/processor.h"
#include "stoker/io/media_access.h"
#include "stoker/model/model_config.h"
#include "stoker/obs/histogram.h"
#include "stoker/obs/trace.h"
#include "stoker/pipeline/error_report.h"
#include "stoker/pipeline/fetcher.h"
#include "stoker/pipeline/remote.h"
#include "stoker/text/chat_template.h"
#include "stoker/text/labels.h"
#include "stoker/text/tokenizer.h"
#include "stoker/video/processor.h"

namespace stoker::pipeline {

struct UnitInfo;      // source.h
struct LoaderConfig;  // loader.h
struct Item;

enum Stage { kRead, kFetch, kPrepare, kEmit, kAssemble, kNumStages };
const char* stage_name(int stage);

// Per stage: busy time, items, and each item's latency (the Prometheus histograms).
struct StageCounters {
  std::atomic<std::int64_t> busy_ns[kNumStages] = {};
  std::atomic<std::int64_t> items[kNumStages] = {};
  obs::Histogram latency[kNumStages];
  // `n` items done together in `ns` (remote samples landing in one call): one latency record.
  void add(int stage, std::int64_t ns, std::int64_t n = 1) {
    busy_ns[stage].fetch_add(ns, std::memory_order_relaxed);
    items[stage].fetch_add(n, std::memory_order_relaxed);
    latency[stage].record_ns(ns);
  }
  // An item whose latency is not busy time (an asynchronous fetch waits on the network).
  void add_waited(int stage, std::int64_t ns) {
    items[stage].fetch_add(1, std::memory_order_relaxed);
    latency[stage].record_ns(ns);
  }
};

// The counter tracks the engine records when tracing (obs::Tracer::counter_id; -1: none).
struct TraceCounterIds {
  int fetch_bytes = -1;     // media bytes in flight (the fetch byte budget)
  int arena_bytes = -1;     // arena bytes in use
  int ready_batches = -1;   // batches in the prefetch ring
  int in_flight = -1;       // samples submitted and not yet taken in order
  int reorder = -1;         // prepared samples waiting in the reorder buffer
};

struct Context {
  // Tracing (obs/trace.h): null when off. First member, so it outlives the budget and the
  // fetcher that record to it; shared, since a batch (which may outlive the loader) records the
  // arena counter when it is released.
  std::shared_ptr<obs::Tracer> tracer;
  TraceCounterIds trace_ids;
  // The tracer when the item's per-sample spans are kept (TraceOptions::sample_every), else null.
  obs::Tracer* trace_for(const Item& item) const;
  model::ModelConfig model;
  text::TemplateKind template_kind = text::TemplateKind::kQwen2VL;
  std::unique_ptr<text::Tokenizer> tokenizer;
  std::optional<image::ImageProcessor> processor;
  std::optional<video::VideoProcessor> video_processor;
  batch::RopeConfig rope;
  std::unique_ptr<dataset::ManifestIndex> index;
  // Per manifest (index file), in the order given: how its media references resolve and what
  // they may reach (the trust boundary), and how errors name it (the path or URI as given,
  // secrets redacted; a remote manifest is indexed from a local cached copy).
  std::vector<io::MediaScope> scopes;
  std::vector<std::string> manifest_names;
  // Before the fetcher: a remote fetcher's pending reads complete (Cancelled) when it is
  // destroyed, and their leases go back to a budget that must still exist.
  std::unique_ptr<ByteBudget> budget;
  std::unique_ptr<Fetcher> fetcher;
  std::int64_t max_length = 0;
  bool truncate = false;  // over max_length: whole turns cut (text::Overflow::kTruncateTurns)
  std::int64_t max_media_per_record = 1024;  // LoaderConfig::max_media_per_record
  std::function<void(std::uint64_t, int)> io_delay_hook;
  mutable StageCounters counters;
  const std::string& manifest_name(std::uint32_t file) const { return manifest_names[file]; }
};

// One position of this rank's stream.
struct Item {
  std::uint64_t seq = 0;     // 0, 1, 2, ... over the whole stream (all epochs)
  std::uint64_t epoch = 0;
  std::uint64_t k = 0;       // index in this rank's shard of the epoch
  std::uint64_t sample = 0;  // global record id
  bool last_of_epoch = false;
  // The loader state once this item is consumed: (epoch + 1, 0) after an epoch's last item.
  std::uint64_t next_epoch = 0, next_position = 0;
  // Packing / token budgets (PackSchedule): the unit this item belongs to, its place in it, and
  // what measuring found (prepare must find the same, or the sample fails at "plan").
  std::shared_ptr<const UnitInfo> unit;
  std::uint32_t unit_index = 0, unit_size = 0;
  std::int64_t planned_tokens = -1, planned_rows = -1;
  // A failure met before the item was read (an outage while measuring the plan): delivered as
  // is, so the engine stops on it in order.
  std::optional<SampleFailure> preset;
};

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

inline obs::Tracer* Context::trace_for(const Item& item) const {
  return tracer != nullptr && tracer->keeps(item.seq) ? tracer.get() : nullptr;
}

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

// One fetch per image, video file or video frame: ResourceExhausted when a record references more
// than `max_media` (max_media_per_record), before any is resolved, budgeted or fetched. read_stage
// applies it; so does `stoker render`.
Status check_media_count(const dataset::Conversation& conv, std::int64_t max_media);
SampleFailure fetch_failure(const Context& ctx, const Item& item, std::size_t image,
                            const Error& e);
// `item`'s failure at `stage`, named by its manifest and line.
SampleFailure sample_failure(const Context& ctx, const Item& item, const char* stage,
                             const Error& e);
// A failure of image `image` of `item` while it was decoded into its batch.
SampleFailure decode_failure(const Context& ctx, const Item& item, std::size_t image,
                             const Error& e);
Prepared prepare(const Context& ctx, Fetched&& fetched);

// Everything the per-sample work reads for `config` — model, tokenizer, image processor, sources
// (manifest index, media scopes, one fetcher), byte budget, max length — as a Loader builds it.
Result<std::unique_ptr<Context>> make_context(const LoaderConfig& config);

// A media or record read that failed because storage was unreachable (retries spent) — not a
// property of the sample, so never skipped as bad data: the run stops, resumably.
bool is_outage(const SampleFailure& f);
// The error that stops the job on such a failure: DeadlineExceeded or Unavailable as the failure
// says, naming the sample and its file:line, with `context` (what was being done, how to resume).
Error outage_error(const SampleFailure& f, std::string context);

}  // namespace stoker::pipeline
