#include "stoker/batch/collate.h"

#include <algorithm>
#include <cstring>

namespace stoker::batch {
namespace {

std::vector<TensorView> tensors_for(const BatchShape& s) {
  const std::int64_t B = s.batch_size, L = s.length;
  std::vector<TensorView> t = {
      {"input_ids", DType::kInt64, {B, L}, 0},
      {"labels", DType::kInt64, {B, L}, 0},
      {"attention_mask", DType::kInt64, {B, L}, 0},
      {"position_ids", DType::kInt64, {3, B, L}, 0},
      {"pixel_values", s.pixel_dtype, {s.pixel_rows, s.pixel_cols}, 0},
      {"image_grid_thw", DType::kInt64, {s.images, 3}, 0},
      {"sample_ids", DType::kUInt64, {B}, 0},
  };
  append_video_tensors(&t, s.videos, s.video_rows, s.pixel_cols, s.pixel_dtype);
  return t;
}

template <typename T>
T* at(std::uint8_t* base, const BatchLayout& layout, const char* name) {
  const TensorView* t = layout.find(name);
  STOKER_CHECK(t != nullptr, std::string("collate: layout has no ") + name);
  return reinterpret_cast<T*>(base + t->offset);
}

}  // namespace

void append_video_tensors(std::vector<TensorView>* t, std::int64_t videos, std::int64_t rows,
                          std::int64_t cols, DType dtype) {
  if (videos <= 0) return;
  t->push_back({"pixel_values_videos", dtype, {rows, cols}, 0});
  t->push_back({"video_grid_thw", DType::kInt64, {videos, 3}, 0});
  t->push_back({"second_per_grid_ts", DType::kFloat32, {videos}, 0});
}

std::uint64_t layout_bytes(const BatchShape& shape) { return placed_bytes(tensors_for(shape)); }

BatchLayout make_layout(const BatchShape& shape, Block block) {
  return place_tensors(tensors_for(shape), block);
}

void collate_row(std::uint8_t* base, const BatchLayout& layout, std::int64_t row,
                 const SampleRow& s, std::int64_t pad_id) {
  const TensorView* ids_t = layout.find("input_ids");
  STOKER_CHECK(ids_t != nullptr && ids_t->shape.size() == 2, "collate: bad layout");
  const std::int64_t B = ids_t->shape[0], L = ids_t->shape[1];
  const std::int64_t n = static_cast<std::int64_t>(s.input_ids.size());
  STOKER_CHECK(row >= 0 && row < B, "collate: row out of range");
  STOKER_CHECK(n <= L && s.labels.size() == s.input_ids.size() &&
                   s.positions.size() == static_cast<std::size_t>(3 * n),
               "collate: sample does not fit its row");
  std::int64_t* ids = at<std::int64_t>(base, layout, "input_ids") + row * L;
  std::int64_t* labels = at<std::int64_t>(base, layout, "labels") + row * L;
  std::int64_t* mask = at<std::int64_t>(base, layout, "attention_mask") + row * L;
  std::int64_t* pos = at<std::int64_t>(base, layout, "position_ids");
  for (std::int64_t i = 0; i < n; ++i) {
    ids[i] = s.input_ids[i];
    labels[i] = s.labels[i];
    mask[i] = 1;
  }
  std::fill(ids + n, ids + L, pad_id);
  std::fill(labels + n, labels + L, kLabelIgnore);
  std::fill(mask + n, mask + L, 0);
  for (int r = 0; r < 3; ++r) {
    std::int64_t* dst = pos + (r * B + row) * L;
    std::copy(s.positions.begin() + r * n, s.positions.begin() + (r + 1) * n, dst);
    std::fill(dst + n, dst + L, 1);
  }
}

void write_grids(std::uint8_t* base, const BatchLayout& layout, std::span<const GridTHW> grids) {
  const TensorView* t = layout.find("image_grid_thw");
  STOKER_CHECK(t != nullptr && t->shape[0] == static_cast<std::int64_t>(grids.size()),
               "collate: grid count differs from the layout");
  std::int64_t* out = reinterpret_cast<std::int64_t*>(base + t->offset);
  for (std::size_t i = 0; i < grids.size(); ++i) {
    out[3 * i] = grids[i].t;
    out[3 * i + 1] = grids[i].h;
    out[3 * i + 2] = grids[i].w;
  }
}

void write_sample_ids(std::uint8_t* base, const BatchLayout& layout,
                      std::span<const std::uint64_t> ids) {
  const TensorView* t = layout.find("sample_ids");
  STOKER_CHECK(t != nullptr && t->shape[0] == static_cast<std::int64_t>(ids.size()),
               "collate: sample count differs from the layout");
  std::memcpy(base + t->offset, ids.data(), ids.size() * sizeof(std::uint64_t));
}

std::uint8_t* pixel_row_address(std::uint8_t* base, const BatchLayout& layout, std::int64_t row) {
  const TensorView* t = layout.find("pixel_values");
  STOKER_CHECK(t != nullptr && row >= 0 && row <= t->shape[0], "collate: pixel row out of range");
  return base + t->offset +
         static_cast<std::uint64_t>(row) * static_cast<std::uint64_t>(t->shape[1]) *
             static_cast<std::uint64_t>(dtype_size(t->dtype));
}

void write_video_grids(std::uint8_t* base, const BatchLayout& layout,
                       std::span<const GridTHW> grids, std::span<const double> seconds) {
  if (grids.empty()) return;
  const TensorView* g = layout.find("video_grid_thw");
  const TensorView* s = layout.find("second_per_grid_ts");
  STOKER_CHECK(g != nullptr && s != nullptr && g->shape[0] == static_cast<std::int64_t>(grids.size()) &&
                   seconds.size() == grids.size(),
               "collate: video grid count differs from the layout");
  std::int64_t* out = reinterpret_cast<std::int64_t*>(base + g->offset);
  float* sec = reinterpret_cast<float*>(base + s->offset);
  for (std::size_t i = 0; i < grids.size(); ++i) {
    out[3 * i] = grids[i].t;
    out[3 * i + 1] = grids[i].h;
    out[3 * i + 2] = grids[i].w;
    sec[i] = static_cast<float>(seconds[i]);
  }
}

std::uint8_t* video_row_address(std::uint8_t* base, const BatchLayout& layout, std::int64_t row) {
  const TensorView* t = layout.find("pixel_values_videos");
  STOKER_CHECK(t != nullptr && row >= 0 && row <= t->shape[0], "collate: video row out of range");
  return base + t->offset +
         static_cast<std::uint64_t>(row) * static_cast<std::uint64_t>(t->shape[1]) *
             static_cast<std::uint64_t>(dtype_size(t->dtype));
}

}  // namespace stoker::batch
