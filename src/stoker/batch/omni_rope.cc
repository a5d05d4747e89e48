// get_rope_index of Qwen2.5-Omni and Qwen3-Omni and their processors' audio-in-video layout,
// transcribed from transformers 4.57 (see omni_rope.h for the rules and quirks kept).
#include "stoker/batch/omni_rope.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <utility>

namespace stoker::batch {
namespace {

std::int64_t floordiv(std::int64_t a, std::int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// The processor's / model's get_chunked_index: (start, end) slices where the values cross each
// multiple of `per_chunk` (one new chunk per token past a threshold, as the Python loop does).
template <typename T>
std::vector<std::pair<std::int64_t, std::int64_t>> chunked_index(const std::vector<T>& v, double per_chunk) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  std::int64_t start = 0, chunk = 1;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(v.size()); ++i) {
    if (static_cast<double>(v[static_cast<std::size_t>(i)]) >= static_cast<double>(chunk) * per_chunk) {
      out.emplace_back(start, i);
      start = i;
      ++chunk;
    }
  }
  out.emplace_back(start, static_cast<std::int64_t>(v.size()));
  return out;
}

void add_run(std::vector<TokenRun>& runs, bool audio, std::int64_t n) {
  if (n <= 0) return;
  if (!runs.empty() && runs.back().audio == audio) {
    runs.back().count += n;
  } else {
    runs.push_back({audio, n});
  }
}

using Pos = std::array<double, 3>;

// The positions of one sequence (unmasked tokens), built block by block like llm_pos_ids_list.
struct Walk {
  std::vector<Pos> pos;
  bool any = false;
  double last_max = 0;  // max of the last appended block
  double next() const { return any ? last_max + 1 : 0; }
  void begin_block() { block_max_ = -1e300; }
  void push(double t, double h, double w) {
    pos.push_back({t, h, w});
    block_max_ = std::max({block_max_, t, h, w});
  }
  void end_block() {
    any = true;
    last_max = block_max_;
  }
  void text(std::int64_t n, double st, bool f32) {
    if (n <= 0) return;
    begin_block();
    for (std::int64_t i = 0; i < n; ++i) {
      const double v = f32 ? static_cast<double>(static_cast<float>(i) + static_cast<float>(st)) : static_cast<double>(i) + st;
      push(v, v, v);
    }
    end_block();
  }
  double block_max_ = 0;
};

struct Vision {
  std::vector<double> t, h, w;  // one per token, in patchify order
};

// get_llm_pos_ids_for_vision: (t_index[t], h, w) + start for t-major, h, w order.
Vision vision_positions(const std::vector<double>& t_index, std::int64_t gh, std::int64_t gw, double start, bool f32) {
  Vision v;
  for (double ti : t_index) {
    for (std::int64_t h = 0; h < gh; ++h) {
      for (std::int64_t w = 0; w < gw; ++w) {
        if (f32) {
          v.t.push_back(static_cast<float>(ti) + static_cast<float>(start));
          v.h.push_back(static_cast<float>(h) + static_cast<float>(start));
          v.w.push_back(static_cast<float>(w) + static_cast<float>(start));
        } else {
          v.t.push_back(ti + start);
          v.h.push_back(static_cast<double>(h) + start);
          v.w.push_back(static_cast<double>(w) + start);
        }
      }
    }
  }
  return v;
}

// Time index of temporal step t: torch's arange(grid_t) × float32(spg) × pps in float32
// (then .long() for 2.5-Omni).
double time_index(const OmniRopeConfig& c, std::int64_t t, double spg) {
  float v = static_cast<float>(t) * static_cast<float>(spg);
  v = v * static_cast<float>(c.position_id_per_seconds);
  if (c.family == OmniFamily::kQwen25Omni) return static_cast<double>(static_cast<std::int64_t>(v));
  return static_cast<double>(v);
}

Status find(const std::vector<std::int32_t>& ids, std::int32_t token, std::int64_t from, std::int64_t* at, const char* what) {
  for (std::int64_t i = from; i < static_cast<std::int64_t>(ids.size()); ++i) {
    if (ids[static_cast<std::size_t>(i)] == token) {
      *at = i;
      return {};
    }
  }
  return invalid_argument(std::string("omni rope: no ") + what + " token at or after position " + std::to_string(from));
}

bool contains(const std::vector<std::int32_t>& ids, std::int32_t token) {
  return std::find(ids.begin(), ids.end(), token) != ids.end();
}

struct Inputs {
  std::span<const GridTHW> images, videos;
  std::span<const double> spg;
  std::span<const std::int64_t> audio_frames;
  bool aiv = false;
  std::size_t image_i = 0, video_i = 0, audio_i = 0;

  Result<GridTHW> image() {
    if (image_i >= images.size()) return invalid_argument("omni rope: more images than image grids");
    return images[image_i];
  }
  Result<GridTHW> video() {
    if (video_i >= videos.size()) return invalid_argument("omni rope: more videos than video grids");
    return videos[video_i];
  }
  double second_per_grid() const { return video_i < spg.size() ? spg[video_i] : 1.0; }
  Result<std::int64_t> audio_tokens(OmniFamily f) {
    if (audio_i >= audio_frames.size()) return invalid_argument("omni rope: more audios than audio lengths");
    const std::int64_t n = omni_audio_tokens(f, audio_frames[audio_i]);
    if (n <= 0) return invalid_argument("omni rope: an audio of " + std::to_string(audio_frames[audio_i]) + " frames has no tokens");
    return n;
  }
};

struct Counts {
  std::int64_t images = 0, videos = 0, audios = 0;
};

Result<Counts> count(const std::vector<std::int32_t>& ids, const OmniRopeConfig& c, bool aiv) {
  Counts n;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] == c.audio_start_token_id) ++n.audios;
    if (ids[i] != c.vision_start_token_id) continue;
    if (i + 1 >= ids.size()) return invalid_argument("omni rope: a vision start is the last token");
    const std::int32_t next = ids[i + 1];
    if (next == c.image_token_id) ++n.images;
    if (aiv ? next == c.audio_start_token_id : next == c.video_token_id) ++n.videos;
  }
  return n;
}

Status walk_25(const std::vector<std::int32_t>& ids, const OmniRopeConfig& c, Inputs& in, Walk& wk) {
  STOKER_ASSIGN_OR_RETURN(Counts n, count(ids, c, in.aiv));
  const std::int64_t L = static_cast<std::int64_t>(ids.size()), m = c.spatial_merge_size;
  std::int64_t st = 0, remain_i = n.images, remain_v = n.videos, remain_a = n.audios;
  const std::int64_t multimodal = in.aiv ? n.images + n.audios : n.images + n.videos + n.audios;
  const std::int64_t per_chunk = static_cast<std::int64_t>(c.position_id_per_seconds * c.seconds_per_chunk);
  for (std::int64_t k = 0; k < multimodal; ++k) {
    std::int64_t ed_i = L + 1, ed_v = L + 1, ed_a = L + 1;
    if (contains(ids, c.image_token_id) && remain_i > 0) STOKER_RETURN_IF_ERROR(find(ids, c.image_token_id, st, &ed_i, "image"));
    if (contains(ids, c.video_token_id) && remain_v > 0) STOKER_RETURN_IF_ERROR(find(ids, c.video_token_id, st, &ed_v, "video"));
    if (contains(ids, c.audio_token_id) && remain_a > 0) STOKER_RETURN_IF_ERROR(find(ids, c.audio_token_id, st, &ed_a, "audio"));
    const std::int64_t min_ed = std::min({ed_i, ed_v, ed_a});
    if (min_ed > L) return invalid_argument("omni rope: fewer media pads than media starts");
    const bool aiv_video = min_ed == ed_v && in.aiv && min_ed != ed_a && min_ed != ed_i;
    const std::int64_t text_len = min_ed - st - (aiv_video ? 2 : 1);
    if (text_len < 0) return invalid_argument("omni rope: a media pad without its start token at " + std::to_string(min_ed));
    wk.text(text_len, wk.next(), false);
    if (min_ed == ed_a || min_ed == ed_i || !in.aiv) {
      // bos, the medium, eos — each after the last block's max.
      wk.begin_block();
      const double bos = wk.next();
      wk.push(bos, bos, bos);
      wk.end_block();
      const double start = wk.next();
      std::int64_t len = 0;
      if (min_ed == ed_a) {
        STOKER_ASSIGN_OR_RETURN(len, in.audio_tokens(c.family));
        wk.begin_block();
        for (std::int64_t i = 0; i < len; ++i) wk.push(start + i, start + i, start + i);
        wk.end_block();
        ++in.audio_i;
        --remain_a;
      } else {
        const bool image = min_ed == ed_i;
        STOKER_ASSIGN_OR_RETURN(GridTHW g, image ? in.image() : in.video());
        std::vector<double> t_index;
        for (std::int64_t t = 0; t < g.t; ++t) {
          t_index.push_back(image ? static_cast<double>(t * static_cast<std::int64_t>(c.position_id_per_seconds))
                                  : time_index(c, t, in.second_per_grid()));
        }
        const Vision v = vision_positions(t_index, g.h / m, g.w / m, start, false);
        wk.begin_block();
        for (std::size_t i = 0; i < v.t.size(); ++i) wk.push(v.t[i], v.h[i], v.w[i]);
        wk.end_block();
        len = g.t * g.h * g.w / (m * m);
        if (image) {
          ++in.image_i;
          --remain_i;
        } else {
          ++in.video_i;
          --remain_v;
        }
      }
      wk.begin_block();
      const double eos = wk.next();
      wk.push(eos, eos, eos);
      wk.end_block();
      st += text_len + 1 + len + 1;
      continue;
    }
    // Audio in video: two bos at one position, video and audio chunks interleaved, two eos.
    wk.begin_block();
    const double bos = wk.next();
    wk.push(bos, bos, bos);
    wk.push(bos, bos, bos);
    wk.end_block();
    const double start = wk.next();
    STOKER_ASSIGN_OR_RETURN(std::int64_t audio_len, in.audio_tokens(c.family));
    STOKER_ASSIGN_OR_RETURN(GridTHW g, in.video());
    std::vector<double> t_index;
    for (std::int64_t t = 0; t < g.t; ++t) t_index.push_back(time_index(c, t, in.second_per_grid()));
    const Vision v = vision_positions(t_index, g.h / m, g.w / m, start, false);
    std::vector<double> vt, at;  // temporal rows minus start (remove_index)
    for (double x : v.t) vt.push_back(x - start);
    for (std::int64_t i = 0; i < audio_len; ++i) at.push_back(static_cast<double>(i));
    const auto vc = chunked_index(vt, static_cast<double>(per_chunk));
    const auto ac = chunked_index(at, static_cast<double>(per_chunk));
    for (std::size_t j = 0; j < std::max(vc.size(), ac.size()); ++j) {
      if (j < vc.size()) {
        if (vc[j].first == vc[j].second) return invalid_argument("omni rope: an empty video chunk");
        wk.begin_block();
        for (std::int64_t i = vc[j].first; i < vc[j].second; ++i) wk.push(v.t[static_cast<std::size_t>(i)], v.h[static_cast<std::size_t>(i)], v.w[static_cast<std::size_t>(i)]);
        wk.end_block();
      }
      if (j < ac.size()) {
        if (ac[j].first == ac[j].second) return invalid_argument("omni rope: an empty audio chunk");
        wk.begin_block();
        for (std::int64_t i = ac[j].first; i < ac[j].second; ++i) wk.push(start + i, start + i, start + i);
        wk.end_block();
      }
    }
    wk.begin_block();
    const double eos = wk.next();
    wk.push(eos, eos, eos);
    wk.push(eos, eos, eos);
    wk.end_block();
    const std::int64_t video_len = g.t * g.h * g.w / (m * m);
    st += text_len + 2 + audio_len + video_len + 2;
    ++in.audio_i;
    ++in.video_i;
    --remain_v;
    --remain_a;
  }
  if (st < L) wk.text(L - st, wk.next(), false);
  return {};
}

Status walk_3(const std::vector<std::int32_t>& ids, const OmniRopeConfig& c, Inputs& in, Walk& wk) {
  STOKER_ASSIGN_OR_RETURN(Counts n, count(ids, c, in.aiv));
  const std::int64_t L = static_cast<std::int64_t>(ids.size()), m = c.spatial_merge_size;
  std::int64_t st = 0, remain_i = n.images, remain_v = n.videos, remain_a = n.audios;
  const std::int64_t multimodal = in.aiv ? n.images + n.audios : n.images + n.videos + n.audios;
  auto f32 = [](double x) { return static_cast<double>(static_cast<float>(x)); };
  for (std::int64_t k = 0; k < multimodal; ++k) {
    double st_idx = wk.next();
    std::int64_t ed_vs = L + 1, ed_as = L + 1;
    if ((contains(ids, c.image_token_id) || contains(ids, c.video_token_id)) && (remain_v > 0 || remain_i > 0)) {
      STOKER_RETURN_IF_ERROR(find(ids, c.vision_start_token_id, st, &ed_vs, "vision start"));
    }
    if (contains(ids, c.audio_token_id) && remain_a > 0) {
      STOKER_RETURN_IF_ERROR(find(ids, c.audio_start_token_id, st, &ed_as, "audio start"));
    }
    const std::int64_t min_ed = std::min(ed_vs, ed_as);
    if (min_ed > L) return invalid_argument("omni rope: fewer media starts than media");
    const std::int64_t text_len = min_ed - st;
    if (text_len != 0) {
      wk.text(text_len, st_idx, true);
      st_idx = f32(st_idx + static_cast<double>(text_len));
    }
    const bool aiv = min_ed == ed_vs && ed_vs + 1 == ed_as;
    const std::int64_t bos_len = aiv ? 2 : 1, eos_len = bos_len;
    wk.text(bos_len, st_idx, true);
    st_idx = f32(st_idx + static_cast<double>(bos_len));
    const std::int32_t after = min_ed + 1 < L ? ids[static_cast<std::size_t>(min_ed + 1)] : -1;
    if (min_ed == ed_as) {
      STOKER_ASSIGN_OR_RETURN(std::int64_t len, in.audio_tokens(c.family));
      wk.text(len, st_idx, true);
      st += text_len + bos_len + len + eos_len;
      ++in.audio_i;
      --remain_a;
    } else if (after == c.image_token_id || after == c.video_token_id) {
      const bool image = after == c.image_token_id;
      STOKER_ASSIGN_OR_RETURN(GridTHW g, image ? in.image() : in.video());
      std::vector<double> t_index;
      for (std::int64_t t = 0; t < g.t; ++t) {
        t_index.push_back(image ? f32(static_cast<double>(t) * c.position_id_per_seconds) : time_index(c, t, in.second_per_grid()));
      }
      const Vision v = vision_positions(t_index, g.h / m, g.w / m, st_idx, true);
      wk.begin_block();
      for (std::size_t i = 0; i < v.t.size(); ++i) wk.push(v.t[i], v.h[i], v.w[i]);
      wk.end_block();
      st += text_len + bos_len + g.t * g.h * g.w / (m * m) + eos_len;
      if (image) {
        ++in.image_i;
        --remain_i;
      } else {
        ++in.video_i;
        --remain_v;
      }
    } else if (aiv) {
      STOKER_ASSIGN_OR_RETURN(std::int64_t audio_len, in.audio_tokens(c.family));
      STOKER_ASSIGN_OR_RETURN(GridTHW g, in.video());
      std::vector<double> t_index;
      for (std::int64_t t = 0; t < g.t; ++t) t_index.push_back(time_index(c, t, in.second_per_grid()));
      const Vision v = vision_positions(t_index, g.h / m, g.w / m, st_idx, true);
      const std::int64_t V = static_cast<std::int64_t>(v.t.size());
      std::int64_t vi = 0, ai = 0;
      auto audio_pos = [&](std::int64_t i) { return f32(static_cast<double>(static_cast<float>(i) + static_cast<float>(st_idx))); };
      while (vi < V && ai < audio_len) {
        wk.begin_block();
        if (v.t[static_cast<std::size_t>(vi)] <= audio_pos(ai)) {
          wk.push(v.t[static_cast<std::size_t>(vi)], v.h[static_cast<std::size_t>(vi)], v.w[static_cast<std::size_t>(vi)]);
          ++vi;
        } else {
          const double p = audio_pos(ai);
          wk.push(p, p, p);
          ++ai;
        }
        wk.end_block();
      }
      if (vi < V) {
        wk.begin_block();
        for (; vi < V; ++vi) wk.push(v.t[static_cast<std::size_t>(vi)], v.h[static_cast<std::size_t>(vi)], v.w[static_cast<std::size_t>(vi)]);
        wk.end_block();
      }
      if (ai < audio_len) {
        wk.begin_block();
        for (; ai < audio_len; ++ai) {
          const double p = audio_pos(ai);
          wk.push(p, p, p);
        }
        wk.end_block();
      }
      st += text_len + bos_len + audio_len + g.t * g.h * g.w / (m * m) + eos_len;
      ++in.audio_i;
      ++in.video_i;
      --remain_v;
      --remain_a;
    } else {
      return invalid_argument("omni rope: the token after the vision start at " + std::to_string(min_ed) +
                              " is neither an image, a video nor an audio start");
    }
    wk.text(eos_len, wk.next(), true);
  }
  if (st < L) wk.text(L - st, wk.next(), true);
  return {};
}

}  // namespace

OmniRopeConfig OmniRopeConfig::qwen25_omni() { return OmniRopeConfig{}; }

OmniRopeConfig OmniRopeConfig::qwen3_omni() {
  OmniRopeConfig c;
  c.family = OmniFamily::kQwen3Omni;
  c.position_id_per_seconds = 13;
  return c;
}

std::int64_t omni_audio_tokens(OmniFamily family, std::int64_t L) {
  if (family == OmniFamily::kQwen3Omni) {
    const std::int64_t leave = L - floordiv(L, 100) * 100;
    const std::int64_t feat = floordiv(leave - 1, 2) + 1;
    return floordiv(floordiv(feat - 1, 2) + 1 - 1, 2) + 1 + floordiv(L, 100) * 13;
  }
  const std::int64_t t = floordiv(L - 1, 2) + 1;
  return floordiv(t - 2, 2) + 1;
}

std::vector<TokenRun> audio_in_video_layout(const OmniRopeConfig& c, const GridTHW& g, double spg,
                                            std::int64_t audio_tokens) {
  const std::int64_t m = c.spatial_merge_size, hw = (g.h / m) * (g.w / m);
  std::vector<double> video;  // numpy: arange(t) broadcast over (h, w), × spg × pps in float64
  for (std::int64_t t = 0; t < g.t; ++t) {
    for (std::int64_t i = 0; i < hw; ++i) video.push_back(static_cast<double>(t) * spg * c.position_id_per_seconds);
  }
  std::vector<TokenRun> runs;
  if (c.family == OmniFamily::kQwen25Omni) {
    std::vector<std::int64_t> audio(static_cast<std::size_t>(std::max<std::int64_t>(0, audio_tokens)));
    for (std::size_t i = 0; i < audio.size(); ++i) audio[i] = static_cast<std::int64_t>(i);
    const double per_chunk = static_cast<double>(static_cast<std::int64_t>(c.position_id_per_seconds * c.seconds_per_chunk));
    const auto vc = chunked_index(video, per_chunk), ac = chunked_index(audio, per_chunk);
    for (std::size_t j = 0; j < std::max(vc.size(), ac.size()); ++j) {
      if (j < vc.size()) add_run(runs, false, vc[j].second - vc[j].first);
      if (j < ac.size()) add_run(runs, true, ac[j].second - ac[j].first);
    }
    return runs;
  }
  std::int64_t vi = 0, ai = 0;
  const std::int64_t V = static_cast<std::int64_t>(video.size());
  while (vi < V && ai < audio_tokens) {
    if (video[static_cast<std::size_t>(vi)] <= static_cast<double>(ai)) {
      add_run(runs, false, 1);
      ++vi;
    } else {
      add_run(runs, true, 1);
      ++ai;
    }
  }
  add_run(runs, false, V - vi);
  add_run(runs, true, audio_tokens - ai);
  return runs;
}

Result<OmniRopeIndex> get_omni_rope_index(std::span<const std::int32_t> input_ids,
                                          std::span<const GridTHW> image_grids,
                                          std::span<const GridTHW> video_grids,
                                          std::span<const double> second_per_grids,
                                          std::span<const std::int64_t> audio_frames,
                                          bool use_audio_in_video, const OmniRopeConfig& c,
                                          std::span<const std::uint8_t> mask) {
  const std::int64_t L = static_cast<std::int64_t>(input_ids.size());
  if (!mask.empty() && static_cast<std::int64_t>(mask.size()) != L) {
    return invalid_argument("omni rope: attention_mask and input_ids differ in length");
  }
  if (c.spatial_merge_size < 1) return invalid_argument("omni rope: bad merge size");
  const bool f32 = c.family == OmniFamily::kQwen3Omni;
  OmniRopeIndex out;
  out.length = L;
  out.positions.assign(static_cast<std::size_t>(3 * L), f32 ? 0.0 : 1.0);
  std::vector<std::int32_t> ids;
  std::vector<std::int64_t> where;
  for (std::int64_t i = 0; i < L; ++i) {
    if (mask.empty() || mask[static_cast<std::size_t>(i)]) {
      ids.push_back(input_ids[static_cast<std::size_t>(i)]);
      where.push_back(i);
    }
  }
  if (image_grids.empty() && video_grids.empty()) {
    // No vision grids: cumsum(mask) − 1 on all three rows; masked → 1 (2.5-Omni and 3-Omni alike).
    std::int64_t n = 0;
    for (std::int64_t i = 0; i < L; ++i) {
      const bool on = mask.empty() || mask[static_cast<std::size_t>(i)];
      const double v = on ? static_cast<double>(n) : 1.0;
      n += on ? 1 : 0;
      for (int r = 0; r < 3; ++r) out.positions[static_cast<std::size_t>(r * L + i)] = v;
    }
    double mx = 0;
    for (double v : out.positions) mx = std::max(mx, v);
    out.rope_delta = mx + 1 - static_cast<double>(n);
    return out;
  }
  Inputs in{image_grids, video_grids, second_per_grids, audio_frames, use_audio_in_video};
  Walk wk;
  STOKER_RETURN_IF_ERROR(f32 ? walk_3(ids, c, in, wk) : walk_25(ids, c, in, wk));
  if (wk.pos.size() != ids.size()) {
    return invalid_argument("omni rope: the walk gave " + std::to_string(wk.pos.size()) + " positions for " +
                            std::to_string(ids.size()) + " tokens (media pads and grids/lengths disagree)");
  }
  double mx = -1e300;
  for (std::size_t k = 0; k < ids.size(); ++k) {
    for (int r = 0; r < 3; ++r) {
      out.positions[static_cast<std::size_t>(r * L + where[k])] = wk.pos[k][static_cast<std::size_t>(r)];
      mx = std::max(mx, wk.pos[k][static_cast<std::size_t>(r)]);
    }
  }
  if (f32) {  // torch: float32 max + 1, then − len, each rounded to float32
    const float d = static_cast<float>(mx) + 1.0f;
    out.rope_delta = ids.empty() ? 0 : static_cast<double>(d - static_cast<float>(ids.size()));
  } else {
    out.rope_delta = ids.empty() ? 0 : mx + 1 - static_cast<double>(ids.size());
  }
  return out;
}

}  // namespace stoker::batch
