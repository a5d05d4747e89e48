#include "stoker/exec/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <latch>
#include <memory>
#include <mutex>
#include <semaphore>
#include <thread>

namespace stoker::exec {
namespace {

TEST(ThreadPoolTest, RunsEveryTaskExactlyOnce) {
  ThreadPool pool(8);
  constexpr int kTasks = 20000;
  std::vector<std::atomic<int>> runs(kTasks);
  for (int i = 0; i < kTasks; ++i) {
    ASSERT_TRUE(pool.submit([&runs, i] { runs[i].fetch_add(1); }).ok());
  }
  pool.wait_idle();
  for (int i = 0; i < kTasks; ++i) ASSERT_EQ(runs[i].load(), 1) << "task " << i;
}

TEST(ThreadPoolTest, UsesSeveralThreads) {
  ThreadPool pool(4);
  // Every task waits until all four are running at once: only possible on four threads.
  std::latch all_running(4);
  std::atomic<int> done{0};
  for (int i = 0; i < 4; ++i) {
    ASSERT_TRUE(pool.submit([&] { all_running.arrive_and_wait(); done++; }).ok());
  }
  pool.wait_idle();
  EXPECT_EQ(done.load(), 4);
}

TEST(ThreadPoolTest, AcceptsMoveOnlyClosures) {
  ThreadPool pool(2);
  std::atomic<int> seen{0};
  auto owned = std::make_unique<int>(42);
  ASSERT_TRUE(pool.submit([p = std::move(owned), &seen] { seen = *p; }).ok());
  pool.wait_idle();
  EXPECT_EQ(seen.load(), 42);
}

TEST(ThreadPoolTest, TasksMaySubmitTasksAndWaitIdleCoversThem) {
  ThreadPool pool(4);
  std::atomic<int> leaves{0};
  // A binary tree of depth 10, each node submitted by its parent: 1024 leaves.
  std::function<void(int)> node = [&](int depth) {
    if (depth == 0) {
      leaves++;
      return;
    }
    for (int c = 0; c < 2; ++c) ASSERT_TRUE(pool.submit([&node, depth] { node(depth - 1); }).ok());
  };
  ASSERT_TRUE(pool.submit([&] { node(10); }).ok());
  pool.wait_idle();
  EXPECT_EQ(leaves.load(), 1024);
}

TEST(ThreadPoolTest, DrainShutdownRunsEverythingAccepted) {
  ThreadPool pool(1);
  std::binary_semaphore gate(0);
  std::atomic<int> ran{0};
  ASSERT_TRUE(pool.submit([&] { gate.acquire(); }).ok());  // holds the only worker
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(pool.submit([&] { ran++; }).ok());

  std::thread closer([&] { pool.shutdown(ShutdownMode::kDrain); });
  // Keep submitting until the pool refuses: from then on it is closing. Every accepted task must
  // still run; no refused one may.
  int accepted_late = 0;
  while (pool.submit([&] { ran++; }).ok()) ++accepted_late;
  gate.release();
  closer.join();
  EXPECT_EQ(ran.load(), 100 + accepted_late);
  EXPECT_EQ(pool.submit([] {}).error().code(), ErrorCode::kCancelled);
}

struct DestroyCounter {
  explicit DestroyCounter(std::atomic<int>* c) : count(c) {}
  DestroyCounter(DestroyCounter&& o) noexcept : count(std::exchange(o.count, nullptr)) {}
  ~DestroyCounter() {
    if (count) (*count)++;
  }
  std::atomic<int>* count;
};

TEST(ThreadPoolTest, CancelShutdownDropsQueuedAndStopsRunning) {
  ThreadPool pool(1);
  std::latch started(1);
  std::atomic<bool> saw_stop{false};
  ASSERT_TRUE(pool.submit([&](std::stop_token stop) {
                    started.count_down();
                    std::mutex mu;
                    std::condition_variable_any cv;
                    std::unique_lock lock(mu);
                    cv.wait(lock, stop, [] { return false; });  // until cancelled
                    saw_stop = stop.stop_requested();
                  })
                  .ok());
  std::atomic<int> ran{0};
  std::atomic<int> destroyed{0};
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(pool.submit([&ran, guard = DestroyCounter(&destroyed)] { ran++; }).ok());
  }
  started.wait();
  pool.shutdown(ShutdownMode::kCancel);
  EXPECT_TRUE(saw_stop.load());
  EXPECT_EQ(ran.load(), 0);
  EXPECT_EQ(destroyed.load(), 100);  // dropped tasks' captures are released, not leaked
  EXPECT_EQ(pool.queued(), 0u);
}

TEST(ThreadPoolTest, ShutdownIsIdempotentAndDestructorAfterShutdownIsFine) {
  auto pool = std::make_unique<ThreadPool>(3);
  std::atomic<int> ran{0};
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(pool->submit([&] { ran++; }).ok());
  pool->shutdown();
  pool->shutdown(ShutdownMode::kCancel);
  pool.reset();
  EXPECT_EQ(ran.load(), 10);
}

TEST(ThreadPoolTest, DestructorDrains) {
  std::atomic<int> ran{0};
  {
    ThreadPool pool(2);
    for (int i = 0; i < 1000; ++i) ASSERT_TRUE(pool.submit([&] { ran++; }).ok());
  }
  EXPECT_EQ(ran.load(), 1000);
}

TEST(ThreadPoolTest, KnowsItsWorkerThreads) {
  ThreadPool pool(2);
  std::atomic<bool> inside{false};
  ASSERT_TRUE(pool.submit([&] { inside = pool.on_worker_thread(); }).ok());
  pool.wait_idle();
  EXPECT_TRUE(inside.load());
  EXPECT_FALSE(pool.on_worker_thread());
}

TEST(ThreadPoolTest, CreateValidatesOptions) {
  auto bad = ThreadPool::create({.num_threads = -1});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  auto good = ThreadPool::create({.num_threads = 0, .name = "t"});
  ASSERT_TRUE(good.ok());
  EXPECT_GE((*good)->num_threads(), 1);
}

}  // namespace
}  // namespace stoker::exec
