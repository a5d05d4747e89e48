#include "stoker/pipeline/prepare.h"

#include "stoker/base/clock.h"

namespace stoker::pipeline {
namespace {

SampleFailure failure(const Context& ctx, const Item& item, const char* stage, const Error& e) {
  dataset::RecordLocation loc = ctx.index->location(item.sample);
  return {item.sample, ctx.manifest_name(loc.file), loc.line, stage,
          std::string(error_code_name(e.code())), e.to_string()};
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

}  // namespace

const char* stage_name(int stage) {
  static const char* kNames[kNumStages] = {"read", "fetch", "prepare", "emit", "assemble"};
  return stage >= 0 && stage < kNumStages ? kNames[stage] : "?";
}

Fetched read_stage(const Context& ctx, const Item& item, std::vector<std::string>* uris_out) {
  Fetched out;
  out.item = item;
  std::vector<std::string>& uris = *uris_out;
  {
    StageTimer timer(ctx, kRead);
    obs::Span span(ctx.trace_for(item), "read", "sample", static_cast<std::int64_t>(item.sample));
    std::string record;
    if (Status st = ctx.index->read_record(item.sample, record); !st.ok()) {
      out.failure = failure(ctx, item, "read", st.error());
      return out;
    }
    Result<dataset::Conversation> conv = dataset::parse_record(record);
    if (!conv.ok()) {
      out.failure = failure(ctx, item, "parse", conv.error());
      return out;
    }
    if (Status st = dataset::validate_for_sft(*conv); !st.ok()) {
      out.failure = failure(ctx, item, "validate", st.error());
      return out;
    }
    out.conversation = std::move(conv).value();
    const io::MediaScope& scope = ctx.scopes[ctx.index->location(item.sample).file];
    for (const dataset::Message& m : out.conversation.messages) {
      for (const dataset::Part& p : m.parts) {
        if (p.kind == dataset::Part::Kind::kVideo) {
          out.failure = failure(ctx, item, "fetch",
                                unimplemented("video " + p.value + ": videos are not supported yet"));
          return out;
        }
        if (p.kind != dataset::Part::Kind::kImage) continue;
        Result<std::string> uri = scope.resolve(p.value);
        if (!uri.ok()) {
          out.failure = fetch_failure(ctx, item, uris.size(), uri.error());
          return out;
        }
        uris.push_back(std::move(uri).value());
      }
    }
  }
  return out;
}

SampleFailure sample_failure(const Context& ctx, const Item& item, const char* stage,
                             const Error& e) {
  return failure(ctx, item, stage, e);
}

SampleFailure fetch_failure(const Context& ctx, const Item& item, std::size_t image,
                            const Error& e) {
  return failure(ctx, item, "fetch", Error(e).with_context("image " + std::to_string(image)));
}

SampleFailure decode_failure(const Context& ctx, const Item& item, std::size_t image,
                             const Error& e) {
  return failure(ctx, item, "decode", Error(e).with_context("image " + std::to_string(image)));
}

Fetched read_and_fetch(const Context& ctx, const Item& item, std::stop_token stop) {
  std::vector<std::string> uris;
  Fetched out = read_stage(ctx, item, &uris);
  if (out.failure || uris.empty()) return out;
  StageTimer timer(ctx, kFetch);
  obs::Span span(ctx.trace_for(item), "fetch", "images", static_cast<std::int64_t>(uris.size()));
  Result<SampleLease> lease = SampleLease::acquire(*ctx.budget, uris.size(), stop);
  if (!lease.ok()) {
    out.failure = fetch_failure(ctx, item, 0, lease.error());
    return out;
  }
  out.lease = std::move(lease).value();
  out.media.resize(uris.size());
  for (std::size_t i = 0; i < uris.size(); ++i) {
    if (ctx.io_delay_hook) ctx.io_delay_hook(item.sample, static_cast<int>(i));
    Result<std::vector<std::uint8_t>> bytes = ctx.fetcher->fetch(uris[i]);
    if (!bytes.ok()) {
      out.media.clear();
      out.lease.reset();
      out.failure = fetch_failure(ctx, item, i, bytes.error());
      return out;
    }
    out.lease.arrived(static_cast<std::int64_t>(bytes->size()));
    out.media[i] = std::move(bytes).value();
  }
  return out;
}

bool is_outage(const SampleFailure& f) {
  return (f.stage == "fetch" || f.stage == "read") &&
         (f.code == "Unavailable" || f.code == "DeadlineExceeded");
}

Error outage_error(const SampleFailure& f, std::string context) {
  return Error(f.code == "DeadlineExceeded" ? ErrorCode::kDeadlineExceeded : ErrorCode::kUnavailable,
               "sample " + std::to_string(f.sample) + " (" + f.file + ":" + std::to_string(f.line) +
                   "): " + f.reason)
      .with_context(std::move(context));
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
  const image::ImageProcessor& proc = *ctx.processor;
  std::vector<text::VisionGrid> grids;
  out.plans.reserve(in.media.size());
  {
    obs::Span plan_span(trace, "plan", "images", static_cast<std::int64_t>(in.media.size()));
    for (std::size_t i = 0; i < in.media.size(); ++i) {
      Result<image::ImagePlan> plan = proc.plan(in.media[i]);
      if (!plan.ok()) {
        out.failure = failure(ctx, in.item, "decode",
                              Error(plan.error()).with_context("image " + std::to_string(i)));
        return out;
      }
      out.plans.push_back(*plan);
      grids.push_back({plan->grid_t, plan->grid_h, plan->grid_w, {}});
    }
  }
  text::SampleOptions options;
  options.merge_size = ctx.model.image.merge_size;
  options.max_length = ctx.max_length;
  options.overflow = ctx.truncate ? text::Overflow::kTruncateTurns : text::Overflow::kDrop;
  std::optional<obs::Span> tokenize_span(std::in_place, trace, "tokenize");
  Result<text::TokenizedSample> tokens = text::build_sample(
      in.conversation, ctx.template_kind, {}, *ctx.tokenizer, grids, {}, options);
  tokenize_span.reset();
  if (!tokens.ok()) {
    out.failure = failure(ctx, in.item, "tokenize", tokens.error());
    return out;
  }
  out.tokens = std::move(tokens).value();
  std::optional<obs::Span> rope_span(std::in_place, trace, "rope");
  Result<batch::RopeIndex> rope = batch::get_rope_index(out.tokens, grids, {}, ctx.rope);
  rope_span.reset();
  if (!rope.ok()) {
    out.failure = failure(ctx, in.item, "rope", rope.error());
    return out;
  }
  out.positions = std::move(rope->positions);
  // The images the sample keeps (all of them under the drop policy) wait as encoded bytes; the
  // fetch budget is returned now (the window bounds how many samples wait).
  const std::size_t kept = static_cast<std::size_t>(out.tokens.num_images);
  out.plans.resize(kept);
  out.encoded.reserve(kept);
  for (std::size_t i = 0; i < kept; ++i) {
    out.encoded.push_back(std::move(in.media[i]));
    out.pixel_rows += out.plans[i].rows();
  }
  in.media.clear();
  in.lease.reset();
  return out;
}

}  // namespace stoker::pipeline
