// One SFT sample from a conversation: the chat template renders it to text with the byte spans
// whose tokens are labelled (ChatRenderer); the model family's placeholders are found in that
// text and expanded for each medium, in order, as the HF processor does (MediaPlaceholders); the
// text is tokenised as the HF tokenizer tokenises the whole string (the runs between medium
// token runs are encoded whole; a run of medium tokens is a pre-token boundary); labels are HF's
// return_assistant_tokens_mask rule over the spans (the tokenizer path: from the token holding a
// span's first byte to the token holding its last), except that a medium's tokens and its block
// (Qwen: <|vision_start|> … <|vision_end|>) are never labelled; then the max-length policy.
// Everything model-specific comes from the family (model/family.h): the renderer (the Jinja
// engine over the model folder's template, or a native fast path proven identical to it) and the
// placeholders (Qwen: text/qwen_vl.h). Generic over modalities: a medium of modality M is paired
// with the k-th placeholder of M in the text (the record's order), whatever the template did
// with the turns; a template that drops or adds one fails the sample (so does HF's processor).
// Thread-safe given thread-safe renderer, placeholders and tokenizer. Errors: InvalidArgument
// (placeholder counts, grids, the renderer's refusals), ResourceExhausted (over max_length, drop).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/dataset/conversation.h"
#include "stoker/text/tokenizer.h"

namespace stoker::text {

inline constexpr TokenId kIgnoreIndex = -100;

// One medium as its placeholder sees it, from the medium's plan: images and videos a grid (the
// image/video processor's); a modality without a grid (audio) its token count.
struct VisionGrid {
  int grid_t = 1, grid_h = 0, grid_w = 0;
  // Qwen3-VL videos only: one timestamp (seconds) per temporal group, rendered as
  // "<{x:.1f} seconds>" before that group's vision block (spec §2.3). See video_group_seconds.
  std::vector<double> group_seconds;
  std::int64_t tokens = 0;  // a modality without a grid: its placeholder's token count;
                            // a video: its audio track's tokens (use_audio_in_video), else 0
  double second_per_grid = 0;  // a video with its audio track: its second_per_grid_t
};

// The media of one modality in a sample, in record order. `modality` is the name media kinds
// give it (pipeline/media.h: "image", "video"; dataset::Part kinds map to them, part_modality).
struct MediaOfKind {
  std::string_view modality;
  std::span<const VisionGrid> media;
};
// The modality a record part belongs to ("" for text).
std::string_view part_modality(const dataset::Part& part);

// Qwen3-VL timestamps: ts_i = frame_indices[i] / fps; the list is padded to a multiple of
// `group` by repeating the last index; one value per group = the mean of its first and last.
std::vector<double> video_group_seconds(std::span<const std::int64_t> frame_indices, double fps,
                                        int group = 2);

// A run of medium tokens in input_ids.
struct VisionSpan {
  bool video = false;
  int media_index = 0;  // among the sample's media of its modality
  int group = 0;        // Qwen3-VL video temporal group (one span per group); else 0
  std::int64_t begin = 0, count = 0;
  std::string_view modality;  // "image", "video", ...
};

enum class Overflow {
  kDrop,           // the sample is refused with a reason (default; ms-swift's 'delete')
  kTruncateTurns,  // keep a prefix of whole turns that ends with an assistant turn and fits
};

struct SampleOptions {
  int merge_size = 2;  // the TemplateKind overloads' (qwen_vl.h); a family's placeholders know theirs
  std::int64_t max_length = 0;  // 0: unlimited
  Overflow overflow = Overflow::kDrop;
};

struct TokenizedSample {
  std::vector<TokenId> input_ids;
  std::vector<TokenId> labels;
  std::vector<VisionSpan> vision;
  int num_images = 0, num_videos = 0;  // media used (after truncation: a prefix of the record's)
  std::vector<int> media_used;         // the same per MediaOfKind given (build order)
  int num_messages = 0;                // messages rendered
  bool truncated = false;

  std::int64_t supervised_tokens() const;
};

// A rendered chat: the template's text, and the byte spans whose tokens are labelled ({% generation
// %} spans, or the family's assistant turns).
struct ChatText {
  std::string text;
  std::vector<TextSpan> supervised;
};

// A model family's template renderer: a conversation (valid for SFT) → text and label spans.
class ChatRenderer {
 public:
  virtual ~ChatRenderer() = default;
  virtual Result<ChatText> render(const dataset::Conversation& conversation) const = 0;
  // For summaries: the template, how it renders and which label rule applies.
  virtual std::string describe() const = 0;
};

// A medium's placeholder in the rendered text.
struct Placeholder {
  std::size_t begin = 0, end = 0;              // the bytes the expansion replaces
  std::size_t block_begin = 0, block_end = 0;  // the medium's block around them: never labelled
  int modality = 0;                            // index into MediaPlaceholders::modalities()
};

// One piece of a placeholder's expansion: text (tokenised with the text around it), one token,
// or a run of `count` copies of token `id` — the medium's tokens (a VisionSpan).
struct Expansion {
  enum class Kind { kText, kToken, kRun };
  Kind kind = Kind::kText;
  std::string text;
  TokenId id = 0;
  std::int64_t count = 1;
  int group = 0;  // kRun: the run's temporal group (Qwen3-VL video), else 0
};

// A model family's placeholders: where media go in a rendered text, and what each becomes.
class MediaPlaceholders {
 public:
  virtual ~MediaPlaceholders() = default;
  // The modalities it places ("image", "video").
  virtual std::span<const std::string_view> modalities() const = 0;
  // Every placeholder of `text`, in order, not overlapping. InvalidArgument for a malformed one
  // (Qwen: a pad token outside <|vision_start|>…).
  virtual Status find(std::string_view text, std::vector<Placeholder>* out) const = 0;
  // What `p` becomes for its medium.
  virtual Status expand(const Placeholder& p, const VisionGrid& medium,
                        std::vector<Expansion>* out) const = 0;
};

// Tokenises a rendered chat of `conversation` (its media parts say how many placeholders of
// each modality the text must hold): ids, labels, medium runs.
Result<TokenizedSample> tokenize_chat(const ChatText& chat,
                                      const dataset::Conversation& conversation,
                                      const MediaPlaceholders& placeholders,
                                      const Tokenizer& tokenizer,
                                      std::span<const MediaOfKind> media);

// validate_for_sft + render + tokenise + max-length policy. Errors name the record. Truncation
// re-renders prefixes of whole turns ending with an assistant turn, bisecting for the longest
// that fits (the longest exactly when a prefix never renders longer than a longer prefix, as
// templates that render each turn on its own do).
Result<TokenizedSample> build_sample(const dataset::Conversation& conversation,
                                     const ChatRenderer& renderer,
                                     const MediaPlaceholders& placeholders,
                                     const Tokenizer& tokenizer,
                                     std::span<const MediaOfKind> media,
                                     const SampleOptions& options = {});

}  // namespace stoker::text
