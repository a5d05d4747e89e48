// Arena: the memory batches are assembled in and handed to consumers from. One mapping, optionally
// backed by a memfd (shared memory: another process maps the same fd and reads batches in place,
// zero-copy). Blocks are carved first-fit from a free list and returned by release(); allocate()
// blocks while the arena is full (backpressure: memory stays bounded by `bytes`), and fails with
// ResourceExhausted for a request larger than the whole arena. Blocks are 4 KiB aligned.
// The arena reserves address space for `bytes` (the cap: the memory bound) and uses memory only
// for the pages a run touches. With `warm`, no batch meets a fresh page: allocate() makes its
// block resident before handing it out (MADV_POPULATE_WRITE: ~0.12 ms per MB with huge pages on
// this project's VMs vs ~0.7 ms per MB of page faults taken by the writers), and a background
// thread of the lowest scheduling class (SCHED_IDLE: spare CPU only) does it ahead of use, as far
// as the plan says (arena_plan.h: depth × the largest planned batch; plan() announces a batch as
// soon as its layout is known). Populating never changes contents, so it may run over live
// blocks. Pages once resident stay (first fit reuses low blocks): resident = what the run used.
// Thread-safe. Owns the mapping and fd; move-only through unique_ptr.
// Errors: ResourceExhausted, Cancelled (stop requested while waiting), Internal (mmap/memfd).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>

#include "stoker/base/result.h"
#include "stoker/batch/arena_plan.h"

namespace stoker::batch {

struct ArenaOptions {
  std::size_t bytes = std::size_t{1} << 30;  // the cap: address space, not memory, until used
  bool shared = true;           // memfd (0600, never visible in the filesystem) vs anonymous
  std::string name = "stoker-arena";
  // Make pages resident before use (see above); false: pages are touched by their first writer.
  // On a kernel without MADV_POPULATE_WRITE (before 5.14) warming is off.
  bool warm = false;
  // Batches alive at once (ArenaPlan::depth) and why, for the plan and its description.
  int depth = 2;
  std::string depth_why = "the one assembled + the one in use";
  // Ask for transparent huge pages (MADV_HUGEPAGE; the mapping 2 MiB-aligned): one fault per
  // 2 MiB instead of 512. Measured here, first writes of a fresh anonymous region: 0.7-1.2 ms
  // per MB with huge pages vs ~8 ms per MB with 4 KiB pages. Shared (memfd) arenas get them only
  // where the kernel allows huge shmem pages (shmem_enabled); elsewhere it is a no-op.
  bool huge_pages = true;

  Status validate() const;
};

struct Block {
  std::uint64_t offset = 0;  // from the arena base; what crosses a process boundary
  std::uint64_t size = 0;
};

class Arena {
 public:
  static Result<std::unique_ptr<Arena>> create(const ArenaOptions& options);
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  Result<Block> allocate(std::uint64_t bytes, std::stop_token stop = {});
  void release(Block block);

  std::uint8_t* base() const { return base_; }
  std::uint64_t capacity() const { return capacity_; }
  std::uint64_t in_use() const;
  std::uint64_t peak_in_use() const;
  // A batch of `bytes` is planned (its layout is known, its pixels not yet decoded): the planned
  // size grows if it is the largest so far, and the warming thread works towards it.
  void plan(std::uint64_t bytes);
  ArenaPlan plan_snapshot() const;
  std::uint64_t planned_bytes() const { return plan_snapshot().planned(); }
  // The plan in one line: its size, why, and how much warming made resident so far.
  std::string describe() const;
  // Stops the warming thread for good (idempotent, thread-safe): the owner will ask for no more
  // blocks (the Loader's producer is done), so populating ahead would only add RSS and CPU.
  void stop_prefault();
  // Bytes from the base made resident by warming so far (0 when warming is off).
  std::uint64_t prefaulted() const;
  // Seconds allocate() spent making blocks resident on its caller's thread (the warming thread
  // had not got there): producer work, not a wait for space.
  double populate_s() const;
  // Bytes of the arena in memory now (mincore): pages once written stay resident — blocks are
  // reused first-fit and never handed back to the kernel, so a warm arena costs no faults — so
  // this is what the arena adds to the process's RSS (shared memory, RssShmem, when memfd-backed).
  std::uint64_t resident_bytes() const;
  int fd() const { return fd_; }  // -1 unless shared

 private:
  Arena(std::uint8_t* map, std::uint64_t map_bytes, std::uint8_t* base, std::uint64_t capacity,
        int fd, const ArenaOptions& options);
  void warm_loop(std::stop_token stop);
  // Makes [0, end) resident (the caller's thread); false if the kernel refused.
  bool populate_to(std::uint64_t end);
  bool populate_chunk(std::uint64_t from, std::uint64_t to);
  std::atomic<bool> huge_{false};  // huge pages still asked for (see populate_chunk)
  struct State;
  std::unique_ptr<State> state_;
  std::uint8_t* map_ = nullptr;  // the mapping as mmap returned it (base_ may be aligned within)
  std::uint64_t map_bytes_ = 0;
  std::uint8_t* base_ = nullptr;
  std::uint64_t capacity_ = 0;
  int fd_ = -1;
};

}  // namespace stoker::batch
