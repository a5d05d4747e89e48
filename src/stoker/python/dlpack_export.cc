#include "stoker/python/dlpack_export.h"

#include <atomic>
#include <vector>

namespace stoker::python {
namespace {

constexpr const char* kCapsuleName = "dltensor";

std::atomic<std::int64_t> g_live{0};

// Owns one exported tensor: its shape/strides arrays and a reference to the whole batch.
struct TensorCtx {
  DLManagedTensor managed{};
  std::vector<std::int64_t> shape, strides;
  std::shared_ptr<SharedBatch> batch;
};

// No Python API here: dropping the shared_ptr may return the arena block (a mutex, no GIL).
void delete_tensor(DLManagedTensor* self) {
  delete static_cast<TensorCtx*>(self->manager_ctx);
  g_live.fetch_sub(1, std::memory_order_relaxed);
}

// Runs when the capsule dies. A consumer that took the tensor renamed the capsule and owns it.
void capsule_destructor(PyObject* capsule) {
  if (!PyCapsule_IsValid(capsule, kCapsuleName)) return;  // consumed ("used_dltensor")
  auto* m = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, kCapsuleName));
  if (m != nullptr && m->deleter != nullptr) m->deleter(m);
}

}  // namespace

DLDataType dl_dtype(batch::DType t) {
  switch (t) {
    case batch::DType::kInt64: return {0, 64, 1};
    case batch::DType::kUInt64: return {0, 64, 1};  // see header: exported as int64
    case batch::DType::kInt32: return {0, 32, 1};
    case batch::DType::kUInt8: return {1, 8, 1};
    case batch::DType::kFloat32: return {2, 32, 1};
    case batch::DType::kBFloat16: return {4, 16, 1};
  }
  return {0, 8, 1};
}

PyObject* make_capsule(const std::shared_ptr<SharedBatch>& b, const batch::TensorView& view) {
  auto* ctx = new TensorCtx;
  ctx->shape = view.shape;
  ctx->strides.assign(view.shape.size(), 1);
  for (int i = static_cast<int>(view.shape.size()) - 2; i >= 0; --i) {
    ctx->strides[i] = ctx->strides[i + 1] * (view.shape[i + 1] > 0 ? view.shape[i + 1] : 1);
  }
  ctx->batch = b;
  DLTensor& t = ctx->managed.dl_tensor;
  // Writable view: torch tensors are mutable; the batch is the consumer's until released.
  t.data = const_cast<std::uint8_t*>(b->base + view.offset);
  t.device = {1, 0};
  t.ndim = static_cast<std::int32_t>(view.shape.size());
  t.dtype = dl_dtype(view.dtype);
  t.shape = ctx->shape.data();
  t.strides = ctx->strides.data();
  t.byte_offset = 0;
  ctx->managed.manager_ctx = ctx;
  ctx->managed.deleter = delete_tensor;
  g_live.fetch_add(1, std::memory_order_relaxed);
  PyObject* cap = PyCapsule_New(&ctx->managed, kCapsuleName, capsule_destructor);
  if (cap == nullptr) delete_tensor(&ctx->managed);
  return cap;
}

std::int64_t live_tensors() { return g_live.load(std::memory_order_relaxed); }

}  // namespace stoker::python
