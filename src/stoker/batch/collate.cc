#include "stoker/batch/collate.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace stoker::batch {
namespace {

std::vector<TensorView> tensors_for(const BatchShape& s) {
  const std::int64_t B = s.batch_size, L = s.length;
  std::vector<TensorView> t = {
      {"input_ids", DType::kInt64, {B, L}, 0},
      {"labels", DType::kInt64, {B, L}, 0},
      {"attention_mask", DType::kInt64, {B, L}, 0},
  };
  if (s.position_rows == 1) {
    t.push_back({"position_ids", s.position_dtype, {B, L}, 0});
  } else {
    t.push_back({"position_ids", s.position_dtype, {s.position_rows, B, L}, 0});
  }
  t.insert(t.end(), s.media_front.begin(), s.media_front.end());
  t.push_back({"sample_ids", DType::kUInt64, {B}, 0});
  t.insert(t.end(), s.media_back.begin(), s.media_back.end());
  return t;
}

template <typename T>
T* at(std::uint8_t* base, const BatchLayout& layout, const char* name) {
  const TensorView* t = layout.find(name);
  STOKER_CHECK(t != nullptr, std::string("collate: layout has no ") + name);
  return reinterpret_cast<T*>(base + t->offset);
}

// Row `row` of each of the R position rows: the sample's values, then HF's padding value 1.
template <typename T>
void write_positions(T* pos, std::span<const double> src, int R, std::int64_t B, std::int64_t L,
                     std::int64_t row, std::int64_t n) {
  for (int r = 0; r < R; ++r) {
    T* dst = pos + (r * B + row) * L;
    for (std::int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(src[static_cast<std::size_t>(r * n + i)]);
    std::fill(dst + n, dst + L, static_cast<T>(1));
  }
}

}  // namespace

std::int64_t first_unrepresentable_position(std::span<const double> positions, DType dtype) {
  constexpr double kExactInt = 9007199254740992.0;  // 2^53
  constexpr double kFloatMax = std::numeric_limits<float>::max();
  for (std::size_t i = 0; i < positions.size(); ++i) {
    const double x = positions[i];
    const bool fits = dtype == DType::kFloat32
                          ? std::isfinite(x) && std::fabs(x) <= kFloatMax &&
                                static_cast<double>(static_cast<float>(x)) == x
                          : std::isfinite(x) && std::fabs(x) <= kExactInt && std::trunc(x) == x;
    if (!fits) return static_cast<std::int64_t>(i);
  }
  return -1;
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
  const TensorView* pos_t = layout.find("position_ids");
  STOKER_CHECK(pos_t != nullptr, "collate: bad layout");
  const int R = pos_t->shape.size() == 3 ? static_cast<int>(pos_t->shape[0]) : 1;
  STOKER_CHECK(row >= 0 && row < B, "collate: row out of range");
  STOKER_CHECK(n <= L && s.labels.size() == s.input_ids.size() &&
                   s.positions.size() == static_cast<std::size_t>(R * n),
               "collate: sample does not fit its row");
  std::int64_t* ids = at<std::int64_t>(base, layout, "input_ids") + row * L;
  std::int64_t* labels = at<std::int64_t>(base, layout, "labels") + row * L;
  std::int64_t* mask = at<std::int64_t>(base, layout, "attention_mask") + row * L;
  for (std::int64_t i = 0; i < n; ++i) {
    ids[i] = s.input_ids[i];
    labels[i] = s.labels[i];
    mask[i] = 1;
  }
  std::fill(ids + n, ids + L, pad_id);
  std::fill(labels + n, labels + L, kLabelIgnore);
  std::fill(mask + n, mask + L, 0);
  if (pos_t->dtype == DType::kFloat32) {
    write_positions(at<float>(base, layout, "position_ids"), s.positions, R, B, L, row, n);
  } else {
    STOKER_CHECK(pos_t->dtype == DType::kInt64, "collate: position_ids are int64 or float32");
    write_positions(at<std::int64_t>(base, layout, "position_ids"), s.positions, R, B, L, row, n);
  }
}

void write_sample_ids(std::uint8_t* base, const BatchLayout& layout,
                      std::span<const std::uint64_t> ids) {
  const TensorView* t = layout.find("sample_ids");
  STOKER_CHECK(t != nullptr && t->shape[0] == static_cast<std::int64_t>(ids.size()),
               "collate: sample count differs from the layout");
  std::memcpy(base + t->offset, ids.data(), ids.size() * sizeof(std::uint64_t));
}

}  // namespace stoker::batch
