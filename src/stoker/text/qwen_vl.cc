#include "stoker/text/qwen_vl.h"

#include <cstdio>
#include <string>
#include <string_view>

namespace stoker::text {
namespace {

struct SpecialIds {
  TokenId vision_start = 0, vision_end = 0, image_pad = 0, video_pad = 0;
};

Result<SpecialIds> special_ids(const Tokenizer& tok) {
  SpecialIds s;
  struct {
    const char* text;
    TokenId* id;
  } want[] = {{"<|vision_start|>", &s.vision_start},
              {"<|vision_end|>", &s.vision_end},
              {"<|image_pad|>", &s.image_pad},
              {"<|video_pad|>", &s.video_pad}};
  for (auto& w : want) {
    std::optional<TokenId> id = tok.token_to_id(w.text);
    if (!id) return invalid_argument(std::string("tokenizer has no ") + w.text + " token");
    *w.id = *id;
  }
  return s;
}

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

}  // namespace

Status QwenVisionExpander::expand(const RenderedChat& chat, const Tokenizer& tok,
                                  std::span<const VisionGrid> images,
                                  std::span<const VisionGrid> videos, std::vector<Piece>* items,
                                  std::vector<VisionSpan>* spans) const {
  STOKER_ASSIGN_OR_RETURN(SpecialIds sid, special_ids(tok));
  const int merge = merge_;
  const auto& segs = chat.segments;
  for (std::size_t i = 0; i < segs.size(); ++i) {
    const Segment& s = segs[i];
    switch (s.kind) {
      case Segment::Kind::kText:
        // A record's text that spells a pad token would tokenise to an extra pad: ids whose
        // vision runs no longer match the grids (found by the fuzzer: mRoPE then failed on a
        // delivered sample). HF's processor expands such text as a placeholder and fails on
        // the count; here the sample is refused, naming why.
        for (std::string_view pad : {std::string_view("<|image_pad|>"), std::string_view("<|video_pad|>")}) {
          if (s.text.find(pad) != std::string::npos) {
            return invalid_argument("message " + std::to_string(s.message_index) + ": its text holds " +
                                    std::string(pad) + ", the token media expand to; refused (HF's "
                                    "processor would read it as a placeholder)");
          }
        }
        items->push_back({true, s.text, 0, 1, s.supervised, s.message_index, -1});
        break;
      case Segment::Kind::kSpecial: {
        bool qwen3_video_block = chat.kind == TemplateKind::kQwen3VLInstruct &&
                                 s.text == "<|vision_start|>" && i + 2 < segs.size() &&
                                 segs[i + 1].kind == Segment::Kind::kVideo;
        if (qwen3_video_block) {
          // "<t seconds><|vision_start|><|video_pad|>×(h·w/m²)<|vision_end|>" per temporal group.
          const VisionGrid& g = videos[segs[i + 1].media_index];
          if (static_cast<int>(g.group_seconds.size()) != g.grid_t) {
            return invalid_argument("Qwen3-VL video " + std::to_string(segs[i + 1].media_index) +
                                    ": " + std::to_string(g.group_seconds.size()) +
                                    " timestamps for grid_t " + std::to_string(g.grid_t));
          }
          STOKER_ASSIGN_OR_RETURN(std::int64_t per, pad_count(g, merge, 1));
          for (int k = 0; k < g.grid_t; ++k) {
            items->push_back({true, seconds_text(g.group_seconds[k]), 0, 1, false, s.message_index, -1});
            items->push_back({false, {}, sid.vision_start, 1, false, s.message_index, -1});
            spans->push_back({true, segs[i + 1].media_index, k, 0, per});
            items->push_back({false, {}, sid.video_pad, per, false, s.message_index,
                              static_cast<int>(spans->size()) - 1});
            items->push_back({false, {}, sid.vision_end, 1, false, s.message_index, -1});
          }
          i += 2;  // the video pad and its <|vision_end|>
          break;
        }
        std::optional<TokenId> id = tok.token_to_id(s.text);
        if (!id) return invalid_argument("tokenizer has no " + s.text + " token");
        items->push_back({false, {}, *id, 1, s.supervised, s.message_index, -1});
        break;
      }
      case Segment::Kind::kImage:
      case Segment::Kind::kVideo: {
        bool video = s.kind == Segment::Kind::kVideo;
        const VisionGrid& g = video ? videos[s.media_index] : images[s.media_index];
        STOKER_ASSIGN_OR_RETURN(std::int64_t count, pad_count(g, merge, g.grid_t));
        spans->push_back({video, s.media_index, 0, 0, count});
        items->push_back({false, {}, video ? sid.video_pad : sid.image_pad, count, false,
                          s.message_index, static_cast<int>(spans->size()) - 1});
        break;
      }
    }
  }
  return ok_status();
}

Result<TokenizedSample> build_sample(const dataset::Conversation& conversation, TemplateKind kind,
                                     const ChatTemplateOptions& template_options,
                                     const Tokenizer& tokenizer,
                                     std::span<const VisionGrid> images,
                                     std::span<const VisionGrid> videos,
                                     const SampleOptions& options) {
  return build_sample(conversation, NativeRenderer(kind, template_options),
                      QwenVisionExpander(options.merge_size), tokenizer, images, videos, options);
}

Result<TokenizedSample> tokenize_chat(const RenderedChat& chat, const Tokenizer& tokenizer,
                                      std::span<const VisionGrid> images,
                                      std::span<const VisionGrid> videos, int merge_size) {
  return tokenize_chat(chat, QwenVisionExpander(merge_size), tokenizer, images, videos);
}

}  // namespace stoker::text
