// One SFT sample from a rendered chat: input_ids exactly as the HF tokenizer gives for the
// whole rendered string (media placeholders expanded to their grid sizes), labels (−100 except
// the supervised spans, unshifted), the vision runs, and the max-length policy.
// What is model-specific comes from the model family (model/family.h): the template renderer
// (ChatRenderer) and the placeholder expansion (PlaceholderExpander: which tokens a rendered
// medium becomes — the Qwen-VL one is text/qwen_vl.h). The rest is generic: ids come from
// tokenising the text between the template's special tokens, which are always pre-token
// boundaries, so they equal whole-string tokenisation (spec §3.4). Labels come from character
// spans: a token is supervised when its characters overlap a supervised span (HF's
// char_to_token convention), e.g. "\n\n" after "assistant\n" when an answer starts with "\n".
// Thread-safe given a thread-safe Tokenizer. Errors: InvalidArgument (missing grid, the
// expander's refusals), ResourceExhausted (over max_length, policy drop).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/dataset/conversation.h"
#include "stoker/text/chat_template.h"
#include "stoker/text/tokenizer.h"

namespace stoker::text {

inline constexpr TokenId kIgnoreIndex = -100;

// The grid of one image or video as the image/video processor will produce it.
struct VisionGrid {
  int grid_t = 1, grid_h = 0, grid_w = 0;
  // Qwen3-VL videos only: one timestamp (seconds) per temporal group, rendered as
  // "<{x:.1f} seconds>" before that group's vision block (spec §2.3). See video_group_seconds.
  std::vector<double> group_seconds;
};

// Qwen3-VL timestamps: ts_i = frame_indices[i] / fps; the list is padded to a multiple of
// `group` by repeating the last index; one value per group = the mean of its first and last.
std::vector<double> video_group_seconds(std::span<const std::int64_t> frame_indices, double fps,
                                        int group = 2);

// A run of vision pad tokens in input_ids.
struct VisionSpan {
  bool video = false;
  int media_index = 0;  // among the sample's images (or videos)
  int group = 0;        // Qwen3-VL video temporal group (one span per group); else 0
  std::int64_t begin = 0, count = 0;
};

enum class Overflow {
  kDrop,           // the sample is refused with a reason (default; ms-swift's 'delete')
  kTruncateTurns,  // keep the longest prefix of whole turns that ends with an assistant turn
};

struct SampleOptions {
  int merge_size = 2;  // the TemplateKind overload's (qwen_vl.h); a family's expander knows its own
  std::int64_t max_length = 0;  // 0: unlimited
  Overflow overflow = Overflow::kDrop;
};

struct TokenizedSample {
  std::vector<TokenId> input_ids;
  std::vector<TokenId> labels;
  std::vector<VisionSpan> vision;
  int num_images = 0, num_videos = 0;  // media used (after truncation: a prefix of the record's)
  int num_messages = 0;                // messages rendered
  bool truncated = false;

  std::int64_t supervised_tokens() const;
};

// One piece of the token stream a rendered chat becomes: text (BPE'd together with the text
// around it of the same supervision) or a run of `count` copies of one token. `vision`: the
// index (into the sample's vision spans) of the medium run this piece is, or −1.
struct Piece {
  bool is_text = true;
  std::string text;
  TokenId id = 0;
  std::int64_t count = 1;
  bool supervised = false;
  int message = -1;
  int vision = -1;
};

// A model family's template renderer: a conversation (valid for SFT) → segments.
class ChatRenderer {
 public:
  virtual ~ChatRenderer() = default;
  virtual Result<RenderedChat> render(const dataset::Conversation& conversation) const = 0;
};

// A model family's placeholder expansion: a rendered chat → pieces, every media segment (and
// the special tokens around it) expanded for its grid; each medium run recorded in `spans`
// (begin left 0: the tokenizer fills it). `images` / `videos`: one grid per medium, in order.
class PlaceholderExpander {
 public:
  virtual ~PlaceholderExpander() = default;
  virtual Status expand(const RenderedChat& chat, const Tokenizer& tokenizer,
                        std::span<const VisionGrid> images, std::span<const VisionGrid> videos,
                        std::vector<Piece>* pieces, std::vector<VisionSpan>* spans) const = 0;
};

// Tokenises a rendered chat through `expander`.
Result<TokenizedSample> tokenize_chat(const RenderedChat& chat, const PlaceholderExpander& expander,
                                      const Tokenizer& tokenizer, std::span<const VisionGrid> images,
                                      std::span<const VisionGrid> videos);

// validate_for_sft + render + expand + tokenise + max-length policy. Errors name the record.
Result<TokenizedSample> build_sample(const dataset::Conversation& conversation,
                                     const ChatRenderer& renderer,
                                     const PlaceholderExpander& expander,
                                     const Tokenizer& tokenizer,
                                     std::span<const VisionGrid> images,
                                     std::span<const VisionGrid> videos,
                                     const SampleOptions& options = {});

}  // namespace stoker::text
