#include "stoker/batch/pack_collate.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::batch {
namespace {

std::vector<TensorView> tensors_for(const PackShape& s) {
  const std::int64_t N = s.tokens, K1 = s.sequences + 1;
  std::vector<TensorView> t;
  t.push_back({"input_ids", DType::kInt64, {1, N}, 0});
  t.push_back({"labels", DType::kInt64, {1, N}, 0});
  if (s.format == PackFormat::kHF) {
    if (s.sample_rows == 1) {
      t.push_back({"position_ids", s.position_dtype, {1, N}, 0});
    } else {
      t.push_back({"position_ids", s.position_dtype, {s.position_rows, 1, N}, 0});
    }
    t.push_back({"cu_seq_lens_q", DType::kInt32, {K1}, 0});
    t.push_back({"cu_seq_lens_k", DType::kInt32, {K1}, 0});
    t.push_back({"max_length_q", DType::kInt64, {}, 0});
    t.push_back({"max_length_k", DType::kInt64, {}, 0});
  } else {
    t.push_back({"loss_mask", DType::kFloat32, {1, N}, 0});
    t.push_back({"position_ids", DType::kInt64, {1, N}, 0});
    t.push_back({"cu_seqlens_q", DType::kInt32, {K1}, 0});
    t.push_back({"cu_seqlens_kv", DType::kInt32, {K1}, 0});
    t.push_back({"cu_seqlens_q_padded", DType::kInt32, {K1}, 0});
    t.push_back({"cu_seqlens_kv_padded", DType::kInt32, {K1}, 0});
    t.push_back({"max_seqlen_q", DType::kInt32, {}, 0});
    t.push_back({"max_seqlen_kv", DType::kInt32, {}, 0});
  }
  t.insert(t.end(), s.media_front.begin(), s.media_front.end());
  t.push_back({"sample_ids", DType::kUInt64, {s.sequences}, 0});
  t.insert(t.end(), s.media_back.begin(), s.media_back.end());
  return t;
}

template <typename T>
T* at(std::uint8_t* base, const BatchLayout& layout, const char* name) {
  const TensorView* t = layout.find(name);
  STOKER_CHECK(t != nullptr, std::string("pack collate: layout has no ") + name);
  return reinterpret_cast<T*>(base + t->offset);
}

// HF: labels unshifted, −100 at the first position (DataCollatorWithFlattening's separator:
// the previous sample's last token never learns to predict this one's first); positions: row 0
// arange, then the sample's own 3 mRoPE rows (or those alone).
template <typename P>
void write_hf(std::uint8_t* base, const BatchLayout& layout, const PackShape& shape,
              std::span<const SampleRow> samples) {
  const std::int64_t N = shape.tokens;
  std::int64_t* ids = at<std::int64_t>(base, layout, "input_ids");
  std::int64_t* labels = at<std::int64_t>(base, layout, "labels");
  P* pos = at<P>(base, layout, "position_ids");
  std::int32_t* cu_q = at<std::int32_t>(base, layout, "cu_seq_lens_q");
  std::int32_t* cu_k = at<std::int32_t>(base, layout, "cu_seq_lens_k");
  const int rows = shape.sample_rows;
  const int mrope_row0 = rows == 3 && shape.position_rows == 4 ? 1 : 0;
  std::int64_t start = 0, longest = 0;
  cu_q[0] = cu_k[0] = 0;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const SampleRow& s = samples[i];
    const std::int64_t n = static_cast<std::int64_t>(s.input_ids.size());
    for (std::int64_t t = 0; t < n; ++t) {
      ids[start + t] = s.input_ids[t];
      labels[start + t] = t == 0 ? kLabelIgnore : s.labels[t];
    }
    if (mrope_row0 == 1) {
      for (std::int64_t t = 0; t < n; ++t) pos[start + t] = static_cast<P>(t);
    }
    for (int r = 0; r < rows; ++r) {
      P* dst = pos + (mrope_row0 + r) * N + start;
      for (std::int64_t t = 0; t < n; ++t) dst[t] = static_cast<P>(s.positions[static_cast<std::size_t>(r * n + t)]);
    }
    start += n;
    longest = std::max(longest, n);
    cu_q[i + 1] = cu_k[i + 1] = static_cast<std::int32_t>(start);
  }
  *at<std::int64_t>(base, layout, "max_length_q") = longest;
  *at<std::int64_t>(base, layout, "max_length_k") = longest;
}

// Megatron: labels pre-shifted within each sub-sequence (Megatron-Bridge collate_fn:
// labels = cat(ids[1:], [-100]) masked by the shifted assistant mask), loss_mask = label kept;
// alignment gaps hold the pad id with label −100 and positions continuing their sequence.
void write_megatron(std::uint8_t* base, const BatchLayout& layout, const PackShape& shape,
                    std::span<const SampleRow> samples, std::int64_t pad_id) {
  std::int64_t* ids = at<std::int64_t>(base, layout, "input_ids");
  std::int64_t* labels = at<std::int64_t>(base, layout, "labels");
  float* loss = at<float>(base, layout, "loss_mask");
  std::int64_t* pos = at<std::int64_t>(base, layout, "position_ids");
  std::int32_t* cu[2] = {at<std::int32_t>(base, layout, "cu_seqlens_q"),
                         at<std::int32_t>(base, layout, "cu_seqlens_kv")};
  std::int32_t* cu_pad[2] = {at<std::int32_t>(base, layout, "cu_seqlens_q_padded"),
                             at<std::int32_t>(base, layout, "cu_seqlens_kv_padded")};
  std::int64_t start = 0, real = 0, longest = 0;
  for (int j = 0; j < 2; ++j) cu[j][0] = cu_pad[j][0] = 0;
  for (std::size_t i = 0; i < samples.size(); ++i) {
    const SampleRow& s = samples[i];
    const std::int64_t n = static_cast<std::int64_t>(s.input_ids.size());
    const std::int64_t padded = packed_length(PackFormat::kMegatron, shape.align, n);
    for (std::int64_t t = 0; t < padded; ++t) {
      const bool real_token = t < n;
      ids[start + t] = real_token ? s.input_ids[t] : pad_id;
      const std::int64_t label = t + 1 < n ? s.labels[t + 1] : kLabelIgnore;
      labels[start + t] = label;
      loss[start + t] = label == kLabelIgnore ? 0.0f : 1.0f;
      pos[start + t] = t;
    }
    start += padded;
    real += n;
    longest = std::max(longest, padded);
    for (int j = 0; j < 2; ++j) {
      cu[j][i + 1] = static_cast<std::int32_t>(real);
      cu_pad[j][i + 1] = static_cast<std::int32_t>(start);
    }
  }
  *at<std::int32_t>(base, layout, "max_seqlen_q") = static_cast<std::int32_t>(longest);
  *at<std::int32_t>(base, layout, "max_seqlen_kv") = static_cast<std::int32_t>(longest);
}

}  // namespace

std::int64_t packed_length(PackFormat format, std::int64_t align, std::int64_t length) {
  if (format != PackFormat::kMegatron || align <= 1) return length;
  return (length + align - 1) / align * align;
}

std::uint64_t pack_layout_bytes(const PackShape& shape) { return placed_bytes(tensors_for(shape)); }

BatchLayout make_pack_layout(const PackShape& shape, Block block) {
  STOKER_CHECK(shape.tokens <= std::numeric_limits<std::int32_t>::max(),
               "pack collate: cu_seqlens are int32");
  return place_tensors(tensors_for(shape), block);
}

void collate_pack(std::uint8_t* base, const BatchLayout& layout, const PackShape& shape,
                  std::span<const SampleRow> samples, std::span<const std::uint64_t> sample_ids,
                  std::int64_t pad_id) {
  std::int64_t total = 0;
  for (const SampleRow& s : samples) {
    const std::int64_t n = static_cast<std::int64_t>(s.input_ids.size());
    STOKER_CHECK(s.labels.size() == s.input_ids.size() &&
                     s.positions.size() == static_cast<std::size_t>(shape.sample_rows * n),
                 "pack collate: a sample's tensors disagree in length");
    total += packed_length(shape.format, shape.align, n);
  }
  STOKER_CHECK(total == shape.tokens &&
                   static_cast<std::int64_t>(samples.size()) == shape.sequences &&
                   sample_ids.size() == samples.size(),
               "pack collate: the samples do not match the shape");
  if (shape.format == PackFormat::kHF) {
    if (shape.position_dtype == DType::kFloat32) {
      write_hf<float>(base, layout, shape, samples);
    } else {
      STOKER_CHECK(shape.position_dtype == DType::kInt64, "pack collate: position_ids are int64 or float32");
      write_hf<std::int64_t>(base, layout, shape, samples);
    }
  } else {
    write_megatron(base, layout, shape, samples, pad_id);
  }
  write_sample_ids(base, layout, sample_ids);
}

}  // namespace stoker::batch
