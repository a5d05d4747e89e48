#include "stoker/batch/arena.h"

#include <cstring>

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <vector>
#include <thread>

namespace stoker::batch {
namespace {

std::unique_ptr<Arena> make(std::size_t bytes, bool shared = true) {
  auto a = Arena::create({.bytes = bytes, .shared = shared, .name = "arena-test"});
  EXPECT_TRUE(a.ok()) << a.error().to_string();
  return std::move(a).value();
}

TEST(ArenaTest, FirstFitAlignedAndCoalesces) {
  auto arena = make(64 << 10);
  auto a = arena->allocate(100), b = arena->allocate(5000), c = arena->allocate(4096);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->offset, 0u);
  EXPECT_EQ(a->size, 4096u);
  EXPECT_EQ(b->offset, 4096u);
  EXPECT_EQ(b->size, 8192u);
  EXPECT_EQ(c->offset, 12288u);
  EXPECT_EQ(arena->in_use(), 16384u);
  arena->release(*a);
  arena->release(*b);  // coalesces with a: a 12 KiB hole at 0
  auto d = arena->allocate(12288);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->offset, 0u);
  arena->release(*c);
  arena->release(*d);
  EXPECT_EQ(arena->in_use(), 0u);
  EXPECT_EQ(arena->peak_in_use(), 16384u);
  auto whole = arena->allocate(64 << 10);  // everything coalesced back into one range
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->offset, 0u);
}

// What `stoker run` reports as the arena's share of RSS: written pages, not the capacity.
TEST(ArenaTest, ResidentBytesCountsWrittenPages) {
  for (bool shared : {true, false}) {
    auto a = Arena::create({.bytes = 8 << 20, .shared = shared, .name = "arena-test",
                            .huge_pages = false});
    ASSERT_TRUE(a.ok()) << a.error().to_string();
    const std::uint64_t before = (*a)->resident_bytes();
    EXPECT_LT(before, 1u << 20) << shared;
    std::memset((*a)->base(), 1, 3 << 20);
    EXPECT_GE((*a)->resident_bytes(), before + (3u << 20)) << shared;
    EXPECT_LE((*a)->resident_bytes(), (*a)->capacity());
  }
}

TEST(ArenaTest, TooLargeIsResourceExhausted) {
  auto arena = make(8192);
  auto r = arena->allocate(8193);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kResourceExhausted);
}

TEST(ArenaTest, AllocateBlocksUntilRelease) {
  auto arena = make(8192, false);
  auto a = arena->allocate(8192);
  ASSERT_TRUE(a.ok());
  std::atomic<bool> got{false};
  std::thread t([&] {
    auto b = arena->allocate(4096);
    EXPECT_TRUE(b.ok());
    got = true;
    arena->release(*b);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(got.load());
  arena->release(*a);
  t.join();
  EXPECT_TRUE(got.load());
}

TEST(ArenaTest, StopTokenCancelsWait) {
  auto arena = make(4096);
  auto a = arena->allocate(4096);
  ASSERT_TRUE(a.ok());
  std::stop_source stop;
  std::thread t([&] {
    auto b = arena->allocate(4096, stop.get_token());
    ASSERT_FALSE(b.ok());
    EXPECT_EQ(b.error().code(), ErrorCode::kCancelled);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  stop.request_stop();
  t.join();
}

TEST(ArenaTest, SharedFdMapsTheSameBytes) {
  auto arena = make(8192, true);
  ASSERT_GE(arena->fd(), 0);
  auto a = arena->allocate(4096);
  ASSERT_TRUE(a.ok());
  arena->base()[a->offset + 7] = 42;
  void* other = mmap(nullptr, 8192, PROT_READ, MAP_SHARED, arena->fd(), 0);
  ASSERT_NE(other, MAP_FAILED);
  EXPECT_EQ(static_cast<std::uint8_t*>(other)[a->offset + 7], 42);
  munmap(other, 8192);
  EXPECT_EQ(make(8192, false)->fd(), -1);
}

}  // namespace
}  // namespace stoker::batch

namespace stoker::batch {
namespace {

// Pages resident per mincore (shared memory: resident in the page cache and mapped).
std::uint64_t resident_bytes(const Arena& a, std::uint64_t from, std::uint64_t to) {
  const long page = sysconf(_SC_PAGESIZE);
  std::vector<unsigned char> vec(static_cast<size_t>((to - from + page - 1) / page));
  if (mincore(a.base() + from, to - from, vec.data()) != 0) return 0;
  std::uint64_t n = 0;
  for (unsigned char v : vec) n += (v & 1) ? page : 0;
  return n;
}

bool wait_for(const std::function<bool()>& ok) {
  for (int i = 0; i < 1000 && !ok(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return ok();
}

// The prefault thread makes the pages ahead of the highest block resident — never beyond the
// target (RSS stays bounded) — follows the high-water mark as blocks are handed out, and never
// changes the contents of a live block it runs over.
TEST(ArenaPrefaultTest, KeepsPagesAheadResidentWithoutTouchingContents) {
  constexpr std::uint64_t kMiB = 1 << 20;
  auto a = Arena::create({.bytes = 256 * kMiB, .shared = true, .name = "prefault-test",
                          .prefault_ahead = 16 * kMiB});
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(wait_for([&] { return (*a)->prefaulted() >= 16 * kMiB; }));
  EXPECT_EQ((*a)->prefaulted(), 16 * kMiB);  // nothing beyond the target
  EXPECT_EQ(resident_bytes(**a, 0, 16 * kMiB), 16 * kMiB);
  EXPECT_EQ(resident_bytes(**a, 64 * kMiB, 128 * kMiB), 0u);

  // A 40 MiB block written with a pattern before the thread reaches most of it; the target
  // becomes high water (40 MiB) + max(16, 40) MiB = 80 MiB.
  auto b = (*a)->allocate(40 * kMiB);
  ASSERT_TRUE(b.ok());
  std::uint8_t* p = (*a)->base() + b->offset;
  for (std::uint64_t i = 0; i < b->size; i += 4096) p[i] = static_cast<std::uint8_t>(i >> 12);
  ASSERT_TRUE(wait_for([&] { return (*a)->prefaulted() >= 80 * kMiB; }));
  EXPECT_EQ((*a)->prefaulted(), 80 * kMiB);
  EXPECT_EQ(resident_bytes(**a, 0, 80 * kMiB), 80 * kMiB);
  for (std::uint64_t i = 0; i < b->size; i += 4096) {
    ASSERT_EQ(p[i], static_cast<std::uint8_t>(i >> 12)) << "offset " << i;
  }
  (*a)->release(*b);
}

// The warm pool is resident when create() returns — no background thread, no waiting — and
// nothing beyond it; the first batches then meet no fresh page.
TEST(ArenaPrefaultTest, WarmPoolIsResidentWhenCreateReturns) {
  constexpr std::uint64_t kMiB = 1 << 20;
  auto a = Arena::create({.bytes = 64 * kMiB, .shared = true, .name = "warm-test",
                          .warm_bytes = 24 * kMiB});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(resident_bytes(**a, 0, 24 * kMiB), 24 * kMiB);
  EXPECT_EQ(resident_bytes(**a, 24 * kMiB, 64 * kMiB), 0u);
  EXPECT_EQ((*a)->prefaulted(), 24 * kMiB);
  // First fit recycles the warm pages: a released block's pages are handed out again.
  auto b = (*a)->allocate(10 * kMiB);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->offset, 0u);
  (*a)->release(*b);
  auto c = (*a)->allocate(12 * kMiB);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->offset, 0u);
  (*a)->release(*c);
}

// An in-process arena asks for huge pages on a 2 MiB boundary; a shared one keeps its memfd.
TEST(ArenaPrefaultTest, InProcessArenaIsHugePageAligned) {
  auto a = Arena::create({.bytes = 8 << 20, .shared = false, .name = "huge"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(reinterpret_cast<std::uintptr_t>((*a)->base()) % (2u << 20), 0u);
  EXPECT_EQ((*a)->fd(), -1);
  std::memset((*a)->base(), 7, (*a)->capacity());  // the whole capacity is usable
  auto b = (*a)->allocate((*a)->capacity());
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*a)->base()[b->offset + b->size - 1], 7);
  (*a)->release(*b);
}

TEST(ArenaPrefaultTest, OffByDefault) {
  auto a = Arena::create({.bytes = 8 << 20, .shared = true, .name = "no-prefault"});
  ASSERT_TRUE(a.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ((*a)->prefaulted(), 0u);
  EXPECT_EQ(resident_bytes(**a, 0, 8 << 20), 0u);
}

}  // namespace
}  // namespace stoker::batch
