#include "stoker/batch/batch.h"

#include "stoker/base/result.h"

namespace stoker::batch {

int dtype_size(DType t) {
  switch (t) {
    case DType::kInt64:
    case DType::kUInt64: return 8;
    case DType::kFloat32:
    case DType::kInt32: return 4;
    case DType::kBFloat16: return 2;
    case DType::kUInt8: return 1;
  }
  return 1;
}

std::uint64_t TensorView::bytes() const {
  std::uint64_t n = static_cast<std::uint64_t>(dtype_size(dtype));
  for (std::int64_t d : shape) n *= static_cast<std::uint64_t>(d);
  return n;
}

const TensorView* BatchLayout::find(const std::string& name) const {
  for (const TensorView& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

namespace {
constexpr std::uint64_t kTensorAlign = 64;
std::uint64_t align(std::uint64_t n) { return (n + kTensorAlign - 1) / kTensorAlign * kTensorAlign; }
}  // namespace

BatchLayout place_tensors(std::vector<TensorView> tensors, Block block) {
  BatchLayout layout;
  layout.block = block;
  layout.tensors = std::move(tensors);
  std::uint64_t offset = block.offset;
  for (TensorView& t : layout.tensors) {
    t.offset = offset;
    offset += align(t.bytes());
  }
  STOKER_CHECK(block.size == 0 || offset - block.offset <= block.size,
               "batch: block smaller than the layout");
  return layout;
}

std::uint64_t placed_bytes(const std::vector<TensorView>& tensors) {
  std::uint64_t total = 0;
  for (const TensorView& t : tensors) total += align(t.bytes());
  return total;
}

}  // namespace stoker::batch
