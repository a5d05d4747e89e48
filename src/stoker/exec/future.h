// Promise<T> / Future<T>: a one-shot hand-over of a Result<T> (Status for T = void) from the
// thread that computes it to the one that needs it. Deliberately minimal: wait, get, a deadline
// wait, and one ready callback — no combinators, no executors.
// The Promise is set at most once (a second set is a bug and aborts). A Promise destroyed unset
// (its task was dropped by a cancelling pool, or forgotten) completes the Future with Cancelled,
// so a waiter never hangs on a lost producer. Both are move-only; one Promise and one Future share
// a state, each usable from a different thread. A Future is for one consumer.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>

#include "stoker/base/result.h"
#include "stoker/exec/thread_pool.h"

namespace stoker::exec {

// What a Future<T> carries: Result<T>, or Status for void.
template <typename T>
using Outcome = std::conditional_t<std::is_void_v<T>, Status, Result<T>>;

namespace detail {

template <typename T>
struct SharedState {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<Outcome<T>> outcome;
  std::function<void(Outcome<T>)> callback;  // set by on_ready() before completion
};

}  // namespace detail

template <typename T>
class Future;

template <typename T>
class Promise {
 public:
  Promise() : state_(std::make_shared<detail::SharedState<T>>()) {}
  Promise(Promise&&) noexcept = default;
  Promise& operator=(Promise&& other) noexcept {
    if (this != &other) {
      break_if_unset();
      state_ = std::move(other.state_);
      future_taken_ = other.future_taken_;
    }
    return *this;
  }
  ~Promise() { break_if_unset(); }

  // The one Future for this promise. Calling twice is a bug.
  Future<T> get_future() {
    STOKER_CHECK(state_ != nullptr, "get_future() on a moved-from Promise");
    STOKER_CHECK(!future_taken_, "get_future() called twice");
    future_taken_ = true;
    return Future<T>(state_);
  }

  // Completes the future: wakes waiters, or runs the ready callback on this thread.
  void set(Outcome<T> outcome) {
    STOKER_CHECK(state_ != nullptr, "set() on a moved-from or already-set Promise");
    std::shared_ptr<detail::SharedState<T>> state = std::move(state_);
    std::function<void(Outcome<T>)> callback;
    {
      std::lock_guard lock(state->mu);
      if (state->callback) {
        callback = std::move(state->callback);
      } else {
        state->outcome.emplace(std::move(outcome));
      }
    }
    if (callback) {
      callback(std::move(outcome));
    } else {
      state->cv.notify_all();
    }
  }

 private:
  void break_if_unset() {
    if (state_ != nullptr) set(cancelled("promise dropped before it was set"));
  }

  std::shared_ptr<detail::SharedState<T>> state_;  // null once set or moved from
  bool future_taken_ = false;
};

template <typename T>
class Future {
 public:
  Future() = default;  // invalid until assigned
  Future(Future&&) noexcept = default;
  Future& operator=(Future&&) noexcept = default;

  bool valid() const { return state_ != nullptr; }

  bool ready() const {
    check_valid();
    std::lock_guard lock(state_->mu);
    return state_->outcome.has_value();
  }

  void wait() const {
    check_valid();
    std::unique_lock lock(state_->mu);
    state_->cv.wait(lock, [this] { return state_->outcome.has_value(); });
  }

  // True when ready before `deadline`.
  bool wait_until(std::chrono::steady_clock::time_point deadline) const {
    check_valid();
    std::unique_lock lock(state_->mu);
    return state_->cv.wait_until(lock, deadline, [this] { return state_->outcome.has_value(); });
  }

  // Waits, then gives access to the outcome (the caller may move it out).
  Outcome<T>& get() {
    wait();
    return *state_->outcome;
  }

  // Consumes the future: `callback(Outcome<T>)` runs exactly once — right here if the outcome is
  // already in, else on the thread that sets the promise (inside Promise::set). Keep it short, or
  // hand the work to a pool.
  void on_ready(std::function<void(Outcome<T>)> callback) && {
    check_valid();
    std::shared_ptr<detail::SharedState<T>> state = std::move(state_);
    std::unique_lock lock(state->mu);
    if (state->outcome.has_value()) {
      Outcome<T> outcome = std::move(*state->outcome);
      lock.unlock();
      callback(std::move(outcome));
      return;
    }
    state->callback = std::move(callback);
  }

 private:
  friend class Promise<T>;
  explicit Future(std::shared_ptr<detail::SharedState<T>> state) : state_(std::move(state)) {}
  void check_valid() const { STOKER_CHECK(state_ != nullptr, "use of an invalid Future"); }

  std::shared_ptr<detail::SharedState<T>> state_;
};

// A linked pair, for the common "make both, hand the promise to a task" pattern.
template <typename T>
std::pair<Promise<T>, Future<T>> make_promise_future() {
  Promise<T> promise;
  Future<T> future = promise.get_future();
  return {std::move(promise), std::move(future)};
}

// Runs `f` (returning Outcome<T>, taking () or (std::stop_token)) on `pool`; the Future carries
// what it returns. If the pool refuses the task or drops it on a cancelling shutdown, the
// Future completes with Cancelled.
template <typename T, typename F>
Future<T> run_async(ThreadPool& pool, F&& f) {
  auto [promise, future] = make_promise_future<T>();
  Status submitted = pool.submit(
      [promise = std::move(promise), f = std::forward<F>(f)](std::stop_token stop) mutable {
        if constexpr (std::is_invocable_v<F&, std::stop_token>) {
          promise.set(f(std::move(stop)));
        } else {
          promise.set(f());
        }
      });
  (void)submitted;  // a refused task destroys the promise, which completes the future
  return std::move(future);
}

}  // namespace stoker::exec
