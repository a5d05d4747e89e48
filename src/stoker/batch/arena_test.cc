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

constexpr std::uint64_t kMiB = 1 << 20;

// A warm arena holds no memory at create; a block is resident when allocate() returns (before
// its writer touches it); the warming thread then makes one largest block ahead resident, and
// nothing beyond it (RSS follows the run, not the cap).
TEST(ArenaWarmTest, BlocksResidentWhenHandedOutAndOneAheadNoMore) {
  auto a = Arena::create({.bytes = 256 * kMiB, .shared = true, .name = "warm-test", .warm = true});
  ASSERT_TRUE(a.ok()) << a.error().to_string();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_LE(resident_bytes(**a, 0, 256 * kMiB), 2 * kMiB);  // at most the probe's page
  auto b = (*a)->allocate(10 * kMiB);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(resident_bytes(**a, b->offset, b->offset + b->size), 10 * kMiB);
  // High water 10 MiB + one largest block (10 MiB) ahead; the plan (2 x 10 + slack 6) is 26.
  ASSERT_TRUE(wait_for([&] { return (*a)->prefaulted() >= 20 * kMiB; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ((*a)->prefaulted(), 20 * kMiB);
  EXPECT_EQ(resident_bytes(**a, 0, 20 * kMiB), 20 * kMiB);
  EXPECT_EQ(resident_bytes(**a, 22 * kMiB, 256 * kMiB), 0u);
  (*a)->release(*b);
}

// plan() announces a larger batch before its block exists: the warming thread goes ahead by the
// new largest size (bounded by the plan), and never changes a live block's contents.
TEST(ArenaWarmTest, PlanGrowsTheWarmedRegionWithoutTouchingContents) {
  auto a = Arena::create({.bytes = 512 * kMiB, .shared = true, .name = "warm-plan", .warm = true,
                          .depth = 3});
  ASSERT_TRUE(a.ok());
  auto b = (*a)->allocate(8 * kMiB);
  ASSERT_TRUE(b.ok());
  std::uint8_t* p = (*a)->base() + b->offset;
  for (std::uint64_t i = 0; i < b->size; i += 4096) p[i] = static_cast<std::uint8_t>(1 + (i >> 12));
  (*a)->plan(40 * kMiB);
  // 3 x 40 + 20 slack = 140 MiB planned; warmed to high water 8 + 40 = 48 MiB.
  EXPECT_EQ((*a)->planned_bytes(), 140 * kMiB);
  ASSERT_TRUE(wait_for([&] { return (*a)->prefaulted() >= 48 * kMiB; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ((*a)->prefaulted(), 48 * kMiB);
  for (std::uint64_t i = 0; i < b->size; i += 4096) {
    ASSERT_EQ(p[i], static_cast<std::uint8_t>(1 + (i >> 12))) << "offset " << i;
  }
  const std::string why = (*a)->describe();
  EXPECT_NE(why.find("planned 140.0 MiB: 3 batches"), std::string::npos) << why;
  EXPECT_NE(why.find("largest 40.0 MiB + 20.0 MiB slack"), std::string::npos) << why;
  EXPECT_NE(why.find("cap 512 MiB"), std::string::npos) << why;
  (*a)->release(*b);
}

// Where a largest block no longer fits above the high water, nothing more is warmed; a block
// that lands there anyway is made resident when handed out.
TEST(ArenaWarmTest, NoWarmingWhereTheNextBlockCannotFit) {
  auto a = Arena::create({.bytes = 48 * kMiB, .shared = true, .name = "warm-cap", .warm = true,
                          .depth = 6});
  ASSERT_TRUE(a.ok());
  auto b1 = (*a)->allocate(20 * kMiB), b2 = (*a)->allocate(20 * kMiB);
  ASSERT_TRUE(b1.ok() && b2.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ((*a)->prefaulted(), 40 * kMiB);  // 40 + 20 > 48: the top 8 MiB are not warmed
  EXPECT_EQ(resident_bytes(**a, 40 * kMiB, 48 * kMiB), 0u);
  auto b3 = (*a)->allocate(6 * kMiB);
  ASSERT_TRUE(b3.ok());
  EXPECT_EQ(resident_bytes(**a, b3->offset, b3->offset + b3->size), 6 * kMiB);
  EXPECT_NE((*a)->describe().find("capped"), std::string::npos) << (*a)->describe();
  for (auto& b : {*b1, *b2, *b3}) (*a)->release(b);
}

// After stop_prefault() the thread is gone: a larger plan warms nothing ahead, though blocks
// are still resident when handed out.
TEST(ArenaWarmTest, StoppedWarmingOnlyPopulatesBlocksHandedOut) {
  auto a = Arena::create({.bytes = 256 * kMiB, .shared = true, .name = "warm-stop", .warm = true});
  ASSERT_TRUE(a.ok());
  (*a)->stop_prefault();
  (*a)->plan(64 * kMiB);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_LE(resident_bytes(**a, 0, 256 * kMiB), 2 * kMiB);
  auto b = (*a)->allocate(4 * kMiB);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(resident_bytes(**a, 0, 4 * kMiB), 4 * kMiB);
  EXPECT_EQ(resident_bytes(**a, 6 * kMiB, 256 * kMiB), 0u);
  (*a)->release(*b);
}

// An in-process arena asks for huge pages on a 2 MiB boundary; a shared one keeps its memfd.
TEST(ArenaWarmTest, InProcessArenaIsHugePageAligned) {
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

TEST(ArenaWarmTest, OffByDefault) {
  auto a = Arena::create({.bytes = 8 << 20, .shared = true, .name = "no-warm"});
  ASSERT_TRUE(a.ok());
  auto b = (*a)->allocate(4 << 20);
  ASSERT_TRUE(b.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ((*a)->prefaulted(), 0u);
  EXPECT_EQ(resident_bytes(**a, 0, 8 << 20), 0u);  // touched by the writer only
  (*a)->release(*b);
}

}  // namespace
}  // namespace stoker::batch
