// `stoker cluster`: one MPI job, two roles (cluster/README.md). Receivers (ranks 0..R-1) run
// `stoker run`'s loop (run_loop.h) — the engine, the simulated trainer, state file, logs, hashes
// — with their samples prepared by the workers (ranks R..N-1) over MPI; with no workers a
// receiver prepares them itself. Placement is mpirun's (--map-by node | slot); the bytes never
// depend on it. Rank 0 prints every rank's CPU time and bytes and the job's samples/s, trainer
// wait ratio and wire bytes per sample (--summary-json for the bench).
#include <algorithm>
#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <thread>

#include "stoker/base/atomic_file.h"
#include "stoker/base/hash.h"
#include "stoker/cli/commands.h"
#include "stoker/cli/options_cli.h"
#include "stoker/cli/run_loop.h"

#ifdef STOKER_HAVE_CLUSTER
#include "stoker/cluster/job.h"
#include "stoker/cluster/receiver.h"
#include "stoker/cluster/worker.h"
#endif

namespace stoker::cli {
namespace {

constexpr char kHelp[] = R"(usage: mpirun [mpirun options] -np N stoker cluster DATA.jsonl [MORE.jsonl ...] [options]

Scale-out: world ranks 0..R-1 are receivers — each one is data-parallel rank r of R, runs the
`stoker run` loop (a simulated trainer with --step-ms, state file, logs, hashes) and assembles
its batches in its arena — and ranks R..N-1 are workers that read, fetch, decode, resize and
tokenize the samples the receivers ask for and send them back over MPI. mpirun places the ranks
(--map-by node spreads, --map-by slot packs); the batches are the bytes `stoker run --rank r
--world-size R` makes, whatever the layout and the number of workers. With no workers a
receiver prepares its samples itself (--threads). A rank that dies ends the job (mpirun names
it); --resume the receivers' --state-file with any number of workers. Every rank must get the
same options (only --role may differ). With --serve, receivers run the node server (`stoker
serve`: --world-size trainer ranks attach with stoker.Loader(connect=--socket)). With R > 1,
--state-file, --resume, --delivered-log, --batch-hashes and --error-report name one file per
receiver: F.r0, F.r1, ...
)";

#ifdef STOKER_HAVE_CLUSTER
// FNV-1a of the arguments, --role and its value left out: what every rank must agree on.
std::uint64_t fingerprint(int argc, char** argv) {
  std::uint64_t h = kFnv64Offset;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--role") {
      ++i;
      continue;
    }
    if (a.rfind("--role=", 0) == 0) continue;
    h = fnv1a64(a.c_str(), a.size() + 1, h);  // with the terminator: "ab","c" != "a","bc"
  }
  return h;
}

int cluster(int argc, char** argv, const config::Settings& settings) {
  const config::ClusterSettings& cs = settings.cluster;
  Result<cluster::Wire> wire = cluster::parse_wire(cs.wire);
  if (!wire.ok()) return report("cluster", wire.error());
  const pipeline::LoaderConfig* config = &settings.loader;
  const int receiver_threads = cs.receiver_threads >= 0 ? cs.receiver_threads : config->threads;
  // The threads on which a receiver with workers prepares samples too (0: it only receives).
  const int all_cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int receiver_prepare = cs.receiver_prepare >= 0 ? cs.receiver_prepare
                               : receiver_threads > 0   ? receiver_threads
                                                        : all_cores;
  const int window = config->window;  // --sample-window
  const bool serve = cs.serve;
  const std::string role = cs.role;
  const int receivers = cs.receivers;
  const double step_ms = settings.run.step_ms;

  cluster::Job job = cluster::start_job(role.empty() ? receivers : 0, role, fingerprint(argc, argv));
  const int R = static_cast<int>(job.receivers.size());
  cluster::RankReport mine;
  if (job.receiver()) {
    const int r = job.receiver_index();
    std::shared_ptr<cluster::Receiver> remote;
    // The workers prepare this receiver's samples: one Receiver for all its Loaders.
    auto attach_workers = [&](pipeline::LoaderConfig& c) -> Status {
      c.window = window;
      // No production before resume(): a Loader started at create and then resumed would have
      // the workers prepare its first window twice.
      c.prefetch_on_create = false;
      if (job.workers.empty()) return ok_status();
      if (!remote) {
        // The uint8 wire's finishing (normalise + patchify) uses each engine's own processors.
        // The receiver prepares samples too, on the CPU receiving leaves (receiver.h).
        std::optional<cluster::LocalLane> lane;
        if (receiver_prepare > 0) {
          lane = cluster::LocalLane{.config = c, .threads = receiver_prepare};
        }
        STOKER_ASSIGN_OR_RETURN(remote,
                                cluster::Receiver::create(job.workers, *wire, std::move(lane)));
      }
      c.remote = remote;
      return ok_status();
    };
    pipeline::LoaderStats stats;
    if (serve) {
      // `stoker serve` on this node: trainer ranks attach with stoker.Loader(connect=...).
      ServeHooks hooks;
      hooks.configure = [&](pipeline::LoaderConfig& c) -> Status {
        c.errors = config->errors;  // the failure budget flags, as on `stoker run`
        c.errors.report_path.clear();  // one per rank would be needed: not in serve mode
        return attach_workers(c);
      };
      if (Status st = serve_loader(settings, hooks); !st.ok()) abort_job(job, st.error());
    } else {
      RunHooks hooks;
      hooks.name = "cluster: receiver " + std::to_string(r) + " of " + std::to_string(R);
      if (R > 1) hooks.file_suffix = ".r" + std::to_string(r);
      hooks.stats = &stats;
      hooks.configure = [&](pipeline::LoaderConfig& c) -> Status {
        c.rank.rank = r;
        c.rank.world_size = R;
        c.threads = receiver_threads;
        return attach_workers(c);
      };
      const int rc = run_loader(settings, hooks);
      if (rc != 0) abort_job(job, internal_error("the receiver's loop failed (its error is above)"));
    }
    std::uint64_t sent = 0, received = 0, answered = 0;
    cluster::ReceiverStats rs;
    if (remote) {
      remote->drain();  // every answer in, every worker told to stop
      sent = remote->bytes_sent();
      rs = remote->stats();
      received = rs.message_bytes;
      answered = rs.samples + rs.local_samples;
    }
    mine = cluster::own_report(job);
    mine.progress_cpu_s = rs.progress_cpu_s;
    mine.local_samples = rs.local_samples;
    mine.local_bytes = rs.local_bytes;
    mine.bytes_sent = sent;
    mine.bytes_received = received;
    mine.samples = serve ? answered : static_cast<std::uint64_t>(stats.samples);
    mine.batches = static_cast<std::uint64_t>(stats.batches);
    mine.failed = static_cast<std::uint64_t>(stats.failed);
    mine.elapsed_s = stats.elapsed_s;
    mine.wait_s = stats.wait_s;
    mine.first_batch_s = stats.first_batch_s;
  } else {
    Result<cluster::WorkerStats> w = cluster::run_worker(*config, *wire, R);
    if (!w.ok()) abort_job(job, w.error());
    mine = cluster::own_report(job);
    mine.samples = w->samples;
    mine.failed = w->failed;
    mine.bytes_sent = w->bytes_sent;
    mine.bytes_received = w->bytes_received;
    mine.progress_cpu_s = w->progress_cpu_s;
  }
  std::vector<cluster::RankReport> all = cluster::gather_reports(job, mine);
  int rc = 0;
  if (job.rank == 0) {
    cluster::Summary s{.receivers = R,
                       .workers = static_cast<int>(job.workers.size()),
                       .wire = job.workers.empty() ? "local" : cluster::wire_name(*wire),
                       .batch_size = config->batch_size,
                       .step_ms = step_ms};
    // A diagnostic output (issue #28): a warning naming it, unless --strict-outputs.
    Status st = cluster::write_summary(s, all, cs.summary_json);
    if (!st.ok()) st = Error(st.error()).with_context("--summary-json " + cs.summary_json);
    if (Status kept = diagnostic_output(st, config->strict_outputs, "cluster"); !kept.ok()) {
      rc = report("cluster", kept.error());
    }
  }
  cluster::end_job();
  return rc;
}
#endif

}  // namespace

int run_cluster(int argc, char** argv) {
  bool help = false;
  Result<config::Settings> settings = parse_command_line(argc, argv, config::kCluster, &help);
  if (help || argc == 0) {
    std::FILE* out = help ? stdout : stderr;
    std::fputs(kHelp, out);
    std::fputs(options_help(config::kCluster).c_str(), out);
    return help ? 0 : 2;
  }
  if (!settings.ok()) return report("cluster", settings.error());
#ifdef STOKER_HAVE_CLUSTER
  return cluster(argc, argv, *settings);
#else
  return report("cluster", unimplemented("this stoker was built without MPI (install "
                                         "libopenmpi-dev and reconfigure)"));
#endif
}

}  // namespace stoker::cli
