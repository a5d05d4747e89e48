#include "stoker/cli/observe.h"

#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <condition_variable>
#include <filesystem>
#include <limits>
#include <mutex>
#include <optional>

#include "stoker/base/clock.h"
#include "stoker/base/data_dir.h"
#include "stoker/base/file.h"
#include "stoker/base/json_text.h"
#include "stoker/base/printable.h"
#include "stoker/pipeline/metrics.h"

extern char** environ;

namespace stoker::cli {
namespace fs = std::filesystem;

Result<std::unique_ptr<Observer>> Observer::create(const ObserveFlags& flags, std::string command) {
  if (!flags.trace_path.empty()) {
    const fs::path dir = fs::path(flags.trace_path).parent_path();
    if (!dir.empty() && !fs::is_directory(dir)) {
      return not_found("--trace " + flags.trace_path + ": folder " + dir.string() +
                       " does not exist");
    }
  }
  std::unique_ptr<Observer> o(new Observer());
  o->flags_ = flags;
  o->command_ = std::move(command);
  if (!flags.report_dir.empty()) {
    std::error_code ec;
    fs::create_directories(flags.report_dir, ec);
    if (ec) return not_found("--report " + flags.report_dir + ": " + ec.message());
    if (o->flags_.trace_path.empty()) o->flags_.trace_path = flags.report_dir + "/trace.json";
    const std::string steps = flags.report_dir + "/steps.csv";
    o->steps_ = std::fopen(steps.c_str(), "w");
    if (o->steps_ == nullptr) return not_found("--report: cannot write " + steps);
    std::fprintf(o->steps_, "step,t_s,wait_ms,samples\n");
  }
  if (!o->flags_.trace_path.empty()) {
    STOKER_RETURN_IF_ERROR(o->flags_.trace.validate());
    o->tracer_ = std::make_shared<obs::Tracer>(o->flags_.trace);
    o->tracer_->set_process_name("stoker " + o->command_);
    o->tracer_->name_thread("stoker " + o->command_ + ": main");
  }
  o->origin_ns_ = now_ns();
  return o;
}

Observer::~Observer() {
  if (timeline_thread_.joinable()) {
    timeline_thread_.request_stop();
    timeline_thread_.join();
  }
  metrics_.reset();
  if (steps_ != nullptr) std::fclose(steps_);
  if (timeline_ != nullptr) std::fclose(timeline_);
}

Status Observer::serve_metrics(std::function<std::string()> render) {
  render_ = render;
  if (flags_.metrics_port < 0) return ok_status();
  STOKER_ASSIGN_OR_RETURN(metrics_, obs::MetricsServer::start({.address = flags_.metrics_addr,
                                                               .port = flags_.metrics_port},
                                                              std::move(render)));
  std::fprintf(stderr, "stoker %s: metrics at %s\n", command_.c_str(), metrics_->url().c_str());
  std::fflush(stderr);
  return ok_status();
}

void Observer::record(const pipeline::Loader& loader) {
  if (flags_.report_dir.empty()) return;
  const std::string path = flags_.report_dir + "/timeline.csv";
  timeline_ = std::fopen(path.c_str(), "w");
  if (timeline_ == nullptr) {
    std::fprintf(stderr, "stoker %s: --report: cannot write %s (no timeline)\n", command_.c_str(),
                 path.c_str());
    return;
  }
  timeline_thread_ = std::jthread([this, l = &loader](std::stop_token st) { timeline_loop(st, l); });
}

void Observer::timeline_row(const pipeline::LoaderStats& s) {
  if (!timeline_header_) {
    std::fprintf(timeline_, "t_s,batches,samples,failed,wait_s,elapsed_s,arena_in_use,"
                            "arena_capacity,fetch_in_flight,ready_batches,samples_in_flight,"
                            "prepared_waiting");
    for (const auto& st : s.stages) std::fprintf(timeline_, ",busy_%s,threads_%s", st.name.c_str(), st.name.c_str());
    std::fprintf(timeline_, "\n");
    timeline_header_ = true;
  }
  std::fprintf(timeline_, "%.3f,%lld,%lld,%lld,%.6f,%.6f,%llu,%llu,%lld,%lld,%lld,%lld",
               (now_ns() - origin_ns_) * 1e-9, static_cast<long long>(s.batches),
               static_cast<long long>(s.samples), static_cast<long long>(s.failed), s.wait_s,
               s.elapsed_s, static_cast<unsigned long long>(s.arena_in_use_bytes),
               static_cast<unsigned long long>(s.arena_capacity_bytes),
               static_cast<long long>(s.fetch_in_flight_bytes),
               static_cast<long long>(s.ready_batches), static_cast<long long>(s.samples_in_flight),
               static_cast<long long>(s.prepared_waiting));
  for (const auto& st : s.stages) std::fprintf(timeline_, ",%.6f,%d", st.busy_s, st.threads);
  std::fprintf(timeline_, "\n");
}

// Every 100 ms at first; the interval doubles each 1000 rows, so a day-long run stays a few
// thousand rows.
void Observer::timeline_loop(std::stop_token stop, const pipeline::Loader* loader) {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  std::chrono::milliseconds every(100);
  for (std::int64_t rows = 1; !stop.stop_requested(); ++rows) {
    timeline_row(loader->stats());
    if (rows % 1000 == 0) every *= 2;
    cv.wait_for(lock, stop, every, [] { return false; });
  }
}

void Observer::step(double wait_s, std::int64_t samples) {
  if (steps_ == nullptr) return;
  std::fprintf(steps_, "%lld,%.6f,%.4f,%lld\n", static_cast<long long>(steps_done_++),
               (now_ns() - origin_ns_) * 1e-9, wait_s * 1e3, static_cast<long long>(samples));
}

Status Observer::finish(const pipeline::Loader* loader, const std::string& summary_json) {
  if (timeline_thread_.joinable()) {
    timeline_thread_.request_stop();
    timeline_thread_.join();
    if (loader != nullptr) timeline_row(loader->stats());
  }
  if (timeline_ != nullptr) std::fclose(timeline_);
  timeline_ = nullptr;
  if (steps_ != nullptr) std::fclose(steps_);
  steps_ = nullptr;
  metrics_.reset();
  // Every output is attempted; the failures are returned together (one line each, naming the
  // path) — the caller decides whether they are warnings (diagnostic outputs, issue #28).
  std::optional<Error> failed;
  auto note = [&](const Status& st, const std::string& what) {
    if (st.ok()) return;
    const std::string line = what + ": " + st.error().to_string();
    failed = failed ? Error(failed->code(), failed->to_string() + "; " + line)
                    : Error(st.error().code(), line);
  };
  if (tracer_ != nullptr) {
    if (Status st = tracer_->write(flags_.trace_path); !st.ok()) {
      note(st, "--trace " + flags_.trace_path);
    } else {
      std::fprintf(stderr, "stoker %s: trace: %lld events", command_.c_str(),
                   static_cast<long long>(tracer_->recorded()));
      if (tracer_->dropped() > 0) {
        std::fprintf(stderr, " (%lld more dropped: --trace-max-events, --trace-sample)",
                     static_cast<long long>(tracer_->dropped()));
      }
      std::fprintf(stderr, " -> %s (open in ui.perfetto.dev)\n", printable(flags_.trace_path).c_str());
    }
  }
  if (flags_.report_dir.empty()) return failed ? Status(*failed) : ok_status();
  std::string metrics;
  if (render_) {
    metrics = render_();
  } else if (loader != nullptr) {
    obs::MetricText m;
    pipeline::add_loader_metrics(m, loader->stats(), {});
    metrics = m.str();
  }
  const std::string report = "--report " + flags_.report_dir;
  note(write_text_file(flags_.report_dir + "/metrics.prom", metrics), report);
  note(write_text_file(flags_.report_dir + "/summary.json", summary_json), report);
  if (!failed) note(render_report(flags_.report_dir), report);
  return failed ? Status(*failed) : ok_status();
}

std::string summary_json(const pipeline::LoaderStats& s,
                         const std::vector<std::pair<std::string, std::string>>& settings,
                         const std::vector<pipeline::FailureKind>& failures) {
  std::string j = "{\n  \"settings\": {";
  for (std::size_t i = 0; i < settings.size(); ++i) {
    j += i ? ", " : "";
    append_json_string(j, settings[i].first);
    j += ": ";
    append_json_string(j, settings[i].second);
  }
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "},\n  \"batches\": %lld, \"samples\": %lld, \"failed\": %lld,\n"
                "  \"elapsed_s\": %.6f, \"wait_s\": %.6f, \"wait_ratio\": %.6f, "
                "\"first_batch_s\": %.6f,\n  \"samples_per_s\": %.3f, "
                "\"arena_peak_bytes\": %llu, \"arena_capacity_bytes\": %llu, "
                "\"fetch_peak_bytes\": %llu,\n  \"limiter\": ",
                static_cast<long long>(s.batches), static_cast<long long>(s.samples),
                static_cast<long long>(s.failed), s.elapsed_s, s.wait_s, s.wait_ratio(),
                s.first_batch_s, s.elapsed_s > 0 ? s.samples / s.elapsed_s : 0.0,
                static_cast<unsigned long long>(s.arena_peak_bytes),
                static_cast<unsigned long long>(s.arena_capacity_bytes),
                static_cast<unsigned long long>(s.fetch_peak_bytes));
  j += buf;
  append_json_string(j, pipeline::describe_limiter(s));
  j += ",\n  \"stages\": [";
  for (std::size_t i = 0; i < s.stages.size(); ++i) {
    const pipeline::StageStats& st = s.stages[i];
    std::snprintf(buf, sizeof buf,
                  "%s\n    {\"name\": \"%s\", \"busy_s\": %.6f, \"items\": %lld, "
                  "\"threads\": %d, \"p50_le_s\": %g, \"p99_le_s\": %g}",
                  i ? "," : "", st.name.c_str(), st.busy_s, static_cast<long long>(st.items),
                  st.threads, st.latency.quantile_bound(0.5), st.latency.quantile_bound(0.99));
    j += buf;
  }
  j += "\n  ],\n  \"failures\": [";
  for (std::size_t i = 0; i < failures.size(); ++i) {
    const pipeline::FailureKind& k = failures[i];
    j += i ? ",\n    {" : "\n    {";
    j += "\"stage\": " + json_string(k.stage_name()) +
         ", \"code\": " + json_string(k.code_name()) + ", \"pattern\": " +
         json_string(k.pattern) + ", \"count\": " + std::to_string(k.count) +
         ", \"example\": {\"sample\": " + std::to_string(k.example.sample) +
         ", \"file\": " + json_string(k.example.file) + ", \"line\": " +
         std::to_string(k.example.line) + ", \"reason\": " + json_string(k.example.reason) + "}}";
  }
  j += "\n  ]\n}\n";
  return j;
}

Status render_report(const std::string& dir) {
  if (!fs::is_directory(dir)) return not_found("report: " + dir + " is not a folder");
  STOKER_ASSIGN_OR_RETURN(fs::path data, data_dir());
  const fs::path script = data / "report" / "stoker_report.py";
  if (!fs::is_regular_file(script)) {
    return not_found("report: " + script.string() + " is missing (build or install stoker again)");
  }
  // Debian's python3 has matplotlib (python3-matplotlib); another one may not.
  std::string python = "python3";
  if (const char* p = std::getenv("STOKER_REPORT_PYTHON"); p != nullptr && *p) {
    python = p;
  } else if (fs::exists("/usr/bin/python3")) {
    python = "/usr/bin/python3";
  }
  std::string script_s = script.string();
  std::vector<char*> argv = {python.data(), script_s.data(), const_cast<char*>(dir.c_str()),
                             nullptr};
  pid_t pid = 0;
  if (int e = ::posix_spawnp(&pid, python.c_str(), nullptr, nullptr, argv.data(), environ); e != 0) {
    return not_found("report: cannot start " + python + ": " + std::strerror(e));
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return internal_error("report: " + script_s + " failed (" +
                          (WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                             : std::string("killed")) + ")");
  }
  return ok_status();
}

}  // namespace stoker::cli
