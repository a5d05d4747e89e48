// ArenaPlan: how much of the arena a run will use, from the batches it plans. The arena reserves
// address space for its cap (`--arena-mb`: the memory bound; backpressure starts there) but only
// the pages a run uses become memory. Batches in use at once are `depth` (the prefetch ring, the
// one being assembled, the one the trainer holds), so the run needs depth × the largest planned
// batch plus slack for first-fit fragmentation; it grows when a larger batch is planned.
// Warming follows the use: one largest batch ahead of the highest block handed out (where such
// a block still fits under the cap), never beyond the planned size. A plain value; not
// thread-safe (the arena keeps it under its lock).
#pragma once

#include <cstdint>
#include <string>

namespace stoker::batch {

struct ArenaPlan {
  std::uint64_t cap = 0;   // the arena's capacity (address space reserved; the memory bound)
  int depth = 2;           // batches alive at once
  std::uint64_t largest = 0;  // the largest batch planned so far (bytes, page-rounded)

  // Records a planned batch; true when it is the largest so far (the planned size grew).
  bool add(std::uint64_t batch_bytes);
  // First-fit fragmentation room: half the largest batch, at least 2 MiB.
  std::uint64_t slack() const;
  // min(cap, depth × largest + slack), 2 MiB-rounded (huge pages); 0 before any batch.
  std::uint64_t planned() const;
  bool capped() const { return largest > 0 && planned() == cap; }
  // How far the pages should be made resident ahead of use, given the end of the highest block
  // handed out so far: one largest batch beyond it while such a block fits under the cap,
  // bounded by the planned size; never below `high_water` (those pages are in use).
  std::uint64_t warm_to(std::uint64_t high_water) const;
  // One line for summaries and stats(): the size and why, e.g. "planned 14.0 MiB = 6 batches
  // (prefetch 4 + 2) x largest 2.0 MiB + 2.0 MiB slack, of a 1024 MiB cap (--arena-mb)".
  std::string describe(const std::string& depth_why) const;
};

}  // namespace stoker::batch
