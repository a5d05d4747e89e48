// The media-kind seam: every medium of a sample — an image, a video file, a video given as a
// list of frames, an audio clip (or a video's audio track) — is a Medium behind one interface, made by its MediaKind. A kind
// says which record parts it takes and what to fetch for one, and plans a Medium from the fetched
// bytes (prepare: headers / packet scans only, nothing decoded). A Medium knows its plan — rows
// in its modality's tensor, the grid the template expands and positions use, the bytes it holds
// — produces its rows straight into the batch block at emit, writes its per-medium metadata
// (grid, seconds), and has wire forms for the cluster (its plan with or without its encoded
// bytes; its resized uint8 pixels, which finish() turns into rows on the receiver). Rows are
// finished (float32 / bf16) or, for finishing on the trainer's device, uint8 (kUInt8: the
// patches' resized bytes; produce() and finish() write those alike). A Modality
// names the tensors its media share in a batch ("image": pixel_values + image_grid_thw; "video":
// pixel_values_videos + video_grid_thw + second_per_grid_ts) and how errors name a medium
// ("video 1": the modality and the medium's index among the sample's media of that modality).
// Kinds register in a registry (register_media_kind); the built-in ones: image, video file,
// frame-list video, audio (media_image.cc, media_video.cc, media_audio.cc; the processing itself
// is video/'s and audio/'s). "audio": input_features [clips, 128, frames] + feature_attention_mask.
// Kinds, modalities and planned media are immutable and thread-safe; produce() may run on any
// thread (the emit helpers), one call per medium at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/base/byte_reader.h"
#include "stoker/base/byte_writer.h"
#include "stoker/base/result.h"
#include "stoker/batch/batch.h"
#include "stoker/dataset/conversation.h"
#include "stoker/image/processor.h"
#include "stoker/text/labels.h"

namespace stoker::obs {
class Tracer;
}
namespace stoker::video {
class VideoProcessor;
}
namespace stoker::audio {
class AudioProcessor;
struct LoadOptions;
}

namespace stoker::pipeline {

class MediaKind;
class Medium;

// What media plan and produce with: the model's processors (null: the model takes no such media).
struct MediaEnv {
  const image::ImageProcessor* image = nullptr;
  const video::VideoProcessor* video = nullptr;
  const audio::AudioProcessor* audio = nullptr;
};

// One per-medium tensor of a modality: [media, width] (width 0: [media]; kBatchWidth: the
// batch's width of the modality's rows tensor — audio's feature_attention_mask [clips, frames]).
// A medium writes its own columns() values of a kBatchWidth row; the rest is zero.
inline constexpr int kBatchWidth = -1;
struct MetaTensor {
  std::string_view name;
  batch::DType dtype = batch::DType::kInt64;
  int width = 0;
};

// The tensors one modality's media share in a batch, samples in order, then media in order.
struct Modality {
  std::string_view name;         // "image", "video": errors name a medium "image 0", "video 1"
  std::string_view rows_tensor;  // [rows, columns] in the batch's pixel dtype
  std::vector<MetaTensor> meta;  // one row per medium, written by Medium::write_meta
  // Placed in every batch, right after the token tensors (pixel_values and image_grid_thw, as
  // the HF processor always returns them); otherwise placed after sample_ids, only in batches
  // holding such media. This is the order batches have always had (their hashes depend on it).
  bool always = false;
  std::int64_t (*columns)(const MediaEnv& env) = nullptr;  // its rows' width (finished rows)
  // Finishing on the trainer's device (issue 26; rows dtype image::PixelDType::kUInt8): the rows
  // tensor is then `uint8_tensor`, uint8 [rows, uint8_row...] — a medium's rows × row bytes hold
  // its resized pixels as the resize wrote them ([H, W, 3] an image, [F, H, W, 3] a video's
  // frames), not patch by patch — followed by the modality's meta tensors (the grids tell
  // H and W), `table_tensor` ([3, 256] of the pixel dtype: the value normalise makes of byte x
  // in channel c) and `patching_tensor` (int64 [4]: patch size P, merge size, temporal_patch_size T
  // — the frames of a finished row — and the frames stored per temporal group: an image's one
  // frame (repeated T times when finished), a video's T). stoker.finish (Python) builds
  // `rows_tensor` from them. A modality without `tables` has no such form: its rows stay
  // finished (float32) when the batch asks for kUInt8.
  std::string_view uint8_tensor;
  std::string_view table_tensor;
  std::string_view patching_tensor;
  std::vector<std::int64_t> (*uint8_row)(const MediaEnv& env) = nullptr;
  void (*tables)(const MediaEnv& env, image::PixelDType dtype, void* table,
                 std::int64_t* patching) = nullptr;
  // > 0: the rows tensor is [rows / rows_group, rows_group, width] (audio: input_features
  // [clips, n_mels, frames], a clip being n_mels rows); 0: [rows, width].
  std::int64_t rows_group = 0;
  // Called at prepare once all of a sample's media are planned, with the sample's media of this
  // modality (in order), before their grids are read: for plans that depend on the sample's
  // other media of the modality (Qwen3-Omni pads a sample's clips to the longest). May change
  // the media's plans; an error fails the sample (stage decode, naming the first medium).
  Status (*plan_sample)(const MediaEnv& env, std::span<Medium* const> media) = nullptr;
};

// The dtype a medium of `m` is produced in when the batch's rows are `rows` (a modality without
// a uint8 form writes float32 where the batch asks for kUInt8).
image::PixelDType rows_dtype(const Modality& m, image::PixelDType rows);
// Bytes of one row of `m` produced in `rows` (after rows_dtype; finished rows at the modality's
// width columns(env): a medium narrower than it, an audio clip, has its own).
std::uint64_t row_bytes(const Modality& m, const MediaEnv& env, image::PixelDType rows);
batch::DType batch_dtype(image::PixelDType d);

// Where produce() runs: the tracer when this sample's spans are kept (else null), its record id.
struct EmitTrace {
  obs::Tracer* tracer = nullptr;
  std::int64_t sample = 0;
};

class Medium {
 public:
  virtual ~Medium() = default;
  virtual const MediaKind& kind() const = 0;
  const Modality& modality() const;

  // The plan (known before decoding).
  virtual std::int64_t rows() const = 0;           // rows of its modality's rows tensor
  virtual text::VisionGrid grid() const = 0;       // what the template expands, positions use
  virtual double second_per_grid() const { return 0; }  // videos: second_per_grid_t
  // Its rows' width: the modality's (images, videos), or its own where that varies by medium
  // (audio frames, Qwen3-Omni). A batch's rows tensor is as wide as its widest medium; a
  // narrower medium's rows are produced rows() × columns() contiguous and then spread to the
  // batch's width by the engine, the rest zero (spread_rows).
  virtual std::int64_t columns(const MediaEnv& env) const { return modality().columns(env); }
  // Audio: the clip's feature_attention_mask sum (TMRoPE's audio length); 0 for others.
  virtual std::int64_t audio_frames() const { return 0; }
  // Audio: the track of the video medium just before it (use_audio_in_video): its tokens are
  // placed by that video's placeholder, not by an audio placeholder of its own.
  virtual bool in_video() const { return false; }
  virtual std::uint64_t held_bytes() const = 0;    // encoded bytes kept until emit
  // Emit order: the batch's media are claimed costliest first (estimated work).
  virtual std::int64_t cost() const { return rows(); }

  // Decodes, resizes, normalises and patchifies into `dst` (rows() × columns of `dtype`; kUInt8:
  // decodes, resizes and writes each row's resized bytes — Modality::uint8_row).
  virtual Status produce(const MediaEnv& env, image::PixelDType dtype, std::uint8_t* dst,
                         const EmitTrace& trace) const = 0;
  // Its row of each of the modality's meta tensors (meta[j]: where its row of tensor j starts).
  virtual void write_meta(std::span<std::uint8_t* const> meta) const = 0;

  // Wire forms (cluster/): its plan, with its encoded bytes or without (load() is the kind's);
  // the resized uint8 pixels (resized_bytes() of them), and the rows made from them.
  virtual void save(ByteWriter& w, bool with_bytes) const = 0;
  virtual std::uint64_t resized_bytes() const = 0;
  // Whether its plan fits `env`'s processor (a plan loaded from the wire is untrusted: sizes
  // that disagree with the grid would make resize/finish write past its rows). Error: the
  // processor's reason.
  virtual Status fits(const MediaEnv& env) const { (void)env; return {}; }
  virtual Status resize(const MediaEnv& env, std::uint8_t* dst) const = 0;
  virtual void finish(const MediaEnv& env, const std::uint8_t* resized, image::PixelDType dtype,
                      std::uint8_t* dst) const = 0;
};

class MediaKind {
 public:
  virtual ~MediaKind() = default;
  virtual std::string_view name() const = 0;   // "image", "video file", "video frames"
  virtual const Modality& modality() const = 0;
  // Whether this kind reads `part`, and the references to fetch for it (one fetch each).
  virtual bool takes(const dataset::Part& part) const = 0;
  virtual std::vector<std::string_view> refs(const dataset::Part& part) const = 0;
  // The plan from the fetched bytes (one per ref, in order; moved into the medium).
  virtual Result<std::unique_ptr<Medium>> plan(const MediaEnv& env, const dataset::Part& part,
                                               std::vector<std::vector<std::uint8_t>> bytes) const = 0;
  // A medium saved by Medium::save (untrusted bytes: DataLoss on anything inconsistent).
  virtual Result<std::unique_ptr<Medium>> load(ByteReader& r) const = 0;
};

// The audio track of a video part with use_audio_in_video (media_audio.cc): an audio medium of
// the video's bytes (range video_start … video_end) whose in_video() is true. Null env.audio:
// FailedPrecondition.
Result<std::unique_ptr<Medium>> plan_video_audio(const MediaEnv& env, const dataset::Part& part,
                                                 std::vector<std::uint8_t> bytes);
// librosa's offset and duration of an audio part (audio_start/audio_end) or of a video's track
// (video_start/video_end), with the processor's limits: how the engine (and `stoker inspect`)
// loads a clip. Include stoker/audio/load.h to call it.
audio::LoadOptions audio_load_options(const audio::AudioProcessor& p, const dataset::Part& part);

// The registry. Built in: image, video file, frame-list video, audio. A kind registered later is asked
// first (takes()); its modality joins the list when first seen. Not thread-safe against
// concurrent lookups: register before the first Loader is made.
void register_media_kind(const MediaKind* kind);
const MediaKind* kind_for(const dataset::Part& part);  // null: no kind reads it
// Wire ids: a kind's place in the registry (the same build on both sides of the wire).
std::uint8_t kind_id(const MediaKind& kind);
const MediaKind* kind_by_id(std::uint8_t id);
// Every modality, in the order their tensors are placed (image first).
std::span<const Modality* const> modalities();
int modality_rank(const Modality& m);  // its place in modalities()

// "image 0", "video 1".
std::string medium_name(const Modality& m, std::size_t index);

// The media tensors of a batch of `samples` (each a list of its media): for every modality
// that is `always` or has media here, its rows tensor (in `rows`: the pixel dtype, or kUInt8 for
// finishing on the device) then its meta tensors (with kUInt8 also its table, of `pixel`, and
// its repeat count) — into `front` (always) or `back` (the others).
void media_tensors(const MediaEnv& env, image::PixelDType rows, image::PixelDType pixel,
                   std::span<const std::vector<std::unique_ptr<Medium>>* const> samples,
                   std::vector<batch::TensorView>* front, std::vector<batch::TensorView>* back);

// A medium's place in a batch: where its rows go and its meta rows.
struct MediumSlot {
  const Medium* medium = nullptr;
  std::size_t sample = 0;  // in the batch
  std::size_t index = 0;   // among its sample's media of its modality
  std::uint8_t* rows = nullptr;
};
// Every medium of `samples` with its rows address in `layout` (in sample order, then media
// order).
std::vector<MediumSlot> place_media(std::uint8_t* base, const batch::BatchLayout& layout,
                                    std::span<const std::vector<std::unique_ptr<Medium>>* const> samples);
// Each medium's rows of its modality's meta tensors (grids, seconds).
void write_media_meta(std::uint8_t* base, const batch::BatchLayout& layout,
                      std::span<const MediumSlot> slots);
// The tables and repeat counts of the modalities `layout` holds them for (kUInt8 rows), in
// `pixel` (the dtype stoker.finish makes by default).
void write_media_tables(std::uint8_t* base, const batch::BatchLayout& layout, const MediaEnv& env,
                        image::PixelDType pixel);
// Media narrower than their batch's rows tensor (Medium::columns): their rows, produced
// contiguous at the slot, moved to the tensor's row stride and the gaps zeroed.
void spread_rows(const MediaEnv& env, std::uint8_t* base, const batch::BatchLayout& layout,
                 std::span<const MediumSlot> slots);

}  // namespace stoker::pipeline
