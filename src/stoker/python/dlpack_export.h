// DLPack v0.6 export of arena tensors: each tensor of a delivered batch becomes one "dltensor"
// capsule that torch.utils.dlpack.from_dlpack (torch 1.13) wraps zero-copy. Every tensor of a
// batch holds one reference to a shared SharedBatch; the arena block goes back when the last one
// dies. The DLManagedTensor deleter touches no Python object (it only drops a C++ shared_ptr), so
// it is safe with or without the GIL and from any thread (torch may free tensors off the main
// thread). The capsule destructor frees an unconsumed tensor the same way.
// The structs are the frozen v0.6 ABI (dlpack.h 0.6), declared here: Debian ships no dlpack-dev.
#pragma once

#include <Python.h>

#include <cstdint>
#include <functional>
#include <memory>

#include "stoker/batch/batch.h"

namespace stoker::python {

struct DLDevice {
  std::int32_t device_type;  // kDLCPU = 1
  std::int32_t device_id;
};
struct DLDataType {
  std::uint8_t code;  // kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4
  std::uint8_t bits;
  std::uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  std::int32_t ndim;
  DLDataType dtype;
  std::int64_t* shape;
  std::int64_t* strides;
  std::uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

// A delivered batch (in-process Batch or, later, a served RemoteBatch) behind one refcount:
// `base` is the arena base its offsets count from; `keep` owns the batch, its destructor returns
// the block.
struct SharedBatch {
  batch::BatchLayout layout;
  const std::uint8_t* base = nullptr;
  std::shared_ptr<void> keep;
};

// The DLPack dtype of a stoker dtype. uint64 (sample_ids) is exported as int64: torch 1.13 has no
// uint64, and record ids stay far below 2^63.
DLDataType dl_dtype(batch::DType t);

// A new "dltensor" capsule for `view` of `b` (a new reference), or nullptr with a Python error set.
PyObject* make_capsule(const std::shared_ptr<SharedBatch>& b, const batch::TensorView& view);

// Live DLManagedTensors created and not yet deleted (all batches, all loaders): tests check that
// every view is freed.
std::int64_t live_tensors();

}  // namespace stoker::python
