// Tokenisation of a rendered chat into ids + labels, and the max-length policies; the
// placeholder expansion is the family's (PlaceholderExpander).
#include "stoker/text/labels.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>

namespace stoker::text {
namespace {

using dataset::Conversation;
using dataset::Role;

std::string record_name(const std::string& id) {
  return id.empty() ? std::string("record") : "record \"" + id + "\"";
}

int common_prefix(std::span<const TokenId> a, std::span<const TokenId> b) {
  std::size_t n = std::min(a.size(), b.size()), i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return static_cast<int>(i);
}

int common_suffix(std::span<const TokenId> a, std::span<const TokenId> b) {
  std::size_t n = std::min(a.size(), b.size()), i = 0;
  while (i < n && a[a.size() - 1 - i] == b[b.size() - 1 - i]) ++i;
  return static_cast<int>(i);
}

class RunTokenizer {
 public:
  RunTokenizer(const Tokenizer& tok, TokenizedSample* out, std::vector<std::int64_t>* msg_end)
      : tok_(tok), out_(out), msg_end_(msg_end) {}

  void add_text(const Piece& it) {
    if (!pieces_.empty() && pieces_.back().supervised == it.supervised) {
      pieces_.back().text += it.text;
      pieces_.back().message = it.message;
    } else {
      pieces_.push_back({it.text, it.supervised, it.message});
    }
  }

  void add_token(const Piece& it) {
    flush();
    if (it.vision >= 0) out_->vision[static_cast<std::size_t>(it.vision)].begin = static_cast<std::int64_t>(out_->input_ids.size());
    for (std::int64_t k = 0; k < it.count; ++k) {
      out_->input_ids.push_back(it.id);
      out_->labels.push_back(it.supervised ? it.id : kIgnoreIndex);
    }
    mark_end(it.message);
  }

  // Tokenises the pending text run as one string; labels by character overlap.
  void flush() {
    if (pieces_.empty()) return;
    std::string text;
    std::vector<std::size_t> bounds;  // byte offsets where supervision changes
    for (std::size_t j = 0; j < pieces_.size(); ++j) {
      if (j > 0) bounds.push_back(text.size());
      text += pieces_[j].text;
    }
    ids_.clear();
    tok_.encode(text, &ids_);
    const int n = static_cast<int>(ids_.size());
    flags_.assign(n, 0);
    // zone_j = [k_j, e_j): tokens that touch boundary j (empty when the boundary falls between
    // two tokens, the usual case).
    std::vector<int> k(bounds.size()), e(bounds.size());
    for (std::size_t j = 0; j < bounds.size(); ++j) {
      scratch_.clear();
      tok_.encode(std::string_view(text).substr(0, bounds[j]), &scratch_);
      int kp = common_prefix(scratch_, ids_);
      if (kp == static_cast<int>(scratch_.size())) {
        k[j] = e[j] = kp;
        continue;
      }
      scratch_.clear();
      tok_.encode(std::string_view(text).substr(bounds[j]), &scratch_);
      int ks = common_suffix(scratch_, ids_);
      k[j] = kp;
      e[j] = std::max(kp + 1, std::min(n, n - ks));
    }
    for (std::size_t j = 0; j < pieces_.size(); ++j) {
      int from = j == 0 ? 0 : e[j - 1];
      int to = j + 1 == pieces_.size() ? n : k[j];
      for (int t = from; t < to; ++t) flags_[t] |= pieces_[j].supervised;
      if (j + 1 < pieces_.size()) {
        bool either = pieces_[j].supervised || pieces_[j + 1].supervised;
        for (int t = k[j]; t < e[j] && t < n; ++t) flags_[t] |= either;
      }
    }
    for (int t = 0; t < n; ++t) {
      out_->input_ids.push_back(ids_[t]);
      out_->labels.push_back(flags_[t] ? ids_[t] : kIgnoreIndex);
    }
    for (const Piece& p : pieces_) mark_end(p.message);
    pieces_.clear();
  }

 private:
  struct Piece {
    std::string text;
    bool supervised;
    int message;
  };
  void mark_end(int message) {
    if (message >= 0 && message < static_cast<int>(msg_end_->size())) {
      (*msg_end_)[message] = static_cast<std::int64_t>(out_->input_ids.size());
    }
  }

  const Tokenizer& tok_;
  TokenizedSample* out_;
  std::vector<std::int64_t>* msg_end_;
  std::vector<Piece> pieces_;
  std::vector<TokenId> ids_, scratch_;
  std::vector<char> flags_;
};

Result<TokenizedSample> tokenize_impl(const RenderedChat& chat, const PlaceholderExpander& expander,
                                      const Tokenizer& tok, std::span<const VisionGrid> images,
                                      std::span<const VisionGrid> videos, int num_messages,
                                      std::vector<std::int64_t>* msg_end) {
  TokenizedSample out;
  out.num_images = chat.num_images;
  out.num_videos = chat.num_videos;
  out.num_messages = num_messages;
  if (static_cast<int>(images.size()) < chat.num_images ||
      static_cast<int>(videos.size()) < chat.num_videos) {
    return invalid_argument("the chat has " + std::to_string(chat.num_images) + " image(s) and " +
                            std::to_string(chat.num_videos) + " video(s) but grids were given for " +
                            std::to_string(images.size()) + " and " +
                            std::to_string(videos.size()));
  }
  std::vector<Piece> items;
  STOKER_RETURN_IF_ERROR(expander.expand(chat, tok, images, videos, &items, &out.vision));
  msg_end->assign(num_messages, -1);
  RunTokenizer run(tok, &out, msg_end);
  for (const Piece& it : items) {
    if (it.is_text) {
      run.add_text(it);
    } else {
      run.add_token(it);
    }
  }
  run.flush();
  return out;
}

}  // namespace

std::vector<double> video_group_seconds(std::span<const std::int64_t> frame_indices, double fps,
                                        int group) {
  std::vector<double> ts;
  for (std::int64_t f : frame_indices) ts.push_back(static_cast<double>(f) / fps);
  if (ts.empty() || group <= 0) return {};
  while (ts.size() % group != 0) ts.push_back(ts.back());
  std::vector<double> out;
  for (std::size_t k = 0; k < ts.size(); k += group) out.push_back((ts[k] + ts[k + group - 1]) / 2);
  return out;
}

std::int64_t TokenizedSample::supervised_tokens() const {
  return std::count_if(labels.begin(), labels.end(), [](TokenId l) { return l != kIgnoreIndex; });
}

Result<TokenizedSample> tokenize_chat(const RenderedChat& chat, const PlaceholderExpander& expander,
                                      const Tokenizer& tokenizer, std::span<const VisionGrid> images,
                                      std::span<const VisionGrid> videos) {
  int messages = 0;
  for (const Segment& s : chat.segments) messages = std::max(messages, s.message_index + 1);
  std::vector<std::int64_t> ends;
  return tokenize_impl(chat, expander, tokenizer, images, videos, messages, &ends);
}

Result<TokenizedSample> build_sample(const Conversation& conv, const ChatRenderer& renderer,
                                     const PlaceholderExpander& expander,
                                     const Tokenizer& tokenizer,
                                     std::span<const VisionGrid> images,
                                     std::span<const VisionGrid> videos,
                                     const SampleOptions& options) {
  auto named = [&](Error e) { return std::move(e.with_context(record_name(conv.id))); };
  // validate_for_sft names the record itself.
  STOKER_RETURN_IF_ERROR(dataset::validate_for_sft(conv));
  STOKER_ASSIGN_OR_RETURN(RenderedChat chat, renderer.render(conv));
  std::vector<std::int64_t> ends;
  const int n = static_cast<int>(conv.messages.size());
  Result<TokenizedSample> full = tokenize_impl(chat, expander, tokenizer, images, videos, n, &ends);
  if (!full.ok()) return named(std::move(full).error());
  const std::int64_t len = static_cast<std::int64_t>(full->input_ids.size());
  if (options.max_length <= 0 || len <= options.max_length) return full;

  std::string too_long = std::to_string(len) + " tokens exceed max_length " +
                         std::to_string(options.max_length);
  if (options.overflow == Overflow::kDrop) {
    return named(resource_exhausted(too_long + " (overflow policy: drop)"));
  }
  // Longest prefix of whole messages ending with an assistant turn that fits. The prefix's
  // tokens are the full sample's up to that message's end (messages begin with <|im_start|>,
  // a pre-token boundary), so the end offsets computed above are exact — for the turns as the
  // whole conversation renders them. Re-rendered alone, a prefix can be longer: its last turn
  // may gain the empty think block (ThinkMode) and the generation prompt follows it. So each
  // candidate is checked after re-rendering, and a shorter one tried when it no longer fits
  // (found by the fuzzer: a truncated sample over max_length). Candidates shrink by whole
  // assistant turns, so this stops after a few tries.
  for (int keep = n - 1; keep >= 0; --keep) {
    if (conv.messages[keep].role != Role::kAssistant || ends[keep] < 0 ||
        ends[keep] > options.max_length) {
      continue;
    }
    // Re-render the prefix so that per-turn options (last_turn_only) apply to what is kept.
    Conversation prefix;
    prefix.id = conv.id;
    prefix.messages.assign(conv.messages.begin(), conv.messages.begin() + keep + 1);
    STOKER_ASSIGN_OR_RETURN(RenderedChat cut, renderer.render(prefix));
    std::vector<std::int64_t> cut_ends;
    Result<TokenizedSample> out = tokenize_impl(cut, expander, tokenizer, images, videos,
                                                keep + 1, &cut_ends);
    if (!out.ok()) return named(std::move(out).error());
    if (static_cast<std::int64_t>(out->input_ids.size()) > options.max_length) continue;
    out->truncated = true;
    return out;
  }
  return named(resource_exhausted(too_long + " and no prefix of whole turns ending with an "
                                  "assistant turn fits"));
}

}  // namespace stoker::text
