// `stoker serve`: the node-local data server (DESIGN.md §4 "One node"). One process per node
// serves every local rank its own shard: a ranked shm::BatchServer on a private Unix socket; each
// rank's process (stoker.Loader(connect=...), or any shm::BatchClient with an attach) says which
// global rank of which world size it is, and gets descriptors of batches of its own shard, read
// in place in that rank's shared arena (memfd, mapped copy-on-write: no pixel byte is copied).
// One pipeline::Loader per rank (LoaderConfig.rank set), created when the rank attaches: the
// Loader API has no way to share a CPU pool or an arena between Loaders, so each rank gets
// threads/W pool threads and its own memfd arena (a wish for the Loader: an injected pool/arena).
// Crash/reattach: a rank's state is the position after the longest prefix of batches its
// process RELEASED. A process that dies loses nothing: batches it held (sent, unreleased) are
// reclaimed and sent again to the next process that attaches as that rank (a fresh Loader resumed
// from that state), so every sample reaches a released batch exactly once per epoch. A client may
// send its own saved state instead (it wins). Exits when every rank finished, or on SIGINT/SIGTERM
// (the socket is unlinked either way).
#include <signal.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "stoker/base/clock.h"
#include "stoker/base/printable.h"
#include "stoker/cli/args.h"
#include "stoker/cli/loader_flags.h"
#include "stoker/cli/run_loop.h"
#include "stoker/cli/commands.h"
#include "stoker/cli/observe.h"
#include "stoker/model/model_config.h"
#include "stoker/pipeline/metrics.h"
#include "stoker/pipeline/loader.h"
#include "stoker/shm/server.h"
#include "stoker/shm/socket_path.h"

namespace stoker::cli {

const char kServeHelp[] = R"(usage: stoker serve DATA.jsonl[,MORE.jsonl] --world-size W [options]

Serves every rank of a W-rank job on this node its own shard over a private Unix socket:
a process attaches with stoker.Loader(connect=PATH) (rank and world size from its arguments or
torchrun's RANK/WORLD_SIZE) and reads its batches zero-copy from shared memory. A rank whose
process dies and is started again continues after the last batch it released. Exits when every
rank finished its epochs, or on SIGINT/SIGTERM. With torchrun (README "One server per node"):
  STOKER_SERVER=PATH torchrun --nproc_per_node W --redirects 2 --tee 2 train.py
(Debian's torch 1.13 under Python 3.11: torchrun crashes without --redirects/--tee 1 or 2.)
Totals: per rank and in the summary, sent = released + reclaimed + held; a connection that never
attaches (another server checking this one is alive) is no client; refused attaches are counted.

options:
  --socket PATH        Unix socket (default: $XDG_RUNTIME_DIR/stoker/stoker.sock or
                       /tmp/stoker-$UID/stoker.sock; export STOKER_SERVER=PATH for clients)
  --world-size W       ranks of the job (default: WORLD_SIZE from the environment, else 1)
  --model M            qwen2-vl | qwen2.5-vl (default) | qwen3-vl | a Hugging Face model folder
  --tokenizer DIR      folder with tokenizer.json (default: the model folder / installed Qwen one)
  --batch-size B       samples per batch (default 8)   --max-length L   (default 8192)
  --threads N          CPU threads for all ranks together (default: all cores), split W ways
  --io-threads N       I/O threads per rank (default 2)
  --prefetch K         ready batches kept ahead per rank (default 4)
  --worker-sched C     scheduling class of the loader's threads: batch (default: they never
                       preempt the trainer's thread), idle (only spare CPU), normal
  --window N           unreleased batches one rank's process may hold (default 4); while it
                       waits in next() the batch its loop is replacing does not count
  --seed S             order seed (default 0)          --epochs E   (default 1; -1 forever)
  --arena-mb MB        shared arena per rank (default 512)
  --bf16               pixel_values in bfloat16 (default float32)
  --exif E             apply (default: EXIF orientation as transformers' load_image) | ignore
                       (pixels as stored, as qwen-vl-utils and LLaMA-Factory open images)
  --small-images S     resize (default: a side below the factor enlarged, transformers >= 4.53)
                       | refuse (InvalidArgument, as transformers <= 4.52)
  --progress-s S       print per-rank progress every S seconds (default 5; 0: never)
)";

namespace {

constexpr long long kMaxWorld = 4096;

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop.store(true); }


std::string state_text(const pipeline::LoaderState& s) {
  return "epoch " + std::to_string(s.epoch) + " position " + std::to_string(s.position);
}

// One rank's shard: who is attached, and how far its processes got.
struct RankSlot {
  struct Sent {
    std::uint64_t seq = 0;
    pipeline::LoaderState after;  // the rank's state once this batch is consumed
    bool released = false;
  };

  int rank = 0;
  std::mutex mu;
  std::condition_variable_any cv;
  std::optional<std::uint64_t> pending;  // attached client the worker has not taken up yet
  pipeline::LoaderState resume_from;     // for `pending`
  std::uint64_t active = 0;              // the client last attached as this rank (0: none)
  pipeline::LoaderState committed;       // after the longest prefix of released batches
  std::deque<Sent> sent;                 // sent and not yet part of `committed`
  std::uint64_t next_seq = 1;
  bool ended = false;                    // the Loader delivered its last batch
  // sent = released + reclaimed + held by the attached process (the server's counters, per rank:
  // the summary line is their sum). attaches: processes served as this rank.
  std::int64_t batches_sent = 0, batches_released = 0, batches_reclaimed = 0, attaches = 0;
  std::string error;
  ErrorCode error_code = ErrorCode::kInternal;  // of `error` (a budget stop: DataLoss)
  std::shared_ptr<pipeline::Loader> live;  // the rank's current Loader (for --metrics-port)
  std::string last_progress;  // the line print_progress printed last (a repeat is not printed)

  // done(consumed) of a sent batch: on the server's I/O thread.
  void on_done(std::uint64_t seq, bool consumed) {
    std::lock_guard lock(mu);
    if (!consumed) {
      ++batches_reclaimed;
      return;  // stays unreleased: the prefix stops there, a reattach re-sends from it
    }
    ++batches_released;
    for (Sent& s : sent)
      if (s.seq == seq) s.released = true;
    while (!sent.empty() && sent.front().released) {
      committed = sent.front().after;
      sent.pop_front();
    }
  }

  bool finished() {
    std::lock_guard lock(mu);
    return ended && sent.empty() && !pending;
  }
};

struct Shared {
  pipeline::LoaderConfig base;  // rank/world filled per rank
  int world = 1;
  shm::BatchServer* server = nullptr;
};

// The rank's worker: waits for a process to attach as this rank, makes its Loader (resumed from
// where that rank stands), and feeds batches until the data ends or the process goes away.
void serve_rank(std::stop_token stop, const Shared& sh, RankSlot& slot) {
  std::shared_ptr<pipeline::Loader> loader;
  struct Unpublish {  // at exit: the metrics endpoint lets go of the Loader before this thread
    RankSlot& s;
    ~Unpublish() {
      std::lock_guard lock(s.mu);
      s.live.reset();
    }
  } unpublish{slot};
  if (sh.base.tracer != nullptr) sh.base.tracer->name_thread("rank " + std::to_string(slot.rank) + " (serve)");
  for (;;) {
    std::uint64_t client = 0;
    pipeline::LoaderState from;
    {
      std::unique_lock lock(slot.mu);
      slot.cv.wait(lock, stop, [&] { return slot.pending.has_value(); });
      if (stop.stop_requested()) return;
      client = *slot.pending;
      slot.pending.reset();
      from = slot.resume_from;
      slot.sent.clear();  // the previous process's unreleased batches: sent again from `from`
      slot.committed = from;
      slot.ended = false;
    }
    {
      std::lock_guard lock(slot.mu);
      slot.live.reset();
    }
    loader.reset();
    pipeline::LoaderConfig c = sh.base;
    c.rank.rank = slot.rank;
    c.rank.world_size = sh.world;
    auto made = pipeline::Loader::create(c);
    Status ok = made.ok() ? (*made)->resume(from) : Status(made.error());
    if (!ok.ok()) {
      std::string why = ok.error().to_string();
      sh.server->refuse(client, "rank " + std::to_string(slot.rank) + ": " + why);
      std::lock_guard lock(slot.mu);  // not around refuse(): done callbacks take this lock
      slot.error = why;
      slot.error_code = ok.error().code();
      continue;
    }
    loader = std::move(*made);
    {
      std::lock_guard lock(slot.mu);
      slot.live = loader;
    }
    // memfd_create makes the inode 0777; only fd passing or /proc/PID/fd (same user, ptrace
    // rules) reach it, but 0600 keeps a reopen through /proc private to the user as well.
    ::fchmod(loader->arena().fd(), 0600);
    if (!sh.server->accept_attach(client, loader->arena().fd(), loader->arena().capacity()).ok())
      continue;  // gone before its hello
    {
      std::lock_guard lock(slot.mu);
      ++slot.attaches;
    }
    std::printf("stoker serve: rank %d attached (client %llu), from %s\n", slot.rank,
                static_cast<unsigned long long>(client), state_text(from).c_str());
    std::fflush(stdout);
    for (;;) {
      Result<std::optional<pipeline::Batch>> b = loader->next();
      if (!b.ok()) {
        // The rank's Loader stopped (failure budget, outage): its process gets that error after
        // the batches already sent — not the clean end of the data it used to see.
        sh.server->fail_client(client, b.error());
        std::lock_guard lock(slot.mu);
        slot.error = b.error().to_string();
        slot.error_code = b.error().code();
        std::fprintf(stderr, "stoker serve: rank %d: %s: %s\n", slot.rank,
                     std::string(error_code_name(slot.error_code)).c_str(),
                     printable(slot.error).c_str());
        break;
      }
      if (!*b) {
        sh.server->end_client(client);
        std::lock_guard lock(slot.mu);
        slot.ended = true;
        break;
      }
      auto held = std::make_shared<pipeline::Batch>(std::move(**b));
      std::uint64_t seq;
      {
        std::lock_guard lock(slot.mu);
        seq = slot.next_seq++;
        slot.sent.push_back({.seq = seq, .after = loader->state()});
        ++slot.batches_sent;
      }
      RankSlot* s = &slot;
      Status st = sh.server->send_to(
          client, held->layout(),
          [held, s, seq](bool consumed) {
            held->release();
            s->on_done(seq, consumed);
          },
          stop);
      if (!st.ok()) {
        // Never sent (the process went away, or we stop): done(false) has run for it, which
        // counted a reclaim; it was neither sent nor reclaimed.
        std::lock_guard lock(slot.mu);
        --slot.batches_sent;
        --slot.batches_reclaimed;
        break;  // wait for the next process
      }
    }
  }
}

Result<pipeline::LoaderConfig> make_config(const Args& args) {
  STOKER_ASSIGN_OR_RETURN(pipeline::LoaderConfig c,
                          loader_config_from_flags(args, {.io_threads = 2, .arena_mb = 512}));
  c.arena.shared = true;  // the clients map it
  return c;
}

// One line per rank whose line changed since it was last printed (issue 30 §16: "detached …
// position 0" came every 5 s while ranks started); `all`: every rank (the final lines).
void print_progress(std::vector<std::unique_ptr<RankSlot>>& slots, const shm::BatchServer& server,
                    bool all = false) {
  for (auto& s : slots) {
    std::lock_guard lock(s->mu);
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "stoker serve: rank %d: %s, sent %lld released %lld reclaimed %lld, "
                  "attaches %lld, at %s%s",
                  s->rank, s->active && server.client_alive(s->active) ? "attached" : "detached",
                  static_cast<long long>(s->batches_sent), static_cast<long long>(s->batches_released),
                  static_cast<long long>(s->batches_reclaimed), static_cast<long long>(s->attaches),
                  state_text(s->committed).c_str(), s->ended ? " (ended)" : "");
    std::string line = buf;
    if (!s->error.empty()) line += " error: " + printable(s->error);
    if (!all && line == s->last_progress) continue;
    s->last_progress = line;
    std::printf("%s\n", line.c_str());
  }
  std::fflush(stdout);
}

// Routes one attach to its rank's worker, or refuses it (wrong world size, rank taken).
void handle_attach(const shm::AttachRequest& a, const Shared& sh,
                   std::vector<std::unique_ptr<RankSlot>>& slots) {
  if (a.world_size != sh.world) {
    sh.server->refuse(a.client, "this server serves world size " + std::to_string(sh.world) +
                                    ", not " + std::to_string(a.world_size));
    return;
  }
  RankSlot& slot = *slots[a.rank];
  std::uint64_t old;
  {
    std::lock_guard lock(slot.mu);
    old = slot.active;
  }
  // A replacement may attach before the hang-up of the process it replaces is seen: give that
  // a moment before calling the rank taken.
  for (int i = 0; old != 0 && sh.server->client_alive(old) && i < 40; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (old != 0 && sh.server->client_alive(old)) {
    sh.server->refuse(a.client, "rank " + std::to_string(a.rank) + " is attached already");
    return;
  }
  std::lock_guard lock(slot.mu);
  slot.active = a.client;
  slot.resume_from =
      a.has_state ? pipeline::LoaderState{.epoch = a.epoch, .position = a.position,
                                          .errors = a.errors, .packs = a.packs, .plan = a.plan}
                  : slot.committed;
  slot.pending = a.client;
  slot.cv.notify_all();
}

// --metrics-port: each rank's Loader metrics (label rank) and its delivery, plus the server's.
std::string serve_metrics(std::vector<std::unique_ptr<RankSlot>>& slots,
                          const shm::BatchServer& server) {
  obs::MetricText m;
  for (auto& s : slots) {
    std::shared_ptr<pipeline::Loader> loader;
    std::int64_t sent, released, reclaimed, attaches;
    bool attached;
    {
      std::lock_guard lock(s->mu);
      loader = s->live;
      sent = s->batches_sent, released = s->batches_released;
      reclaimed = s->batches_reclaimed, attaches = s->attaches;
      attached = s->active != 0 && server.client_alive(s->active);
    }
    const obs::Labels rank = {{"rank", std::to_string(s->rank)}};
    m.counter("stoker_serve_batches_sent_total", "Batches sent to the rank's process.", rank, sent);
    m.counter("stoker_serve_batches_released_total", "Batches the rank's process released.",
              rank, released);
    m.counter("stoker_serve_batches_reclaimed_total",
              "Batches taken back from a process that went away (sent again).", rank, reclaimed);
    m.counter("stoker_serve_attaches_total", "Processes that attached as the rank.", rank,
              attaches);
    m.gauge("stoker_serve_rank_attached", "1 while a process is attached as the rank.", rank,
            attached ? 1 : 0);
    if (loader != nullptr) pipeline::add_loader_metrics(m, loader->stats(), rank);
  }
  const shm::ServerStats st = server.stats();
  m.counter("stoker_serve_clients_accepted_total", "Client connections accepted.", {},
            static_cast<double>(st.clients_accepted));
  m.counter("stoker_serve_clients_lost_total", "Client connections lost.", {},
            static_cast<double>(st.clients_lost));
  return m.str();
}

}  // namespace

Status serve_loader(const Args& args, const ServeHooks& hooks) {
  STOKER_ASSIGN_OR_RETURN(pipeline::LoaderConfig base, make_config(args));
  STOKER_ASSIGN_OR_RETURN(ObserveFlags observe_flags, observe_flags_from(args));
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<Observer> observer, Observer::create(observe_flags, "serve"));
  base.tracer = observer->tracer();
  // WORLD_SIZE from the launcher, parsed as strictly as the flag that overrides it.
  long long world = 1;
  if (const char* w = std::getenv("WORLD_SIZE"); w != nullptr && *w && !args.has("world-size")) {
    STOKER_ASSIGN_OR_RETURN(world, parse_int("$WORLD_SIZE", w, 1, kMaxWorld));
  }
  STOKER_ASSIGN_OR_RETURN(world, args.get_int<long long>("world-size", world, 1, kMaxWorld));
  STOKER_ASSIGN_OR_RETURN(int threads,
                          args.get_int<int>("threads", 0, 0, std::numeric_limits<int>::max()));
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  base.threads = static_cast<int>(std::max<long long>(1, threads / world));
  base.rank.rank = 0;
  base.rank.world_size = static_cast<int>(world);
  if (hooks.configure) STOKER_RETURN_IF_ERROR(hooks.configure(base));
  STOKER_RETURN_IF_ERROR(base.validate());
  STOKER_ASSIGN_OR_RETURN(int window, args.get_int<int>("window", 4, 1, 64));  // BatchServer's
  // At most a day: the next deadline (now + S·1e9 ns) stays far from int64 overflow.
  STOKER_ASSIGN_OR_RETURN(double progress_s, args.get_double("progress-s", 5, 0, 86400));

  std::string path = args.get("socket");
  if (path.empty()) {
    STOKER_ASSIGN_OR_RETURN(path, shm::default_socket_path("stoker"));
  } else {
    // A socket the user names: its folder must exist; the socket itself is made 0600.
    std::filesystem::path dir = std::filesystem::path(path).parent_path();
    if (!dir.empty() && !std::filesystem::is_directory(dir))
      return not_found("socket folder " + dir.string() + " does not exist");
  }
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  ::sigemptyset(&sa.sa_mask);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGTERM, &sa, nullptr);

  STOKER_ASSIGN_OR_RETURN(
      std::unique_ptr<shm::BatchServer> server,
      shm::BatchServer::create(-1, 0, {.socket_path = path, .window = static_cast<int>(window),
                                       .ranked = true}));
  Shared sh{.base = base, .world = static_cast<int>(world), .server = server.get()};
  std::vector<std::unique_ptr<RankSlot>> slots;
  std::vector<std::jthread> workers;
  for (int r = 0; r < world; ++r) {
    slots.push_back(std::make_unique<RankSlot>());
    slots.back()->rank = r;
  }
  // The endpoint stops in observer->finish(), after the workers and before the slots go.
  STOKER_RETURN_IF_ERROR(observer->serve_metrics(
      [&slots, srv = server.get()] { return serve_metrics(slots, *srv); }));
  for (int r = 0; r < world; ++r)
    workers.emplace_back([&sh, s = slots[r].get()](std::stop_token st) { serve_rank(st, sh, *s); });
  std::printf("stoker serve: listening on %s (world size %lld, batch %d, %d threads per rank, "
              "arena %llu MiB per rank); clients: stoker.Loader(connect=\"%s\")\n",
              server->socket_path().c_str(), world, base.batch_size, base.threads,
              static_cast<unsigned long long>(base.arena.bytes >> 20), path.c_str());
  std::fflush(stdout);

  std::int64_t next_progress = now_ns() + static_cast<std::int64_t>(progress_s * 1e9);
  bool all_done = false;
  int failed_rank = -1;
  while (!g_stop.load()) {
    all_done = true;
    bool failed = false;
    for (auto& s : slots) {
      all_done = all_done && s->finished();
      std::lock_guard lock(s->mu);
      if (!s->error.empty() && failed_rank < 0) failed_rank = s->rank;
      failed = failed || !s->error.empty();
    }
    if (all_done || failed) break;
    Result<shm::AttachRequest> a = server->next_attach(std::chrono::milliseconds(200));
    if (a.ok()) handle_attach(*a, sh, slots);
    if (progress_s > 0 && now_ns() >= next_progress) {
      print_progress(slots, *server);
      next_progress = now_ns() + static_cast<std::int64_t>(progress_s * 1e9);
    }
  }
  for (auto& w : workers) w.request_stop();
  workers.clear();  // joins: a worker inside loader->next() returns once that batch is ready
  Status observed = observer->finish(nullptr, "");  // the trace; stops the endpoint
  if (!observed.ok()) std::fprintf(stderr, "stoker serve: %s\n", printable(observed.error().to_string()).c_str());
  // Close the clients first (what they hold is reclaimed, counted per rank and in total), so
  // the per-rank lines and the summary below are final and add up.
  server->close_clients();
  print_progress(slots, *server, /*all=*/true);
  shm::ServerStats st = server->stats();
  server.reset();  // unlinks the socket
  const std::string why =
      all_done ? "every rank finished"
      : failed_rank >= 0
          ? "stopped: rank " + std::to_string(failed_rank) + " failed (" +
                std::string(error_code_name(slots[failed_rank]->error_code)) + ", above)"
          : "stopped by signal";
  std::printf("stoker serve: %s; %lld batches sent, %lld released, %lld reclaimed, %lld clients "
              "(%lld lost, %lld refused); socket removed\n",
              why.c_str(),
              static_cast<long long>(st.batches_sent), static_cast<long long>(st.batches_released),
              static_cast<long long>(st.batches_reclaimed),
              static_cast<long long>(st.clients_accepted), static_cast<long long>(st.clients_lost),
              static_cast<long long>(st.clients_rejected));
  std::fflush(stdout);
  for (auto& s : slots)
    if (!s->error.empty()) return Error(s->error_code, "rank " + std::to_string(s->rank) + ": " + s->error);
  return ok_status();
}

std::set<std::string> serve_value_flags() {
  std::set<std::string> values = loader_value_flags();
  values.insert({"socket", "world-size", "threads", "window", "progress-s"});
  values.merge(observe_value_flags(/*with_report=*/false));
  return values;
}

int run_serve(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) == "--help") {
      std::fputs(kServeHelp, stdout);
      std::fputs(kPackingFlagsHelp, stdout);
      std::fputs(kMediaFlagsHelp, stdout);
      std::fputs(kObserveFlagsHelp, stdout);
      return 0;
    }
  }
  Result<Args> args =
      Args::parse(argc, argv, serve_value_flags(), loader_switch_flags(), loader_repeat_flags());
  if (!args.ok()) return report("serve", args.error());
  Status st = serve_loader(*args, {});
  if (!st.ok()) return report("serve", st.error());
  return 0;
}

}  // namespace stoker::cli
