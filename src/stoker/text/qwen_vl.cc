#include "stoker/text/qwen_vl.h"

#include <cstdio>
#include <string>
#include <string_view>

namespace stoker::text {
namespace {

constexpr std::string_view kVisionStart = "<|vision_start|>";
constexpr std::string_view kVisionEnd = "<|vision_end|>";
constexpr std::string_view kImagePad = "<|image_pad|>";
constexpr std::string_view kVideoPad = "<|video_pad|>";
constexpr std::string_view kModalities[] = {"image", "video"};

std::string seconds_text(double s) {
  // Python f"{x:.1f}": correctly rounded from the binary double, ties-to-even on the exact
  // value — what glibc printf does as well.
  char buf[64];
  std::snprintf(buf, sizeof buf, "<%.1f seconds>", s);
  return buf;
}

Result<std::int64_t> pad_count(const VisionGrid& g, int merge, std::int64_t groups) {
  std::int64_t m2 = std::int64_t{merge} * merge;
  std::int64_t per_group = std::int64_t{g.grid_h} * g.grid_w;
  if (g.grid_t <= 0 || g.grid_h <= 0 || g.grid_w <= 0 || per_group % m2 != 0) {
    return invalid_argument("bad vision grid " + std::to_string(g.grid_t) + "x" +
                            std::to_string(g.grid_h) + "x" + std::to_string(g.grid_w) +
                            " for merge size " + std::to_string(merge));
  }
  return groups * per_group / m2;
}

bool ends_with_at(std::string_view text, std::size_t end, std::string_view what) {
  return end >= what.size() && text.substr(end - what.size(), what.size()) == what;
}

}  // namespace

ChatText chat_text(const RenderedChat& chat) {
  ChatText out;
  std::size_t n = 0;
  for (const Segment& s : chat.segments) n += s.text.size();
  out.text.reserve(n);
  for (const Segment& s : chat.segments) {
    const std::size_t at = out.text.size();
    out.text += s.text;
    if (!s.supervised || s.text.empty()) continue;
    if (!out.supervised.empty() && out.supervised.back().end == at) {
      out.supervised.back().end = out.text.size();
    } else {
      out.supervised.push_back({at, out.text.size()});
    }
  }
  return out;
}

Result<ChatText> NativeRenderer::render(const dataset::Conversation& conversation) const {
  STOKER_ASSIGN_OR_RETURN(RenderedChat chat, render_chat(conversation, kind_, options_));
  return chat_text(chat);
}

std::string NativeRenderer::describe() const {
  return "native " + std::string(template_name(kind_)) +
         " template; labels: each assistant turn (its text, <|im_end|> and the newline after it)";
}

QwenRenderer::QwenRenderer(std::unique_ptr<JinjaRenderer> jinja, std::optional<TemplateKind> native)
    : jinja_(std::move(jinja)) {
  if (native && !jinja_->has_kwargs()) {
    native_.emplace(*native);
    kind_ = native;
  }
}

bool QwenRenderer::native_for(const dataset::Conversation& c) const {
  if (!native_ || !c.plain()) return false;
  for (const dataset::Message& m : c.messages) {
    for (const dataset::Part& p : m.parts) {
      if (p.kind == dataset::Part::Kind::kAudio) return false;  // the native templates have none
      if (p.kind == dataset::Part::Kind::kText && p.value.find("<|im_") != std::string::npos &&
          (p.value.find("<|im_start|>") != std::string::npos ||
           p.value.find("<|im_end|>") != std::string::npos)) {
        return false;
      }
    }
  }
  return true;
}

Result<ChatText> QwenRenderer::render(const dataset::Conversation& c) const {
  if (native_for(c)) {
    Result<ChatText> r = native_->render(c);
    if (r.ok()) return r;
  }
  return jinja_->render(c);
}

std::string QwenRenderer::describe() const {
  std::string out = jinja_->describe();
  if (native_) {
    out += "; records without tools, documents or template kwargs take the native " +
           std::string(template_name(*kind_)) +
           " fast path (byte-identical)";
  }
  return out;
}

TurnMarkers qwen_turn_markers() { return {"<|im_start|>assistant\n", "<|im_end|>", "\n"}; }

Result<QwenTokens> qwen_tokens(const Tokenizer& tok) {
  QwenTokens s;
  struct {
    std::string_view text;
    TokenId* id;
  } want[] = {{kVisionStart, &s.vision_start},
              {kVisionEnd, &s.vision_end},
              {kImagePad, &s.image_pad},
              {kVideoPad, &s.video_pad}};
  for (auto& w : want) {
    std::optional<TokenId> id = tok.token_to_id(w.text);
    if (!id) return invalid_argument("tokenizer has no " + std::string(w.text) + " token");
    *w.id = *id;
  }
  return s;
}

std::span<const std::string_view> QwenPlaceholders::modalities() const { return kModalities; }

Status QwenPlaceholders::find(std::string_view text, std::vector<Placeholder>* out) const {
  std::size_t pos = 0;
  while ((pos = text.find("<|", pos)) != std::string_view::npos) {
    const bool image = text.compare(pos, kImagePad.size(), kImagePad) == 0;
    const bool video = !image && text.compare(pos, kVideoPad.size(), kVideoPad) == 0;
    if (!image && !video) {
      pos += 2;
      continue;
    }
    const std::string_view pad = image ? kImagePad : kVideoPad;
    const std::size_t end = pos + pad.size();
    if (!ends_with_at(text, pos, kVisionStart)) {
      return invalid_argument(
          "the rendered chat has " + std::string(pad) + " at byte " + std::to_string(pos) +
          " outside <|vision_start|>" + std::string(pad) + "<|vision_end|> (a record's text that "
          "spells the token a medium expands to; refused: it would read as a medium)");
    }
    Placeholder p;
    p.modality = image ? 0 : 1;
    p.begin = pos;
    p.end = end;
    p.block_begin = pos - kVisionStart.size();
    const bool closed = text.compare(end, kVisionEnd.size(), kVisionEnd) == 0;
    p.block_end = closed ? end + kVisionEnd.size() : end;
    if (video && timestamps_) {
      if (!closed) {
        return invalid_argument("the rendered chat has a Qwen3-VL video placeholder at byte " +
                                std::to_string(p.block_begin) + " without <|vision_end|>");
      }
      p.begin = p.block_begin;  // the whole block becomes the timestamped groups
      p.end = p.block_end;
    }
    out->push_back(p);
    pos = end;
  }
  return ok_status();
}

Status QwenPlaceholders::expand(const Placeholder& p, const VisionGrid& g,
                                std::vector<Expansion>* out) const {
  const bool video = p.modality == 1;
  if (video && timestamps_) {
    // "<t seconds><|vision_start|><|video_pad|>×(h·w/m²)<|vision_end|>" per temporal group.
    if (static_cast<int>(g.group_seconds.size()) != g.grid_t) {
      return invalid_argument("Qwen3-VL video: " + std::to_string(g.group_seconds.size()) +
                              " timestamps for grid_t " + std::to_string(g.grid_t));
    }
    STOKER_ASSIGN_OR_RETURN(std::int64_t per, pad_count(g, merge_, 1));
    for (int k = 0; k < g.grid_t; ++k) {
      out->push_back({Expansion::Kind::kText, seconds_text(g.group_seconds[k]), 0, 1, 0});
      out->push_back({Expansion::Kind::kToken, {}, ids_.vision_start, 1, 0});
      out->push_back({Expansion::Kind::kRun, {}, ids_.video_pad, per, k});
      out->push_back({Expansion::Kind::kToken, {}, ids_.vision_end, 1, 0});
    }
    return ok_status();
  }
  STOKER_ASSIGN_OR_RETURN(std::int64_t count, pad_count(g, merge_, g.grid_t));
  out->push_back({Expansion::Kind::kRun, {}, video ? ids_.video_pad : ids_.image_pad, count, 0});
  return ok_status();
}

Result<TokenizedSample> build_sample(const dataset::Conversation& conversation, TemplateKind kind,
                                     const ChatTemplateOptions& template_options,
                                     const Tokenizer& tokenizer,
                                     std::span<const VisionGrid> images,
                                     std::span<const VisionGrid> videos,
                                     const SampleOptions& options) {
  STOKER_ASSIGN_OR_RETURN(QwenTokens ids, qwen_tokens(tokenizer));
  const QwenPlaceholders placeholders(ids, options.merge_size,
                                      kind == TemplateKind::kQwen3VLInstruct);
  const MediaOfKind media[] = {{"image", images}, {"video", videos}};
  return build_sample(conversation, NativeRenderer(kind, template_options), placeholders,
                      tokenizer, media, options);
}

Result<TokenizedSample> tokenize_chat(const RenderedChat& chat,
                                      const dataset::Conversation& conversation,
                                      const Tokenizer& tokenizer,
                                      std::span<const VisionGrid> images,
                                      std::span<const VisionGrid> videos, int merge_size) {
  STOKER_ASSIGN_OR_RETURN(QwenTokens ids, qwen_tokens(tokenizer));
  const QwenPlaceholders placeholders(ids, merge_size, chat.kind == TemplateKind::kQwen3VLInstruct);
  const MediaOfKind media[] = {{"image", images}, {"video", videos}};
  return tokenize_chat(chat_text(chat), conversation, placeholders, tokenizer, media);
}

}  // namespace stoker::text
