#include "stoker/pipeline/batch.h"

#include "stoker/base/hash.h"
#include "stoker/obs/trace.h"

namespace stoker::pipeline {

Batch BatchAccess::make(const batch::BatchLayout& layout, std::shared_ptr<batch::Arena> arena,
                        std::shared_ptr<obs::Tracer> tracer, int arena_counter) {
  Batch b;
  b.layout_ = layout;
  b.base_ = arena->base();
  if (tracer == nullptr) {
    b.release_ = [arena = std::move(arena)](batch::Block block) { arena->release(block); };
  } else {
    b.release_ = [arena = std::move(arena), tracer = std::move(tracer),
                  arena_counter](batch::Block block) {
      arena->release(block);
      tracer->counter(arena_counter, static_cast<std::int64_t>(arena->in_use()));
    };
  }
  return b;
}

void BatchAccess::set_repeat(Batch& b, bool repeat) { b.repeat_ = repeat; }

Batch::Batch(Batch&& o) noexcept
    : layout_(std::move(o.layout_)), base_(o.base_), repeat_(o.repeat_),
      release_(std::move(o.release_)) {
  o.base_ = nullptr;
  o.release_ = nullptr;
}

Batch& Batch::operator=(Batch&& o) noexcept {
  if (this != &o) {
    release();
    layout_ = std::move(o.layout_);
    base_ = o.base_;
    repeat_ = o.repeat_;
    release_ = std::move(o.release_);
    o.base_ = nullptr;
    o.release_ = nullptr;
  }
  return *this;
}

Batch::~Batch() { release(); }

void Batch::release() {
  if (release_) {
    auto fn = std::move(release_);
    release_ = nullptr;
    fn(layout_.block);
  }
  base_ = nullptr;
}

std::int64_t Batch::size() const {
  const batch::TensorView* t = layout_.find("sample_ids");
  return t == nullptr ? 0 : t->shape[0];
}

std::uint64_t batch_hash(const Batch& b) {
  std::uint64_t h = kFnv64Offset;
  for (const batch::TensorView& t : b.layout().tensors) {
    for (std::int64_t d : t.shape) h = fnv1a64(&d, sizeof d, h);
    h = fnv1a64(b.data(t), t.bytes(), h);
  }
  return h;
}

}  // namespace stoker::pipeline
