// Arena: the memory batches are assembled in and handed to consumers from. One mapping, optionally
// backed by a memfd (shared memory: another process maps the same fd and reads batches in place,
// zero-copy). Blocks are carved first-fit from a free list and returned by release(); allocate()
// blocks while the arena is full (backpressure: memory stays bounded by `bytes`), and fails with
// ResourceExhausted for a request larger than the whole arena. Blocks are 4 KiB aligned.
// First touches of fresh pages are expensive (shared memory on the dev VM: ~0.7 ms per MB, a
// 200 MB batch block ~140 ms), and a producer that meets them mid-batch stalls the trainer. With
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
  // A warm pool: the first `warm_bytes` are made resident by create() itself, on the caller's
  // thread, so the first batches are assembled in pages as warm as later ones (first-fit hands
  // the same low pages out again as batches are released): the first epoch costs what later
  // ones do, and the first-touch cost is paid once, before any batch, where it is measured.
  std::size_t warm_bytes = 0;

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
  // Bytes from the base made resident by the prefault thread so far (0 when it is off).
  std::uint64_t prefaulted() const;
  int fd() const { return fd_; }  // -1 unless shared

 private:
  Arena(std::uint8_t* base, std::uint64_t capacity, int fd, std::uint64_t prefault_ahead,
        std::uint64_t warm_bytes);
  void prefault_loop(std::stop_token stop);
  struct State;
  std::unique_ptr<State> state_;
  std::uint8_t* base_ = nullptr;
  std::uint64_t capacity_ = 0;
  int fd_ = -1;
};

}  // namespace stoker::batch
