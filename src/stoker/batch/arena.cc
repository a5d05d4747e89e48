// Arena: one mapping (memfd or anonymous), a first-fit free list ordered by offset with
// coalescing on release, a condition variable that blocks allocate() while nothing fits, and
// the toucher thread (prefault_loop) that keeps the pages ahead of use resident.
#include "stoker/batch/arena.h"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "stoker/exec/sched.h"

namespace stoker::batch {
namespace {

constexpr std::uint64_t kAlign = 4096;

std::uint64_t round_up(std::uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14
#endif
// Per madvise call, and per warm write: the longest an allocate() waits for a write (one huge
// page; ~1-16 ms of CPU here) and about the longest a destructor waits for the toucher.
constexpr std::uint64_t kPrefaultChunk = std::uint64_t{2} << 20;
constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;

}  // namespace

struct Arena::State {
  std::mutex mu;
  std::condition_variable_any freed;
  std::map<std::uint64_t, std::uint64_t> free;  // offset → size, disjoint, never adjacent
  std::uint64_t in_use = 0;
  std::uint64_t peak = 0;
  // The toucher: the end of the highest block handed out, the largest block, how far it has
  // made pages resident, the end of the warm pool, and the thread (joined before the mapping
  // goes).
  std::uint64_t prefault_ahead = 0;
  std::uint64_t high_water = 0, largest = 0, populated = 0, warm_end = 0;
  // The chunk being written ([writing_from, writing_to), empty when none): a block handed out
  // over it waits until it is done (chunk_done), so a warm write never meets a live block.
  std::uint64_t writing_from = 0, writing_to = 0;
  std::condition_variable chunk_done;
  std::condition_variable_any want_more;
  std::mutex prefaulter_mu;  // stop_toucher() and the destructor
  std::jthread prefaulter;

  std::uint64_t prefault_target(std::uint64_t capacity) const {
    return std::min(capacity, high_water + std::max(prefault_ahead, largest));
  }

  // Returns [offset, offset + size) to the free list, merged with its neighbours.
  void insert_free(std::uint64_t offset, std::uint64_t size) {
    auto next = free.lower_bound(offset);
    STOKER_CHECK(next == free.end() || next->first >= offset + size,
                 "arena: double release or overlapping block");
    const std::uint64_t end = offset + size;
    if (next != free.begin()) {
      auto prev = std::prev(next);
      STOKER_CHECK(prev->first + prev->second <= offset, "arena: double release");
      if (prev->first + prev->second == offset) {
        offset = prev->first;
        size += prev->second;
        free.erase(prev);
      }
    }
    if (next != free.end() && next->first == end) {
      size += next->second;
      free.erase(next);
    }
    free.emplace(offset, size);
  }
};

Status ArenaOptions::validate() const {
  if (bytes < kAlign) return invalid_argument("arena: bytes must be at least 4096");
  if (name.empty()) return invalid_argument("arena: empty name");
  return ok_status();
}

Result<std::unique_ptr<Arena>> Arena::create(const ArenaOptions& options) {
  STOKER_RETURN_IF_ERROR(options.validate());
  const std::uint64_t capacity = round_up(options.bytes);
  int fd = -1;
  void* map = MAP_FAILED;
  std::uint64_t map_bytes = capacity;
  std::uint8_t* base = nullptr;
  if (options.shared) {
    fd = memfd_create(options.name.c_str(), MFD_CLOEXEC);
    if (fd < 0) return internal_error(errno_text("arena: memfd_create"));
    if (ftruncate(fd, static_cast<off_t>(capacity)) != 0) {
      Error e = internal_error(errno_text("arena: ftruncate"));
      close(fd);
      return e;
    }
    map = mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    base = static_cast<std::uint8_t*>(map);
  } else {
    // 2 MiB more, so the arena can start on a huge-page boundary.
    if (options.huge_pages) map_bytes += kHugePage;
    map = mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map != MAP_FAILED) {
      const auto addr = reinterpret_cast<std::uintptr_t>(map);
      base = reinterpret_cast<std::uint8_t*>(options.huge_pages ? (addr + kHugePage - 1) & ~(kHugePage - 1)
                                                                : addr);
    }
  }
  if (map == MAP_FAILED) {
    Error e = internal_error(errno_text("arena: mmap"));
    if (fd >= 0) close(fd);
    return e;
  }
  if (options.huge_pages) (void)madvise(base, capacity, MADV_HUGEPAGE);  // advice: may be refused
  return std::unique_ptr<Arena>(new Arena(static_cast<std::uint8_t*>(map), map_bytes, base,
                                          capacity, fd, options));
}

Arena::Arena(std::uint8_t* map, std::uint64_t map_bytes, std::uint8_t* base,
             std::uint64_t capacity, int fd, const ArenaOptions& options)
    : state_(std::make_unique<State>()), map_(map), map_bytes_(map_bytes), base_(base),
      capacity_(capacity), fd_(fd) {
  state_->free.emplace(0, capacity);
  state_->prefault_ahead = options.prefault_ahead;
  state_->warm_end = std::min<std::uint64_t>(round_up(options.warm_bytes), capacity);
  if (options.prefault_ahead > 0) {
    state_->prefaulter = std::jthread(
        [this, sched = options.toucher_sched](std::stop_token stop) { prefault_loop(stop, sched); });
    pthread_setname_np(state_->prefaulter.native_handle(), "stoker-arena");
  }
}

// Makes [populated, target) resident in chunks, outside the lock. Within the warm pool and
// above the highest block ever handed out, a chunk is written with zeros (fresh pages hold
// zeros: contents unchanged); allocate() does not hand out a block over it until the write is
// done (first fit still places blocks where it would: the low, warm pages are reused); elsewhere
// MADV_POPULATE_WRITE faults pages in as a write would but leaves their contents alone, so live
// blocks in that range are safe. If the kernel refuses it (before 5.14: EINVAL) the toucher
// stops there: the remaining pages are touched by their writers.
// SCHED_BATCH by default, not SCHED_IDLE: an idle-class thread gets nothing while the cores are
// busy (measured: a destructor waited 128 s to join it mid-chunk on a loaded 2-core VM), and an
// allocate() may wait for the chunk being written. The work is bounded by use (the high water plus
// prefault_ahead), and it is work the producer's threads would otherwise do on fresh pages.
void Arena::prefault_loop(std::stop_token stop, exec::SchedClass sched) {
  (void)exec::set_current_thread_sched(sched);
  State& st = *state_;
  for (;;) {
    std::uint64_t from = 0, to = 0;
    bool write = false;
    {
      std::unique_lock lock(st.mu);
      if (!st.want_more.wait(lock, stop,
                             [&] { return st.populated < st.prefault_target(capacity_); })) {
        return;
      }
      from = st.populated;
      to = std::min(st.prefault_target(capacity_), from + kPrefaultChunk);
      if (from >= st.high_water && from < st.warm_end) {
        to = std::min(to, st.warm_end);
        write = true;
        st.writing_from = from;
        st.writing_to = to;
      }
    }
    if (write) {
      std::memset(base_ + from, 0, to - from);
    } else if (madvise(base_ + from, to - from, MADV_POPULATE_WRITE) != 0) {
      return;
    }
    {
      std::lock_guard lock(st.mu);
      st.writing_from = st.writing_to = 0;
      st.populated = to;
    }
    if (write) st.chunk_done.notify_all();
  }
}

void Arena::stop_toucher() {
  std::lock_guard lock(state_->prefaulter_mu);
  if (state_->prefaulter.joinable()) {
    state_->prefaulter.request_stop();  // wakes the wait; a chunk in progress finishes first
    state_->prefaulter.join();
  }
}

Arena::~Arena() {
  stop_toucher();
  munmap(map_, map_bytes_);
  if (fd_ >= 0) close(fd_);
}

Result<Block> Arena::allocate(std::uint64_t bytes, std::stop_token stop) {
  const std::uint64_t size = round_up(bytes == 0 ? 1 : bytes);
  if (size > capacity_) {
    return resource_exhausted("arena: a block of " + std::to_string(bytes) +
                              " bytes is larger than the whole arena (" +
                              std::to_string(capacity_) + " bytes); raise the arena size");
  }
  std::unique_lock lock(state_->mu);
  Block block;
  auto fits = [&] {
    for (auto it = state_->free.begin(); it != state_->free.end(); ++it) {
      if (it->second < size) continue;
      block = {it->first, size};
      if (it->second > size) state_->free.emplace(it->first + size, it->second - size);
      state_->free.erase(it);
      return true;
    }
    return false;
  };
  if (!state_->freed.wait(lock, stop, fits)) {
    return cancelled("arena: stopped while waiting for " + std::to_string(size) + " bytes");
  }
  // The toucher may be writing zeros where this block lies (above every earlier block): at most
  // one 2 MiB chunk, the first-touch cost this block's writer would have paid anyway.
  while (block.offset < state_->writing_to && state_->writing_from < block.offset + size) {
    state_->chunk_done.wait(lock);
  }
  state_->in_use += size;
  if (state_->in_use > state_->peak) state_->peak = state_->in_use;
  if (block.offset + size > state_->high_water || size > state_->largest) {
    state_->high_water = std::max(state_->high_water, block.offset + size);
    state_->largest = std::max(state_->largest, size);
    if (state_->prefault_ahead > 0) state_->want_more.notify_all();
  }
  return block;
}

void Arena::release(Block block) {
  if (block.size == 0) return;
  {
    std::lock_guard lock(state_->mu);
    STOKER_CHECK(block.offset + block.size <= capacity_, "arena: release of a foreign block");
    state_->insert_free(block.offset, block.size);
    state_->in_use -= block.size;
  }
  state_->freed.notify_all();
}

std::uint64_t Arena::in_use() const {
  std::lock_guard lock(state_->mu);
  return state_->in_use;
}

std::uint64_t Arena::prefaulted() const {
  std::lock_guard lock(state_->mu);
  return state_->populated;
}

std::uint64_t Arena::resident_bytes() const {
  const std::uint64_t page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> vec(64 * 1024);  // 256 MiB of 4 KiB pages per call
  std::uint64_t resident = 0;
  for (std::uint64_t off = 0; off < capacity_; off += vec.size() * page) {
    const std::uint64_t len = std::min<std::uint64_t>(capacity_ - off, vec.size() * page);
    if (::mincore(base_ + off, len, vec.data()) != 0) return 0;  // base_ is page-aligned
    const std::uint64_t pages = (len + page - 1) / page;
    for (std::uint64_t i = 0; i < pages; ++i) resident += (vec[i] & 1) ? page : 0;
  }
  return std::min(resident, capacity_);
}

std::uint64_t Arena::peak_in_use() const {
  std::lock_guard lock(state_->mu);
  return state_->peak;
}

}  // namespace stoker::batch
