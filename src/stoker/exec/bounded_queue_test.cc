#include "stoker/exec/bounded_queue.h"

#include <gtest/gtest.h>

#include <atomic>
#include <latch>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace stoker::exec {
namespace {

using Clock = std::chrono::steady_clock;

TEST(BoundedQueueTest, FifoAndNonBlockingEdges) {
  BoundedQueue<int> q(3);
  EXPECT_FALSE(q.try_pop().has_value());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(q.try_push(i), QueueOp::kOk);
  EXPECT_EQ(q.try_push(99), QueueOp::kFull);
  EXPECT_EQ(q.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(q.try_pop(), i);
  EXPECT_FALSE(q.try_pop().has_value());
  EXPECT_FALSE(q.drained());  // empty but open: more may come
}

TEST(BoundedQueueTest, CloseDeliversWhatIsQueuedThenEnds) {
  BoundedQueue<std::string> q(4);
  ASSERT_TRUE(q.push("a"));
  ASSERT_TRUE(q.push("b"));
  q.close();
  EXPECT_TRUE(q.closed());
  EXPECT_FALSE(q.drained());
  EXPECT_FALSE(q.push("c"));
  EXPECT_EQ(q.try_push("c"), QueueOp::kClosed);
  EXPECT_EQ(q.pop(), "a");
  EXPECT_EQ(q.pop(), "b");
  EXPECT_EQ(q.pop(), std::nullopt);
  EXPECT_TRUE(q.drained());
  q.close();  // idempotent
}

TEST(BoundedQueueTest, FailedPushLeavesValueWithCaller) {
  BoundedQueue<std::unique_ptr<int>> q(1);
  ASSERT_TRUE(q.push(std::make_unique<int>(1)));
  auto v = std::make_unique<int>(2);
  EXPECT_EQ(q.try_push(std::move(v)), QueueOp::kFull);
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(q.push_until(std::move(v), Clock::now()), QueueOp::kTimeout);
  ASSERT_NE(v, nullptr);
  q.close();
  EXPECT_FALSE(q.push(std::move(v)));
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(*v, 2);
}

// A producer pushing into a full queue must block. Proof without sleeps: its push carries a
// stop_token; we request stop; a blocked push returns false, one that (wrongly) went through would
// have returned true and grown the queue past capacity.
TEST(BoundedQueueTest, FullQueueBlocksProducer) {
  BoundedQueue<int> q(2);
  ASSERT_TRUE(q.push(1));
  ASSERT_TRUE(q.push(2));
  std::stop_source stop;
  std::latch entered(1);
  bool pushed = true;
  std::thread producer([&] {
    entered.count_down();
    pushed = q.push(3, stop.get_token());
  });
  entered.wait();
  stop.request_stop();
  producer.join();
  EXPECT_FALSE(pushed);
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(q.push_until(3, Clock::now() + std::chrono::milliseconds(1)), QueueOp::kTimeout);
}

TEST(BoundedQueueTest, BlockedProducerResumesWhenConsumerPops) {
  BoundedQueue<int> q(1);
  ASSERT_TRUE(q.push(1));
  std::thread producer([&] { EXPECT_TRUE(q.push(2)); });
  EXPECT_EQ(q.pop(), 1);  // frees the slot the producer waits for
  EXPECT_EQ(q.pop(), 2);  // blocks until the producer got through
  producer.join();
}

TEST(BoundedQueueTest, CloseWakesBlockedConsumersAndProducers) {
  BoundedQueue<int> empty(1);
  std::vector<std::thread> consumers;
  std::atomic<int> ended{0};
  for (int i = 0; i < 4; ++i) {
    consumers.emplace_back([&] {
      if (!empty.pop().has_value()) ended++;
    });
  }
  BoundedQueue<int> full(1);
  ASSERT_TRUE(full.push(0));
  std::atomic<int> refused{0};
  std::vector<std::thread> producers;
  for (int i = 0; i < 4; ++i) {
    producers.emplace_back([&] {
      if (!full.push(1)) refused++;
    });
  }
  empty.close();
  full.close();
  for (auto& t : consumers) t.join();
  for (auto& t : producers) t.join();
  EXPECT_EQ(ended.load(), 4);
  EXPECT_EQ(refused.load(), 4);
  EXPECT_EQ(full.pop(), 0);  // what was queued before close still comes out
}

TEST(BoundedQueueTest, PopUntilTimesOutWithoutEndingTheStream) {
  BoundedQueue<int> q(1);
  auto got = q.pop_until(Clock::now() + std::chrono::milliseconds(2));
  EXPECT_FALSE(got.has_value());
  EXPECT_FALSE(q.drained());
  ASSERT_TRUE(q.push(5));
  EXPECT_EQ(q.pop_until(Clock::now() + std::chrono::seconds(60)), 5);
}

TEST(BoundedQueueTest, StopTokenInterruptsBlockedPop) {
  BoundedQueue<int> q(1);
  std::stop_source stop;
  std::optional<int> got = 7;
  std::thread consumer([&] { got = q.pop(stop.get_token()); });
  stop.request_stop();
  consumer.join();
  EXPECT_FALSE(got.has_value());
  EXPECT_FALSE(q.closed());
}

// Many producers and consumers through a small queue: every item arrives exactly once, and each
// consumer sees any one producer's items in the order they were pushed.
TEST(BoundedQueueTest, ManyProducersManyConsumersExactlyOnceInOrder) {
  constexpr int kProducers = 8;
  constexpr int kConsumers = 8;
  constexpr int kPerProducer = 20000;
  BoundedQueue<std::pair<int, int>> q(16);
  std::vector<std::atomic<int>> seen(kProducers * kPerProducer);
  std::atomic<int> order_violations{0};

  std::vector<std::thread> consumers;
  for (int c = 0; c < kConsumers; ++c) {
    consumers.emplace_back([&] {
      std::vector<int> last(kProducers, -1);
      while (auto item = q.pop()) {
        auto [p, i] = *item;
        if (i <= last[p]) order_violations++;
        last[p] = i;
        seen[p * kPerProducer + i].fetch_add(1);
      }
    });
  }
  std::vector<std::thread> producers;
  for (int p = 0; p < kProducers; ++p) {
    producers.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i) ASSERT_TRUE(q.push(std::make_pair(p, i)));
    });
  }
  for (auto& t : producers) t.join();
  q.close();
  for (auto& t : consumers) t.join();

  EXPECT_EQ(order_violations.load(), 0);
  int missing = 0;
  int duplicated = 0;
  for (auto& s : seen) {
    if (s.load() == 0) missing++;
    if (s.load() > 1) duplicated++;
  }
  EXPECT_EQ(missing, 0);
  EXPECT_EQ(duplicated, 0);
  EXPECT_TRUE(q.drained());
}

TEST(BoundedQueueTest, NeverHoldsMoreThanCapacity) {
  constexpr std::size_t kCapacity = 3;
  BoundedQueue<int> q(kCapacity);
  std::atomic<bool> over{false};
  std::thread consumer([&] {
    while (q.pop()) {
      if (q.size() > kCapacity) over = true;
    }
  });
  std::vector<std::thread> producers;
  for (int p = 0; p < 4; ++p) {
    producers.emplace_back([&] {
      for (int i = 0; i < 5000; ++i) {
        ASSERT_TRUE(q.push(i));
        if (q.size() > kCapacity) over = true;
      }
    });
  }
  for (auto& t : producers) t.join();
  q.close();
  consumer.join();
  EXPECT_FALSE(over.load());
}

}  // namespace
}  // namespace stoker::exec
