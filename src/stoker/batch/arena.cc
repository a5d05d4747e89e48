// Arena: one mapping (memfd or anonymous), a first-fit free list ordered by offset with
// coalescing on release, and a condition variable that blocks allocate() while nothing fits.
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
constexpr std::uint64_t kPrefaultChunk = std::uint64_t{8} << 20;  // per madvise call
constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;

}  // namespace

struct Arena::State {
  std::mutex mu;
  std::condition_variable_any freed;
  std::map<std::uint64_t, std::uint64_t> free;  // offset → size, disjoint, never adjacent
  std::uint64_t in_use = 0;
  std::uint64_t peak = 0;
  // Prefault: the end of the highest block handed out, the largest block, how far the
  // background thread has populated, and the thread (joined before the mapping goes).
  std::uint64_t prefault_ahead = 0;
  std::uint64_t high_water = 0, largest = 0, populated = 0;
  std::condition_variable_any want_more;
  std::mutex prefaulter_mu;  // stop_prefault() and the destructor
  std::jthread prefaulter;

  std::uint64_t prefault_target(std::uint64_t capacity) const {
    return std::min(capacity, high_water + std::max(prefault_ahead, largest));
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
                                          capacity, fd, options.prefault_ahead,
                                          options.warm_bytes));
}

Arena::Arena(std::uint8_t* map, std::uint64_t map_bytes, std::uint8_t* base,
             std::uint64_t capacity, int fd, std::uint64_t prefault_ahead,
             std::uint64_t warm_bytes)
    : state_(std::make_unique<State>()), map_(map), map_bytes_(map_bytes), base_(base),
      capacity_(capacity), fd_(fd) {
  state_->free.emplace(0, capacity);
  state_->prefault_ahead = prefault_ahead;
  // The warm pool: fresh pages hold zeros, so writing zeros changes nothing but makes them
  // resident and writable without a fault (see ArenaOptions::warm_bytes).
  const std::uint64_t warm = std::min<std::uint64_t>(round_up(warm_bytes), capacity);
  std::memset(base_, 0, warm);
  state_->populated = warm;
  if (prefault_ahead > 0) {
    state_->prefaulter = std::jthread([this](std::stop_token stop) { prefault_loop(stop); });
    pthread_setname_np(state_->prefaulter.native_handle(), "stoker-arena");
  }
}

// Populates [populated, target) in chunks, outside the lock; MADV_POPULATE_WRITE faults pages in
// as a write would but leaves their contents alone, so live blocks in that range are safe. Stops
// for good if the kernel refuses (before 5.14: EINVAL) — pages are then touched by their writers.
void Arena::prefault_loop(std::stop_token stop) {
  (void)exec::set_current_thread_sched(exec::SchedClass::kIdle);  // spare CPU only
  State& st = *state_;
  for (;;) {
    std::uint64_t from = 0, to = 0;
    {
      std::unique_lock lock(st.mu);
      if (!st.want_more.wait(lock, stop,
                             [&] { return st.populated < st.prefault_target(capacity_); })) {
        return;
      }
      from = st.populated;
      to = std::min(st.prefault_target(capacity_), from + kPrefaultChunk);
    }
    if (madvise(base_ + from, to - from, MADV_POPULATE_WRITE) != 0) return;
    std::lock_guard lock(st.mu);
    st.populated = to;
  }
}

void Arena::stop_prefault() {
  std::lock_guard lock(state_->prefaulter_mu);
  if (state_->prefaulter.joinable()) {
    state_->prefaulter.request_stop();  // wakes the wait; a chunk in progress finishes first
    state_->prefaulter.join();
  }
}

Arena::~Arena() {
  stop_prefault();
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
    auto& free = state_->free;
    STOKER_CHECK(block.offset + block.size <= capacity_, "arena: release of a foreign block");
    auto next = free.lower_bound(block.offset);
    STOKER_CHECK(next == free.end() || next->first >= block.offset + block.size,
                 "arena: double release or overlapping block");
    std::uint64_t offset = block.offset, size = block.size;
    if (next != free.begin()) {
      auto prev = std::prev(next);
      STOKER_CHECK(prev->first + prev->second <= offset, "arena: double release");
      if (prev->first + prev->second == offset) {
        offset = prev->first;
        size += prev->second;
        free.erase(prev);
      }
    }
    if (next != free.end() && next->first == block.offset + block.size) {
      size += next->second;
      free.erase(next);
    }
    free.emplace(offset, size);
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
