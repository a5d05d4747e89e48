#include "stoker/pipeline/media.h"

#include <algorithm>
#include <cstring>
#include <mutex>

namespace stoker::pipeline {

// Built-in kinds (media_image.cc, media_video.cc, media_audio.cc).
const MediaKind& image_kind();
const MediaKind& video_file_kind();
const MediaKind& frame_list_kind();
const MediaKind& audio_kind();

namespace {

struct Registry {
  std::vector<const MediaKind*> kinds;
  std::vector<const Modality*> modalities;
  void add(const MediaKind* k) {
    kinds.push_back(k);
    const Modality* m = &k->modality();
    if (std::find(modalities.begin(), modalities.end(), m) == modalities.end()) {
      modalities.push_back(m);
    }
  }
};

Registry& registry() {
  static Registry r = [] {
    Registry reg;
    reg.add(&image_kind());
    reg.add(&video_file_kind());
    reg.add(&frame_list_kind());
    reg.add(&audio_kind());
    return reg;
  }();
  return r;
}

std::int64_t tensor_row_bytes(const batch::TensorView& t) {
  std::int64_t n = batch::dtype_size(t.dtype);
  for (std::size_t d = 1; d < t.shape.size(); ++d) n *= t.shape[d];
  return n;
}

// A medium's row in its rows tensor: a grouped modality's ([clips, n_mels, frames]: n_mels rows
// per clip) is the last dimension; any other's, the dimensions after the first ([rows, width],
// or a uint8 form's [rows, bytes]: bytes of the medium's resized pixels per row).
std::int64_t rows_row_bytes(const batch::TensorView& t, const Modality& m) {
  return m.rows_group > 0 ? batch::dtype_size(t.dtype) * t.shape.back() : tensor_row_bytes(t);
}
std::int64_t rows_in(const batch::TensorView& t, const Modality& m) {
  return m.rows_group > 0 && t.shape.size() == 3 ? t.shape[0] * t.shape[1] : t.shape[0];
}

}  // namespace

const Modality& Medium::modality() const { return kind().modality(); }

void register_media_kind(const MediaKind* kind) { registry().add(kind); }

const MediaKind* kind_for(const dataset::Part& part) {
  const auto& k = registry().kinds;
  for (auto it = k.rbegin(); it != k.rend(); ++it) {
    if ((*it)->takes(part)) return *it;
  }
  return nullptr;
}

std::uint8_t kind_id(const MediaKind& kind) {
  const auto& k = registry().kinds;
  const auto it = std::find(k.begin(), k.end(), &kind);
  STOKER_CHECK(it != k.end(), "media kind not registered");
  return static_cast<std::uint8_t>(it - k.begin());
}

const MediaKind* kind_by_id(std::uint8_t id) {
  const auto& k = registry().kinds;
  return id < k.size() ? k[id] : nullptr;
}

std::span<const Modality* const> modalities() { return registry().modalities; }

int modality_rank(const Modality& m) {
  const auto& all = registry().modalities;
  return static_cast<int>(std::find(all.begin(), all.end(), &m) - all.begin());
}

std::string medium_name(const Modality& m, std::size_t index) {
  return std::string(m.name) + " " + std::to_string(index);
}

image::PixelDType rows_dtype(const Modality& m, image::PixelDType rows) {
  return rows == image::PixelDType::kUInt8 && m.tables == nullptr ? image::PixelDType::kFloat32
                                                                  : rows;
}

std::uint64_t row_bytes(const Modality& m, const MediaEnv& env, image::PixelDType rows) {
  const image::PixelDType d = rows_dtype(m, rows);
  if (d == image::PixelDType::kUInt8) {
    std::uint64_t n = 1;
    for (std::int64_t v : m.uint8_row(env)) n *= static_cast<std::uint64_t>(v);
    return n;
  }
  return static_cast<std::uint64_t>(m.columns(env)) * (d == image::PixelDType::kFloat32 ? 4 : 2);
}

batch::DType batch_dtype(image::PixelDType d) {
  switch (d) {
    case image::PixelDType::kFloat32: return batch::DType::kFloat32;
    case image::PixelDType::kBFloat16: return batch::DType::kBFloat16;
    case image::PixelDType::kUInt8: return batch::DType::kUInt8;
  }
  return batch::DType::kFloat32;
}

void media_tensors(const MediaEnv& env, image::PixelDType rows_form, image::PixelDType pixel,
                   std::span<const std::vector<std::unique_ptr<Medium>>* const> samples,
                   std::vector<batch::TensorView>* front, std::vector<batch::TensorView>* back) {
  for (const Modality* m : modalities()) {
    std::int64_t count = 0, rows = 0;
    std::int64_t width = -1;
    for (const auto* media : samples) {
      for (const auto& medium : *media) {
        if (&medium->modality() != m) continue;
        ++count;
        rows += medium->rows();
        width = std::max(width, medium->columns(env));
      }
    }
    if (count == 0 && !m->always) continue;
    if (width < 0) width = m->columns(env);
    std::vector<batch::TensorView>* out = m->always ? front : back;
    const image::PixelDType d = rows_dtype(*m, rows_form);
    const bool u8 = d == image::PixelDType::kUInt8;
    if (u8) {
      std::vector<std::int64_t> shape = {rows};
      for (std::int64_t v : m->uint8_row(env)) shape.push_back(v);
      out->push_back({std::string(m->uint8_tensor), batch::DType::kUInt8, std::move(shape), 0});
    } else {
      std::vector<std::int64_t> rows_shape = {rows, width};
      if (m->rows_group > 0) rows_shape = {rows / m->rows_group, m->rows_group, width};
      out->push_back({std::string(m->rows_tensor), batch_dtype(d), std::move(rows_shape), 0});
    }
    for (const MetaTensor& t : m->meta) {
      std::vector<std::int64_t> shape = {count};
      if (t.width > 0) shape.push_back(t.width);
      if (t.width == kBatchWidth) shape.push_back(width);
      out->push_back({std::string(t.name), t.dtype, std::move(shape), 0});
    }
    if (u8) {
      out->push_back({std::string(m->table_tensor), batch_dtype(pixel), {3, 256}, 0});
      out->push_back({std::string(m->patching_tensor), batch::DType::kInt64, {4}, 0});
    }
  }
}

std::vector<MediumSlot> place_media(std::uint8_t* base, const batch::BatchLayout& layout,
                                    std::span<const std::vector<std::unique_ptr<Medium>>* const> samples) {
  const auto all = modalities();
  std::vector<std::int64_t> row(all.size(), 0);
  std::vector<const batch::TensorView*> tensor(all.size(), nullptr);
  std::vector<MediumSlot> slots;
  for (std::size_t s = 0; s < samples.size(); ++s) {
    std::vector<std::size_t> index(all.size(), 0);
    for (const auto& medium : *samples[s]) {
      const std::size_t m = static_cast<std::size_t>(modality_rank(medium->modality()));
      if (tensor[m] == nullptr) {
        tensor[m] = layout.find(std::string(all[m]->rows_tensor));
        if (tensor[m] == nullptr && !all[m]->uint8_tensor.empty()) {
          tensor[m] = layout.find(std::string(all[m]->uint8_tensor));
        }
        STOKER_CHECK(tensor[m] != nullptr, "media: the layout has no " + std::string(all[m]->rows_tensor));
      }
      const batch::TensorView& t = *tensor[m];
      STOKER_CHECK(row[m] + medium->rows() <= rows_in(t, *all[m]), "media: rows past the layout's");
      slots.push_back({medium.get(), s, index[m]++,
                       base + t.offset + static_cast<std::uint64_t>(row[m] * rows_row_bytes(t, *all[m]))});
      row[m] += medium->rows();
    }
  }
  return slots;
}

void write_media_meta(std::uint8_t* base, const batch::BatchLayout& layout,
                      std::span<const MediumSlot> slots) {
  const auto all = modalities();
  std::vector<std::int64_t> count(all.size(), 0);
  std::vector<std::uint8_t*> meta;
  for (const MediumSlot& slot : slots) {
    const Modality& mod = slot.medium->modality();
    const std::size_t m = static_cast<std::size_t>(modality_rank(mod));
    meta.clear();
    for (const MetaTensor& mt : mod.meta) {
      const batch::TensorView* t = layout.find(std::string(mt.name));
      STOKER_CHECK(t != nullptr && count[m] < t->shape[0], "media: meta rows past the layout's");
      std::uint8_t* row = base + t->offset + static_cast<std::uint64_t>(count[m] * tensor_row_bytes(*t));
      if (mt.width == kBatchWidth) std::memset(row, 0, static_cast<std::size_t>(tensor_row_bytes(*t)));
      meta.push_back(row);
    }
    slot.medium->write_meta(meta);
    ++count[m];
  }
}

void write_media_tables(std::uint8_t* base, const batch::BatchLayout& layout, const MediaEnv& env,
                        image::PixelDType pixel) {
  for (const Modality* m : modalities()) {
    if (m->tables == nullptr) continue;
    const batch::TensorView* table = layout.find(std::string(m->table_tensor));
    const batch::TensorView* patching = layout.find(std::string(m->patching_tensor));
    if (table == nullptr || patching == nullptr) continue;
    STOKER_CHECK(table->dtype == batch_dtype(pixel) && table->bytes() == 3 * 256 * static_cast<std::uint64_t>(batch::dtype_size(table->dtype)),
                 "media: a table of another dtype");
    m->tables(env, pixel, base + table->offset, reinterpret_cast<std::int64_t*>(base + patching->offset));
  }
}

void spread_rows(const MediaEnv& env, std::uint8_t* base, const batch::BatchLayout& layout,
                 std::span<const MediumSlot> slots) {
  for (const MediumSlot& slot : slots) {
    const Modality& mod = slot.medium->modality();
    const std::int64_t own = slot.medium->columns(env);
    const batch::TensorView* t = layout.find(std::string(mod.rows_tensor));
    if (t == nullptr || own >= t->shape.back()) continue;
    const std::size_t elem = static_cast<std::size_t>(batch::dtype_size(t->dtype));
    const std::size_t from = static_cast<std::size_t>(own) * elem;
    const std::size_t to = static_cast<std::size_t>(t->shape.back()) * elem;
    // Last row first: a row's new place never overlaps a row not yet moved.
    for (std::int64_t r = slot.medium->rows() - 1; r >= 0; --r) {
      std::uint8_t* dst = slot.rows + static_cast<std::size_t>(r) * to;
      std::memmove(dst, slot.rows + static_cast<std::size_t>(r) * from, from);
      std::memset(dst + from, 0, to - from);
    }
    (void)base;
  }
}

}  // namespace stoker::pipeline
