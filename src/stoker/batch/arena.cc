// Arena: one mapping (memfd or anonymous), a first-fit free list ordered by offset with
// coalescing on release, and a condition variable that blocks allocate() while nothing fits.
#include "stoker/batch/arena.h"

#include <pthread.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
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
constexpr double kDearHugeMsPerMb = 0.6;  // see populate_chunk

}  // namespace

struct Arena::State {
  std::mutex mu;
  std::condition_variable_any freed;
  std::map<std::uint64_t, std::uint64_t> free;  // offset → size, disjoint, never adjacent
  std::uint64_t in_use = 0;
  std::uint64_t peak = 0;
  // Warming: the plan, the end of the highest block handed out, how far [0, populated) is
  // resident or being made so, and the thread (joined before the mapping goes). populated only
  // grows: a populator claims its chunk [populated, to) by advancing it under the lock, then
  // populates outside it, so the thread and allocate() never populate the same pages (they did:
  // the second of two overlapping populates measured the first's page locks, not the kernel's
  // cost, and switched the arena to 4 KiB pages on a false signal). One populates at a time
  // (populate_mu, taken before mu): two at once on disjoint chunks contend in the kernel, and one
  // measured 2.4 ms per MB — the same false signal. A writer that reaches a page still being
  // populated takes an ordinary fault: correct, only not pre-paid.
  bool warm = false;
  std::string depth_why;
  ArenaPlan plan;
  std::uint64_t high_water = 0, populated = 0;
  std::int64_t populate_ns = 0;  // allocate()'s own populating
  std::condition_variable_any want_more;
  std::mutex populate_mu;  // one populator at a time; before mu
  std::mutex warmer_mu;  // stop_prefault() and the destructor
  std::jthread warmer;

  std::uint64_t warm_target() const { return plan.warm_to(high_water); }
};

Status ArenaOptions::validate() const {
  if (bytes < kAlign) return invalid_argument("arena: bytes must be at least 4096");
  if (name.empty()) return invalid_argument("arena: empty name");
  if (depth < 1) return invalid_argument("arena: depth must be at least 1");
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
    // Sparse: the file takes memory only for the pages written.
    if (ftruncate(fd, static_cast<off_t>(capacity)) != 0) {
      Error e = internal_error(errno_text("arena: ftruncate"));
      close(fd);
      return e;
    }
    map = mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    base = static_cast<std::uint8_t*>(map);
  } else {
    // 2 MiB more, so the arena can start on a huge-page boundary. Address space only: no swap
    // is reserved for the cap (MAP_NORESERVE), pages are committed as they are touched.
    if (options.huge_pages) map_bytes += kHugePage;
    map = mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE,
               MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
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
  return std::unique_ptr<Arena>(
      new Arena(static_cast<std::uint8_t*>(map), map_bytes, base, capacity, fd, options));
}

Arena::Arena(std::uint8_t* map, std::uint64_t map_bytes, std::uint8_t* base,
             std::uint64_t capacity, int fd, const ArenaOptions& options)
    : state_(std::make_unique<State>()), map_(map), map_bytes_(map_bytes), base_(base),
      capacity_(capacity), fd_(fd) {
  state_->free.emplace(0, capacity);
  huge_.store(options.huge_pages);
  state_->plan.cap = capacity;
  state_->plan.depth = options.depth;
  state_->depth_why = options.depth_why;
  // Warming needs MADV_POPULATE_WRITE (Linux 5.14): probe it on the first page.
  state_->warm = options.warm && madvise(base_, kAlign, MADV_POPULATE_WRITE) == 0;
  if (state_->warm) {
    state_->warmer = std::jthread([this](std::stop_token stop) { warm_loop(stop); });
  }
}

bool Arena::populate_to(std::uint64_t end) {
  for (;;) {
    std::uint64_t from = 0, to = 0;
    std::lock_guard one(state_->populate_mu);
    {
      std::lock_guard lock(state_->mu);
      from = state_->populated;
      if (from >= end) return true;
      to = std::min(end, from + kPrefaultChunk);
      state_->populated = to;  // claimed (see State)
    }
    if (!populate_chunk(from, to)) return false;
  }
}

// Huge pages are cheap to populate when the kernel has free 2 MiB blocks (0.12-0.14 ms per MB
// measured here) and dear when it must reclaim or compact to assemble them (1-2.7 ms per MB on
// this VM while other processes churn the page cache), where 4 KiB pages cost a steady ~0.3. A
// chunk that costs more than kDearHugeMsPerMb switches the rest of the arena to 4 KiB pages
// (MADV_NOHUGEPAGE): resident huge pages stay; the cold start stays bounded.
bool Arena::populate_chunk(std::uint64_t from, std::uint64_t to) {
  const bool huge = huge_.load(std::memory_order_relaxed);
  timespec t0{}, t1{};
  if (huge) ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  if (madvise(base_ + from, to - from, MADV_POPULATE_WRITE) != 0) return false;
  if (huge) {
    ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    const double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) * 1e-6;
    const double mb = static_cast<double>(to - from) / (1 << 20);
    if (ms > kDearHugeMsPerMb * mb && huge_.exchange(false)) {
      (void)madvise(base_ + to, capacity_ - to, MADV_NOHUGEPAGE);
    }
  }
  return true;
}

// Populates towards the plan's warm target in chunks, outside the lock. Stops for good if the
// kernel refuses (e.g. out of memory): blocks are then populated when handed out, or faulted in.
void Arena::warm_loop(std::stop_token stop) {
  (void)exec::set_current_thread_sched(exec::SchedClass::kIdle);  // spare CPU only
  pthread_setname_np(pthread_self(), "stoker-arena");  // named once its class is set
  State& st = *state_;
  for (;;) {
    std::uint64_t from = 0, to = 0;
    {
      std::unique_lock lock(st.mu);
      if (!st.want_more.wait(lock, stop, [&] { return st.populated < st.warm_target(); })) {
        return;
      }
    }
    std::lock_guard one(st.populate_mu);
    {
      std::lock_guard lock(st.mu);
      if (st.populated >= st.warm_target()) continue;  // allocate() got there first
      from = st.populated;
      to = std::min(st.warm_target(), from + kPrefaultChunk);
      st.populated = to;  // claimed (see State)
    }
    if (!populate_chunk(from, to)) return;
  }
}

void Arena::stop_prefault() {
  std::lock_guard lock(state_->warmer_mu);
  if (state_->warmer.joinable()) {
    state_->warmer.request_stop();  // wakes the wait; a chunk in progress finishes first
    state_->warmer.join();
  }
}

Arena::~Arena() {
  stop_prefault();
  munmap(map_, map_bytes_);
  if (fd_ >= 0) close(fd_);
}

void Arena::plan(std::uint64_t bytes) {
  std::lock_guard lock(state_->mu);
  if (state_->plan.add(std::min<std::uint64_t>(bytes, capacity_)) && state_->warm) {
    state_->want_more.notify_all();
  }
}

ArenaPlan Arena::plan_snapshot() const {
  std::lock_guard lock(state_->mu);
  return state_->plan;
}

std::string Arena::describe() const {
  std::lock_guard lock(state_->mu);
  const State& st = *state_;
  char tail[128];
  if (st.warm) {
    std::snprintf(tail, sizeof tail, "; %.1f MiB made resident before use",
                  static_cast<double>(st.populated) / (1 << 20));
  } else {
    std::snprintf(tail, sizeof tail, "; pages touched by their first writer (no warming)");
  }
  return st.plan.describe(st.depth_why) + tail;
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
  State& st = *state_;
  const bool grew = st.plan.add(size);  // a caller that did not plan() it
  if (block.offset + size > st.high_water || grew) {
    st.high_water = std::max(st.high_water, block.offset + size);
    if (st.warm) st.want_more.notify_all();
  }
  // The block's pages resident before anyone writes into it (see ArenaOptions::warm).
  if (st.warm && st.populated < block.offset + size) {
    lock.unlock();
    const auto t0 = std::chrono::steady_clock::now();
    (void)populate_to(block.offset + size);
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now() - t0).count();
    lock.lock();
    st.populate_ns += ns;
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
  return state_->warm ? state_->populated : 0;
}

double Arena::populate_s() const {
  std::lock_guard lock(state_->mu);
  return static_cast<double>(state_->populate_ns) * 1e-9;
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
