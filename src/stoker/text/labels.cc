// The generic sample builder: placeholders found and expanded, the text tokenised with offsets,
// labels by HF's assistant-mask rule over the renderer's spans, and the max-length policies.
#include "stoker/text/labels.h"

#include <algorithm>
#include <string>
#include <string_view>

#include "stoker/jinja/assistant_mask.h"

namespace stoker::text {
namespace {

using dataset::Conversation;
using dataset::Role;

std::string record_name(const std::string& id) {
  return id.empty() ? std::string("record") : "record \"" + id + "\"";
}

std::string plural(std::int64_t n, std::string_view what) {
  return std::to_string(n) + " " + std::string(what) + (n == 1 ? "" : "s");
}

// Text encoded as one string: pieces of the rendered text and text an expansion inserts, with
// where each byte stands in the rendered text (inserted bytes stand for their whole placeholder).
class TextRun {
 public:
  void add_rendered(std::string_view text, std::size_t at) {
    if (text.empty()) return;
    segs_.push_back({run_.size(), text.size(), at, at + text.size(), false});
    run_ += text;
  }
  void add_inserted(std::string_view text, std::size_t begin, std::size_t end) {
    if (text.empty()) return;
    segs_.push_back({run_.size(), text.size(), begin, end, true});
    run_ += text;
  }
  // Encodes the run; appends ids and their offsets in the rendered text.
  void flush(const Tokenizer& tok, std::vector<TokenId>* ids, std::vector<TextSpan>* offsets) {
    if (run_.empty()) return;
    run_offsets_.clear();
    const std::size_t first = ids->size();
    tok.encode_with_offsets(run_, ids, &run_offsets_);
    for (std::size_t i = 0; i < ids->size() - first && i < run_offsets_.size(); ++i) {
      const std::size_t b = at(run_offsets_[i].begin, false), e = at(run_offsets_[i].end, true);
      offsets->push_back({b, std::max(b, e)});
    }
    offsets->resize(ids->size());  // a tokenizer that gave fewer offsets: empty spans at 0
    run_.clear();
    segs_.clear();
  }

 private:
  struct Seg {
    std::size_t run_at, len, begin, end;
    bool inserted;
  };
  std::size_t at(std::size_t pos, bool end) const {
    const std::size_t key = end && pos > 0 ? pos - 1 : pos;
    auto it = std::upper_bound(segs_.begin(), segs_.end(), key,
                               [](std::size_t k, const Seg& s) { return k < s.run_at; });
    if (it != segs_.begin()) --it;
    const Seg& s = *it;
    if (s.inserted) return end ? s.end : s.begin;
    return s.begin + std::min(pos - std::min(pos, s.run_at), s.len);
  }

  std::string run_;
  std::vector<Seg> segs_;
  std::vector<TextSpan> run_offsets_;
};

Result<TokenizedSample> tokenize_impl(const ChatText& chat, const Conversation& conv,
                                      const MediaPlaceholders& placeholders, const Tokenizer& tok,
                                      std::span<const MediaOfKind> media) {
  const std::span<const std::string_view> mods = placeholders.modalities();
  auto index_of = [&](std::string_view m) -> int {
    for (std::size_t i = 0; i < mods.size(); ++i) {
      if (mods[i] == m) return static_cast<int>(i);
    }
    return -1;
  };
  // How many media of each modality the rendered conversation holds.
  std::vector<int> expected(mods.size(), 0);
  for (std::size_t m = 0; m < conv.messages.size(); ++m) {
    for (const dataset::Part& p : conv.messages[m].parts) {
      const std::string_view modality = part_modality(p);
      if (modality.empty()) continue;
      const int k = index_of(modality);
      if (k < 0) {
        return invalid_argument("message " + std::to_string(m) + ": the model's chat template "
                                "has no placeholder for " + std::string(modality));
      }
      ++expected[static_cast<std::size_t>(k)];
    }
  }
  std::vector<Placeholder> found;
  STOKER_RETURN_IF_ERROR(placeholders.find(chat.text, &found));
  std::vector<int> count(mods.size(), 0);
  for (const Placeholder& p : found) ++count[static_cast<std::size_t>(p.modality)];
  std::vector<std::span<const VisionGrid>> grids(mods.size());
  for (const MediaOfKind& m : media) {
    if (const int k = index_of(m.modality); k >= 0) grids[static_cast<std::size_t>(k)] = m.media;
  }
  for (std::size_t k = 0; k < mods.size(); ++k) {
    if (count[k] != expected[k]) {
      const std::string what(mods[k]);
      return invalid_argument("the chat template rendered " + plural(count[k], what + " placeholder") +
                              " for the conversation's " + plural(expected[k], what) +
                              " (a template that drops or adds a medium cannot be paired with "
                              "the media; HF's processor fails the same way)");
    }
    if (grids[k].size() < static_cast<std::size_t>(count[k])) {
      return invalid_argument("the chat has " + plural(count[k], std::string(mods[k])) +
                              " but grids were given for " + std::to_string(grids[k].size()));
    }
  }

  TokenizedSample out;
  out.num_messages = static_cast<int>(conv.messages.size());
  std::vector<TextSpan> offsets;
  std::vector<TextSpan> blocks;
  std::vector<int> next(mods.size(), 0);
  std::vector<Expansion> exp;
  TextRun run;
  std::size_t cursor = 0;
  const std::string_view text = chat.text;
  for (const Placeholder& p : found) {
    if (p.begin < cursor || p.end < p.begin || p.end > text.size()) {
      return internal_error("placeholders out of order or out of the text");
    }
    run.add_rendered(text.substr(cursor, p.begin - cursor), cursor);
    const std::size_t m = static_cast<std::size_t>(p.modality);
    const int k = next[m]++;
    exp.clear();
    if (Status st = placeholders.expand(p, grids[m][static_cast<std::size_t>(k)], &exp); !st.ok()) {
      return std::move(st).error().with_context(std::string(mods[m]) + " " + std::to_string(k));
    }
    for (const Expansion& e : exp) {
      if (e.kind == Expansion::Kind::kText) {
        run.add_inserted(e.text, p.begin, p.end);
        continue;
      }
      run.flush(tok, &out.input_ids, &offsets);
      if (e.kind == Expansion::Kind::kRun) {
        out.vision.push_back({mods[m] == "video", k, e.group,
                              static_cast<std::int64_t>(out.input_ids.size()), e.count, mods[m]});
      }
      out.input_ids.insert(out.input_ids.end(), static_cast<std::size_t>(e.count), e.id);
      offsets.insert(offsets.end(), static_cast<std::size_t>(e.count), TextSpan{p.begin, p.end});
    }
    blocks.push_back({std::min(p.block_begin, p.begin), std::max(p.block_end, p.end)});
    cursor = p.end;
  }
  run.add_rendered(text.substr(cursor), cursor);
  run.flush(tok, &out.input_ids, &offsets);

  // Labels: HF's tokenizer rule over the spans, media blocks never.
  std::vector<jinja::Span> spans, token_spans;
  spans.reserve(chat.supervised.size());
  for (const TextSpan& s : chat.supervised) spans.push_back({s.begin, s.end});
  token_spans.reserve(offsets.size());
  for (const TextSpan& o : offsets) token_spans.push_back({o.begin, o.end});
  const std::vector<std::uint8_t> mask =
      jinja::assistant_mask(text, spans, token_spans, jinja::MaskRule::kTokenizer);
  out.labels.resize(out.input_ids.size(), kIgnoreIndex);
  std::size_t b = 0;
  for (std::size_t t = 0; t < out.input_ids.size(); ++t) {
    if (!mask[t]) continue;
    while (b < blocks.size() && blocks[b].end <= offsets[t].begin && blocks[b].end < offsets[t].end) ++b;
    const bool in_block = b < blocks.size() && blocks[b].begin <= offsets[t].begin &&
                          offsets[t].end <= blocks[b].end;
    if (!in_block) out.labels[t] = out.input_ids[t];
  }
  out.num_images = static_cast<int>(index_of("image") >= 0 ? count[index_of("image")] : 0);
  out.num_videos = static_cast<int>(index_of("video") >= 0 ? count[index_of("video")] : 0);
  for (const MediaOfKind& m : media) {
    const int k = index_of(m.modality);
    out.media_used.push_back(k >= 0 ? count[static_cast<std::size_t>(k)] : 0);
  }
  return out;
}

}  // namespace

std::string_view part_modality(const dataset::Part& part) {
  switch (part.kind) {
    case dataset::Part::Kind::kImage: return "image";
    case dataset::Part::Kind::kVideo: return "video";
    case dataset::Part::Kind::kAudio: return "audio";
    case dataset::Part::Kind::kText: break;
  }
  return {};
}

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

Result<TokenizedSample> tokenize_chat(const ChatText& chat, const Conversation& conversation,
                                      const MediaPlaceholders& placeholders,
                                      const Tokenizer& tokenizer,
                                      std::span<const MediaOfKind> media) {
  return tokenize_impl(chat, conversation, placeholders, tokenizer, media);
}

Result<TokenizedSample> build_sample(const Conversation& conv, const ChatRenderer& renderer,
                                     const MediaPlaceholders& placeholders,
                                     const Tokenizer& tokenizer,
                                     std::span<const MediaOfKind> media,
                                     const SampleOptions& options) {
  auto named = [&](Error e) { return std::move(e.with_context(record_name(conv.id))); };
  // validate_for_sft and the renderers name the record themselves.
  STOKER_RETURN_IF_ERROR(dataset::validate_for_sft(conv));
  auto sample = [&](const Conversation& c) -> Result<TokenizedSample> {
    STOKER_ASSIGN_OR_RETURN(ChatText chat, renderer.render(c));
    Result<TokenizedSample> s = tokenize_impl(chat, c, placeholders, tokenizer, media);
    if (!s.ok()) return named(std::move(s).error());
    return s;
  };
  STOKER_ASSIGN_OR_RETURN(TokenizedSample full, sample(conv));
  const std::int64_t len = static_cast<std::int64_t>(full.input_ids.size());
  if (options.max_length <= 0 || len <= options.max_length) return full;

  std::string too_long = std::to_string(len) + " tokens exceed max_length " +
                         std::to_string(options.max_length);
  if (options.overflow == Overflow::kDrop) {
    return named(resource_exhausted(too_long + " (overflow policy: drop)"));
  }
  // Prefixes of whole messages ending with an assistant turn, shorter than the whole; each is
  // re-rendered alone (so per-turn choices of the template apply to what is kept, and a prefix's
  // own end — a generation prompt, a think block — is counted). Bisection: O(log turns) renders.
  std::vector<int> ends;
  for (int i = 0; i + 1 < static_cast<int>(conv.messages.size()); ++i) {
    if (conv.messages[i].role == Role::kAssistant) ends.push_back(i);
  }
  int lo = -1, hi = static_cast<int>(ends.size());  // lo fits (-1: none), hi does not
  TokenizedSample best;
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    Conversation prefix;
    prefix.id = conv.id;
    prefix.tools_json = conv.tools_json;
    prefix.documents_json = conv.documents_json;
    prefix.template_kwargs_json = conv.template_kwargs_json;
    prefix.messages.assign(conv.messages.begin(), conv.messages.begin() + ends[mid] + 1);
    STOKER_ASSIGN_OR_RETURN(TokenizedSample s, sample(prefix));
    if (static_cast<std::int64_t>(s.input_ids.size()) <= options.max_length) {
      lo = mid;
      best = std::move(s);
    } else {
      hi = mid;
    }
  }
  if (lo < 0) {
    return named(resource_exhausted(too_long + " and no prefix of whole turns ending with an "
                                    "assistant turn fits"));
  }
  best.truncated = true;
  return best;
}

}  // namespace stoker::text
