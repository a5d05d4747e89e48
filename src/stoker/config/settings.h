// Settings: what the options of one command amount to — the Loader's config plus each command's
// own settings. Built by config::Builder (build.h) from the schema; the commands read it.
#pragma once

#include <cstdint>
#include <set>
#include <string>

#include "stoker/config/schema.h"
#include "stoker/obs/trace.h"
#include "stoker/pipeline/loader_config.h"

namespace stoker::config {

// `stoker run` (and a cluster receiver's loop).
struct RunSettings {
  std::string state_file, resume_file, delivered_log, batch_hashes;
  double step_ms = 0;
  double pause_after_log_ms = 0;
  double state_write_pause_ms = 0;  // test switch: sleep halfway through each state write
  std::int64_t limit_batches = -1;  // -1: no limit
  bool quiet = false;
  double progress_s = -1;           // -1: by the kind of stderr (terminal 0.5 s, else 10 s)
};

// --trace, --metrics-port, --report (run, serve); trace= in Python.
struct ObserveSettings {
  std::string trace_path;
  obs::TraceOptions trace;
  int metrics_port = -1;  // -1: no endpoint; 0: any free port
  std::string metrics_addr = "127.0.0.1";
  std::string report_dir;
};

// The node server (`stoker serve`, serve(), cluster --serve).
struct ServeSettings {
  std::string socket;            // empty: shm::default_socket_path
  int world_size = 1;            // ranks of the job served
  int window = 4;                // unreleased batches one rank's process may hold
  double progress_s = 5;         // per-rank progress lines (0: none)
  double idle_timeout_s = -1;    // stop when no process was attached this long (-1: never)
  bool quiet = false;            // no progress lines (attach lines and the summary stay)
};

struct ClusterSettings {
  int receivers = 1;
  std::string role;              // "", "receiver", "worker"
  std::string wire = "float";
  int receiver_threads = -1;     // -1: the threads option
  int receiver_prepare = -1;     // -1: receiver_threads (0: a receiver with workers only receives)
  bool serve = false;
  std::string summary_json;
};

struct InspectSettings {
  std::int64_t limit = -1;       // -1: every record
  bool json = false;
};

struct Settings {
  Command command = kRun;
  pipeline::LoaderConfig loader;
  RunSettings run;
  ObserveSettings observe;
  ServeSettings serve;
  ClusterSettings cluster;
  InspectSettings inspect;
  // The options given explicitly (a flag or a keyword; not the model folder, the environment or
  // a default), by spec.
  std::set<const OptionSpec*> given;
  bool has(std::string_view name) const;  // given, by Python name
};

}  // namespace stoker::config
