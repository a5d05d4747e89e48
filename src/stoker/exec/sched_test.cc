#include "stoker/exec/sched.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <atomic>
#include <latch>
#include <thread>

#include "stoker/exec/thread_pool.h"

namespace stoker::exec {
namespace {

TEST(SchedTest, NamesRoundTripAndUnknownNamesAreRejected) {
  for (SchedClass c : {SchedClass::kNormal, SchedClass::kBatch, SchedClass::kIdle}) {
    auto parsed = parse_sched_class(sched_class_name(c));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, c);
  }
  auto bad = parse_sched_class("realtime");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(bad.error().message().find("normal, batch, idle"), std::string::npos);
}

#if defined(__linux__)
// The kernel's own view (sched_getscheduler), not our enum, decides.
TEST(SchedTest, SetsOnlyTheCallingThread) {
  const int before = sched_getscheduler(0);
  std::thread t([] {
    ASSERT_TRUE(set_current_thread_sched(SchedClass::kBatch).ok());
    EXPECT_EQ(sched_getscheduler(0), SCHED_BATCH);
    EXPECT_EQ(current_thread_sched(), SchedClass::kBatch);
    ASSERT_TRUE(set_current_thread_sched(SchedClass::kIdle).ok());
    EXPECT_EQ(sched_getscheduler(0), SCHED_IDLE);
  });
  t.join();
  EXPECT_EQ(sched_getscheduler(0), before);  // the test's own thread is untouched
}

TEST(SchedTest, PoolWorkersRunTasksInTheRequestedClass) {
  const int caller = sched_getscheduler(0);
  for (SchedClass c : {SchedClass::kNormal, SchedClass::kBatch, SchedClass::kIdle}) {
    auto pool = ThreadPool::create({.num_threads = 3, .name = "sched-test", .sched = c});
    ASSERT_TRUE(pool.ok());
    const int want = c == SchedClass::kBatch ? SCHED_BATCH
                     : c == SchedClass::kIdle ? SCHED_IDLE
                                               : SCHED_OTHER;
    std::latch all_running(3);  // one task per worker: every worker is checked
    std::atomic<int> right{0};
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE((*pool)
                      ->submit([&] {
                        all_running.arrive_and_wait();
                        if (sched_getscheduler(0) == want) right++;
                      })
                      .ok());
    }
    (*pool)->wait_idle();
    EXPECT_EQ(right.load(), 3) << sched_class_name(c);
    EXPECT_TRUE((*pool)->sched_status().ok());
  }
  EXPECT_EQ(sched_getscheduler(0), caller);
}
#endif

}  // namespace
}  // namespace stoker::exec
