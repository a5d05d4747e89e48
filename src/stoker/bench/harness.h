// The helpers every benchmark shares, so that stoker and its peer get the same treatment:
// core pinning, one repetition policy (warm-up passes + best of N, by CPU or wall time) applied
// to both sides, output comparison (a mismatch prints no ratio and exits 1), the closing lines,
// a CRC-32 that Python's zlib.crc32 reproduces, and temp dirs. Plain values and free functions;
// nothing here is shared between threads. Errors: InvalidArgument (a CPU we may not run on),
// Internal (mkdtemp).
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::bench {

// How a benchmark ended = the exit status of `stoker bench <what>`. kSkipped is ctest's
// SKIP_RETURN_CODE: a missing prerequisite (node, nginx, an npm oracle), named on stderr.
enum class Outcome { kOk = 0, kMismatch = 1, kSkipped = 77 };

// ---- cores ------------------------------------------------------------------------------
int last_allowed_cpu();  // the highest CPU in this process's affinity mask (taskset-aware)
int usable_cores();      // CPUs in the affinity mask (not all the machine has)
Status pin_to_core(int core);  // this thread (and threads it starts later) to one CPU
double load_average();   // 1-minute; -1 when unknown

// ---- clocks -----------------------------------------------------------------------------
double thread_cpu_s();   // CLOCK_THREAD_CPUTIME_ID: user + system of the calling thread
double process_cpu_s();  // getrusage(RUSAGE_SELF): every thread of this process

// This process's live threads now: name (comm, e.g. "stoker-cpu/1"), CPU time and time spent
// runnable without a CPU (/proc/self/task/*/schedstat, ns resolution). A thread that exited is
// gone: snapshot before joining a pool.
struct ThreadCpu {
  int tid = 0;
  std::string name;
  double cpu_s = 0, run_delay_s = 0;
};
std::vector<ThreadCpu> live_threads();
// "stoker-cpu/1" → "stoker-cpu" (the pool a thread belongs to).
std::string pool_of(const std::string& thread_name);

// Peak resident set of this process: VmHWM (reset_peak_rss() restarts it).
double peak_rss_mb();
double current_rss_mb();
void reset_peak_rss();

// ---- the repetition policy --------------------------------------------------------------
// Both sides of a benchmark run `warmup` untimed passes and then `passes` timed ones; the best
// timed pass counts (the one least disturbed by neighbours on a shared machine). The peer gets
// these same numbers on its command line; the header line prints them once for both.
struct Repeat {
  int warmup = 1;
  int passes = 3;
  std::string text() const;  // "1 warm-up + best of 3"
};

// One pass's cost: `cpu_s` is the measuring thread's (or process's) CPU time, `wall_s` wall.
struct PassTime {
  double cpu_s = 0, wall_s = 0;
};

// Keeps the best pass by CPU time (robust to other processes slicing the core) and, on its own,
// the best wall time.
class BestOf {
 public:
  void add(PassTime t);
  bool empty() const { return n_ == 0; }
  double cpu_s() const { return best_cpu_; }
  double wall_s() const { return best_wall_; }
  int passes() const { return n_; }

 private:
  double best_cpu_ = 0, best_wall_ = 0;
  int n_ = 0;
};

// ---- output comparison ------------------------------------------------------------------
// Collects the differences between stoker's outputs and the peer's. Every timed pass of both
// sides feeds it; a benchmark prints its ratio only when it stayed empty.
class Comparison {
 public:
  // Counts one compared item (an image, a document, a batch, an object).
  void compared(std::int64_t n = 1) { compared_ += n; }
  // Records a difference: what differs, where, stoker's value, the peer's (kept: the first 8).
  void differ(std::string what);
  template <typename T>
  bool expect_equal(const T& stoker, const T& peer, const std::string& what) {
    if (stoker == peer) return true;
    differ(what);
    return false;
  }
  bool ok() const { return differences_ == 0; }
  std::int64_t compared_count() const { return compared_; }
  std::int64_t differences() const { return differences_; }
  // "12 images x 3 passes compared: identical" or the first differences.
  void print(std::FILE* out, std::string_view items) const;

 private:
  std::int64_t compared_ = 0, differences_ = 0;
  std::vector<std::string> first_;
};

// The closing lines every benchmark prints: the comparison, then either `<label>: N` (two
// decimals; scripts and ctest parse it) or, when outputs differ, "MISMATCH: no ratio" and
// kMismatch. `peer` names what the ratio divides by.
Outcome finish(const Comparison& cmp, std::string_view items, std::string_view peer,
               double ratio, std::string_view label = "ratio");

// ---- small things -----------------------------------------------------------------------
// zlib's CRC-32 (the value Python's zlib.crc32 gives for the same bytes): a cheap digest for
// comparing large outputs (pixel_values) across processes.
std::uint32_t crc32(std::span<const std::uint8_t> bytes, std::uint32_t crc = 0);
std::uint32_t crc32(const void* data, std::size_t size, std::uint32_t crc = 0);

// "release", or a warning that the numbers mean nothing (debug, sanitizer).
const char* build_kind();

// A directory made with mkdtemp under $TMPDIR or /tmp, removed with its contents when the
// object dies unless keep() was called. Move-only.
class TempDir {
 public:
  static Result<TempDir> make(std::string_view prefix);  // "stoker-bench-image"
  TempDir() = default;
  TempDir(TempDir&& o) noexcept : path_(std::move(o.path_)) { o.path_.clear(); }
  TempDir& operator=(TempDir&&) = delete;
  ~TempDir();
  const std::string& path() const { return path_; }
  void keep() { path_.clear(); }

 private:
  std::string path_;
};

// A writer of fixed-width text tables: columns declared once (name, width, right-aligned),
// rows as preformatted cells.
class Table {
 public:
  struct Column {
    std::string name;
    int width;
    bool left = false;
  };
  explicit Table(std::vector<Column> columns) : columns_(std::move(columns)) {}
  void header(std::FILE* out) const;
  void row(std::FILE* out, const std::vector<std::string>& cells) const;

 private:
  std::vector<Column> columns_;
};

// printf into a std::string (for table cells).
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace stoker::bench
