// ThreadPool: a fixed set of worker threads (std::jthread) running submitted closures in FIFO
// order. Tasks return void and must not throw (the core uses no exceptions; a throwing task
// terminates the process). A task may take a std::stop_token: it fires when the pool is shut down
// with ShutdownMode::kCancel, so long tasks can return early.
// Shutdown either drains (every accepted task runs) or cancels (queued tasks are destroyed without
// running; running ones see their stop_token fire); the destructor drains. After shutdown begins,
// submit() refuses new work with Cancelled. Thread-safe; submit() never blocks (the queue is not
// bounded here: stages bound their work with BoundedQueue / in-flight budgets upstream).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/exec/detail/task.h"
#include "stoker/exec/sched.h"

namespace stoker::exec {

struct ThreadPoolOptions {
  int num_threads = 0;  // 0: std::thread::hardware_concurrency() (at least 1)
  std::string name = "stoker-pool";  // worker thread names: "<name>/<i>", cut to 15 bytes
  // Each worker moves itself to this class before its first task (sched.h). A worker the kernel
  // refuses stays in its inherited class; sched_status() reports the first refusal.
  SchedClass sched = SchedClass::kNormal;

  Status validate() const;
};

enum class ShutdownMode {
  kDrain,   // stop accepting; run everything already queued; join
  kCancel,  // stop accepting; destroy queued tasks unrun; request stop on running ones; join
};

class ThreadPool {
 public:
  static Result<std::unique_ptr<ThreadPool>> create(const ThreadPoolOptions& options);
  // Convenience for tests and tools: `n` threads, default name. Aborts on n < 1.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();  // shutdown(kDrain) unless already shut down

  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Queues `f` (callable as f() or f(std::stop_token)). Cancelled once shutdown has begun; the
  // closure is then destroyed on the calling thread without running.
  template <typename F>
  Status submit(F&& f) {
    return submit_task(detail::Task(std::forward<F>(f)));
  }

  // Blocks until no task is queued or running. Tasks submitted meanwhile are waited for too.
  // Must not be called from a worker of this pool (it would wait for itself).
  void wait_idle();

  // Idempotent; a second call with kCancel after kDrain has started cancels what is left.
  // Must not be called from a worker of this pool.
  void shutdown(ShutdownMode mode = ShutdownMode::kDrain);

  int num_threads() const { return static_cast<int>(workers_.size()); }
  // Queued, not yet started.
  std::size_t queued() const;
  // True on one of this pool's worker threads.
  bool on_worker_thread() const;
  // OK, or why a worker could not take the requested scheduling class (the pool still works).
  Status sched_status() const;

 private:
  ThreadPool(int num_threads, std::string name, SchedClass sched = SchedClass::kNormal);
  Status submit_task(detail::Task task);
  void worker_loop(const std::string& thread_name);

  mutable std::mutex mu_;
  std::condition_variable work_cv_;  // tasks queued or closing
  std::condition_variable idle_cv_;  // queue empty and nothing running
  std::condition_variable started_cv_;  // a worker has its class and name (started_)
  int started_ = 0;
  std::deque<detail::Task> queue_;
  int running_ = 0;
  bool closing_ = false;
  std::string name_;
  std::stop_source cancel_;  // its token is what tasks receive; fired by kCancel
  std::mutex join_mu_;       // one shutdown() joins; concurrent callers wait for it
  std::vector<std::jthread> workers_;
  std::vector<std::thread::id> worker_ids_;  // written before any task runs, then read-only
  SchedClass sched_ = SchedClass::kNormal;
  std::optional<Error> sched_error_;  // guarded by mu_
};

}  // namespace stoker::exec
