// Arena: the memory batches are assembled in and handed to consumers from. One mapping, optionally
// backed by a memfd (shared memory: another process maps the same fd and reads batches in place,
// zero-copy). Blocks are carved first-fit from a free list and returned by release(); allocate()
// blocks while the arena is full (backpressure: memory stays bounded by `bytes`), and fails with
// ResourceExhausted for a request larger than the whole arena. Blocks are 4 KiB aligned.
// First touches of fresh pages are expensive (on this project's paravirtualised VMs 3-8 ms per
// MB with 4 KiB pages, ~1 ms with huge pages: a 400 MB batch block costs seconds), and a
// producer that meets them mid-batch stalls the trainer. Huge pages (`huge_pages`) and a warm
// pool written at create (`warm_bytes`) take most of it out of the run. With
// `prefault_ahead` > 0 a background thread of the lowest scheduling class (SCHED_IDLE: only spare
// CPU) keeps the pages past the highest block handed out so far resident — at least
// `prefault_ahead` bytes or the largest block, whichever is more — with
// MADV_POPULATE_WRITE, which never changes contents, so it may run over live blocks.
// Thread-safe. Owns the mapping and fd; move-only through unique_ptr.
// Errors: ResourceExhausted, Cancelled (stop requested while waiting), Internal (mmap/memfd).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stop_token>
#include <string>

#include "stoker/base/result.h"

namespace stoker::batch {

struct ArenaOptions {
  std::size_t bytes = std::size_t{1} << 30;
  bool shared = true;           // memfd (0600, never visible in the filesystem) vs anonymous
  std::string name = "stoker-arena";
  std::size_t prefault_ahead = 0;  // see above; 0: pages are touched by their first writer
  // A warm pool: create() writes the first `warm_bytes` itself, on the caller's thread (zeros
  // over zeros: contents unchanged), so the first batches are assembled in pages as warm as
  // later ones (first fit hands the same low pages out again as batches are released): the
  // first epoch costs what later ones do; the first-touch cost is paid once, before any batch.
  // A real write, not MADV_POPULATE_WRITE: on paravirtualised VMs (this project's machines)
  // populated 4 KiB pages still fault on their first write (~3 ms per MB), written ones do not.
  std::size_t warm_bytes = 0;
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
  // Stops the prefault thread for good (idempotent, thread-safe): the owner will ask for no more
  // blocks (the Loader's producer is done), so populating ahead would only add RSS and CPU.
  void stop_prefault();
  // Bytes from the base made resident by the prefault thread so far (0 when it is off).
  std::uint64_t prefaulted() const;
  // Bytes of the arena in memory now (mincore): pages once written stay resident — blocks are
  // reused first-fit and never handed back to the kernel, so a warm arena costs no faults — so
  // this is what the arena adds to the process's RSS (shared memory, RssShmem, when memfd-backed).
  std::uint64_t resident_bytes() const;
  int fd() const { return fd_; }  // -1 unless shared

 private:
  Arena(std::uint8_t* map, std::uint64_t map_bytes, std::uint8_t* base, std::uint64_t capacity,
        int fd, std::uint64_t prefault_ahead, std::uint64_t warm_bytes);
  void prefault_loop(std::stop_token stop);
  struct State;
  std::unique_ptr<State> state_;
  std::uint8_t* map_ = nullptr;  // the mapping as mmap returned it (base_ may be aligned within)
  std::uint64_t map_bytes_ = 0;
  std::uint8_t* base_ = nullptr;
  std::uint64_t capacity_ = 0;
  int fd_ = -1;
};

}  // namespace stoker::batch
