#include "stoker/pipeline/prepare.h"

#include "stoker/base/clock.h"
#include "stoker/base/option_name.h"

namespace stoker::pipeline {
namespace {

SampleFailure failure(const Context& ctx, const Item& item, FailureStage stage, const Error& e) {
  const dataset::RecordOrigin at = ctx.records->origin(item.sample);
  return {item.sample, std::string(at.name), at.line, stage, e.code(), e.to_string()};
}

// Times one stage on this thread.
class StageTimer {
 public:
  StageTimer(const Context& ctx, int stage) : ctx_(ctx), stage_(stage), start_(now_ns()) {}
  ~StageTimer() { ctx_.counters.add(stage_, now_ns() - start_); }

 private:
  const Context& ctx_;
  int stage_;
  std::int64_t start_;
};

// "video 1", or "video 1: frame 3" for fetch k of a medium fetched in several pieces.
std::string fetch_name(const Fetched::MediaPart& p, std::size_t k) {
  std::string name = medium_name(p.kind->modality(), p.index);
  if (p.count > 1) name += ": frame " + std::to_string(k);
  return name;
}

}  // namespace

const char* stage_name(int stage) {
  static const char* kNames[kNumStages] = {"read", "fetch", "prepare", "emit", "assemble"};
  return stage >= 0 && stage < kNumStages ? kNames[stage] : "?";
}

Status check_media_count(const dataset::Conversation& conv, std::int64_t max_media) {
  std::int64_t n = 0;
  for (const dataset::Message& m : conv.messages) {
    for (const dataset::Part& p : m.parts) {
      if (p.kind == dataset::Part::Kind::kText) continue;
      // One fetch per reference of the part's media kind (a video's frames: one each).
      const MediaKind* kind = kind_for(p);
      n += kind != nullptr ? static_cast<std::int64_t>(kind->refs(p).size()) : 1;
    }
  }
  if (n <= max_media) return ok_status();
  return resource_exhausted(std::to_string(n) + " media (images, videos, video frames) in one "
                            "record, over max_media_per_record " + std::to_string(max_media) +
                            (option_style() == OptionStyle::kCli ? " (--max-media-per-record)" : ""));
}

std::int64_t Prepared::rows() const {
  std::int64_t n = 0;
  for (const auto& m : media) n += m->rows();
  return n;
}

Fetched read_stage(const Context& ctx, const Item& item, std::vector<std::string>* uris_out) {
  Fetched out;
  out.item = item;
  std::vector<std::string>& uris = *uris_out;
  StageTimer timer(ctx, kRead);
  obs::Span span(ctx.trace_for(item), "read", "sample", static_cast<std::int64_t>(item.sample));
  std::string record;
  if (Status st = ctx.records->read(item.sample, record); !st.ok()) {
    out.failure = failure(ctx, item, FailureStage::kRead, st.error());
    return out;
  }
  Result<dataset::Conversation> conv = dataset::parse_record(record);
  if (!conv.ok()) {
    out.failure = failure(ctx, item, FailureStage::kParse, conv.error());
    return out;
  }
  if (Status st = dataset::validate_for_sft(*conv); !st.ok()) {
    out.failure = failure(ctx, item, FailureStage::kValidate, st.error());
    return out;
  }
  out.conversation = std::move(conv).value();
  if (Status st = check_media_count(out.conversation, ctx.max_media_per_record); !st.ok()) {
    out.failure = failure(ctx, item, FailureStage::kRead, st.error());
    return out;
  }
  const dataset::MediaResolver& media = ctx.records->media(item.sample);
  std::vector<std::size_t> per_modality(modalities().size(), 0);
  const auto& messages = out.conversation.messages;
  for (std::size_t m = 0; m < messages.size(); ++m) {
    for (std::size_t i = 0; i < messages[m].parts.size(); ++i) {
      const dataset::Part& p = messages[m].parts[i];
      if (p.kind == dataset::Part::Kind::kText) continue;
      const MediaKind* kind = kind_for(p);
      if (kind == nullptr) {
        out.failure = failure(ctx, item, FailureStage::kValidate,
                              invalid_argument("message " + std::to_string(m) +
                                               ": no media kind reads part " + std::to_string(i)));
        return out;
      }
      const std::vector<std::string_view> refs = kind->refs(p);
      Fetched::MediaPart mp{m, i, kind,
                            per_modality[static_cast<std::size_t>(modality_rank(kind->modality()))]++,
                            uris.size(), refs.size()};
      for (std::size_t k = 0; k < refs.size(); ++k) {
        Result<std::string> uri = media.resolve(refs[k]);
        if (!uri.ok()) {
          out.failure = failure(ctx, item, FailureStage::kFetch,
                                Error(uri.error()).with_context(fetch_name(mp, k)));
          return out;
        }
        uris.push_back(std::move(uri).value());
      }
      out.parts.push_back(mp);
    }
  }
  return out;
}

SampleFailure sample_failure(const Context& ctx, const Item& item, FailureStage stage,
                             const Error& e) {
  return failure(ctx, item, stage, e);
}

SampleFailure fetch_failure(const Context& ctx, const Fetched& f, std::size_t fetch,
                            const Error& e) {
  for (const Fetched::MediaPart& p : f.parts) {
    if (fetch >= p.first && fetch < p.first + p.count) {
      return failure(ctx, f.item, FailureStage::kFetch,
                     Error(e).with_context(fetch_name(p, fetch - p.first)));
    }
  }
  return failure(ctx, f.item, FailureStage::kFetch, e);
}

SampleFailure decode_failure(const Context& ctx, const Item& item, const Modality& modality,
                             std::size_t index, const Error& e) {
  return failure(ctx, item, FailureStage::kDecode,
                 Error(e).with_context(medium_name(modality, index)));
}

Fetched read_and_fetch(const Context& ctx, const Item& item, std::stop_token stop) {
  std::vector<std::string> uris;
  Fetched out = read_stage(ctx, item, &uris);
  if (out.failure || uris.empty()) return out;
  StageTimer timer(ctx, kFetch);
  obs::Span span(ctx.trace_for(item), "fetch", "media", static_cast<std::int64_t>(uris.size()));
  Result<SampleLease> lease = SampleLease::acquire(*ctx.budget, uris.size(), stop);
  if (!lease.ok()) {
    out.failure = fetch_failure(ctx, out, 0, lease.error());
    return out;
  }
  out.lease = std::move(lease).value();
  out.bytes.resize(uris.size());
  for (std::size_t i = 0; i < uris.size(); ++i) {
    if (ctx.io_delay_hook) ctx.io_delay_hook(item.sample, static_cast<int>(i));
    Result<std::vector<std::uint8_t>> bytes = ctx.fetcher->fetch(uris[i]);
    if (!bytes.ok()) {
      out.bytes.clear();
      out.lease.reset();
      out.failure = fetch_failure(ctx, out, i, bytes.error());
      return out;
    }
    out.lease.arrived(static_cast<std::int64_t>(bytes->size()));
    out.bytes[i] = std::move(bytes).value();
  }
  return out;
}

Prepared prepare(const Context& ctx, Fetched&& in) {
  StageTimer timer(ctx, kPrepare);
  obs::Tracer* trace = ctx.trace_for(in.item);
  obs::Span span(trace, "prepare", "sample", static_cast<std::int64_t>(in.item.sample));
  Prepared out;
  out.item = in.item;
  if (in.failure) {
    out.failure = std::move(in.failure);
    return out;
  }
  // Every medium planned from its bytes (nothing decoded): per modality (in modalities()
  // order) the plans the template's placeholders expand; the seconds per grid of videos for
  // the positions.
  const std::span<const Modality* const> mods = modalities();
  std::vector<std::vector<text::VisionGrid>> grids(mods.size());
  std::vector<double> seconds;
  std::vector<std::int64_t> audio_frames;
  std::vector<std::size_t> first_index;  // each medium's index among its modality's
  {
    obs::Span plan_span(trace, "plan", "media", static_cast<std::int64_t>(in.parts.size()));
    for (const Fetched::MediaPart& mp : in.parts) {
      const dataset::Part& part = in.conversation.messages[mp.message].parts[mp.part];
      std::vector<std::vector<std::uint8_t>> bytes(
          std::make_move_iterator(in.bytes.begin() + static_cast<std::ptrdiff_t>(mp.first)),
          std::make_move_iterator(in.bytes.begin() + static_cast<std::ptrdiff_t>(mp.first + mp.count)));
      const Modality& modality = mp.kind->modality();
      // use_audio_in_video under a model that takes audio: the video's track is an audio medium
      // right after it (its bytes copied before the video keeps them).
      const bool track = part.kind == dataset::Part::Kind::kVideo && part.video.use_audio_in_video &&
                         ctx.media.audio != nullptr;
      std::vector<std::uint8_t> track_bytes;
      if (track) {
        if (!part.frames.empty()) {
          out.failure = decode_failure(ctx, in.item, modality, mp.index,
                                       invalid_argument("use_audio_in_video: a video given as "
                                                        "frames has no audio track"));
          return out;
        }
        track_bytes = bytes[0];
      }
      Result<std::unique_ptr<Medium>> medium = mp.kind->plan(ctx.media, part, std::move(bytes));
      if (!medium.ok()) {
        out.failure = decode_failure(ctx, in.item, modality, mp.index, medium.error());
        return out;
      }
      first_index.push_back(mp.index);
      out.media.push_back(std::move(medium).value());
      if (track) {
        Result<std::unique_ptr<Medium>> audio = plan_video_audio(ctx.media, part, std::move(track_bytes));
        if (!audio.ok()) {
          out.failure = decode_failure(ctx, in.item, modality, mp.index, audio.error());
          return out;
        }
        first_index.push_back(mp.index);
        out.media.push_back(std::move(audio).value());
      }
    }
    // Plans that depend on the sample's other media of their modality (Qwen3-Omni's clips).
    for (const Modality* mod : mods) {
      if (mod->plan_sample == nullptr) continue;
      std::vector<Medium*> of_kind;
      std::size_t first = 0;
      for (std::size_t j = 0; j < out.media.size(); ++j) {
        if (&out.media[j]->modality() != mod) continue;
        if (of_kind.empty()) first = first_index[j];
        of_kind.push_back(out.media[j].get());
      }
      if (of_kind.empty()) continue;
      if (Status st = mod->plan_sample(ctx.media, of_kind); !st.ok()) {
        out.failure = decode_failure(ctx, in.item, *mod, first, st.error());
        return out;
      }
    }
    const Modality* previous = nullptr;  // the modality of the medium before (a track's video)
    for (const auto& m : out.media) {
      const Modality& modality = m->modality();
      if (m->in_video() && previous != nullptr) {
        // The track's tokens go into its video's placeholder (and its length into the
        // positions, in order of appearance); no audio placeholder of its own.
        std::vector<text::VisionGrid>& vg = grids[static_cast<std::size_t>(modality_rank(*previous))];
        vg.back().tokens = m->grid().tokens;
        vg.back().second_per_grid = seconds.back();
        audio_frames.push_back(m->audio_frames());
        continue;
      }
      previous = &modality;
      grids[static_cast<std::size_t>(modality_rank(modality))].push_back(m->grid());
      if (modality.name == "video") seconds.push_back(m->second_per_grid());
      if (modality.name == "audio") audio_frames.push_back(m->audio_frames());
    }
  }
  std::vector<text::MediaOfKind> media;
  std::span<const text::VisionGrid> images, videos, audios;
  for (std::size_t r = 0; r < mods.size(); ++r) {
    media.push_back({mods[r]->name, grids[r]});
    if (mods[r]->name == "image") images = grids[r];
    if (mods[r]->name == "video") videos = grids[r];
    if (mods[r]->name == "audio") audios = grids[r];
  }
  // The model's template, placeholders and position rule (model/family.h).
  const model::Model& model = *ctx.model;
  text::SampleOptions options;
  options.max_length = ctx.max_length;
  options.overflow = ctx.truncate ? text::Overflow::kTruncateTurns : text::Overflow::kDrop;
  std::optional<obs::Span> tokenize_span(std::in_place, trace, "tokenize");
  const std::int64_t build_start = now_ns();
  Result<text::TokenizedSample> tokens =
      text::build_sample(in.conversation, model.renderer(), model.placeholders(), model.tokenizer(),
                         media, options);
  ctx.counters.add_sample_build(now_ns() - build_start);
  tokenize_span.reset();
  if (!tokens.ok()) {
    out.failure = failure(ctx, in.item, FailureStage::kTokenize, tokens.error());
    return out;
  }
  out.tokens = std::move(tokens).value();
  std::optional<obs::Span> rope_span(std::in_place, trace, "rope");
  Result<std::vector<double>> positions =
      model.positions(out.tokens, {images, videos, seconds, audios, audio_frames});
  rope_span.reset();
  if (!positions.ok()) {
    out.failure = failure(ctx, in.item, FailureStage::kRope, positions.error());
    return out;
  }
  out.positions = std::move(positions).value();
  // The media the sample keeps: all of them under the drop policy; after truncation the first
  // num_images images and num_videos videos. They wait as encoded bytes; the fetch budget is
  // returned now (the window bounds how many wait).
  std::vector<int> seen(mods.size(), 0);
  std::vector<std::unique_ptr<Medium>> kept;
  bool previous_kept = false;
  for (std::unique_ptr<Medium>& m : out.media) {
    if (m->in_video()) {  // kept with its video
      if (previous_kept) kept.push_back(std::move(m));
      continue;
    }
    const std::size_t r = static_cast<std::size_t>(modality_rank(m->modality()));
    previous_kept = seen[r]++ < out.tokens.media_used[r];
    if (previous_kept) kept.push_back(std::move(m));
  }
  out.media = std::move(kept);
  in.bytes.clear();
  in.lease.reset();
  return out;
}

}  // namespace stoker::pipeline
