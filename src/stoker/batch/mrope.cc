// get_rope_index, written from spec §5.1 (the walk over vision runs of HF's
// Qwen2VL/Qwen2_5_VL/Qwen3VL `get_rope_index`; which rule applies is the family's RopeConfig).
#include "stoker/batch/mrope.h"

#include <algorithm>
#include <string>

namespace stoker::batch {
namespace {

struct VisionItem {
  bool video = false;
  GridTHW grid;
  double second_per_grid_t = 0.0;  // Qwen2.5-VL: 0 for images, the video's value else
  int index = 0;                   // media index, for error messages
};

std::int64_t time_index(const RopeConfig& cfg, const VisionItem& item, std::int64_t t) {
  switch (cfg.temporal) {
    case TemporalRule::kFrameGroup: return t;
    case TemporalRule::kGroupPerRun: return 0;  // every run is one temporal group (t = 1)
    case TemporalRule::kSeconds:
      if (cfg.time_mode == TimeIndexMode::kIntCastFirst) {
        return t * static_cast<std::int64_t>(item.second_per_grid_t) * cfg.tokens_per_second;
      } else {
        // float32 as torch computes it: int64 range × float32 scalar → float32, × int → float32.
        float v = static_cast<float>(t) * static_cast<float>(item.second_per_grid_t);
        v = v * static_cast<float>(cfg.tokens_per_second);
        return static_cast<std::int64_t>(v);  // .long() truncates toward zero
      }
  }
  return t;
}

}  // namespace

Result<RopeIndex> get_rope_index(std::span<const std::int32_t> input_ids,
                                 std::span<const GridTHW> image_grids,
                                 std::span<const GridTHW> video_grids, const RopeConfig& cfg,
                                 std::span<const double> second_per_grid_ts,
                                 std::span<const std::uint8_t> attention_mask) {
  const std::int64_t L = static_cast<std::int64_t>(input_ids.size());
  if (!attention_mask.empty() && static_cast<std::int64_t>(attention_mask.size()) != L) {
    return invalid_argument("attention_mask has " + std::to_string(attention_mask.size()) +
                            " entries for " + std::to_string(L) + " ids");
  }
  const std::int64_t m = cfg.spatial_merge_size;
  if (m <= 0) return invalid_argument("spatial_merge_size must be positive");

  // Only attended tokens take part; `where` maps filtered index → row position.
  std::vector<std::int32_t> ids;
  std::vector<std::int64_t> where;
  ids.reserve(L);
  where.reserve(L);
  for (std::int64_t i = 0; i < L; ++i) {
    if (attention_mask.empty() || attention_mask[i]) {
      ids.push_back(input_ids[i]);
      where.push_back(i);
    }
  }
  const std::int64_t n = static_cast<std::int64_t>(ids.size());

  // The vision items in grid order (Qwen3-VL: one per video temporal group).
  std::vector<VisionItem> images, videos;
  for (std::size_t i = 0; i < image_grids.size(); ++i) {
    images.push_back({false, image_grids[i], 0.0, static_cast<int>(i)});
  }
  for (std::size_t i = 0; i < video_grids.size(); ++i) {
    double s = i < second_per_grid_ts.size() ? second_per_grid_ts[i] : 1.0;
    if (cfg.temporal == TemporalRule::kGroupPerRun) {
      for (std::int64_t k = 0; k < video_grids[i].t; ++k) {
        videos.push_back({true, {1, video_grids[i].h, video_grids[i].w}, s, static_cast<int>(i)});
      }
    } else {
      videos.push_back({true, video_grids[i], s, static_cast<int>(i)});
    }
  }

  RopeIndex out;
  out.length = L;
  out.positions.assign(3 * L, 1);  // HF initialises with ones; masked positions keep them
  auto put = [&](std::int64_t filtered, std::int64_t t, std::int64_t h, std::int64_t w) {
    std::int64_t p = where[filtered];
    out.positions[p] = t;
    out.positions[L + p] = h;
    out.positions[2 * L + p] = w;
  };

  std::int64_t st = 0, next = 0, max_pos = -1;
  std::size_t image_i = 0, video_i = 0;
  auto find = [&](std::int32_t token, std::int64_t from) {
    auto it = std::find(ids.begin() + from, ids.end(), token);
    return static_cast<std::int64_t>(it - ids.begin());
  };
  // A vision run is counted where its pad token follows <|vision_start|> (spec §5.1 step 1).
  std::int64_t runs = 0;
  for (std::int64_t i = 0; i + 1 < n; ++i) {
    if (ids[i] == cfg.vision_start_token_id &&
        (ids[i + 1] == cfg.image_token_id || ids[i + 1] == cfg.video_token_id)) {
      ++runs;
    }
  }
  for (std::int64_t r = 0; r < runs; ++r) {
    std::int64_t ed_image = image_i < images.size() ? find(cfg.image_token_id, st) : n + 1;
    std::int64_t ed_video = video_i < videos.size() ? find(cfg.video_token_id, st) : n + 1;
    if (ed_image >= n && ed_video >= n) {
      return invalid_argument("vision run " + std::to_string(r) + " has no grid (" +
                              std::to_string(image_grids.size()) + " image and " +
                              std::to_string(video_grids.size()) + " video grid(s) given)");
    }
    bool is_image = ed_image < ed_video;
    const VisionItem& item = is_image ? images[image_i++] : videos[video_i++];
    std::int64_t ed = is_image ? ed_image : ed_video;
    std::int64_t gt = item.grid.t, gh = item.grid.h / m, gw = item.grid.w / m;
    if (gt <= 0 || gh <= 0 || gw <= 0 || item.grid.h % m || item.grid.w % m) {
      return invalid_argument(std::string(is_image ? "image " : "video ") +
                              std::to_string(item.index) + ": grid " + std::to_string(item.grid.t) +
                              "x" + std::to_string(item.grid.h) + "x" +
                              std::to_string(item.grid.w) + " does not fit merge size " +
                              std::to_string(m));
    }
    std::int64_t count = gt * gh * gw;
    std::int32_t pad = is_image ? cfg.image_token_id : cfg.video_token_id;
    std::int64_t have = 0;
    while (ed + have < n && ids[ed + have] == pad && have < count) ++have;
    if (have != count) {
      return invalid_argument(std::string(is_image ? "image " : "video ") +
                              std::to_string(item.index) + ": its grid needs " +
                              std::to_string(count) + " pad tokens but " + std::to_string(have) +
                              " follow");
    }
    std::int64_t text_len = ed - st;
    for (std::int64_t k = 0; k < text_len; ++k) put(st + k, next + k, next + k, next + k);
    std::int64_t base = next + text_len;
    std::int64_t row = ed;
    for (std::int64_t t = 0; t < gt; ++t) {
      std::int64_t ti = time_index(cfg, item, t) + base;
      for (std::int64_t h = 0; h < gh; ++h) {
        for (std::int64_t w = 0; w < gw; ++w) {
          put(row++, ti, base + h, base + w);
          max_pos = std::max({max_pos, ti, base + h, base + w});
        }
      }
    }
    max_pos = std::max(max_pos, base - 1);
    next = max_pos + 1;
    st = ed + count;
  }
  for (std::int64_t k = st; k < n; ++k) {
    std::int64_t p = next + (k - st);
    put(k, p, p, p);
    max_pos = std::max(max_pos, p);
  }
  // HF: rope_deltas = max + 1 − len(row) (the full row, padding included).
  // (Nothing attended: every position keeps the value 1.)
  out.rope_delta = n == 0 ? (L == 0 ? 0 : 2 - L) : max_pos + 1 - L;
  return out;
}

Result<RopeIndex> get_rope_index(const text::TokenizedSample& sample,
                                 std::span<const text::VisionGrid> images,
                                 std::span<const text::VisionGrid> videos, const RopeConfig& config,
                                 std::span<const double> second_per_grid_ts) {
  if (static_cast<int>(images.size()) < sample.num_images ||
      static_cast<int>(videos.size()) < sample.num_videos) {
    return invalid_argument("the sample uses " + std::to_string(sample.num_images) +
                            " image(s) and " + std::to_string(sample.num_videos) +
                            " video(s) but grids were given for " + std::to_string(images.size()) +
                            " and " + std::to_string(videos.size()));
  }
  std::vector<GridTHW> ig, vg;
  for (int i = 0; i < sample.num_images; ++i) ig.push_back({images[i].grid_t, images[i].grid_h, images[i].grid_w});
  for (int i = 0; i < sample.num_videos; ++i) vg.push_back({videos[i].grid_t, videos[i].grid_h, videos[i].grid_w});
  std::span<const double> spg = second_per_grid_ts.subspan(
      0, std::min<std::size_t>(second_per_grid_ts.size(), sample.num_videos));
  std::span<const std::int32_t> ids(sample.input_ids.data(), sample.input_ids.size());
  return get_rope_index(ids, ig, vg, config, spg);
}

}  // namespace stoker::batch
