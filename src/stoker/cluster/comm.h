// Comm: the one thread of a process that talks MPI (MPI_COMM_WORLD). Other threads only queue
// operations — send a buffer, receive into caller memory — and get a callback when MPI has
// completed them; messages nobody asked for (requests, results, stops: `probe_tags`) are
// matched from any source and handed to `handler` whole. All point-to-point, non-blocking
// (Isend / Irecv / Improbe + Mrecv); the thread polls with an adaptive wait (see loop()): a
// queued operation wakes it at once, and it costs a small share of a core, which it measures
// (progress_cpu_s). Counts the bytes of every message sent and received. Thread-safe; callbacks
// run on the comm thread and must not block (they may queue more operations).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace stoker::cluster {

// Large message buffers, reused: a fresh 15 MB buffer per sample costs its page faults (and a
// vector's zero fill) again every time. Holds at most what was in flight at the peak.
class BufferPool {
 public:
  struct Buffer {
    std::unique_ptr<std::uint8_t[]> data;  // default-initialised: no zero fill
    std::size_t capacity = 0, size = 0;
  };
  // A buffer of `bytes` (contents undefined); give it back with put().
  std::shared_ptr<Buffer> get(std::size_t bytes);
  void put(std::shared_ptr<Buffer> b);

 private:
  std::mutex mu_;
  std::vector<std::shared_ptr<Buffer>> free_;
};

class Comm {
 public:
  using Handler = std::function<void(int source, int tag, std::vector<std::uint8_t>&& bytes)>;
  Comm(std::vector<int> probe_tags, Handler handler);
  ~Comm();  // stop()

  // Sends `bytes` (kept alive until MPI is done with them); `done` after completion.
  void send(int dest, int tag, std::vector<std::uint8_t> bytes, std::function<void()> done = {});
  // Sends `size` bytes at `data`; `keep` is held until MPI is done with them.
  void send(int dest, int tag, const void* data, std::uint64_t size, std::shared_ptr<void> keep,
            std::function<void()> done = {});
  // Receives exactly `bytes` bytes from `source` with `tag` into `dst`; `done` after completion.
  void recv(int source, int tag, void* dst, std::uint64_t bytes, std::function<void()> done);
  // Completes every queued and posted operation, then ends the thread (idempotent).
  void stop();

  std::uint64_t bytes_sent() const { return sent_.load(); }
  std::uint64_t bytes_received() const { return received_.load(); }
  // CPU seconds the comm thread has used (MPI progress, probes, callbacks).
  double progress_cpu_s() const;

 private:
  struct Op {
    bool is_send = false;
    int peer = 0, tag = 0;
    void* dst = nullptr;
    std::uint64_t bytes = 0;
    std::shared_ptr<void> keep;
    std::function<void()> done;
  };
  void loop();

  std::vector<int> probe_tags_;
  Handler handler_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Op> queue_;
  bool stopping_ = false;
  std::atomic<std::uint64_t> sent_{0}, received_{0};
  std::atomic<std::int64_t> cpu_ns_{-1};  // the thread's CPU when it ended (-1: running)
  std::thread thread_;
};

}  // namespace stoker::cluster
