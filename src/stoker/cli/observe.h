// The observability flags of `stoker run` and `stoker serve`, and what they start for one
// command: --trace FILE (a tracer the command's loaders share, written at the end),
// --metrics-port / --metrics-addr (a Prometheus endpoint, loopback by default), and for `run`
// --report DIR (a run folder — per-step waits, a timeline of the loader's stats, the final
// metrics, a summary — rendered into PNG plots and an HTML page by the report script, the same
// `stoker report DIR` runs). README "Observability". An Observer is used by the command's main
// thread; its endpoint and timeline threads only call the render / stats callbacks.
#pragma once

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/config/settings.h"
#include "stoker/obs/metrics_server.h"
#include "stoker/obs/trace.h"
#include "stoker/pipeline/loader.h"

namespace stoker::cli {

// --trace, --trace-sample, --trace-max-events, --metrics-port, --metrics-addr, --report: the
// option schema's (config/options.cc); checked and defaulted there.
using ObserveFlags = config::ObserveSettings;

class Observer {
 public:
  // The tracer (when --trace or --report) and the report folder (created) come from here. The
  // trace file's folder must exist (checked now, so a typo fails before the run, not after it).
  static Result<std::unique_ptr<Observer>> create(const ObserveFlags& flags, std::string command);
  ~Observer();

  // Null when not tracing; set it as LoaderConfig::tracer.
  std::shared_ptr<obs::Tracer> tracer() const { return tracer_; }
  // Starts the endpoint when --metrics-port was given (prints its URL to stderr); `render`
  // returns the exposition text and runs on the endpoint's thread.
  Status serve_metrics(std::function<std::string()> render);
  // --report: starts the timeline (stats every 100 ms at first, sparser on long runs).
  void record(const pipeline::Loader& loader);
  // --report: one delivered batch and how long next() blocked for it.
  void step(double wait_s, std::int64_t samples);
  // At the end: stops the timeline and the endpoint, writes the trace (--trace), and with
  // --report the final metrics and summary, then renders the report. Prints where each went.
  Status finish(const pipeline::Loader* loader, const std::string& summary_json);

 private:
  Observer() = default;
  void timeline_loop(std::stop_token stop, const pipeline::Loader* loader);
  void timeline_row(const pipeline::LoaderStats& s);

  ObserveFlags flags_;
  std::string command_;
  std::shared_ptr<obs::Tracer> tracer_;
  std::unique_ptr<obs::MetricsServer> metrics_;
  std::function<std::string()> render_;
  std::FILE* steps_ = nullptr;
  std::FILE* timeline_ = nullptr;
  bool timeline_header_ = false;
  std::int64_t origin_ns_ = 0, steps_done_ = 0;
  std::jthread timeline_thread_;
};

// summary.json of a run folder: `settings` (name → value, as given) and the loader's totals,
// wait ratio, stage busy shares, the limiter and the most frequent failure kinds (`failures`:
// stage, code, pattern, count, one example each; index.html lists them).
std::string summary_json(const pipeline::LoaderStats& s,
                         const std::vector<std::pair<std::string, std::string>>& settings,
                         const std::vector<pipeline::FailureKind>& failures = {});

// Renders a run folder (steps.csv, timeline.csv, metrics.prom, summary.json) into PNG plots and
// index.html beside them, with the report script installed in share/stoker/report. Errors:
// NotFound (no script, or no run folder), Internal (the script failed: its exit status).
Status render_report(const std::string& dir);

}  // namespace stoker::cli
