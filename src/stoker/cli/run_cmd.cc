// `stoker run`: drive the Loader like a trainer would — take batches, optionally "train" on each
// for --step-ms, save the state after every batch — and report throughput, the wait ratio, where
// the time went (per-stage busy share; the limiter, from measured waits) and memory. With --state-file a killed run
// continues exactly with --resume. The batch log (--delivered-log) is written before the state
// file is replaced and is cut back to the state's batch count on resume, so it lists every
// delivered sample exactly once whatever the moment of a kill (see pipeline/README.md).
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "stoker/base/atomic_file.h"
#include "stoker/base/clock.h"
#include "stoker/base/elide.h"
#include "stoker/base/printable.h"
#include "stoker/base/file.h"
#include "stoker/cli/options_cli.h"
#include "stoker/cli/run_loop.h"
#include "stoker/cli/commands.h"
#include "stoker/cli/interrupt.h"
#include "stoker/cli/observe.h"
#include "stoker/model/model_config.h"
#include "stoker/pipeline/metrics.h"
#include "stoker/pipeline/loader.h"
#include "stoker/pipeline/state_file.h"

namespace stoker::cli {

const char kRunHelp[] = R"(usage: stoker run DATA.jsonl [MORE.jsonl ...] [options]

Streams training batches for this rank the way a trainer would consume them and reports
throughput, the wait ratio (time blocked in next() / total), per-stage busy time, the limiter
(trainer, arena, I/O budget, media I/O or a CPU stage, from measured waits), errors, time to
first batch, peak arena bytes and peak RSS. Several data files are read as one dataset, in
order; each is one argument.
)";

namespace {


// The kernel's memory figures for this process (/proc/self/status, KiB): VmHWM is the peak RSS
// that /usr/bin/time and getrusage report; RSS = anonymous + file-backed + shared memory
// (RssShmem: the memfd arena's written pages, mapped here).
struct MemoryKib {
  long hwm = 0, rss = 0, anon = 0, file = 0, shmem = 0;
};

MemoryKib memory_kib() {
  MemoryKib m;
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    long* field = line.rfind("VmHWM:", 0) == 0      ? &m.hwm
                  : line.rfind("VmRSS:", 0) == 0    ? &m.rss
                  : line.rfind("RssAnon:", 0) == 0  ? &m.anon
                  : line.rfind("RssFile:", 0) == 0  ? &m.file
                  : line.rfind("RssShmem:", 0) == 0 ? &m.shmem
                                                    : nullptr;
    if (field != nullptr) *field = std::atol(line.c_str() + line.find(':') + 1);
  }
  if (m.hwm == 0) {  // no procfs: getrusage's peak is the same number
    struct rusage ru {};
    getrusage(RUSAGE_SELF, &ru);
    m.hwm = ru.ru_maxrss;
  }
  return m;
}

double mib(std::uint64_t b) { return static_cast<double>(b) / (1 << 20); }

// Busy share of a stage = busy time / (its threads × wall time): 100% means every thread that
// can do this stage was always busy on it.
double share(const pipeline::StageStats& s, double elapsed) {
  return elapsed > 0 ? s.busy_s / (s.threads * elapsed) : 0;
}

std::string progress_line(const pipeline::LoaderStats& s) {
  char buf[512];
  int n = std::snprintf(buf, sizeof buf, "%lld batches, %lld samples, %.1f samples/s, wait %.1f%%, "
                        "errors %lld |",
                        static_cast<long long>(s.batches), static_cast<long long>(s.samples),
                        s.elapsed_s > 0 ? s.samples / s.elapsed_s : 0.0, 100 * s.wait_ratio(),
                        static_cast<long long>(s.failed));
  std::string out(buf, n);
  for (const auto& st : s.stages) {
    n = std::snprintf(buf, sizeof buf, " %s %.0f%%", st.name.c_str(), 100 * share(st, s.elapsed_s));
    out.append(buf, n);
  }
  return out;
}

using Options = config::RunSettings;

// A failed write of one of the run's logs: ResourceExhausted for a full disk or quota.
Error write_error(const char* flag, const std::string& path, int err) {
  std::string what = std::string("writing ") + flag + " " + path + ": " +
                     (err != 0 ? std::strerror(err) : "write failed");
  return err == ENOSPC || err == EDQUOT ? resource_exhausted(what) : data_loss(what);
}

// After Ctrl-C / SIGTERM: where the state is and the command that resumes (issue 30 §16: the
// run used to die silently).
void print_interrupted(const RunHooks& hooks, const Options& o, long long logged,
                       const std::string& state) {
  std::fprintf(stderr, "stoker %s: interrupted by %s after %lld batches.\n", hooks.name.c_str(),
               InterruptGuard::signal_name(), logged);
  if (o.state_file.empty()) {
    std::fprintf(stderr,
                 "  no --state-file was given, so no state was saved (this run stopped at: %s);\n"
                 "  run with --state-file FILE (written after every batch) to be able to resume "
                 "with --resume FILE.\n",
                 state.c_str());
    return;
  }
  std::fprintf(stderr, "  state after the last delivered batch: %s (%s)\n",
               printable(o.state_file).c_str(), state.c_str());
  std::fprintf(stderr, "  resume with: %s\n",
               hooks.command_line.empty()
                   ? ("the same command plus --resume " + shell_quote(o.state_file)).c_str()
                   : printable(resume_command(hooks.command_line, o.state_file)).c_str());
}

void sleep_ms(void* ms) {
  std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(*static_cast<double*>(ms)));
}

// Keeps the first `lines` lines of the delivered log: a killed run may have logged a batch whose
// state it did not get to save; the resumed run delivers that batch again.
Status cut_log(const std::string& path, long long lines) {
  std::ifstream in(path);
  if (!in) return lines == 0 ? ok_status() : not_found("delivered log " + path + " is missing");
  std::string kept, line;
  long long n = 0;
  while (n < lines && std::getline(in, line)) {
    kept += line + "\n";
    ++n;
  }
  if (n < lines) {
    return data_loss("delivered log " + path + " has " + std::to_string(n) +
                     " batches, the state expects " + std::to_string(lines));
  }
  return write_text_file(path, kept);
}

// A terminal gets one line redrawn in place (\r); a file or a pipe (a log, CI) gets plain
// lines, less often, that read as a log.
class Progress {
 public:
  Progress(const pipeline::Loader& loader, bool on, double period_s)
      : loader_(loader), tty_(::isatty(STDERR_FILENO) == 1) {
    if (period_s < 0) period_s = tty_ ? 0.5 : 10;
    period_ = std::chrono::milliseconds(static_cast<std::int64_t>(period_s * 1000));
    if (on && period_s > 0) thread_ = std::jthread([this](std::stop_token stop) { loop(stop); });
  }
  ~Progress() { stop(); }
  void stop() {
    if (!thread_.joinable()) return;
    thread_.request_stop();
    cv_.notify_all();
    thread_.join();
    if (tty_ && drawn_) std::fprintf(stderr, "\n");
  }

 private:
  void loop(std::stop_token stop) {
    std::mutex mu;
    std::unique_lock lock(mu);
    while (!cv_.wait_for(lock, stop, period_, [] { return false; })) {
      if (stop.stop_requested()) return;
      const std::string line = progress_line(loader_.stats());
      if (tty_) std::fprintf(stderr, "\r%s ", line.c_str());
      else std::fprintf(stderr, "stoker run: %s\n", line.c_str());
      drawn_ = true;
    }
  }
  const pipeline::Loader& loader_;
  const bool tty_;
  bool drawn_ = false;  // written by the progress thread only, read after its join
  std::chrono::milliseconds period_{500};
  std::condition_variable_any cv_;
  std::jthread thread_;
};

// Real tokens ÷ tokens computed (B × padded length, or max_tokens per pack row), and with a
// global plan the data-parallel balance of the delivered steps.
void print_tokens(const pipeline::LoaderStats& s, const pipeline::LoaderConfig& c) {
  const char* how = c.packing.batching == pipeline::Batching::kPack          ? "packing"
                    : c.packing.batching == pipeline::Batching::kTokenBudget ? "token budget"
                                                                             : "padded batches";
  std::printf("  tokens (%s): %lld real of %lld computed: packing efficiency %.2f%%, padding "
              "share %.2f%%; %lld sequences in %lld batches\n",
              how, static_cast<long long>(s.real_tokens), static_cast<long long>(s.computed_tokens),
              100 * s.efficiency(), s.computed_tokens > 0 ? 100 * (1 - s.efficiency()) : 0.0,
              static_cast<long long>(s.sequences), static_cast<long long>(s.batches));
  if (s.steps > 0) {
    std::printf("  DP balance over %lld steps (max/mean per step, summed): vision patches %.3f "
                "(worst step %.2f), text tokens %.3f; %lld tail repeats\n",
                static_cast<long long>(s.steps), s.patch_balance(), s.worst_patch_ratio,
                s.token_balance(), static_cast<long long>(s.repeats));
  }
}

// The failed samples by reason: the most frequent kinds, a count and one example each, and
// where every failure is listed (a first run should not end with "3 failed" and no reason).
void print_failures(const pipeline::Loader& loader, const pipeline::LoaderConfig& c,
                    std::int64_t failed) {
  if (failed <= 0) return;
  constexpr std::size_t kShown = 5;
  std::vector<pipeline::FailureKind> kinds = loader.failure_kinds(pipeline::FailureTally::kMaxKinds);
  std::printf("  failed samples by reason (full list: %s):\n",
              c.errors.report_path.empty()
                  ? "none written; --error-report FILE writes one JSON line per failed sample"
                  : printable(c.errors.report_path).c_str());
  std::int64_t rest = 0;
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    const pipeline::FailureKind& k = kinds[i];
    if (i >= kShown) {
      rest += k.count;
      continue;
    }
    // Ids, paths and server text come from data: bounded (the reasons are Error text, bounded
    // already; the file is elided) and escaped (ESC sequences, forged lines).
    std::printf("    %lld x %s %s: %s\n      e.g. sample %llu (%s:%llu): %s\n",
                static_cast<long long>(k.count), std::string(k.stage_name()).c_str(),
                std::string(k.code_name()).c_str(), printable(k.pattern).c_str(),
                static_cast<unsigned long long>(k.example.sample),
                printable(elide_middle(k.example.file)).c_str(),
                static_cast<unsigned long long>(k.example.line),
                printable(k.example.reason).c_str());
  }
  if (rest > 0) {
    std::printf("    %lld more in %zu other kinds\n", static_cast<long long>(rest),
                kinds.size() - kShown);
  }
}

void print_summary(const pipeline::Loader& loader, const pipeline::LoaderConfig& c,
                   const Options& o, const std::string& name) {
  pipeline::LoaderStats s = loader.stats();
  std::printf("stoker %s: %lld batches, %lld samples, %lld failed", name.c_str(), static_cast<long long>(s.batches),
              static_cast<long long>(s.samples), static_cast<long long>(s.failed));
  if (!c.errors.report_path.empty()) {
    std::printf(" (report: %s)", printable(c.errors.report_path).c_str());
  }
  std::printf(", %.2f s, %s\n", s.elapsed_s, loader.rank().to_string().c_str());
  print_failures(loader, c, s.failed);
  std::printf("  throughput %.1f samples/s; wait ratio %.2f%% (%.2f s blocked in next()",
              s.elapsed_s > 0 ? s.samples / s.elapsed_s : 0.0, 100 * s.wait_ratio(), s.wait_s);
  if (o.step_ms > 0) std::printf(", trainer step %.0f ms", o.step_ms);
  // After the first batch: the steady state, without the pipeline's fill time.
  const double steady = s.elapsed_s - s.first_batch_s > 0
                            ? (s.wait_s - s.first_batch_s) / (s.elapsed_s - s.first_batch_s) : 0;
  std::printf("); after the first batch %.2f%%; time to first batch %.3f s\n", 100 * steady,
              s.first_batch_s);
  if (o.step_ms <= 0) {
    std::printf("  no trainer step (--step-ms 0): nothing consumes the batches, so next() is "
                "always waiting for the producer and a wait ratio near 100%% is expected, not a "
                "problem; the throughput above is the producer's rate, what this machine can "
                "feed. --step-ms MS simulates a trainer.\n");
  }
  std::printf("  stage busy share (busy / (threads x wall)):");
  for (const auto& st : s.stages) {
    std::printf(" %s %.1f%% (%d thr, %.2f s)", st.name.c_str(), 100 * share(st, s.elapsed_s),
                st.threads, st.busy_s);
  }
  std::printf("\n");
  if (!s.chat_template.empty()) std::printf("  chat template: %s\n", s.chat_template.c_str());
  if (s.samples_built > 0) {
    std::printf("  sample build (chat template, tokenizer, labels; in prepare): %.1f us per record "
                "over %lld records\n",
                1e6 * s.sample_build_s / static_cast<double>(s.samples_built),
                static_cast<long long>(s.samples_built));
  }
  std::printf("  producer time: %.2f s waiting for samples, %.2f s assembling batches, %.2f s "
              "waiting for arena space; I/O threads waited %.2f s for fetch budget\n",
              s.sample_wait_s, s.emit_s, s.arena_wait_s, s.fetch_budget_wait_s);
  std::printf("  limiter: %s\n", pipeline::describe_limiter(s).c_str());
  std::printf("  arena: %s; peak in use %.1f MiB (producer waited %.2f s for space); fetch "
              "bytes in flight peak %.1f MiB\n",
              s.arena_plan.c_str(), mib(s.arena_peak_bytes), s.arena_wait_s,
              mib(s.fetch_peak_bytes));
  const MemoryKib m = memory_kib();
  std::printf("  peak RSS %.1f MiB (VmHWM, as /usr/bin/time reports it); RSS now %.1f MiB = "
              "%.1f anonymous + %.1f shared memory + %.1f files; the batch arena is %.1f MiB of "
              "it: the pages the run's batches used, made resident before use (so no batch pays "
              "first-touch page faults) and kept, since blocks are reused\n",
              m.hwm / 1024.0, m.rss / 1024.0, m.anon / 1024.0, m.shmem / 1024.0, m.file / 1024.0,
              mib(loader.arena().resident_bytes()));
  print_tokens(s, c);
  // A mixture: each source's samples, planned by the global plan (the whole job) vs this rank's.
  for (std::size_t i = 0; i < s.sources.size(); ++i) {
    const pipeline::SourceStats& src = s.sources[i];
    std::printf("  source %zu (%s, share %g, %llu records): %llu planned (job), %lld delivered, %lld failed (this rank)%s%s\n",
                i, printable(src.name).c_str(), src.share, static_cast<unsigned long long>(src.records),
                static_cast<unsigned long long>(src.planned), static_cast<long long>(src.delivered),
                static_cast<long long>(src.failed), src.subflavors == "{}" ? "" : "; subflavors ",
                src.subflavors == "{}" ? "" : printable(src.subflavors).c_str());
  }
  std::printf("  state: %s\n", loader.state().serialize().c_str());
}

}  // namespace

int run_loader(const config::Settings& settings, const RunHooks& hooks) {
  const char* cmd = hooks.name.c_str();
  std::optional<pipeline::LoaderConfig> config = settings.loader;
  auto with_suffix = [&](const std::string& path) {
    return path.empty() ? path : path + hooks.file_suffix;
  };
  config->errors.report_path = with_suffix(config->errors.report_path);
  if (hooks.configure) {
    if (Status st = hooks.configure(*config); !st.ok()) return report(cmd, st.error());
  }
  Options o = settings.run;
  o.state_file = with_suffix(o.state_file);
  o.resume_file = with_suffix(o.resume_file);
  o.delivered_log = with_suffix(o.delivered_log);
  o.batch_hashes = with_suffix(o.batch_hashes);

  // The state to resume from: read and parsed first (untrusted input: a regular file, at most
  // 64 KiB, parsed strictly; state_file.h), so a bad one is refused before any work.
  std::optional<pipeline::SavedRun> saved;
  if (!o.resume_file.empty()) {
    Result<pipeline::SavedRun> read = pipeline::read_state_file(o.resume_file);
    if (!read.ok()) return report(cmd, Error(read.error()).with_context("--resume"));
    saved = std::move(*read);
  }

  // --trace / --metrics-port / --report (observe.h). Its threads (endpoint, timeline) start
  // only once nothing returns early any more, and stop in finish(), before the loader goes.
  Result<std::unique_ptr<Observer>> observer = Observer::create(settings.observe, cmd);
  if (!observer.ok()) return report(cmd, observer.error());
  config->tracer = (*observer)->tracer();

  Result<std::unique_ptr<pipeline::Loader>> loader = pipeline::Loader::create(*config);
  if (!loader.ok()) return report(cmd, loader.error());
  long long logged = 0;
  if (saved) {
    if (Status st = (*loader)->resume(saved->state); !st.ok()) {
      return report(cmd, Error(st.error()).with_context("--resume " + o.resume_file));
    }
    if (std::string note = (*loader)->resume_note(); !note.empty()) {
      std::fprintf(stderr, "stoker %s: warning: --resume %s: %s\n", cmd,
                   printable(o.resume_file).c_str(), printable(note).c_str());
    }
    logged = static_cast<long long>(saved->batches);
    if (!o.delivered_log.empty()) {
      if (Status st = cut_log(o.delivered_log, logged); !st.ok()) return report(cmd, st.error());
    }
  } else if (!o.delivered_log.empty()) {
    if (Status st = write_text_file(o.delivered_log, ""); !st.ok()) return report(cmd, st.error());
  }
  std::FILE* log = nullptr;
  if (!o.delivered_log.empty()) {
    log = std::fopen(o.delivered_log.c_str(), "a");
    if (log == nullptr) return report(cmd, not_found("opening --delivered-log " + o.delivered_log));
  }
  std::FILE* hashes = nullptr;
  if (!o.batch_hashes.empty()) {
    hashes = std::fopen(o.batch_hashes.c_str(), "w");
    if (hashes == nullptr) return report(cmd, not_found("opening --batch-hashes " + o.batch_hashes));
  }

  const pipeline::Loader* live = loader->get();
  if (Status st = (*observer)->serve_metrics([live] {
        obs::MetricText m;
        pipeline::add_loader_metrics(m, live->stats(), {});
        return m.str();
      });
      !st.ok()) {
    return report(cmd, st.error());
  }
  (*observer)->record(**loader);
  int rc = 0;
  InterruptGuard interrupt;  // Ctrl-C / SIGTERM: stop after this batch, say how to resume
  bool interrupted = false;
  {
    Progress progress(**loader, !o.quiet, o.progress_s);
    for (long long n = 0; o.limit_batches < 0 || n < o.limit_batches; ++n) {
      const std::int64_t t_next = now_ns();
      if (InterruptGuard::requested()) {
        interrupted = true;
        break;
      }
      Result<std::optional<pipeline::Batch>> b =
          (*loader)->next([] { return InterruptGuard::requested(); }, std::chrono::milliseconds(50));
      if (!b.ok() && InterruptGuard::requested()) {
        interrupted = true;  // Cancelled while waiting: nothing delivered, nothing lost
        break;
      }
      if (!b.ok()) {
        progress.stop();
        rc = report(cmd, b.error());
        break;
      }
      if (!b->has_value()) break;
      const pipeline::Batch& batch = **b;
      (*observer)->step((now_ns() - t_next) * 1e-9, batch.size());
      if (log != nullptr) {
        // Logged first, then the state: a kill in between is undone by cut_log on resume.
        std::string line = std::to_string(batch.layout().epoch) + " " + std::to_string(logged);
        const std::uint64_t* ids = batch.as<std::uint64_t>("sample_ids");
        for (std::int64_t i = 0; i < batch.size(); ++i) line += " " + std::to_string(ids[i]);
        if (batch.is_repeat()) line += " repeat";  // an epoch-tail repeat (packing)
        line += "\n";
        // A failed write is an error (a full disk used to leave the log empty with exit 0):
        // the state is not saved past a batch the log does not hold.
        if (std::fwrite(line.data(), 1, line.size(), log) != line.size() || std::fflush(log) != 0) {
          progress.stop();
          rc = report(cmd, write_error("--delivered-log", o.delivered_log, errno));
          break;
        }
      }
      if (hashes != nullptr &&
          std::fprintf(hashes, "%016llx\n",
                       static_cast<unsigned long long>(pipeline::batch_hash(batch))) < 0) {
        progress.stop();
        rc = report(cmd, write_error("--batch-hashes", o.batch_hashes, errno));
        break;
      }
      ++logged;
      if (o.pause_after_log_ms > 0) {
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(o.pause_after_log_ms));
      }
      if (!o.state_file.empty()) {
        // Atomic (temporary + fsync + rename + fsync of the folder): a kill or a full disk
        // leaves the previous state; a failure stops the run here, naming the step.
        AtomicWriteOptions aw;
        double pause = o.state_write_pause_ms;
        if (pause > 0) {
          aw.midway = sleep_ms;
          aw.midway_arg = &pause;
        }
        const pipeline::SavedRun run{(*loader)->state(), static_cast<std::uint64_t>(logged)};
        if (Status st = pipeline::write_state_file(o.state_file, run, aw); !st.ok()) {
          progress.stop();
          rc = report(cmd, Error(st.error()).with_context("--state-file"));
          break;
        }
      }
      if (o.step_ms > 0) {
        const auto until = std::chrono::steady_clock::now() +
                           std::chrono::duration<double, std::milli>(o.step_ms);
        while (!InterruptGuard::requested() && std::chrono::steady_clock::now() < until) {
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
      }
    }
  }
  if (log != nullptr && std::fclose(log) != 0 && rc == 0) {
    rc = report(cmd, write_error("--delivered-log", o.delivered_log, errno));
  }
  // Buffered: a full disk shows at the last flush.
  if (hashes != nullptr) {
    const bool flushed = std::fflush(hashes) == 0 && std::ferror(hashes) == 0;
    const int err = errno;
    if ((std::fclose(hashes) != 0 || !flushed) && rc == 0) {
      rc = report(cmd, write_error("--batch-hashes", o.batch_hashes, flushed ? errno : err));
    }
  }
  if (hooks.stats != nullptr) *hooks.stats = (*loader)->stats();
  print_summary(**loader, *config, o, hooks.name);
  const char* mode = config->mode == pipeline::Mode::kSerial       ? "serial"
                     : config->mode == pipeline::Mode::kConcurrent ? "concurrent"
                                                                   : "prefetch";
  const std::vector<std::pair<std::string, std::string>> shown = {
      {"data", config->data.front()}, {"mode", mode},
      {"batch_size", std::to_string(config->batch_size)},
      {"threads", std::to_string(config->threads)}, {"step_ms", std::to_string(o.step_ms)}};
  if (Status st = (*observer)->finish(loader->get(), summary_json((*loader)->stats(), shown,
                                                                   (*loader)->failure_kinds(10)));
      !st.ok()) {
    // Diagnostic outputs (issue #28): a warning naming them unless --strict-outputs; the
    // run's own error, if any, comes first.
    Status kept = diagnostic_output(st, config->strict_outputs && rc == 0, cmd);
    if (!kept.ok()) rc = report(cmd, kept.error());
  }
  if (interrupted) {
    print_interrupted(hooks, o, logged, (*loader)->state().serialize());
    if (rc == 0) rc = 128 + InterruptGuard::signal_number();  // as the shell reports a kill
  }
  return rc;
}

int run_run(int argc, char** argv) {
  bool help = false;
  Result<config::Settings> settings = parse_command_line(argc, argv, config::kRun, &help);
  if (help || argc == 0) {
    std::FILE* out = help ? stdout : stderr;
    std::fputs(kRunHelp, out);
    std::fputs(options_help(config::kRun).c_str(), out);
    return help ? 0 : 2;
  }
  if (!settings.ok()) return report("run", settings.error());
  warn_settings(*settings, "run");
  RunHooks hooks;
  hooks.command_line.assign(argv, argv + argc);
  return run_loader(*settings, hooks);
}

}  // namespace stoker::cli
