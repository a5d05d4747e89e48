#include "stoker/exec/future.h"

#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <semaphore>
#include <string>
#include <thread>
#include <vector>

namespace stoker::exec {
namespace {

TEST(FutureTest, GetReturnsWhatWasSet) {
  auto [promise, future] = make_promise_future<std::string>();
  EXPECT_FALSE(future.ready());
  promise.set(std::string("hello"));
  EXPECT_TRUE(future.ready());
  ASSERT_TRUE(future.get().ok());
  EXPECT_EQ(*future.get(), "hello");
}

TEST(FutureTest, GetBlocksUntilAnotherThreadSets) {
  auto [promise, future] = make_promise_future<int>();
  std::thread setter([p = std::move(promise)]() mutable { p.set(7); });
  EXPECT_EQ(*future.get(), 7);
  setter.join();
}

TEST(FutureTest, CarriesErrors) {
  auto [promise, future] = make_promise_future<int>();
  promise.set(not_found("no such object"));
  ASSERT_FALSE(future.get().ok());
  EXPECT_EQ(future.get().error().code(), ErrorCode::kNotFound);
}

TEST(FutureTest, DroppedPromiseCompletesWithCancelled) {
  Future<int> future;
  {
    auto [promise, f] = make_promise_future<int>();
    future = std::move(f);
  }
  ASSERT_TRUE(future.ready());
  EXPECT_EQ(future.get().error().code(), ErrorCode::kCancelled);
}

TEST(FutureTest, VoidFutureCarriesStatus) {
  auto [promise, future] = make_promise_future<void>();
  promise.set(ok_status());
  EXPECT_TRUE(future.get().ok());
}

TEST(FutureTest, WaitUntilTimesOut) {
  auto [promise, future] = make_promise_future<int>();
  EXPECT_FALSE(future.wait_until(std::chrono::steady_clock::now() + std::chrono::milliseconds(1)));
  promise.set(1);
  EXPECT_TRUE(future.wait_until(std::chrono::steady_clock::now()));
}

TEST(FutureTest, OnReadyAfterSetRunsImmediately) {
  auto [promise, future] = make_promise_future<int>();
  promise.set(3);
  int got = 0;
  std::move(future).on_ready([&](Result<int> r) { got = *r; });
  EXPECT_EQ(got, 3);
  EXPECT_FALSE(future.valid());
}

TEST(FutureTest, OnReadyBeforeSetRunsOnSettingThread) {
  auto [promise, future] = make_promise_future<int>();
  std::thread::id ran_on;
  int got = 0;
  std::move(future).on_ready([&](Result<int> r) {
    ran_on = std::this_thread::get_id();
    got = *r;
  });
  std::thread setter([&, p = std::move(promise)]() mutable { p.set(5); });
  const std::thread::id setter_id = setter.get_id();
  setter.join();
  EXPECT_EQ(got, 5);
  EXPECT_EQ(ran_on, setter_id);
}

TEST(FutureTest, CallbackRunsExactlyOnceUnderRace) {
  for (int round = 0; round < 500; ++round) {
    auto [promise, future] = make_promise_future<int>();
    std::atomic<int> calls{0};
    std::latch go(2);
    std::thread setter([&, p = std::move(promise)]() mutable {
      go.arrive_and_wait();
      p.set(round);
    });
    go.arrive_and_wait();
    std::move(future).on_ready([&](Result<int> r) {
      EXPECT_EQ(*r, round);
      calls++;
    });
    setter.join();
    ASSERT_EQ(calls.load(), 1) << "round " << round;
  }
}

TEST(FutureTest, RunAsyncDeliversResultsFromThePool) {
  ThreadPool pool(4);
  std::vector<Future<int>> futures;
  for (int i = 0; i < 1000; ++i) {
    futures.push_back(run_async<int>(pool, [i]() -> Result<int> {
      if (i % 7 == 0) return invalid_argument("seven");
      return i * 2;
    }));
  }
  for (int i = 0; i < 1000; ++i) {
    auto& r = futures[i].get();
    if (i % 7 == 0) {
      EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
    } else {
      EXPECT_EQ(*r, i * 2);
    }
  }
}

TEST(FutureTest, RunAsyncOnShutDownPoolIsCancelled) {
  ThreadPool pool(1);
  pool.shutdown();
  auto f = run_async<int>(pool, [] { return Result<int>(1); });
  ASSERT_TRUE(f.ready());
  EXPECT_EQ(f.get().error().code(), ErrorCode::kCancelled);
}

// A cancelling shutdown drops queued tasks; their futures must complete (Cancelled), not hang.
TEST(FutureTest, CancelShutdownCompletesQueuedFutures) {
  ThreadPool pool(1);
  std::binary_semaphore gate(0);
  std::latch started(1);
  auto blocker = run_async<void>(pool, [&] {
    started.count_down();
    gate.acquire();
    return ok_status();
  });
  std::vector<Future<int>> queued;
  for (int i = 0; i < 50; ++i) queued.push_back(run_async<int>(pool, [] { return Result<int>(1); }));
  started.wait();
  std::thread closer([&] { pool.shutdown(ShutdownMode::kCancel); });
  for (auto& f : queued) {
    // A deadline, not get(): a pool that ran instead of dropping would hang here behind the gate.
    ASSERT_TRUE(f.wait_until(std::chrono::steady_clock::now() + std::chrono::seconds(30)));
    EXPECT_EQ(f.get().error().code(), ErrorCode::kCancelled);
  }
  gate.release();
  closer.join();
  EXPECT_TRUE(blocker.get().ok());
}

}  // namespace
}  // namespace stoker::exec
