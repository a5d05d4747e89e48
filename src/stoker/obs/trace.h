// Tracer: a run's timeline as Chrome / Perfetto trace-event JSON (opens in ui.perfetto.dev and
// chrome://tracing). One track per thread (named from the thread's name), complete spans ("X")
// that nest per thread, async spans ("b"/"e", their own rows) for work that starts on one thread
// and ends on another, and counters ("C"). Events go to a buffer of the calling thread (its own
// small mutex, taken by the flush too; no lock shared between threads per event); the total is
// capped (events past `max_events` are dropped and counted) and per-sample work can be sampled
// (`sample_every`). Off costs one null check: callers hold a `Tracer*` that is null when off.
// Thread-safe. write() may run while threads still record (what they add later is not written).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "stoker/base/clock.h"
#include "stoker/base/result.h"

namespace stoker::obs {

struct TraceOptions {
  std::int64_t max_events = 1'000'000;  // ~60 MB in memory, ~110 MB of JSON at most
  std::int64_t sample_every = 1;        // keep the per-sample spans of every Nth sample
  Status validate() const;
};

class Tracer {
 public:
  explicit Tracer(const TraceOptions& options);
  ~Tracer();
  Tracer(const Tracer&) = delete;
  Tracer& operator=(const Tracer&) = delete;

  const TraceOptions& options() const { return options_; }
  // Whether the per-sample spans of the sample with this sequence number are recorded.
  bool keeps(std::uint64_t seq) const {
    return static_cast<std::int64_t>(seq % static_cast<std::uint64_t>(options_.sample_every)) == 0;
  }

  // A span [begin_ns, end_ns) (steady clock, base/clock.h) on the calling thread's track. `name`
  // and `arg` must be string literals (stored as pointers); `arg` (optional) names `value`.
  void span(const char* name, std::int64_t begin_ns, std::int64_t end_ns,
            const char* arg = nullptr, std::int64_t value = 0);
  // A span that may begin on one thread and end on another, or overlap others: its own row,
  // keyed by (name, id).
  void async_span(const char* name, std::uint64_t id, std::int64_t begin_ns, std::int64_t end_ns);

  // Counter tracks: register a name once (setup time; the same name gives the same id), then
  // record values. With sample_every N, one change in N per counter is kept.
  int counter_id(const std::string& name);
  void counter(int id, std::int64_t value, std::int64_t ts_ns);
  void counter(int id, std::int64_t value) { counter(id, value, now_ns()); }

  // Names the calling thread's track (default: the thread's own name, pthread_getname_np).
  // default_thread_name does so only when name_thread has not.
  void name_thread(const std::string& name);
  void default_thread_name(const std::string& name);
  void set_process_name(std::string name);

  // The JSON, to `path` (written whole to path.tmp, then renamed). Errors: NotFound /
  // PermissionDenied naming the path.
  Status write(const std::string& path) const;
  std::string json() const;  // the same text (tests)

  std::int64_t recorded() const;  // events kept
  std::int64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }

  static constexpr int kMaxCounters = 64;

 private:
  struct Event;
  struct Thread;
  Thread* local();
  void append(const Event& e);
  template <typename Out>
  void emit(Out& out) const;

  const TraceOptions options_;
  const std::uint64_t id_;
  const std::int64_t origin_ns_;
  const int pid_;
  std::int64_t chunk_;
  std::atomic<std::int64_t> left_;     // events not yet handed to a thread
  std::atomic<std::int64_t> dropped_{0};
  mutable std::mutex mu_;              // threads_, counter names, process name
  std::vector<std::unique_ptr<Thread>> threads_;
  std::vector<std::string> counter_names_;
  std::atomic<std::int64_t> counter_calls_[kMaxCounters] = {};
  std::string process_name_ = "stoker";
};

// Times a scope as a span on the calling thread; does nothing when `tracer` is null.
class Span {
 public:
  Span(Tracer* tracer, const char* name, const char* arg = nullptr, std::int64_t value = 0)
      : tracer_(tracer), name_(name), arg_(arg), value_(value), begin_(tracer ? now_ns() : 0) {}
  ~Span() {
    if (tracer_ != nullptr) tracer_->span(name_, begin_, now_ns(), arg_, value_);
  }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

 private:
  Tracer* tracer_;
  const char* name_;
  const char* arg_;
  std::int64_t value_;
  std::int64_t begin_;
};

}  // namespace stoker::obs
