// `stoker cluster`: one MPI job, two roles (cluster/README.md). Receivers (ranks 0..R-1) run
// `stoker run`'s loop (run_loop.h) — the engine, the simulated trainer, state file, logs, hashes
// — with their samples prepared by the workers (ranks R..N-1) over MPI; with no workers a
// receiver prepares them itself. Placement is mpirun's (--map-by node | slot); the bytes never
// depend on it. Rank 0 prints every rank's CPU time and bytes and the job's samples/s, trainer
// wait ratio and wire bytes per sample (--summary-json for the bench).
#include <cstdio>
#include <limits>
#include <string>
#include <thread>

#include "stoker/cli/args.h"
#include "stoker/cli/commands.h"
#include "stoker/cli/loader_flags.h"
#include "stoker/cli/run_loop.h"

#ifdef STOKER_HAVE_CLUSTER
#include "stoker/cluster/job.h"
#include "stoker/cluster/receiver.h"
#include "stoker/cluster/worker.h"
#include "stoker/model/model_config.h"
#endif

namespace stoker::cli {
namespace {

constexpr char kHelp[] = R"(usage: mpirun [mpirun options] -np N stoker cluster DATA.jsonl[,MORE.jsonl] [options]

Scale-out: world ranks 0..R-1 are receivers — each one is data-parallel rank r of R, runs the
`stoker run` loop (a simulated trainer with --step-ms, state file, logs, hashes) and assembles
its batches in its arena — and ranks R..N-1 are workers that read, fetch, decode, resize and
tokenize the samples the receivers ask for and send them back over MPI. mpirun places the ranks
(--map-by node spreads, --map-by slot packs); the batches are the bytes `stoker run --rank r
--world-size R` makes, whatever the layout and the number of workers. With no workers a
receiver prepares its samples itself (--threads). A rank that dies ends the job (mpirun names
it); --resume the receivers' --state-file with any number of workers.

cluster options (every rank must get the same flags; only --role may differ):
  --receivers R        ranks 0..R-1 receive (default 1)
  --role receiver|worker   MPMD instead of --receivers: this app context's role
  --wire W             float (default: finished pixel rows) | uint8 (resized pixels; the receiver
                       normalises, bit-identical) | encoded (media bytes; the receiver decodes)
  --threads N          CPU threads of every rank (default: all cores)
  --receiver-threads N CPU threads of the receivers (default: --threads)
  --receiver-prepare N threads on which a receiver with workers prepares samples too, with the
                       CPU receiving leaves (SCHED_IDLE; default: --receiver-threads; 0: it only
                       receives)
  --sample-window N    samples a receiver's Loader keeps requested ahead (default
                       2*B*(prefetch+1)): the bound of pixels in flight per Loader; without
                       --serve, --window N says the same
  --serve              receivers run `stoker serve` (--world-size W trainer ranks attach with
                       stoker.Loader(connect=--socket)) instead of the `stoker run` loop
  --summary-json F     rank 0 writes samples/s, wait ratio, wire bytes and every rank's CPU
                       seconds and bytes to F
  With R > 1, --state-file, --resume, --delivered-log, --batch-hashes and --error-report
  name one file per receiver: F.r0, F.r1, ...

`stoker run` options (receivers' loop and the shared loader config):
)";

#ifdef STOKER_HAVE_CLUSTER
// FNV-1a of the arguments, --role and its value left out: what every rank must agree on.
std::uint64_t fingerprint(int argc, char** argv) {
  std::uint64_t h = 14695981039346656037ull;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--role") {
      ++i;
      continue;
    }
    if (a.rfind("--role=", 0) == 0) continue;
    for (unsigned char c : a + '\0') h = (h ^ c) * 1099511628211ull;
  }
  return h;
}

int cluster(int argc, char** argv, const Args& args) {
  Result<int> receivers = args.get_int<int>("receivers", 1, 1, 1 << 20);
  if (!receivers.ok()) return report("cluster", receivers.error());
  const std::string role = args.get("role");
  if (!role.empty() && role != "receiver" && role != "worker") {
    return report("cluster", invalid_argument("--role receiver|worker, not '" + role + "'"));
  }
  if (!role.empty() && args.has("receivers")) {
    return report("cluster", invalid_argument("--role and --receivers exclude each other"));
  }
  Result<cluster::Wire> wire = cluster::parse_wire(args.get("wire", "float"));
  if (!wire.ok()) return report("cluster", wire.error());
  Result<pipeline::LoaderConfig> config = run_config(args, /*rank_flags=*/false);
  if (!config.ok()) return report("cluster", config.error());
  Result<int> receiver_threads =
      args.get_int<int>("receiver-threads", config->threads, 0, std::numeric_limits<int>::max());
  if (!receiver_threads.ok()) return report("cluster", receiver_threads.error());
  const int default_prepare =
      *receiver_threads > 0 ? *receiver_threads
                            : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  Result<int> receiver_prepare = args.get_int<int>("receiver-prepare", default_prepare, 0,
                                                   std::numeric_limits<int>::max());
  if (!receiver_prepare.ok()) return report("cluster", receiver_prepare.error());
  // The samples a receiver requests ahead: --sample-window; without --serve also --window (the
  // first interface's name; with --serve, --window is stoker serve's batch window).
  if (args.has("sample-window") && args.has("window") && !args.has("serve")) {
    return report("cluster", invalid_argument("--window and --sample-window are the same setting "
                                              "without --serve: give one"));
  }
  const char* window_flag = args.has("sample-window") || args.has("serve") ? "sample-window" : "window";
  Result<int> window = args.get_int<int>(window_flag, 0, 0, 1 << 20);
  if (!window.ok()) return report("cluster", window.error());
  Result<double> step_ms = args.get_double("step-ms", 0, 0, 86'400'000);
  if (!step_ms.ok()) return report("cluster", step_ms.error());

  const bool serve = args.has("serve");
  if (args.has("rank")) {
    return report("cluster", invalid_argument("--rank: a receiver's rank is its place among the "
                                              "receivers"));
  }
  for (const char* f : {"socket", "progress-s"}) {
    if (args.has(f) && !serve) {
      return report("cluster", invalid_argument(std::string("--") + f + " goes with --serve"));
    }
  }
  if (args.has("world-size") && !serve) {
    return report("cluster", invalid_argument("--world-size is the trainer ranks of --serve; "
                                              "without it the world is the R receivers"));
  }

  cluster::Job job = cluster::start_job(role.empty() ? *receivers : 0, role, fingerprint(argc, argv));
  const int R = static_cast<int>(job.receivers.size());
  cluster::RankReport mine;
  if (job.receiver()) {
    const int r = job.receiver_index();
    std::shared_ptr<cluster::Receiver> remote;
    std::optional<image::ImageProcessor> processor;
    // The workers prepare this receiver's samples: one Receiver for all its Loaders.
    auto attach_workers = [&](pipeline::LoaderConfig& c) -> Status {
      c.window = *window;
      // No production before resume(): a Loader started at create and then resumed would have
      // the workers prepare its first window twice.
      c.prefetch_on_create = false;
      if (job.workers.empty()) return ok_status();
      if (!remote) {
        // The receiver's own processor for the uint8 wire's normalise + patchify (the model's
        // image settings, as the engine's context makes them).
        STOKER_ASSIGN_OR_RETURN(model::ModelConfig m, model::load_model(c.model));
        m.image.apply_exif_orientation = c.apply_exif_orientation;
        m.image.resize_rules = c.small_images;
        STOKER_ASSIGN_OR_RETURN(image::ImageProcessor proc, image::ImageProcessor::create(m.image));
        processor.emplace(std::move(proc));
        // The receiver prepares samples too, on the CPU receiving leaves (receiver.h).
        std::optional<cluster::LocalLane> lane;
        if (*receiver_prepare > 0) lane = cluster::LocalLane{.config = c, .threads = *receiver_prepare};
        STOKER_ASSIGN_OR_RETURN(remote, cluster::Receiver::create(job.workers, *wire, &*processor,
                                                                  std::move(lane)));
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
      if (Status st = serve_loader(args, hooks); !st.ok()) abort_job(job, st.error());
    } else {
      RunHooks hooks;
      hooks.name = "cluster: receiver " + std::to_string(r) + " of " + std::to_string(R);
      if (R > 1) hooks.file_suffix = ".r" + std::to_string(r);
      hooks.stats = &stats;
      hooks.configure = [&](pipeline::LoaderConfig& c) -> Status {
        c.rank.rank = r;
        c.rank.world_size = R;
        c.threads = *receiver_threads;
        return attach_workers(c);
      };
      const int rc = run_loader(args, hooks);
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
                       .step_ms = *step_ms};
    if (Status st = cluster::write_summary(s, all, args.get("summary-json")); !st.ok()) {
      rc = report("cluster", st.error());
    }
  }
  cluster::end_job();
  return rc;
}
#endif

}  // namespace

int run_cluster(int argc, char** argv) {
  std::set<std::string> values = run_value_flags(), switches = run_switch_flags();
  for (const std::string& f : serve_value_flags()) values.insert(f);
  values.insert({"receivers", "role", "wire", "receiver-threads", "receiver-prepare",
                 "sample-window", "summary-json"});
  switches.insert("serve");
  auto args = Args::parse(argc, argv, values, switches, loader_repeat_flags());
  if (!args.ok()) return report("cluster", args.error());
  if (args->has("help") || args->positional().empty()) {
    std::FILE* out = args->has("help") ? stdout : stderr;
    std::fputs(kHelp, out);
    std::fputs(kRunHelp, out);
    std::fputs("\n--serve: `stoker serve` options (each receiver serves its node's trainer ranks):\n", out);
    std::fputs(kServeHelp, out);
    std::fputs(kPackingFlagsHelp, out);
    std::fputs(kMediaFlagsHelp, out);
    return args->has("help") ? 0 : 2;
  }
#ifdef STOKER_HAVE_CLUSTER
  return cluster(argc, argv, *args);
#else
  return report("cluster", unimplemented("this stoker was built without MPI (install "
                                         "libopenmpi-dev and reconfigure)"));
#endif
}

}  // namespace stoker::cli
