#include "stoker/exec/thread_pool.h"

#include <pthread.h>

#include <algorithm>

namespace stoker::exec {

Status ThreadPoolOptions::validate() const {
  if (num_threads < 0) {
    return invalid_argument("thread pool: num_threads must be >= 0 (0 = one per CPU), got " +
                            std::to_string(num_threads));
  }
  if (num_threads > 4096) {
    return invalid_argument("thread pool: num_threads " + std::to_string(num_threads) +
                            " is not a sane pool size (max 4096)");
  }
  return ok_status();
}

Result<std::unique_ptr<ThreadPool>> ThreadPool::create(const ThreadPoolOptions& options) {
  STOKER_RETURN_IF_ERROR(options.validate());
  int n = options.num_threads;
  if (n == 0) n = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  return std::unique_ptr<ThreadPool>(new ThreadPool(n, options.name, options.sched));
}

ThreadPool::ThreadPool(int num_threads) : ThreadPool(num_threads, "stoker-pool") {}

ThreadPool::ThreadPool(int num_threads, std::string name, SchedClass sched)
    : name_(std::move(name)), sched_(sched) {
  STOKER_CHECK(num_threads >= 1, "a thread pool needs at least one thread");
  workers_.reserve(static_cast<std::size_t>(num_threads));
  for (int i = 0; i < num_threads; ++i) {
    // Linux limits thread names to 15 bytes; failure to name is harmless.
    std::string thread_name = (name_ + "/" + std::to_string(i)).substr(0, 15);
    workers_.emplace_back([this, thread_name] { worker_loop(thread_name); });
    worker_ids_.push_back(workers_.back().get_id());
  }
  // Each worker sets its class and then its name before the pool is handed out: whoever looks
  // at the threads afterwards (by name, /proc) sees them as they will run.
  std::unique_lock lock(mu_);
  started_cv_.wait(lock, [&] { return started_ == num_threads; });
}

ThreadPool::~ThreadPool() { shutdown(ShutdownMode::kDrain); }

Status ThreadPool::submit_task(detail::Task task) {
  {
    std::lock_guard lock(mu_);
    if (!closing_) {
      queue_.push_back(std::move(task));
      work_cv_.notify_one();
      return ok_status();
    }
  }
  // `task` is destroyed here, outside the lock: its destructor may do anything (break a promise).
  return cancelled("thread pool '" + name_ + "' is shut down; task not run");
}

void ThreadPool::worker_loop(const std::string& thread_name) {
  const std::stop_token stop = cancel_.get_token();
  Status sched = sched_ == SchedClass::kNormal ? ok_status() : set_current_thread_sched(sched_);
  // Named after its class is set: whoever finds a thread by its name sees its final class (a
  // name given by the creator was visible before the thread had run at all).
  pthread_setname_np(pthread_self(), thread_name.c_str());
  std::unique_lock lock(mu_);
  if (!sched.ok() && !sched_error_) sched_error_ = std::move(sched).error();
  ++started_;
  started_cv_.notify_all();
  for (;;) {
    work_cv_.wait(lock, [this] { return closing_ || !queue_.empty(); });
    if (queue_.empty()) return;  // closing and drained
    detail::Task task = std::move(queue_.front());
    queue_.pop_front();
    ++running_;
    lock.unlock();
    task(stop);
    task = detail::Task();  // destroy captured state before reporting idle
    lock.lock();
    --running_;
    if (running_ == 0 && queue_.empty()) idle_cv_.notify_all();
  }
}

void ThreadPool::wait_idle() {
  STOKER_CHECK(!on_worker_thread(), "wait_idle() from a worker of the same pool would deadlock");
  std::unique_lock lock(mu_);
  idle_cv_.wait(lock, [this] { return running_ == 0 && queue_.empty(); });
}

void ThreadPool::shutdown(ShutdownMode mode) {
  STOKER_CHECK(!on_worker_thread(), "shutdown() from a worker of the same pool would deadlock");
  std::deque<detail::Task> dropped;
  {
    std::lock_guard lock(mu_);
    closing_ = true;
    if (mode == ShutdownMode::kCancel) {
      dropped.swap(queue_);
      if (running_ == 0) idle_cv_.notify_all();
    }
    work_cv_.notify_all();
  }
  if (mode == ShutdownMode::kCancel) cancel_.request_stop();
  dropped.clear();  // destructors run here, outside the lock
  std::lock_guard join_lock(join_mu_);
  for (std::jthread& w : workers_) {
    if (w.joinable()) w.join();
  }
}

std::size_t ThreadPool::queued() const {
  std::lock_guard lock(mu_);
  return queue_.size();
}

Status ThreadPool::sched_status() const {
  std::lock_guard lock(mu_);
  if (sched_error_) return *sched_error_;
  return ok_status();
}

bool ThreadPool::on_worker_thread() const {
  const std::thread::id self = std::this_thread::get_id();
  return std::find(worker_ids_.begin(), worker_ids_.end(), self) != worker_ids_.end();
}

}  // namespace stoker::exec
