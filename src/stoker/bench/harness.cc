#include "stoker/bench/harness.h"

#include <sched.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <zlib.h>

#include <algorithm>
#include <cstdarg>
#include <filesystem>
#include <fstream>
#include <limits>
#include <thread>

namespace stoker::bench {

int last_allowed_cpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
  int last = 0;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) last = c;
  return last;
}

int usable_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

Status pin_to_core(int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  if (core < 0 || core >= CPU_SETSIZE || sched_setaffinity(0, sizeof set, &set) != 0)
    return invalid_argument("cannot pin to CPU " + std::to_string(core) +
                            " (not in this process's affinity mask?)");
  return ok_status();
}

double load_average() {
  double l = -1;
  if (std::FILE* f = std::fopen("/proc/loadavg", "r")) {
    if (std::fscanf(f, "%lf", &l) != 1) l = -1;
    std::fclose(f);
  }
  return l;
}

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double process_cpu_s() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

std::vector<ThreadCpu> live_threads() {
  std::vector<ThreadCpu> out;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    ThreadCpu t;
    t.tid = std::atoi(task.path().filename().c_str());
    std::ifstream comm(task.path() / "comm");
    std::getline(comm, t.name);
    std::ifstream sched(task.path() / "schedstat");
    unsigned long long cpu = 0, delay = 0;
    if (!(sched >> cpu >> delay)) continue;  // exited meanwhile
    t.cpu_s = static_cast<double>(cpu) * 1e-9;
    t.run_delay_s = static_cast<double>(delay) * 1e-9;
    out.push_back(std::move(t));
  }
  return out;
}

std::string pool_of(const std::string& thread_name) {
  return thread_name.substr(0, thread_name.find('/'));
}

namespace {
double status_kb(const char* key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::size_t n = std::char_traits<char>::length(key);
  while (std::getline(in, line))
    if (line.compare(0, n, key) == 0) return std::stod(line.substr(n));
  return -1;
}
}  // namespace

double peak_rss_mb() {
  double kb = status_kb("VmHWM:");
  if (kb >= 0) return kb / 1024.0;
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<double>(ru.ru_maxrss) / 1024.0;
}

double current_rss_mb() { return std::max(0.0, status_kb("VmRSS:")) / 1024.0; }

// Linux restarts VmHWM at the current RSS when "5" is written to clear_refs; ru_maxrss cannot
// be reset, so without it the peak is the whole run's.
void reset_peak_rss() {
  if (std::FILE* f = std::fopen("/proc/self/clear_refs", "w")) {
    std::fputs("5", f);
    std::fclose(f);
  }
}

std::string Repeat::text() const {
  return format("%d warm-up pass%s + best of %d", warmup, warmup == 1 ? "" : "es", passes);
}

void BestOf::add(PassTime t) {
  if (n_ == 0 || t.cpu_s < best_cpu_) best_cpu_ = t.cpu_s;
  if (n_ == 0 || t.wall_s < best_wall_) best_wall_ = t.wall_s;
  ++n_;
}

void Comparison::differ(std::string what) {
  if (first_.size() < 8) first_.push_back(std::move(what));
  ++differences_;
}

void Comparison::print(std::FILE* out, std::string_view items) const {
  if (ok()) {
    std::fprintf(out, "outputs compared: %lld %.*s, identical\n",
                 static_cast<long long>(compared_), static_cast<int>(items.size()), items.data());
    return;
  }
  std::fprintf(out, "outputs compared: %lld %.*s, %lld DIFFER; first:\n",
               static_cast<long long>(compared_), static_cast<int>(items.size()), items.data(),
               static_cast<long long>(differences_));
  for (const std::string& d : first_) std::fprintf(out, "  %s\n", d.c_str());
}

Outcome finish(const Comparison& cmp, std::string_view items, std::string_view peer,
               double ratio, std::string_view label) {
  cmp.print(stdout, items);
  if (!cmp.ok() || cmp.compared_count() == 0) {
    std::printf("MISMATCH: stoker and %.*s disagree%s; no ratio\n",
                static_cast<int>(peer.size()), peer.data(),
                cmp.compared_count() == 0 ? " (nothing was compared)" : "");
    std::fflush(stdout);
    return Outcome::kMismatch;
  }
  std::printf("%.*s: %.2f\n", static_cast<int>(label.size()), label.data(), ratio);
  std::fflush(stdout);
  return Outcome::kOk;
}

std::uint32_t crc32(std::span<const std::uint8_t> bytes, std::uint32_t crc) {
  return crc32(bytes.data(), bytes.size(), crc);
}

std::uint32_t crc32(const void* data, std::size_t size, std::uint32_t crc) {
  // zlib takes uInt lengths: feed it in chunks below 4 GiB.
  const auto* p = static_cast<const Bytef*>(data);
  uLong c = crc;
  while (size > 0) {
    const uInt n = static_cast<uInt>(std::min<std::size_t>(size, 1u << 30));
    c = ::crc32(c, p, n);
    p += n;
    size -= n;
  }
  return static_cast<std::uint32_t>(c);
}

const char* build_kind() {
#if defined(__SANITIZE_ADDRESS__)
  return "SANITIZER build (numbers meaningless)";
#elif defined(NDEBUG)
  return "release build";
#else
  return "debug build (numbers meaningless)";
#endif
}

Result<TempDir> TempDir::make(std::string_view prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/" + std::string(prefix) + "-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) return internal_error("mkdtemp " + tmpl + " failed");
  TempDir d;
  d.path_ = std::move(tmpl);
  return d;
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty()) std::filesystem::remove_all(path_, ec);
}

void Table::header(std::FILE* out) const {
  std::string line, rule;
  for (const Column& c : columns_) {
    line += format(c.left ? "%-*s " : "%*s ", c.width, c.name.c_str());
    rule += std::string(static_cast<std::size_t>(c.width), '-') + " ";
  }
  std::fprintf(out, "%s\n%s\n", line.c_str(), rule.c_str());
}

void Table::row(std::FILE* out, const std::vector<std::string>& cells) const {
  std::string line;
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    const std::string& cell = i < cells.size() ? cells[i] : std::string();
    line += format(columns_[i].left ? "%-*s " : "%*s ", columns_[i].width, cell.c_str());
  }
  std::fprintf(out, "%s\n", line.c_str());
}

std::string format(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  va_list ap2;
  va_copy(ap2, ap);
  const int n = std::vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  std::string s(static_cast<std::size_t>(std::max(0, n)), '\0');
  std::vsnprintf(s.data(), s.size() + 1, fmt, ap2);
  va_end(ap2);
  return s;
}

}  // namespace stoker::bench
