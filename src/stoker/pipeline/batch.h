// A delivered batch: the layout of its tensors (batch/batch.h) and the arena block holding them.
// Memory stays valid until the Batch is destroyed (or release() is called), which returns the
// block to the arena; a Batch may outlive its Loader (it keeps the arena alive). Move-only;
// one thread at a time. batch_hash(): FNV-1a over every tensor's shape and bytes (`--batch-hashes`,
// tests): equal hashes = byte-identical batches.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "stoker/batch/arena.h"
#include "stoker/batch/batch.h"

namespace stoker::obs {
class Tracer;
}

namespace stoker::pipeline {

class Batch;

// For the engine and the Loader only: a Batch over `layout` in `arena` (its block goes back when
// the Batch goes; with a tracer, the arena counter is recorded then), and the repeat mark.
struct BatchAccess {
  static Batch make(const batch::BatchLayout& layout, std::shared_ptr<batch::Arena> arena,
                    std::shared_ptr<obs::Tracer> tracer, int arena_counter);
  static void set_repeat(Batch& b, bool repeat);
};

class Batch {
 public:
  Batch() = default;
  Batch(Batch&&) noexcept;
  Batch& operator=(Batch&&) noexcept;
  ~Batch();

  const batch::BatchLayout& layout() const { return layout_; }
  const std::uint8_t* data(const batch::TensorView& t) const { return base_ + t.offset; }
  // The tensor's first element; nullptr if the layout has no such tensor.
  template <typename T>
  const T* as(const std::string& name) const {
    const batch::TensorView* t = layout_.find(name);
    return t == nullptr ? nullptr : reinterpret_cast<const T*>(base_ + t->offset);
  }
  std::int64_t size() const;  // samples (rows, or sub-sequences of a pack); the last batch of
                              // an epoch may be short
  // Packing / token budgets: a unit delivered again to fill the last step of an epoch (every
  // rank needs a batch in every step); its samples were delivered once already.
  bool is_repeat() const { return repeat_; }
  bool valid() const { return base_ != nullptr; }
  void release();             // idempotent

 private:
  friend struct BatchAccess;  // the engine builds batches (emit.cc), the Loader marks repeats
  batch::BatchLayout layout_;
  const std::uint8_t* base_ = nullptr;
  bool repeat_ = false;
  std::function<void(batch::Block)> release_;  // returns the block; keeps the arena alive
};

std::uint64_t batch_hash(const Batch& b);

}  // namespace stoker::pipeline
