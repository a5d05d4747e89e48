#include "stoker/bench/ladder_bench.h"

#include <sched.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "stoker/base/clock.h"
#include "stoker/bench/harness.h"
#include "stoker/bench/paths.h"
#include "stoker/bench/peer.h"
#include "stoker/bench/torch_bench.h"
#include "stoker/model/model_config.h"
#include "stoker/pipeline/loader.h"
#include "stoker/shm/server.h"
#include "stoker/shm/socket_path.h"
#include "stoker/synth/synth.h"

extern char** environ;

namespace stoker::bench {
namespace {

namespace fs = std::filesystem;

struct Row {
  int step = 0;
  double wait_ms = 0, step_ms = 0;
  std::int64_t samples = 0;
};

struct ModeResult {
  std::string name;
  std::vector<Row> rows;
  double first_batch_ms = 0;   // mode start (loader creation) → first batch in the trainer
  double cpu_s = 0, wall_s = 0;  // this process's CPU time over the mode (producer side)
  double runq_s = 0;             // its threads' time runnable but without a CPU
  double rss_mb = 0, consumer_rss_mb = -1, handoff_p50_us = -1;
  std::int64_t socket_bytes = -1, handoff_n = 0;
  pipeline::LoaderStats stats;
};

// Time this process's threads spent runnable but waiting for a CPU (schedstat's run_delay),
// summed over live threads: the direct measure of "more threads than free cores".
double run_delay_s() {
  double total = 0;
  for (const ThreadCpu& t : live_threads()) total += t.run_delay_s;
  return total;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * (v.size() - 1) + 0.5))];
}

pipeline::LoaderConfig loader_config(const LadderOptions& o, const std::string& manifest,
                                     pipeline::Mode mode,
                                     pipeline::Finish finish = pipeline::Finish::kCpu) {
  pipeline::LoaderConfig c;
  c.finish = finish;  // kDevice: uint8 pixels, finished by the trainer (issue 26)
  c.data = {manifest};
  c.model = o.model;
  c.tokenizer = o.tokenizer;
  c.batch_size = o.batch_size;
  c.epochs = -1;  // cycle: every mode runs exactly `steps` batches
  c.mode = mode;
  c.threads = o.threads;
  c.prefetch = o.prefetch;
  c.arena.bytes = o.arena_bytes;  // virtual; only touched pages count
  c.arena.shared = true;  // the zero-copy mode's consumer maps it (the same arena in every mode)
  c.worker_sched = o.worker_sched;
  return c;
}

// Production time per batch: concurrent mode, no trainer, the first batch excluded. Also the
// largest batch block seen, to size the arena for the prefetch modes.
struct Production {
  double ms = 0;
  std::uint64_t max_block = 0;
};
Result<Production> measure_production(const LadderOptions& o, const std::string& manifest,
                                      int batches) {
  STOKER_ASSIGN_OR_RETURN(
      auto loader, pipeline::Loader::create(loader_config(o, manifest, pipeline::Mode::kConcurrent)));
  Production p;
  std::int64_t start = 0;
  for (int i = 0; i < batches; ++i) {
    if (i == 1) start = now_ns();
    STOKER_ASSIGN_OR_RETURN(auto b, loader->next());
    if (!b) return data_loss("the dataset produced no batch");
    p.max_block = std::max(p.max_block, b->layout().block.size);
  }
  p.ms = (now_ns() - start) / 1e6 / (batches - 1);
  return p;
}

// The simulated trainer: wait for a batch, hold it for the step, drop it.
Result<ModeResult> run_in_process(const std::string& name, pipeline::Mode mode, const LadderOptions& o,
                                  const std::string& manifest, double step_ms,
                                  pipeline::Finish finish = pipeline::Finish::kCpu) {
  ModeResult r;
  r.name = name;
  reset_peak_rss();
  const double cpu0 = process_cpu_s(), rq0 = run_delay_s();
  const std::int64_t t_start = now_ns();
  STOKER_ASSIGN_OR_RETURN(auto loader,
                          pipeline::Loader::create(loader_config(o, manifest, mode, finish)));
  const auto step = std::chrono::nanoseconds(static_cast<std::int64_t>(step_ms * 1e6));
  for (int i = 0; i < o.steps; ++i) {
    const std::int64_t t0 = now_ns();
    STOKER_ASSIGN_OR_RETURN(auto b, loader->next());
    const std::int64_t t1 = now_ns();
    if (!b) return data_loss("the loader ended early");
    if (i == 0) r.first_batch_ms = (t1 - t_start) / 1e6;
    const batch::TensorView* ids = b->layout().find("input_ids");
    std::this_thread::sleep_for(step);
    b->release();
    r.rows.push_back({i, (t1 - t0) / 1e6, (now_ns() - t0) / 1e6, ids ? ids->shape[0] : 0});
  }
  r.stats = loader->stats();
  r.runq_s = run_delay_s() - rq0;  // before the loader's threads (and their counts) are gone
  loader.reset();
  r.wall_s = (now_ns() - t_start) / 1e9;
  r.cpu_s = process_cpu_s() - cpu0;
  r.rss_mb = peak_rss_mb();
  return r;
}

std::string self_exe() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "stoker" : p.string();
}

Status parse_consumer_csv(const std::string& path, ModeResult& r, std::int64_t t_start) {
  std::ifstream in(path);
  if (!in) return not_found("consumer wrote no " + path);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    if (line.rfind("# ", 0) == 0) {
      std::istringstream kv(line.substr(2));
      std::string item;
      while (kv >> item) {
        auto eq = item.find('=');
        if (eq == std::string::npos) continue;
        std::string k = item.substr(0, eq), v = item.substr(eq + 1);
        if (k == "handoff_p50_us") r.handoff_p50_us = std::stod(v);
        if (k == "handoff_n") r.handoff_n = std::stoll(v);
        if (k == "socket_bytes") r.socket_bytes = std::stoll(v);
      }
      continue;
    }
    Row row;
    long long arrive = 0, samples = 0;
    if (std::sscanf(line.c_str(), "%d,%lf,%lf,%lld,%lld", &row.step, &row.wait_ms, &row.step_ms,
                    &samples, &arrive) != 5)
      return data_loss("bad consumer row: " + line);
    row.samples = samples;
    if (row.step == 0) r.first_batch_ms = (arrive - t_start) / 1e6;
    r.rows.push_back(row);
  }
  return ok_status();
}

// kPrefetch in this process + BatchServer; the trainer is `stoker consume` in a child process.
Result<ModeResult> run_zero_copy(const LadderOptions& o, const std::string& manifest, double step_ms,
                                 const std::string& work) {
  ModeResult r;
  r.name = "zero-copy";
  reset_peak_rss();
  const double cpu0 = process_cpu_s(), rq0 = run_delay_s();
  const std::int64_t t_start = now_ns();
  STOKER_ASSIGN_OR_RETURN(std::string sock,
                          shm::default_socket_path("ladder-" + std::to_string(::getpid())));
  const std::string csv = work + "/zero-copy-consumer.csv";
  char step_buf[32];
  std::snprintf(step_buf, sizeof(step_buf), "%.4f", step_ms);
  std::vector<std::string> argv_s = {self_exe(), "consume", "--socket", sock, "--step-ms",
                                     step_buf,   "--csv",   csv,       "--connect-timeout-ms",
                                     "30000"};
  std::vector<char*> argv;
  for (std::string& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  auto loader = pipeline::Loader::create(loader_config(o, manifest, pipeline::Mode::kPrefetch));
  if (!loader.ok()) return std::move(loader).error();
  // Window 2: the trainer holds one batch and has the next one's descriptor queued; the ring
  // behind the server keeps `prefetch` more — the same lead as the in-process prefetch mode.
  auto server = shm::BatchServer::create(
      (*loader)->arena(), {.socket_path = sock, .window = 2, .idle_timeout_ms = 30000});
  if (!server.ok()) return std::move(server).error();
  pid_t pid = -1;
  if (int err = posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ); err != 0)
    return internal_error("spawning " + argv_s[0] + " consume: " + std::strerror(err));
  Status produced = ok_status();
  for (int i = 0; i < o.steps && produced.ok(); ++i) {
    auto b = (*loader)->next();
    if (!b.ok()) {
      produced = std::move(b).error();
    } else if (!*b) {
      produced = data_loss("the loader ended early");
    } else {
      produced = (*server)->send(std::move(**b));
    }
  }
  Status finished = produced.ok() ? (*server)->finish(std::chrono::seconds(60)) : ok_status();
  r.runq_s = run_delay_s() - rq0;
  server->reset();  // closes the consumer's connection if it is still there
  int status = 0;
  rusage ru{};
  ::wait4(pid, &status, 0, &ru);
  r.stats = (*loader)->stats();
  loader->reset();
  r.wall_s = (now_ns() - t_start) / 1e9;
  r.cpu_s = process_cpu_s() - cpu0;
  r.rss_mb = peak_rss_mb();
  r.consumer_rss_mb = ru.ru_maxrss / 1024.0;
  STOKER_RETURN_IF_ERROR(produced);
  STOKER_RETURN_IF_ERROR(finished);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return internal_error("the consumer process failed (status " + std::to_string(status) + ")");
  STOKER_RETURN_IF_ERROR(parse_consumer_csv(csv, r, t_start));
  return r;
}

struct Summary {
  double wait_pct = 0;       // steady state: steps after the ring fill (> fill_steps)
  double wait_all_pct = 0;   // every step after the first, the ring fill included
  double samples_per_s = 0, p50 = 0, p99 = 0;
};

// Steady state = the steps after the start-up transient: step 0 (pools, tokenizer, first batch)
// and steps 1..fill_steps, in which a prefetch ring of fill_steps batches fills up (it gains
// (step − production) per step, and the first touches of the arena's pages and caches make
// those batches the slowest). The same steps are cut from every mode; wait_all_pct keeps them.
Summary summarize(const ModeResult& r, int fill_steps) {
  Summary s;
  double wait = 0, total = 0, wait_all = 0, total_all = 0;
  std::int64_t samples = 0;
  std::vector<double> waits;
  for (const Row& row : r.rows) {
    if (row.step == 0) continue;
    wait_all += row.wait_ms;
    total_all += row.step_ms;
    if (row.step <= fill_steps) continue;
    wait += row.wait_ms;
    total += row.step_ms;
    samples += row.samples;
    waits.push_back(row.wait_ms);
  }
  s.wait_pct = total > 0 ? 100 * wait / total : 0;
  s.wait_all_pct = total_all > 0 ? 100 * wait_all / total_all : 0;
  s.samples_per_s = total > 0 ? samples / (total / 1e3) : 0;
  s.p50 = percentile(waits, 0.50);
  s.p99 = percentile(waits, 0.99);
  return s;
}

// The stage nearest saturation, for the "why" line when a mode misses.
std::string busiest_stage(const pipeline::LoaderStats& st) {
  std::string best;
  double best_u = -1;
  for (const pipeline::StageStats& s : st.stages) {
    double u = st.elapsed_s > 0 ? s.busy_s / std::max(1, s.threads) / st.elapsed_s : 0;
    if (u > best_u) {
      best_u = u;
      best = s.name + " " + std::to_string(static_cast<int>(u * 100 + 0.5)) + "% of " +
             std::to_string(s.threads) + " thread(s)";
    }
  }
  return best;
}

Status write_csv(const std::string& path, const std::vector<ModeResult>& results) {
  std::ofstream out(path);
  if (!out) return permission_denied("cannot write " + path);
  out << "mode,step,wait_ms,step_ms\n";
  for (const ModeResult& r : results)
    for (const Row& row : r.rows)
      out << r.name << ',' << row.step << ',' << row.wait_ms << ',' << row.step_ms << '\n';
  return ok_status();
}

int records_in(const std::string& manifest) {
  std::ifstream in(manifest);
  int n = 0;
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) ++n;
  return n;
}

Result<std::string> find_manifest(const LadderOptions& o, std::string& temp_dir) {
  if (!o.data.empty()) {
    if (fs::is_directory(o.data)) return (fs::path(o.data) / "data.jsonl").string();
    return o.data;
  }
  char tmpl[] = "/tmp/stoker-bench-ladder-XXXXXX";
  if (!::mkdtemp(tmpl)) return internal_error("mkdtemp failed");
  temp_dir = tmpl;
  // Images bounded so that --quick's warm-up and four modes fit its time budget.
  synth::SynthConfig c{.out_dir = temp_dir, .records = o.quick ? 48 : 192, .seed = 1,
                       .max_side = o.quick ? 640 : 1280};
  STOKER_ASSIGN_OR_RETURN(synth::SynthResult s, synth::generate_dataset(c));
  std::printf("dataset: synthetic, %d records, images up to %d px (%s)\n", s.records, c.max_side,
              temp_dir.c_str());
  return s.data_path;
}

void print_table(const std::vector<ModeResult>& results, int cores, int fill_steps) {
  std::printf("\n%-11s %7s %8s %10s %11s %13s %10s %10s %6s %7s %9s\n", "mode", "wait%",
              "w/ fill", "samples/s", "CPU ms/smp", "first batch", "next p50", "next p99", "CPU%",
              "runq", "peak RSS");
  for (const ModeResult& r : results) {
    Summary s = summarize(r, fill_steps);
    double cpu = r.wall_s > 0 ? 100 * r.cpu_s / r.wall_s / cores : 0;
    const double per_sample = r.stats.samples > 0 ? 1e3 * r.cpu_s / r.stats.samples : 0;
    std::printf("%-11s %6.2f%% %7.2f%% %10.1f %11.2f %10.0f ms %7.2f ms %7.2f ms %5.0f%% %7.2f %6.0f MB",
                r.name.c_str(), s.wait_pct, s.wait_all_pct, s.samples_per_s, per_sample,
                r.first_batch_ms, s.p50, s.p99, cpu, r.wall_s > 0 ? r.runq_s / r.wall_s : 0.0,
                r.rss_mb);
    if (r.consumer_rss_mb >= 0) {
      std::printf("  (consumer %.0f MB, %.0f B/batch on the socket", r.consumer_rss_mb,
                  r.rows.empty() ? 0.0 : static_cast<double>(r.socket_bytes) / r.rows.size());
      if (r.handoff_n > 0)
        std::printf(", hand-off p50 %.0f us over the %lld steps that waited", r.handoff_p50_us,
                    static_cast<long long>(r.handoff_n));
      std::printf(")");
    }
    std::printf("\n");
  }
  std::printf("wait%% = time blocked in next() / total in the steady state: steps after the "
              "first %d (the first batch, then the %d steps in which a %d-batch ring fills), "
              "cut from every mode; w/ fill = the same over every step after the first; CPU "
              "ms/smp = this process's CPU over the mode per delivered sample; "
              "first batch = loader creation -> first batch in the trainer; CPU%% = "
              "producer process CPU time / wall / %d cores; runq = its threads' time runnable "
              "but without a CPU, per second (>0.1: the cores are oversubscribed)\n",
              fill_steps + 1, fill_steps, fill_steps, cores);
}

// finish=device against prefetch at the same step, and what stoker.finish costs per batch in
// torch on this CPU (bench/finish_bench.py --run finish-time: the same set, 16 batches after the
// first, torch at 1 thread) — on a GPU that work is the device's, inside its step.
void print_finish_line(const LadderOptions& o, const std::string& manifest,
                       const std::vector<ModeResult>& results, double step_ms) {
  const ModeResult* cpu = nullptr;
  const ModeResult* dev = nullptr;
  for (const ModeResult& r : results) {
    if (r.name == "prefetch") cpu = &r;
    if (r.name == "finish=dev") dev = &r;
  }
  if (dev == nullptr) return;
  const Summary d = summarize(*dev, o.prefetch);
  std::printf("finish=device (prefetch, uint8 pixels) at the same %.1f ms step: wait %.2f%%", step_ms,
              d.wait_pct);
  if (cpu != nullptr) {
    const Summary c = summarize(*cpu, o.prefetch);
    std::printf(" vs finish=cpu %.2f%%; CPU per sample %.2f vs %.2f ms; peak RSS %.0f vs %.0f MB",
                c.wait_pct,
                dev->stats.samples > 0 ? 1e3 * dev->cpu_s / dev->stats.samples : 0.0,
                cpu->stats.samples > 0 ? 1e3 * cpu->cpu_s / cpu->stats.samples : 0.0,
                dev->rss_mb, cpu->rss_mb);
  }
  std::printf("\n");
  auto out = capture_python_bench(
      "finish_bench.py", {"--run", "finish-time", "--data", manifest, "--batch-size",
                          std::to_string(o.batch_size), "--threads", std::to_string(o.threads),
                          "--max-batches", "16"});
  const std::string line = out.ok() ? last_json_line(*out) : "";
  double mean_ms = 0, p50_ms = 0;
  int batches = 0;
  if (!line.empty() &&
      std::sscanf(line.c_str(), "{\"batches\": %d, \"mean_ms\": %lf, \"p50_ms\": %lf", &batches,
                  &mean_ms, &p50_ms) == 3 && batches > 0) {
    std::printf("torch finish on cpu (stoker.finish(batch, device='cpu'), torch 1.13, 1 thread, "
                "%d batches of %d): %.1f ms per batch (p50 %.1f ms), %.0f%% of the %.1f ms step; "
                "not in the wait above (on a GPU the device does it inside its step)\n",
                batches, o.batch_size, mean_ms, p50_ms, 100 * mean_ms / step_ms, step_ms);
  } else {
    std::printf("torch finish on cpu: not measured (%s)\n",
                out.ok() ? "no result line" : out.error().message().c_str());
  }
}

Status run(const LadderOptions& opt_in) {
  LadderOptions o = opt_in;
  if (o.batch_size <= 0) o.batch_size = o.quick ? 4 : 8;
  if (o.tokenizer.empty()) {  // the model folder's, or the bundled one of a preset
    STOKER_ASSIGN_OR_RETURN(model::ModelConfig m, model::load_model(o.model));
    STOKER_ASSIGN_OR_RETURN(o.tokenizer, model::default_tokenizer_dir(m));
  }
  const int cores = usable_cores();
  if (o.threads <= 0) o.threads = cores;  // the Loader's default counts every CPU, even masked
  const Stopwatch total;
  std::string temp_dir;
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      if (!dir.empty()) fs::remove_all(dir);
    }
  } cleanup;
  STOKER_ASSIGN_OR_RETURN(std::string manifest, find_manifest(o, temp_dir));
  cleanup.dir = temp_dir;
  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (ec) return permission_denied("creating " + o.out + ": " + ec.message());

  // About one epoch of batches (the mix of text-only, single- and multi-image records averages
  // out), at least 8; the first is start-up and not counted.
  const int warm = std::clamp(records_in(manifest) / std::max(1, o.batch_size) + 1, 8, 48);
  const double load_before = load_average();
  STOKER_ASSIGN_OR_RETURN(Production prod, measure_production(o, manifest, warm));
  const double prod_ms = prod.ms;
  // Batches alive at once in zero-copy: the ring, one in the producer's hands, one blocked in
  // send(), the server's window of 2, plus the engine's in-flight emit; twice that for larger
  // batches than the warm-up saw. An arena too small makes the producer wait for memory
  // (float32 pixel_values of 8 images ≤ 1280 px are ~100–250 MB per batch).
  o.arena_bytes = std::max<std::uint64_t>(
      o.arena_bytes, 2 * static_cast<std::uint64_t>(o.prefetch + 5) * prod.max_block);
  const double step_ms = o.step_ms >= 0 ? o.step_ms : 1.25 * prod_ms;
  if (o.steps <= 0) {
    // Serial ≈ cores×production + step, concurrent ≈ production + step, prefetch, zero-copy
    // and finish=device ≈ step: about 9.75 production times per step over the five modes on 2
    // cores.
    const double budget_ms = o.quick ? 24'000 : 240'000;
    const double per_step = (cores + 1) * prod_ms + 4 * step_ms + prod_ms;
    // Enough steps that the ring's fill-up (a few steps) is a small part of the steady state.
    o.steps = std::clamp(static_cast<int>(budget_ms / per_step), o.quick ? 10 : 40,
                         o.quick ? 150 : 400);
  }
  std::printf("production: %.1f ms/batch of %d (concurrent, no trainer, %d batches after the "
              "first) -> simulated GPU step %.1f ms%s; %d steps per mode; %d cores, %d CPU threads; "
              "arena %.1f GiB (largest batch %.0f MB)\n",
              prod_ms, o.batch_size, warm - 1, step_ms,
              o.step_ms >= 0 ? " (--step-ms)" : " (1.25x production)", o.steps, cores, o.threads,
              o.arena_bytes / 1073741824.0, prod.max_block / 1e6);
  std::fflush(stdout);

  std::vector<ModeResult> results;
  const std::pair<const char*, pipeline::Mode> kModes[] = {
      {"serial", pipeline::Mode::kSerial},
      {"concurrent", pipeline::Mode::kConcurrent},
      {"prefetch", pipeline::Mode::kPrefetch}};
  auto wanted = [&](const std::string& name) {
    return ("," + o.modes + ",").find("," + name + ",") != std::string::npos;
  };
  for (const auto& [name, mode] : kModes) {
    if (!wanted(name)) continue;
    auto r = run_in_process(name, mode, o, manifest, step_ms);
    if (!r.ok()) return std::move(r).error().with_context(std::string("mode ") + name);
    results.push_back(std::move(*r));
  }
  if (wanted("zero-copy")) {
    auto zc = run_zero_copy(o, manifest, step_ms, o.out);
    if (!zc.ok()) return std::move(zc).error().with_context("mode zero-copy");
    results.push_back(std::move(*zc));
  }
  // Issue 26: prefetch with finish=device at the same simulated step — the batches hold uint8
  // rows; the trainer's device would finish them inside its step (a table lookup on the GPU).
  if (wanted("finish-device")) {
    auto r = run_in_process("finish=dev", pipeline::Mode::kPrefetch, o, manifest, step_ms,
                            pipeline::Finish::kDevice);
    if (!r.ok()) return std::move(r).error().with_context("mode finish-device");
    results.push_back(std::move(*r));
  }

  const double load_after = load_average();
  print_table(results, cores, o.prefetch);
  std::printf("machine load average (1 min): %.1f before, %.1f after, on %d cores\n", load_before,
              load_after, cores);
  const std::string csv = o.out + "/ladder.csv";
  STOKER_RETURN_IF_ERROR(write_csv(csv, results));
  auto plot = find_bench_file("plot_ladder.py");
  const bool plotted =
      plot.ok() && run_capture({"/usr/bin/python3", plot->string(), csv, o.out + "/ladder.png",
                                std::to_string(step_ms), std::to_string(o.prefetch)})
                       .ok();
  std::printf("wrote %s%s\n", csv.c_str(),
              plotted ? (" and " + o.out + "/ladder.png").c_str() : " (plot failed: matplotlib?)");

  // The acceptance: prefetch and zero-copy ≤ 2% steady-state wait; serial the baseline.
  for (const ModeResult& r : results) {
    if (r.name != "prefetch" && r.name != "zero-copy" && r.name != "finish=dev") continue;
    Summary s = summarize(r, o.prefetch);
    std::printf("%s: %.2f%% %s 2%% steady state (%.2f%% with the ring fill)", r.name.c_str(),
                s.wait_pct, s.wait_pct <= 2 ? "<=" : ">", s.wait_all_pct);
    if (s.wait_pct > 2) {
      // A step lasts max(step, production): above the step, production ran slower than in
      // the warm-up (neighbours took the CPUs, or the mode itself is slower).
      double steady_ms = 0;
      int n = 0;
      for (const Row& row : r.rows)
        if (row.step > o.prefetch) steady_ms += row.step_ms, ++n;
      steady_ms /= std::max(1, n);
      std::printf(" -- one batch per %.1f ms (step %.1f, warm-up production %.1f); busiest "
                  "stage: %s; producer waited %.2f s on a full arena",
                  steady_ms, step_ms, prod_ms,
                  busiest_stage(r.stats).c_str(), r.stats.arena_wait_s);
      if (load_after > cores)
        std::printf("; load average %.1f on %d cores: other processes held the CPUs", load_after,
                    cores);
    }
    std::printf("\n");
  }
  print_finish_line(o, manifest, results, step_ms);
  std::printf("total %.1f s\n", total.elapsed_s());
  return ok_status();
}

}  // namespace

Status run_ladder_bench(const LadderOptions& options) { return run(options); }

}  // namespace stoker::bench
