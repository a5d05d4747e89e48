#include "stoker/bench/scale_bench.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "stoker/base/clock.h"
#include "stoker/bench/paths.h"
#include "stoker/bench/peer.h"
#include "stoker/model/family.h"
#include "stoker/model/model_config.h"
#include "stoker/synth/synth.h"

extern char** environ;

namespace stoker::bench {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// ---- the bed ----------------------------------------------------------------------------------
// `cluster.sh down` for the signal handler, prepared before the bed exists (async-signal-safe:
// fork, execv and waitpid only).
char g_down_store[7][256];
char* g_down_argv[8] = {};
volatile sig_atomic_t g_bed_up = 0;
volatile sig_atomic_t g_child_group = 0;  // the running job's process group (mpirun), or 0

void down_from_signal(int sig) {
  if (g_child_group > 0) ::kill(-g_child_group, SIGKILL);
  if (g_bed_up) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::execv(g_down_argv[0], g_down_argv);
      ::_exit(127);
    }
    if (pid > 0) {
      int status = 0;
      ::waitpid(pid, &status, 0);
    }
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void prepare_down(const std::string& script, const std::string& prefix, const std::string& subnet) {
  const std::string words[7] = {"/bin/bash", script, "down", "--prefix", prefix, "--subnet", subnet};
  for (int i = 0; i < 7; ++i) {
    std::snprintf(g_down_store[i], sizeof g_down_store[i], "%s", words[i].c_str());
    g_down_argv[i] = g_down_store[i];
  }
  g_down_argv[7] = nullptr;
  ::signal(SIGINT, down_from_signal);
  ::signal(SIGTERM, down_from_signal);
}

// Runs argv with stdout + stderr into `log`, in its own process group, killed (the group) after
// `timeout_s`; `tick` (if any) runs about every 100 ms meanwhile. Returns the exit status (128 +
// signal when killed).
Result<int> run_logged(const std::vector<std::string>& argv, const std::string& log,
                       double timeout_s, const std::function<void()>& tick = {}) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  std::fflush(stdout);
  const int err = posix_spawnp(&pid, args[0], &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (err != 0) return unavailable("spawning " + argv[0] + ": " + std::strerror(err));
  g_child_group = pid;
  struct Forget {
    ~Forget() { g_child_group = 0; }
  } forget;
  const Stopwatch clock;
  int status = 0;
  for (;;) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) return internal_error("waitpid failed");
    if (clock.elapsed_s() > timeout_s) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return deadline_exceeded("no end after " + std::to_string(static_cast<int>(timeout_s)) +
                               " s (killed; log: " + log + ")");
    }
    if (tick) tick();
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string tail_of(const std::string& path, std::size_t bytes = 1500) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > bytes ? "..." + s.substr(s.size() - bytes) : s;
}

// Cumulative counters of one host (cluster.sh stats).
struct HostCounters {
  std::string name, rate, cpu;
  double tx = 0, rx = 0, cpu_ns = 0, drops = 0;
};

// The counter files of one host (cluster.sh counters), read directly while a job runs.
struct CounterFiles {
  std::string name, tx, rx, cpu, unit;
};

double read_number(const std::string& path, const std::string& key = "") {
  std::ifstream in(path);
  if (key.empty()) {
    double v = -1;
    in >> v;
    return v;
  }
  std::string k;
  double v = -1;
  while (in >> k >> v)
    if (k == key) return v;
  return -1;
}

// One reading of every host's counters at one moment.
struct Sample {
  double t = 0;  // s since the job started
  std::vector<double> tx, rx, cpu_ns;
};
Sample read_sample(const std::vector<CounterFiles>& files, double t) {
  Sample s;
  s.t = t;
  for (const CounterFiles& f : files) {
    s.tx.push_back(read_number(f.tx));
    s.rx.push_back(read_number(f.rx));
    s.cpu_ns.push_back(f.unit == "ns"     ? read_number(f.cpu)
                       : f.unit == "usec" ? 1000 * read_number(f.cpu, "usage_usec")
                                          : -1);
  }
  return s;
}

class Bed {
 public:
  struct Layout {
    int hosts = 1;
    std::vector<std::string> rates, cpus;
    std::vector<int> slots;
  };

  Bed(std::string script, std::string prefix, std::string subnet)
      : script_(std::move(script)), prefix_(std::move(prefix)), subnet_(std::move(subnet)) {
    prepare_down(script_, prefix_, subnet_);
  }
  ~Bed() { down(); }

  Status up(const Layout& l, const std::string& log) {
    auto join = [](const auto& v) {
      std::string s;
      for (const auto& x : v) {
        if (!s.empty()) s += ',';
        if constexpr (std::is_same_v<std::decay_t<decltype(x)>, int>) s += std::to_string(x);
        else s += x;
      }
      return s;
    };
    g_bed_up = 1;
    STOKER_ASSIGN_OR_RETURN(
        int status, run_logged({"/bin/bash", script_, "up", "--prefix", prefix_, "--subnet", subnet_,
                                "--hosts", std::to_string(l.hosts), "--rate", join(l.rates), "--cpu",
                                join(l.cpus), "--slots", join(l.slots)},
                               log, 120));
    if (status != 0) return internal_error("cluster.sh up failed: " + tail_of(log));
    return ok_status();
  }

  void down() {
    if (!g_bed_up) return;
    (void)run_capture({"/bin/bash", script_, "down", "--prefix", prefix_, "--subnet", subnet_});
    g_bed_up = 0;
  }

  Result<std::vector<HostCounters>> stats() const {
    STOKER_ASSIGN_OR_RETURN(std::string out, run_capture({"/bin/bash", script_, "stats", "--prefix",
                                                          prefix_, "--subnet", subnet_}));
    std::vector<HostCounters> hosts;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream f(line);
      HostCounters h;
      std::string addr;
      if (!(f >> h.name >> addr >> h.tx >> h.rx >> h.cpu_ns >> h.drops >> h.rate >> h.cpu))
        return data_loss("cluster.sh stats: bad line '" + line + "'");
      hosts.push_back(h);
    }
    return hosts;
  }

  Result<std::vector<CounterFiles>> counters() const {
    STOKER_ASSIGN_OR_RETURN(std::string out, run_capture({"/bin/bash", script_, "counters",
                                                          "--prefix", prefix_, "--subnet", subnet_}));
    std::vector<CounterFiles> files;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream f(line);
      CounterFiles c;
      if (!(f >> c.name >> c.tx >> c.rx >> c.cpu >> c.unit))
        return data_loss("cluster.sh counters: bad line '" + line + "'");
      files.push_back(c);
    }
    return files;
  }

  std::vector<std::string> mpirun_prefix() const {
    return {"/bin/bash", script_, "mpirun", "--prefix", prefix_, "--subnet", subnet_};
  }
  std::string host(int i) const { return prefix_ + "-h" + std::to_string(i); }

 private:
  std::string script_, prefix_, subnet_;
};

// ---- configurations -------------------------------------------------------------------------
enum class Layout { kAlone, kSpread, kPack };
const char* layout_name(Layout l) {
  return l == Layout::kAlone ? "alone" : l == Layout::kSpread ? "spread" : "packed";
}

struct Spec {
  std::string group;  // "scaling", "trainer", "nic"
  int workers = 0;
  Layout layout = Layout::kAlone;
  std::string wire = "float";
  std::string rate = "none";  // worker hosts' NIC
  double step_ms = 0;
  int batches = 8;
  // The GPU host's receiver also prepares samples (its own lane, cluster/receiver.h): on in the
  // trainer series (what users run); off where the worker hosts' scaling and NICs are measured
  // (the lane would blur how much K worker hosts make).
  bool lane = false;
  std::string name() const {
    if (layout == Layout::kAlone) return "alone";
    return std::string(layout_name(layout)) + " K=" + std::to_string(workers) + " " + wire +
           (lane ? "+lane" : "");
  }
};

struct HostUse {
  std::string name, role, rate, cpu;
  double share = -1;      // cores; -1 unlimited
  double cores = 0;       // CPU used / wall
  double tx_mbs = 0, rx_mbs = 0;
  double rate_mbs = -1;   // the NIC's shaped rate, MB/s; -1 unshaped
  double drops = 0;
};

struct Result1 {
  Spec spec;
  double sps = 0, sps_whole = 0, wait = 0, wait_whole = 0, wire_per_sample = 0;
  double elapsed_s = 0, first_batch_s = -1, wall_s = 0, steady_s = 0, worker_tx_bps = 0;
  int steady_batches = 0;
  double wait_receiver = 0;  // the receiver's own: blocked in next() after the first batch
  bool hashed = false;
  std::int64_t samples = 0;
  double gpu_progress = 0;     // the GPU host's MPI progress thread: cores (CPU / wall)
  double lane_share = 0;       // samples the GPU host prepared itself / samples sent to it
  std::vector<HostUse> hosts;
  std::vector<std::string> hashes;
};

double rate_to_mbs(const std::string& r) {
  if (r == "none" || r.empty()) return -1;
  char* end = nullptr;
  const double n = std::strtod(r.c_str(), &end);
  std::string u = end ? end : "";
  std::transform(u.begin(), u.end(), u.begin(), ::tolower);
  double m = -1;
  if (u == "bit" || u.empty()) m = 1.0 / 8;
  if (u == "kbit") m = 1e3 / 8;
  if (u == "mbit") m = 1e6 / 8;
  if (u == "gbit") m = 1e9 / 8;
  if (u == "kbps") m = 1e3;
  if (u == "mbps") m = 1e6;
  if (u == "gbps") m = 1e9;
  return m < 0 || n <= 0 ? -1 : n * m / 1e6;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::vector<std::string> v;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) v.push_back(line);
  return v;
}

std::string fmt_share(double s) { return s < 0 ? "none" : format("%g", s); }

struct Context {
  ScaleOptions o;
  std::string stoker, manifest, model, tokenizer, work;
  Bed* bed = nullptr;
  int run_index = 0;
  double share = 0.2, gpu_share = 0.2;
};

Result<Result1> run_config(Context& c, const Spec& s) {
  const int idx = c.run_index++;
  const std::string tag = format("%02d", idx);
  Bed::Layout l;
  // Host 0: the GPU host (its NIC unshaped: GPU nodes carry the fat NICs), then worker hosts.
  l.rates = {"none"};
  l.cpus = {fmt_share(c.gpu_share)};
  l.slots = {1};
  if (s.layout == Layout::kSpread) {
    l.hosts = 1 + s.workers;
    l.rates.push_back(s.rate);
    l.cpus.push_back(fmt_share(c.share));
    l.slots.push_back(1);
  } else if (s.layout == Layout::kPack) {
    l.hosts = 2;
    l.rates.push_back(s.rate);
    l.cpus.push_back(fmt_share(c.share * s.workers));
    l.slots.push_back(s.workers);
  }
  STOKER_RETURN_IF_ERROR(c.bed->up(l, c.work + "/" + tag + "-up.log"));
  STOKER_ASSIGN_OR_RETURN(std::vector<CounterFiles> files, c.bed->counters());
  const std::string summary = c.work + "/" + tag + "-summary.json";
  const std::string hashes = c.work + "/" + tag + "-hashes.txt";
  const std::string state = c.work + "/" + tag + "-state.txt";
  const std::string log = c.work + "/" + tag + "-mpirun.log";
  std::vector<std::string> argv = c.bed->mpirun_prefix();
  // The GPU host's pool on its share: threads = ceil(share), at least 1; workers likewise.
  const int gpu_threads = std::max(1, static_cast<int>(std::ceil(c.gpu_share - 1e-9)));
  const int worker_threads = std::max(1, static_cast<int>(std::ceil(c.share - 1e-9)));
  // Requests in flight: a batch and a half plus two per worker keeps every worker busy; the
  // default (2 x B x (prefetch + 1)) would leave workers preparing dozens of samples after the
  // last batch (wasted wall time at the end of every run) and front-load the start (a lead the
  // steady-state cut would have to wait out).
  const int window = c.o.batch_size + c.o.batch_size / 2 + 2 * s.workers;
  // Batch hashes only without a trainer step: hashing a batch (9 MB here, FNV-1a) runs in the
  // trainer's loop on the GPU host's 0.2 core, ~90 ms a batch — with a step it would sit on the
  // trainer's critical path and read as ~10% wait.
  const bool hashed = s.step_ms <= 0;
  const std::vector<std::string> args = {
      "-np", std::to_string(1 + s.workers), "--map-by", s.layout == Layout::kPack ? "slot" : "node",
      c.stoker, "cluster", c.manifest, "--receivers", "1", "--threads",
      std::to_string(worker_threads), "--receiver-threads", std::to_string(gpu_threads), "--wire",
      s.wire, "--batch-size", std::to_string(c.o.batch_size), "--epochs", "-1", "--limit-batches",
      std::to_string(s.batches), "--step-ms", format("%.1f", s.step_ms), "--arena-mb", "256",
      "--sample-window", std::to_string(window), "--summary-json", summary, "--state-file", state,
      "--quiet"};
  argv.insert(argv.end(), args.begin(), args.end());
  if (!s.lane && s.workers > 0) argv.insert(argv.end(), {"--receiver-prepare", "0"});
  if (hashed) argv.insert(argv.end(), {"--batch-hashes", hashes});
  if (!c.model.empty()) argv.insert(argv.end(), {"--model", c.model});
  if (!c.tokenizer.empty()) argv.insert(argv.end(), {"--tokenizer", c.tokenizer});

  std::printf("  %-22s %3d batches of %d ... ", s.name().c_str(), s.batches, c.o.batch_size);
  std::fflush(stdout);
  // Every ~100 ms: the hosts' counters, and the receiver's state file, rewritten after every
  // batch with `batches=N`: a timeline of (time, batches delivered).
  std::vector<Sample> samples;
  std::vector<std::pair<int, int>> timeline;  // (sample index, batches) at each change
  const Stopwatch wall;
  auto tick = [&] {
    samples.push_back(read_sample(files, wall.elapsed_s()));
    std::ifstream in(state);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("batches=", 0) != 0) continue;
      const int n = std::atoi(line.c_str() + 8);
      if (timeline.empty() || n > timeline.back().second)
        timeline.emplace_back(static_cast<int>(samples.size()) - 1, n);
    }
  };
  tick();
  auto status = run_logged(argv, log, 90 + 30 * c.o.seconds + 3.0 * s.batches, tick);
  tick();
  const double wall_s = wall.elapsed_s();
  auto settings_or = c.bed->stats();  // the hosts' settings and the tbf drops of the whole run
  c.bed->down();
  STOKER_ASSIGN_OR_RETURN(std::vector<HostCounters> settings, std::move(settings_or));
  if (!status.ok()) return std::move(status).error().with_context(s.name());
  if (*status != 0)
    return internal_error(s.name() + ": mpirun exited " + std::to_string(*status) + "; log " + log +
                          ":\n" + tail_of(log));

  Result1 r;
  r.spec = s;
  r.wall_s = wall_s;
  std::ifstream js(summary);
  if (!js) return not_found(s.name() + ": no --summary-json written (" + summary + "); log:\n" + tail_of(log));
  double received = 0, worker_samples = 0;
  try {
    json j = json::parse(js);
    r.sps_whole = j.at("samples_per_s").get<double>();
    r.wait_whole = j.at("wait_ratio").get<double>();
    r.wait = j.value("wait_ratio_steady", r.wait_whole);
    r.wait_receiver = r.wait;
    r.elapsed_s = j.at("elapsed_s").get<double>();
    r.samples = j.at("samples").get<std::int64_t>();
    double local = 0;
    for (const json& rank : j.at("ranks")) {
      if (rank.value("role", "") == "receiver") {
        received += rank.value("bytes_received", 0.0);
        local += rank.value("local_samples", 0.0);
        const double wall = rank.value("wall_s", 0.0);
        if (wall > 0) r.gpu_progress = rank.value("progress_cpu_s", 0.0) / wall;
      } else {
        worker_samples += rank.value("samples", 0.0);
      }
    }
    r.lane_share = local + worker_samples > 0 ? local / (local + worker_samples) : 0;
  } catch (const json::exception& e) {
    return data_loss(s.name() + ": bad summary JSON " + summary + ": " + e.what());
  }
  // Bytes per sample the workers shipped (workers also prepare the window still requested when
  // the last batch is taken: per sample sent, not per sample delivered).
  r.wire_per_sample = worker_samples > 0 ? received / worker_samples : 0;
  // Samples/s after the first batch (start-up: MPI, tokenizer, the pipeline filling), from the
  // receiver's `time to first batch` line; the whole-run figure when it is missing.
  {
    std::ifstream in(log);
    std::stringstream ss;
    ss << in.rdbuf();
    std::smatch m;
    const std::string text = ss.str();
    static const std::regex kFirst("time to first batch ([0-9.]+) s");
    if (std::regex_search(text, m, kFirst)) r.first_batch_s = std::stod(m[1]);
  }
  if (hashed) {
    r.hashes = read_lines(hashes);
    r.hashed = true;
  }
  // The steady state = the last two thirds of the batches, from the timeline. At the start the
  // workers prepare the whole request window at once while the first batch waits for start-up
  // (MPI, tokenizer), so the first batches after it come faster than the pipeline can sustain;
  // by a third of the run that lead is spent. Samples/s, the trainer's wait (time not in its
  // step: wait = 1 - batches x step / time) and every utilisation are taken over that interval.
  {
    std::ofstream tl(c.work + "/" + tag + "-timeline.csv");
    tl << "t_s,batches\n";
    for (const auto& [i, n] : timeline) tl << samples[i].t << ',' << n << '\n';
  }
  int a = 0, b = static_cast<int>(samples.size()) - 1;
  if (timeline.size() >= 3) {
    const int n_last = timeline.back().second;
    // Skip a third of the batches, and at least the request window's worth after the first.
    const int skip = std::max(n_last / 3, 1 + (window + c.o.batch_size - 1) / c.o.batch_size);
    std::size_t ia = 0;
    while (ia + 2 < timeline.size() && timeline[ia].second < skip) ++ia;
    a = timeline[ia].first;
    b = timeline.back().first;
    const double t = samples[b].t - samples[a].t;
    const int batches = n_last - timeline[ia].second;
    if (t > 0.3 && batches > 0) {
      r.sps = batches * c.o.batch_size / t;
      r.wait = std::clamp(1 - batches * s.step_ms / 1000.0 / t, 0.0, 1.0);
      r.steady_batches = batches;
    }
  }
  if (r.steady_batches == 0) {  // too short for a timeline: the receiver's after-first-batch figures
    a = 0;
    b = static_cast<int>(samples.size()) - 1;
    r.sps = r.sps_whole;
    if (r.first_batch_s >= 0 && r.elapsed_s > r.first_batch_s + 0.05 && r.samples > c.o.batch_size)
      r.sps = (r.samples - c.o.batch_size) / (r.elapsed_s - r.first_batch_s);
  }
  r.steady_s = samples[b].t - samples[a].t;
  const double dt = std::max(1e-3, r.steady_s);
  for (std::size_t i = 0; i < files.size(); ++i) {
    HostUse h;
    h.name = files[i].name;
    h.role = i == 0 ? "gpu" : "worker";
    if (i < settings.size()) {
      h.rate = settings[i].rate;
      h.cpu = settings[i].cpu;
      h.drops = settings[i].drops;
    }
    h.share = h.cpu == "none" || h.cpu.empty() ? -1 : std::stod(h.cpu);
    h.cores = samples[b].cpu_ns[i] >= 0 ? (samples[b].cpu_ns[i] - samples[a].cpu_ns[i]) / 1e9 / dt : -1;
    h.tx_mbs = (samples[b].tx[i] - samples[a].tx[i]) / 1e6 / dt;
    h.rx_mbs = (samples[b].rx[i] - samples[a].rx[i]) / 1e6 / dt;
    h.rate_mbs = rate_to_mbs(h.rate);
    if (i > 0) r.worker_tx_bps += h.tx_mbs * 1e6;
    r.hosts.push_back(h);
  }
  if (s.workers > 0) r.worker_tx_bps /= s.workers;
  std::printf("%6.1f samples/s, wait %5.1f%%, %7.0f B/sample (job %.1f s, steady: %d batches "
              "in %.1f s; GPU host: MPI progress %.3f cores, own lane %.0f%% of the samples)\n",
              r.sps, 100 * r.wait, r.wire_per_sample, wall_s, r.steady_batches, r.steady_s,
              r.gpu_progress, 100 * r.lane_share);
  return r;
}

// ---- output ---------------------------------------------------------------------------------
void print_tables(const std::vector<Result1>& rs, double sps1) {
  Table t({{"configuration", 22, true}, {"group", 8, true}, {"NIC", 9}, {"step ms", 8},
           {"samples/s", 10}, {"x K=1", 6}, {"wait%", 7}, {"wire B/sample", 14},
           {"GPU host CPU", 13}, {"MPI prog", 8}, {"lane", 5}, {"workers CPU", 12},
           {"worker NIC MB/s", 16}});
  std::printf("\n");
  t.header(stdout);
  for (const Result1& r : rs) {
    double wcores = 0, wshare = 0, wtx = 0, wrate = 0;
    for (const HostUse& h : r.hosts) {
      if (h.role != "worker") continue;
      wcores += h.cores;
      wshare += std::max(0.0, h.share);
      wtx += h.tx_mbs;
      wrate += std::max(0.0, h.rate_mbs);
    }
    const HostUse* gpu = r.hosts.empty() ? nullptr : &r.hosts[0];
    t.row(stdout,
          {r.spec.name(), r.spec.group, r.spec.workers ? r.spec.rate : "-",
           r.spec.step_ms > 0 ? format("%.0f", r.spec.step_ms) : "-", format("%.1f", r.sps),
           sps1 > 0 ? format("%.2f", r.sps / sps1) : "-", format("%.2f", 100 * r.wait),
           r.spec.workers ? format("%.0f", r.wire_per_sample) : "-",
           gpu ? format("%.2f/%s", gpu->cores, fmt_share(gpu->share).c_str()) : "-",
           r.spec.workers ? format("%.3f", r.gpu_progress) : "-",
           r.spec.workers ? format("%.0f%%", 100 * r.lane_share) : "-",
           r.spec.workers ? format("%.2f/%g", wcores, wshare) : "-",
           r.spec.workers ? (wrate > 0 ? format("%.1f (%.0f%%)", wtx, 100 * wtx / wrate)
                                       : format("%.1f", wtx))
                          : "-"});
  }
  std::printf("samples/s after the first batch; wait%% = the trainer's time blocked / total after "
              "the first batch; CPU = cores used (cgroup usage / wall) / the host's share; MPI "
              "prog = the GPU host's MPI progress thread, cores over the whole job; lane = the "
              "share of the samples the GPU host prepared itself (+lane runs); NIC = bytes the "
              "worker hosts sent (their veths) per second, %% of the shaped rate\n");
  std::printf("\nper host:\n");
  Table h({{"configuration", 22, true}, {"host", 12, true}, {"role", 7, true}, {"share", 6},
           {"CPU cores", 10}, {"CPU %share", 11}, {"tx MB/s", 8}, {"rx MB/s", 8}, {"rate MB/s", 10},
           {"NIC %", 6}, {"drops", 6}});
  h.header(stdout);
  for (const Result1& r : rs)
    for (const HostUse& u : r.hosts)
      h.row(stdout, {r.spec.name(), u.name, u.role, fmt_share(u.share), format("%.3f", u.cores),
                     u.share > 0 ? format("%.0f%%", 100 * u.cores / u.share) : "-",
                     format("%.2f", u.tx_mbs), format("%.2f", u.rx_mbs),
                     u.rate_mbs > 0 ? format("%.2f", u.rate_mbs) : "none",
                     u.rate_mbs > 0 ? format("%.0f%%", 100 * std::max(u.tx_mbs, u.rx_mbs) / u.rate_mbs)
                                    : "-",
                     format("%.0f", u.drops)});
}

Status write_csv(const std::string& path, const std::vector<Result1>& rs) {
  std::ofstream out(path);
  if (!out) return permission_denied("cannot write " + path);
  out.precision(10);
  out << "run,configuration,group,workers,layout,wire,worker_rate,step_ms,samples_per_s,"
         "samples_per_s_whole,wait_pct,wait_receiver_pct,wire_bytes_per_sample,host,role,share,cpu_cores,"
         "tx_MBps,rx_MBps,rate_MBps,drops\n";
  int i = 0;
  for (const Result1& r : rs) {
    for (const HostUse& u : r.hosts)
      out << i << ',' << r.spec.name() << ',' << r.spec.group << ',' << r.spec.workers << ','
          << layout_name(r.spec.layout) << ',' << r.spec.wire << ',' << r.spec.rate << ','
          << r.spec.step_ms << ',' << r.sps << ',' << r.sps_whole << ',' << 100 * r.wait << ','
          << 100 * r.wait_receiver << ',' << r.wire_per_sample << ',' << u.name << ',' << u.role << ',' << u.share << ','
          << u.cores << ',' << u.tx_mbs << ',' << u.rx_mbs << ',' << u.rate_mbs << ',' << u.drops
          << '\n';
    ++i;
  }
  return ok_status();
}

// ---- set-up ---------------------------------------------------------------------------------
std::vector<int> parse_workers(const std::string& s) {
  std::vector<int> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) v.push_back(std::stoi(item));
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::string self_exe() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "stoker" : p.string();
}

// A Qwen2.5-VL model folder whose only change is max_pixels: the hub's preprocessor values.
Status write_model(const std::string& dir, int max_pixels) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return permission_denied("creating " + dir + ": " + ec.message());
  std::ofstream cfg(dir + "/config.json");
  cfg << R"({"model_type": "qwen2_5_vl"})" << '\n';
  std::ofstream pre(dir + "/preprocessor_config.json");
  pre << "{\"min_pixels\": 3136, \"max_pixels\": " << max_pixels
      << ", \"patch_size\": 14, \"temporal_patch_size\": 2, \"merge_size\": 2, "
         "\"image_mean\": [0.48145466, 0.4578275, 0.40821073], "
         "\"image_std\": [0.26862954, 0.26130258, 0.27577711], "
         "\"image_processor_type\": \"Qwen2VLImageProcessor\"}\n";
  if (!cfg || !pre) return permission_denied("writing " + dir);
  return ok_status();
}

// Batches for a run whose steady part (its last two thirds) lasts about --seconds.
int batches_for(const Context& c, double expected_sps) {
  const double n = 1.5 * c.o.seconds * expected_sps / c.o.batch_size;
  return 1 + std::clamp(static_cast<int>(std::ceil(n)), 6, 600);
}

Result<Outcome> run(const ScaleOptions& in) {
  Context c;
  c.o = in;
  ScaleOptions& o = c.o;
  if (o.workers.empty()) o.workers = o.quick ? "1,2" : "1,2,4";
  if (o.seconds < 0) o.seconds = o.quick ? 2 : 10;
  if (o.width <= 0 || o.height <= 0) {
    o.width = o.quick ? 1920 : 3840;
    o.height = o.quick ? 1080 : 2160;
  }
  if (o.images <= 0) o.images = o.quick ? 12 : 32;
  if (o.cpu <= 0) o.cpu = o.quick ? 0.4 : 0.2;
  c.share = o.cpu;
  c.gpu_share = o.gpu_cpu > 0 ? o.gpu_cpu : o.cpu;
  std::vector<int> ks = parse_workers(o.workers);
  if (ks.empty() || ks.front() < 1 || ks.back() > 16)
    return invalid_argument("--workers: counts 1..16, e.g. 1,2,4");
  const int kmax = ks.back();

  // Prerequisites: the bed's own probe says what is missing (exit 77).
  auto script = find_bench_file("cluster.sh");
  if (!script.ok()) {
    std::fprintf(stderr, "bench scale: SKIP: %s\n", script.error().to_string().c_str());
    return Outcome::kSkipped;
  }
  STOKER_ASSIGN_OR_RETURN(int probe, run_passthrough({"/bin/bash", script->string(), "probe",
                                                      "--prefix", o.prefix, "--subnet", o.subnet}));
  if (probe == 77) return Outcome::kSkipped;
  if (probe != 0) return internal_error("cluster.sh probe failed (exit " + std::to_string(probe) + ")");

  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (ec) return permission_denied("creating " + o.out + ": " + ec.message());
  c.work = fs::absolute(o.out).string() + "/runs";
  fs::remove_all(c.work, ec);
  fs::create_directories(c.work, ec);
  STOKER_ASSIGN_OR_RETURN(TempDir tmp, TempDir::make("stoker-bench-scale"));
  c.stoker = o.stoker.empty() ? self_exe() : o.stoker;
  if (!o.data.empty()) {
    c.manifest = fs::is_directory(o.data) ? (fs::path(o.data) / "data.jsonl").string() : o.data;
    c.model = o.model;
    c.tokenizer = o.tokenizer;
  } else {
    synth::ImagesOnlyConfig ic{.out_dir = tmp.path() + "/data", .count = o.images, .seed = 7,
                               .width = o.width, .height = o.height, .threads = 2};
    STOKER_ASSIGN_OR_RETURN(synth::SynthResult sr, synth::generate_images_only(ic));
    c.manifest = sr.data_path;
    c.model = tmp.path() + "/model";
    STOKER_RETURN_IF_ERROR(write_model(c.model, o.max_pixels));
    if (o.tokenizer.empty()) {
      STOKER_ASSIGN_OR_RETURN(model::ModelConfig m, model::preset(model::kDefaultModel));
      STOKER_ASSIGN_OR_RETURN(c.tokenizer, model::default_tokenizer_dir(m));
    } else {
      c.tokenizer = o.tokenizer;
    }
    std::printf("dataset: %d photo-like %dx%d JPEGs (%.1f MB), one per record; model "
                "qwen2.5-vl with max_pixels %d\n",
                sr.records, o.width, o.height, sr.image_bytes / 1e6, o.max_pixels);
  }
  Bed bed(script->string(), o.prefix, o.subnet);
  c.bed = &bed;
  std::printf("bed: scripts/cluster.sh, prefix %s, subnet %s.0/24; host 0 = GPU host (receiver "
              "+ simulated trainer, share %s, NIC unshaped), worker hosts share %s each (a packed "
              "host: K x %s); batch %d; %s; load average %.1f on %d cores\n",
              o.prefix.c_str(), o.subnet.c_str(), fmt_share(c.gpu_share).c_str(),
              fmt_share(c.share).c_str(), fmt_share(c.share).c_str(), o.batch_size, build_kind(),
              load_average(), usable_cores());
  const double load_before = load_average();
  const Stopwatch total;
  std::vector<Result1> results;
  auto add = [&](Spec s) -> Result<const Result1*> {
    auto r = run_config(c, s);
    if (!r.ok()) return std::move(r).error();
    results.push_back(std::move(*r));
    return &results.back();
  };

  // (b) scaling: K spread worker hosts, NICs unshaped, no trainer step (pure throughput).
  // --quick runs K = 1 only here; its K = kmax figure is the NIC-bound set's spread float run
  // (at 1.3x one worker's output per NIC, spread is not NIC-bound either).
  std::printf("\nscaling (spread, NICs unshaped, no trainer step):\n");
  double sps1 = 0, tx1 = 0, wire_float = 0;
  std::map<int, double> scaling;
  for (int k : ks) {
    if (o.quick && k > ks.front()) break;
    Spec s{.group = "scaling", .workers = k, .layout = Layout::kSpread};
    s.batches = sps1 > 0 ? batches_for(c, sps1 * k) : (o.quick ? 8 : 16);
    STOKER_ASSIGN_OR_RETURN(const Result1* r, add(s));
    if (sps1 == 0) {
      sps1 = r->sps / k;
      tx1 = r->worker_tx_bps;
      wire_float = r->wire_per_sample;
    }
    scaling[k] = r->sps;
  }
  // (c) the NIC-bound set at K = kmax: worker NICs at 1.3x what one worker sends in float, so K
  // packed workers (one NIC) are NIC-bound and K spread ones (K NICs) are not.
  std::string rate = o.rate;
  if (rate.empty()) rate = format("%.0fkbit", 1.3 * tx1 * 8 / 1000);
  const double rate_mbs = rate_to_mbs(rate);
  std::printf("\nNIC-bound set (K = %d, worker NICs at %s = %.2f MB/s; one worker sent %.2f MB/s "
              "in float when unshaped):\n",
              kmax, rate.c_str(), rate_mbs, tx1 / 1e6);
  std::map<std::string, double> nic;
  for (const char* wire : {"float", "uint8"}) {
    for (Layout l : {Layout::kPack, Layout::kSpread}) {
      if (o.quick && l == Layout::kSpread && std::string(wire) == "uint8") continue;
      Spec s{.group = "nic", .workers = kmax, .layout = l, .wire = wire, .rate = rate};
      double expect = sps1 * kmax;
      if (std::string(wire) == "float" && l == Layout::kPack && wire_float > 0)
        expect = std::min(expect, rate_mbs * 1e6 / wire_float);
      s.batches = batches_for(c, expect);
      STOKER_ASSIGN_OR_RETURN(const Result1* r, add(s));
      nic[std::string(layout_name(l)) + " " + wire] = r->sps;
    }
  }
  if (!o.quick) {  // the encoded wire: the GPU host decodes everything (CPU, not NIC, is short)
    Spec s{.group = "nic", .workers = kmax, .layout = Layout::kPack, .wire = "encoded", .rate = rate};
    s.batches = batches_for(c, sps1);
    STOKER_ASSIGN_OR_RETURN(const Result1* r, add(s));
    nic["packed encoded"] = r->sps;
  }
  const bool scaling_from_nic = !scaling.count(kmax);
  if (scaling_from_nic) scaling[kmax] = nic["spread float"];
  // (a) + the trainer series: a step that K = kmax can meet with room (demand = 0.75 x its
  // samples/s): the GPU host alone, then K = 1..kmax spread (quick: alone only).
  const double step_ms =
      o.step_ms > 0 ? o.step_ms : 1000.0 * o.batch_size / (0.75 * scaling[kmax]);
  std::printf("\ntrainer series (step %.0f ms = %.1f samples/s of demand):\n", step_ms,
              1000.0 * o.batch_size / step_ms);
  std::map<int, double> waits, trainer_sps, progress;
  for (int k = 0; k <= (o.quick ? 1 : kmax); ++k) {
    Spec s{.group = "trainer", .workers = k, .layout = k ? Layout::kSpread : Layout::kAlone,
           .step_ms = step_ms, .lane = true};
    s.batches = batches_for(c, std::min(sps1 * std::max(1, k), 1000.0 * o.batch_size / step_ms));
    STOKER_ASSIGN_OR_RETURN(const Result1* r, add(s));
    waits[k] = r->wait;
    trainer_sps[k] = r->sps;
    progress[k] = r->gpu_progress;
  }

  // The reference: a single-process `stoker run` on this machine (no bed), as many batches as
  // the longest configuration; every configuration must have delivered the same batches.
  std::size_t longest = 0;
  for (const Result1& r : results) longest = std::max(longest, r.hashes.size());
  const std::string ref_hashes = c.work + "/reference-hashes.txt";
  std::vector<std::string> ref_argv = {c.stoker, "run", c.manifest, "--batch-size",
                                       std::to_string(o.batch_size), "--epochs", "-1",
                                       "--limit-batches", std::to_string(longest),
                                       "--batch-hashes", ref_hashes, "--quiet"};
  if (!c.model.empty()) ref_argv.insert(ref_argv.end(), {"--model", c.model});
  if (!c.tokenizer.empty()) ref_argv.insert(ref_argv.end(), {"--tokenizer", c.tokenizer});
  STOKER_ASSIGN_OR_RETURN(int ref_status, run_logged(ref_argv, c.work + "/reference.log", 600));
  if (ref_status != 0)
    return internal_error("the reference `stoker run` failed: " + tail_of(c.work + "/reference.log"));
  const std::vector<std::string> ref = read_lines(ref_hashes);
  Comparison cmp;
  int unhashed = 0;
  for (const Result1& r : results) {
    if (!r.hashed) {
      ++unhashed;
      continue;
    }
    if (r.hashes.empty()) cmp.differ(r.spec.name() + ": no batch hashes");
    for (std::size_t i = 0; i < r.hashes.size(); ++i) {
      cmp.compared();
      cmp.expect_equal(r.hashes[i], i < ref.size() ? ref[i] : std::string("(none)"),
                       r.spec.name() + " batch " + std::to_string(i));
    }
  }

  print_tables(results, sps1);
  std::printf("batch hashes: every configuration without a trainer step (%d runs) vs the "
              "reference; the %d trainer-series runs are not hashed (hashing would sit on the "
              "trainer's critical path on the GPU host's share)\n",
              static_cast<int>(results.size()) - unhashed, unhashed);
  const std::string csv = o.out + "/scale.csv";
  STOKER_RETURN_IF_ERROR(write_csv(csv, results));
  auto plot = find_bench_file("plot_scale.py");
  const bool plotted =
      plot.ok() && run_capture({"/usr/bin/python3", plot->string(), csv, o.out + "/scale.png"}).ok();
  std::printf("wrote %s%s; logs in %s\n", csv.c_str(),
              plotted ? (" and " + o.out + "/scale.png").c_str() : " (plot failed: matplotlib?)",
              c.work.c_str());
  std::printf("machine load average (1 min): %.1f before, %.1f after, on %d cores; total %.0f s\n",
              load_before, load_average(), usable_cores(), total.elapsed_s());

  // The issue's must-shows, each with its measured figure.
  std::printf("\nscaling (NIC not the limit): ");
  for (const auto& [k, v] : scaling)
    std::printf("K=%d %.1f samples/s (x%.2f%s)  ", k, v, v / scaling[ks.front()],
                scaling_from_nic && k == kmax ? ", spread float at the NIC-bound set's rate" : "");
  std::printf("[targets: K=2 >= 1.8x, K=4 >= 3.2x of K=1]\n");
  std::printf("trainer wait (step %.0f ms): alone %.1f%%", step_ms, 100 * waits[0]);
  int enough = -1;
  for (const auto& [k, w] : waits) {
    if (k > 0) std::printf(", K=%d %.2f%%", k, 100 * w);
    if (enough < 0 && w <= 0.02) enough = k;
  }
  if (enough >= 0) std::printf(" -> %d worker host(s) bring it to <= 2%%\n", enough);
  else std::printf(" -> no tested K brings it to <= 2%%\n");
  if (trainer_sps.count(1) && trainer_sps[0] > 0) {
    std::printf("trainer series samples/s: GPU host alone %.1f, K=1 worker host %.1f (x%.2f; "
                "target >= 1.7: the GPU host prepares too)\n",
                trainer_sps[0], trainer_sps[1], trainer_sps[1] / trainer_sps[0]);
  }
  std::printf("GPU host MPI progress thread (cores over the job; its share is %.2f):", c.gpu_share);
  for (const Result1& r : results)
    if (r.spec.workers > 0) std::printf(" %s %.3f;", r.spec.name().c_str(), r.gpu_progress);
  std::printf("\n");
  const double spread_pack = nic["packed float"] > 0 ? nic["spread float"] / nic["packed float"] : 0;
  const double u8_float = nic["packed float"] > 0 ? nic["packed uint8"] / nic["packed float"] : 0;
  std::printf("NIC-bound (K=%d, %s): spread/pack float %.2f (target >= 1.4), uint8/float packed "
              "%.2f (target >= 2.5)",
              kmax, rate.c_str(), spread_pack, u8_float);
  if (nic.count("packed encoded")) std::printf(", encoded packed %.1f samples/s", nic["packed encoded"]);
  std::printf("\n");
  return finish(cmp, "batches (every configuration vs a single-process stoker run)",
                "packed samples/s (NIC-bound, float wire)", spread_pack, "spread/pack");
}

}  // namespace

Result<Outcome> run_scale_bench(const ScaleOptions& options) { return run(options); }

}  // namespace stoker::bench
