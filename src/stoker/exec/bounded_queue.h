// BoundedQueue<T>: the FIFO channel between pipeline stages, with a fixed capacity so a fast
// producer blocks (backpressure) instead of growing memory. Any number of producers and consumers.
// close() ends the stream: pushes fail from then on, every blocked caller wakes, and consumers
// still receive what was queued; pop() returns nullopt only once the queue is closed and drained.
// Blocking calls also return early when their std::stop_token fires. A value is moved into the
// queue only on success: a failed push leaves the caller's object untouched.
// Thread-safe. No errors beyond the QueueOp outcome; capacity 0 is a bug (aborts).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <stop_token>
#include <utility>

#include "stoker/base/result.h"

namespace stoker::exec {

enum class QueueOp {
  kOk,
  kFull,       // try_push only
  kClosed,     // push side: the queue is closed
  kTimeout,    // the deadline passed first
  kCancelled,  // the stop_token fired first
};

template <typename T>
class BoundedQueue {
 public:
  using Clock = std::chrono::steady_clock;

  explicit BoundedQueue(std::size_t capacity) : capacity_(capacity) {
    STOKER_CHECK(capacity > 0, "BoundedQueue capacity must be at least 1");
  }
  BoundedQueue(const BoundedQueue&) = delete;
  BoundedQueue& operator=(const BoundedQueue&) = delete;

  // Blocks while full. True when queued; false when closed or `stop` fired (value not moved from).
  template <typename U>
  bool push(U&& value, std::stop_token stop = {}) {
    return push_until(std::forward<U>(value), Clock::time_point::max(), std::move(stop)) ==
           QueueOp::kOk;
  }

  // Never blocks: kOk, kFull or kClosed.
  template <typename U>
  QueueOp try_push(U&& value) {
    std::unique_lock lock(mu_);
    if (closed_) return QueueOp::kClosed;
    if (items_.size() >= capacity_) return QueueOp::kFull;
    items_.emplace_back(std::forward<U>(value));
    lock.unlock();
    not_empty_.notify_one();
    return QueueOp::kOk;
  }

  // Blocks while full until `deadline`: kOk, kClosed, kTimeout or kCancelled.
  template <typename U>
  QueueOp push_until(U&& value, Clock::time_point deadline, std::stop_token stop = {}) {
    std::unique_lock lock(mu_);
    auto has_room = [this] { return closed_ || items_.size() < capacity_; };
    if (!wait(not_full_, lock, deadline, stop, has_room)) {
      return stop.stop_requested() ? QueueOp::kCancelled : QueueOp::kTimeout;
    }
    if (closed_) return QueueOp::kClosed;
    items_.emplace_back(std::forward<U>(value));
    lock.unlock();
    not_empty_.notify_one();
    return QueueOp::kOk;
  }

  // Blocks while empty and open. nullopt: closed and drained, or `stop` fired.
  std::optional<T> pop(std::stop_token stop = {}) {
    return pop_until(Clock::time_point::max(), std::move(stop));
  }

  // Never blocks. nullopt: nothing queued right now (drained() tells whether for good).
  std::optional<T> try_pop() {
    std::unique_lock lock(mu_);
    if (items_.empty()) return std::nullopt;
    return take(lock);
  }

  // Blocks while empty and open until `deadline`. nullopt: closed and drained, the deadline
  // passed, or `stop` fired. drained() is final once true, so `!q.drained()` after a nullopt
  // reliably means "timed out / cancelled, the stream goes on".
  std::optional<T> pop_until(Clock::time_point deadline, std::stop_token stop = {}) {
    std::unique_lock lock(mu_);
    auto has_item = [this] { return closed_ || !items_.empty(); };
    if (!wait(not_empty_, lock, deadline, stop, has_item)) return std::nullopt;
    if (items_.empty()) return std::nullopt;  // closed and drained
    return take(lock);
  }

  // Ends the stream; wakes every waiter. Idempotent.
  void close() {
    {
      std::lock_guard lock(mu_);
      closed_ = true;
    }
    not_full_.notify_all();
    not_empty_.notify_all();
  }

  bool closed() const {
    std::lock_guard lock(mu_);
    return closed_;
  }
  // Closed and empty: no value will ever come out again.
  bool drained() const {
    std::lock_guard lock(mu_);
    return closed_ && items_.empty();
  }
  std::size_t size() const {
    std::lock_guard lock(mu_);
    return items_.size();
  }
  std::size_t capacity() const { return capacity_; }

 private:
  // Waits for `ready` (true) or the deadline / stop (false). condition_variable_any is what lets
  // a std::stop_token interrupt the wait without polling.
  template <typename Pred>
  static bool wait(std::condition_variable_any& cv, std::unique_lock<std::mutex>& lock,
                   Clock::time_point deadline, std::stop_token& stop, Pred ready) {
    if (deadline == Clock::time_point::max()) return cv.wait(lock, stop, ready);
    return cv.wait_until(lock, stop, deadline, ready);
  }

  std::optional<T> take(std::unique_lock<std::mutex>& lock) {
    std::optional<T> out(std::move(items_.front()));
    items_.pop_front();
    lock.unlock();
    not_full_.notify_one();
    return out;
  }

  const std::size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable_any not_full_;
  std::condition_variable_any not_empty_;
  std::deque<T> items_;
  bool closed_ = false;
};

}  // namespace stoker::exec
