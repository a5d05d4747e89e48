#include "stoker/cluster/comm.h"

#include <mpi.h>
#include <pthread.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstdio>
#include <string>

namespace stoker::cluster {

namespace {

[[noreturn]] void die(const std::string& why) {
  std::fprintf(stderr, "stoker cluster: %s\n", why.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 70);
  std::abort();
}

constexpr int kPostedMaxUs = 1000;
constexpr int kIdleMaxUs = 4000;

double thread_cpu_now_s() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

int count_of(std::uint64_t bytes) {
  // One sample's pixels in one message: over 2 GiB is refused loudly (max_pixels keeps real
  // samples far below it).
  if (bytes > static_cast<std::uint64_t>(INT_MAX)) {
    die("a message of " + std::to_string(bytes) + " bytes exceeds MPI's int count");
  }
  return static_cast<int>(bytes);
}

}  // namespace

Comm::Comm(std::vector<int> probe_tags, Handler handler)
    : probe_tags_(std::move(probe_tags)), handler_(std::move(handler)) {
  thread_ = std::thread([this] {
    loop();
    cpu_ns_.store(static_cast<std::int64_t>(thread_cpu_now_s() * 1e9));
  });
}

double Comm::progress_cpu_s() const {
  const std::int64_t ended = cpu_ns_.load();
  if (ended >= 0) return ended * 1e-9;
  clockid_t clock;
  timespec ts{};
  if (pthread_getcpuclockid(const_cast<std::thread&>(thread_).native_handle(), &clock) != 0 ||
      ::clock_gettime(clock, &ts) != 0) {
    return 0;
  }
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

Comm::~Comm() { stop(); }

std::shared_ptr<BufferPool::Buffer> BufferPool::get(std::size_t bytes) {
  std::shared_ptr<Buffer> b;
  {
    std::lock_guard lock(mu_);
    // The smallest free buffer that is large enough.
    std::size_t best = free_.size();
    for (std::size_t i = 0; i < free_.size(); ++i) {
      if (free_[i]->capacity >= bytes &&
          (best == free_.size() || free_[i]->capacity < free_[best]->capacity))
        best = i;
    }
    if (best < free_.size()) {
      b = std::move(free_[best]);
      free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(best));
    }
  }
  if (!b) {
    b = std::make_shared<Buffer>();
    b->data.reset(new std::uint8_t[std::max<std::size_t>(bytes, 1)]);
    b->capacity = bytes;
  }
  b->size = bytes;
  return b;
}

void BufferPool::put(std::shared_ptr<Buffer> b) {
  std::lock_guard lock(mu_);
  free_.push_back(std::move(b));
}

void Comm::send(int dest, int tag, std::vector<std::uint8_t> bytes, std::function<void()> done) {
  auto keep = std::make_shared<std::vector<std::uint8_t>>(std::move(bytes));
  const void* data = keep->data();
  const std::uint64_t size = keep->size();
  send(dest, tag, data, size, std::move(keep), std::move(done));
}

void Comm::send(int dest, int tag, const void* data, std::uint64_t size,
                std::shared_ptr<void> keep, std::function<void()> done) {
  Op op;
  op.is_send = true;
  op.peer = dest;
  op.tag = tag;
  op.bytes = size;
  op.dst = const_cast<void*>(data);
  op.keep = std::move(keep);
  op.done = std::move(done);
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(op));
  }
  cv_.notify_one();
}

void Comm::recv(int source, int tag, void* dst, std::uint64_t bytes, std::function<void()> done) {
  Op op;
  op.peer = source;
  op.tag = tag;
  op.dst = dst;
  op.bytes = bytes;
  op.done = std::move(done);
  {
    std::lock_guard lock(mu_);
    queue_.push_back(std::move(op));
  }
  cv_.notify_one();
}

void Comm::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void Comm::loop() {
  std::vector<MPI_Request> reqs;
  std::vector<Op> active;
  std::vector<int> indices;
  std::vector<MPI_Status> statuses;
  int idle_us = 0;
  for (;;) {
    bool progress = false, stopping = false;
    std::deque<Op> fresh;
    {
      std::lock_guard lock(mu_);
      fresh.swap(queue_);
      stopping = stopping_;
    }
    for (Op& op : fresh) {
      MPI_Request r;
      const int n = count_of(op.bytes);
      if (op.is_send) {
        MPI_Isend(op.dst, n, MPI_BYTE, op.peer, op.tag, MPI_COMM_WORLD, &r);
      } else {
        MPI_Irecv(op.dst, n, MPI_BYTE, op.peer, op.tag, MPI_COMM_WORLD, &r);
      }
      reqs.push_back(r);
      active.push_back(std::move(op));
      progress = true;
    }
    if (!reqs.empty()) {
      int outcount = 0;
      indices.resize(reqs.size());
      statuses.resize(reqs.size());
      MPI_Testsome(static_cast<int>(reqs.size()), reqs.data(), &outcount, indices.data(),
                   statuses.data());
      if (outcount != MPI_UNDEFINED && outcount > 0) {
        progress = true;
        std::vector<bool> finished(reqs.size(), false);
        for (int i = 0; i < outcount; ++i) finished[indices[i]] = true;
        std::vector<MPI_Request> keep_reqs;
        std::vector<Op> keep_ops;
        std::vector<Op> completed;
        for (std::size_t i = 0; i < reqs.size(); ++i) {
          if (finished[i]) {
            completed.push_back(std::move(active[i]));
          } else {
            keep_reqs.push_back(reqs[i]);
            keep_ops.push_back(std::move(active[i]));
          }
        }
        reqs.swap(keep_reqs);
        active.swap(keep_ops);
        for (Op& op : completed) {
          (op.is_send ? sent_ : received_).fetch_add(op.bytes);
          if (op.done) op.done();
        }
      }
    }
    for (int tag : probe_tags_) {
      for (;;) {
        int flag = 0;
        MPI_Message msg;
        MPI_Status st;
        MPI_Improbe(MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, &flag, &msg, &st);
        if (!flag) break;
        int n = 0;
        MPI_Get_count(&st, MPI_BYTE, &n);
        std::vector<std::uint8_t> bytes(static_cast<std::size_t>(n));
        MPI_Mrecv(bytes.data(), n, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
        received_.fetch_add(static_cast<std::uint64_t>(n));
        handler_(st.MPI_SOURCE, tag, std::move(bytes));
        progress = true;
      }
    }
    if (progress) {
      idle_us = 0;
      continue;
    }
    if (stopping && active.empty()) {
      std::lock_guard lock(mu_);
      if (queue_.empty()) return;
      continue;
    }
    // Idle: back off from 20 µs, doubling, to kPostedMaxUs while transfers are posted and
    // kIdleMaxUs otherwise; any progress (a completion, a message) starts again at 20 µs, and a
    // queued operation wakes the thread at once. MPI's TCP transport moves data only inside MPI
    // calls, but a call moves what the socket buffers hold (MBs: Linux autotunes them), so a
    // 1 ms poll keeps a transfer going at GB/s while a 100 µs spin (the old cap) cost ~80% of a
    // 0.2-core host on shaped NICs; progress_cpu_s() says what it costs now.
    idle_us = idle_us == 0 ? 20 : std::min(idle_us * 2, active.empty() ? kIdleMaxUs : kPostedMaxUs);
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::microseconds(idle_us),
                 [&] { return !queue_.empty() || stopping_ != stopping; });
  }
}

}  // namespace stoker::cluster
