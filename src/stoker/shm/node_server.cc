#include "stoker/shm/node_server.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <mutex>
#include <optional>
#include <stop_token>
#include <thread>

#include "stoker/base/atomic_file.h"
#include "stoker/base/clock.h"
#include "stoker/base/printable.h"
#include "stoker/obs/prometheus.h"
#include "stoker/pipeline/metrics.h"
#include "stoker/shm/socket_path.h"

namespace stoker::shm {
namespace {

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
  mutable std::mutex mu;
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
  ErrorCode error_code = ErrorCode::kInternal;  // of `error` (a failure budget stop: DataLoss)
  std::shared_ptr<pipeline::Loader> live;  // the rank's current Loader (for the metrics)
  std::string last_progress;  // the progress line logged last (a repeat is not logged again)

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

  bool finished() const {
    std::lock_guard lock(mu);
    return ended && sent.empty() && !pending;
  }
};

}  // namespace

NodeServerOptions NodeServerOptions::from(const config::Settings& s) {
  NodeServerOptions o;
  o.base = s.loader;
  o.world_size = s.serve.world_size;
  o.socket_path = s.serve.socket;
  o.window = s.serve.window;
  o.progress_s = s.serve.quiet ? 0 : s.serve.progress_s;  // quiet: no progress lines, as run
  o.idle_timeout_s = s.serve.idle_timeout_s;
  return o;
}

struct NodeServer::Impl {
  NodeServerOptions options;
  std::unique_ptr<BatchServer> server;
  std::vector<std::unique_ptr<RankSlot>> slots;
  std::vector<std::jthread> workers;
  bool all_done = false, ran = false, stopped = false, closed = false;
  int failed_rank = -1;     // the rank whose Loader error stopped run() (-1: none)
  std::string path;
  ServerStats final_stats;  // after close()

  bool alive(std::uint64_t client) const { return server && client != 0 && server->client_alive(client); }

  void log(const std::string& line) const {
    if (options.log) options.log(line);
  }

  ~Impl() {
    stop_workers();
    if (server) server->close_clients();
    server.reset();  // unlinks the socket, before the arenas (the slots' Loaders) go
  }

  void close();

  void stop_workers() {
    for (auto& w : workers) w.request_stop();
    workers.clear();  // joins: a worker inside loader->next() returns once that batch is ready
  }

  void serve_rank(std::stop_token stop, RankSlot& slot);
  void handle_attach(const AttachRequest& a);
  // One line per rank whose line changed since it was last logged (issue 30 §16: "detached …
  // position 0" came every 5 s while ranks started); `all`: every rank (the final lines).
  void log_progress(bool all);
};

// The rank's worker: waits for a process to attach as this rank, makes its Loader (resumed from
// where that rank stands), and feeds batches until the data ends or the process goes away.
void NodeServer::Impl::serve_rank(std::stop_token stop, RankSlot& slot) {
  std::shared_ptr<pipeline::Loader> loader;
  struct Unpublish {  // at exit: the metrics endpoint lets go of the Loader before this thread
    RankSlot& s;
    ~Unpublish() {
      std::lock_guard lock(s.mu);
      s.live.reset();
    }
  } unpublish{slot};
  const pipeline::LoaderConfig& base = options.base;
  if (base.tracer != nullptr) base.tracer->name_thread("rank " + std::to_string(slot.rank) + " (serve)");
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
    }
    {
      std::lock_guard lock(slot.mu);
      slot.live.reset();
    }
    loader.reset();
    pipeline::LoaderConfig c = base;
    c.rank.rank = slot.rank;
    c.rank.world_size = options.world_size;
    auto made = pipeline::Loader::create(c);
    if (!made.ok()) {  // the server's data or options: the server stops with it
      std::string why = made.error().to_string();
      server->refuse(client, "rank " + std::to_string(slot.rank) + ": " + why);
      std::lock_guard lock(slot.mu);  // not around refuse(): done callbacks take this lock
      slot.error = why;
      slot.error_code = made.error().code();
      continue;
    }
    if (Status ok = (*made)->resume(from); !ok.ok()) {
      // The client's resume_state does not fit this data (another mixture, a position past
      // the end, cursors that are not this plan's): that client is refused with the reason;
      // the server, the other ranks and this rank's committed state go on as they were.
      const std::string why = ok.error().to_string();
      server->refuse(client, "rank " + std::to_string(slot.rank) + ": " + why);
      log("rank " + std::to_string(slot.rank) + ": attach refused (client " +
          std::to_string(client) + "): " + printable(why));
      continue;
    }
    loader = std::move(*made);
    {
      std::lock_guard lock(slot.mu);
      slot.sent.clear();  // the previous process's unreleased batches: sent again from `from`
      slot.committed = from;
      slot.ended = false;
      slot.live = loader;
    }
    // memfd_create makes the inode 0777; only fd passing or /proc/PID/fd (same user, ptrace
    // rules) reach it, but 0600 keeps a reopen through /proc private to the user as well.
    ::fchmod(loader->arena().fd(), 0600);
    if (!server->accept_attach(client, loader->arena().fd(), loader->arena().capacity()).ok())
      continue;  // gone before its hello
    {
      std::lock_guard lock(slot.mu);
      ++slot.attaches;
    }
    log("rank " + std::to_string(slot.rank) + " attached (client " + std::to_string(client) +
        "), from " + state_text(from));
    for (;;) {
      Result<std::optional<pipeline::Batch>> b = loader->next();
      if (!b.ok()) {
        // The rank's Loader stopped (failure budget, outage): its process gets that error after
        // the batches already sent (BatchServer::fail_client), not the clean end of the data.
        server->fail_client(client, b.error());
        const std::string error = b.error().to_string();
        {
          std::lock_guard lock(slot.mu);
          slot.error = error;
          slot.error_code = b.error().code();
        }
        log("rank " + std::to_string(slot.rank) + ": " +
            std::string(error_code_name(b.error().code())) + ": " + printable(error));
        break;
      }
      if (!*b) {
        server->end_client(client);
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
      Status st = server->send_to(
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

// Routes one attach to its rank's worker, or refuses it (wrong world size, rank taken).
void NodeServer::Impl::handle_attach(const AttachRequest& a) {
  const int world = options.world_size;
  if (a.world_size != world) {
    server->refuse(a.client, "this server serves world size " + std::to_string(world) +
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
  for (int i = 0; old != 0 && server->client_alive(old) && i < 40; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (old != 0 && server->client_alive(old)) {
    server->refuse(a.client, "rank " + std::to_string(a.rank) + " is attached already");
    return;
  }
  // The client's saved state: untrusted text, parsed exactly as a state file is (issue 28:
  // a malformed or oversized field is refused with its reason; the rank stays free).
  std::optional<pipeline::LoaderState> given;
  if (a.has_state) {
    Result<pipeline::LoaderState> parsed = pipeline::LoaderState::parse(a.state);
    if (!parsed.ok()) {
      server->refuse(a.client, "rank " + std::to_string(a.rank) + ": resume_state refused: " +
                                   parsed.error().message());
      return;
    }
    given = std::move(*parsed);
  }
  std::lock_guard lock(slot.mu);
  slot.active = a.client;
  slot.resume_from = given ? *given : slot.committed;
  slot.pending = a.client;
  slot.cv.notify_all();
}

void NodeServer::Impl::log_progress(bool all) {
  for (const auto& s : slots) {
    std::lock_guard lock(s->mu);
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "rank %d: %s, sent %lld released %lld reclaimed %lld, attaches %lld, at %s%s",
                  s->rank, alive(s->active) ? "attached" : "detached",
                  static_cast<long long>(s->batches_sent),
                  static_cast<long long>(s->batches_released),
                  static_cast<long long>(s->batches_reclaimed),
                  static_cast<long long>(s->attaches), state_text(s->committed).c_str(),
                  s->ended ? " (ended)" : "");
    std::string line = buf + (s->error.empty() ? std::string() : " error: " + printable(s->error));
    if (!all && line == s->last_progress) continue;
    s->last_progress = line;
    log(line);
  }
}

NodeServer::NodeServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
NodeServer::~NodeServer() = default;

Result<std::unique_ptr<NodeServer>> NodeServer::create(NodeServerOptions options) {
  if (options.world_size < 1 || options.world_size > 4096) {
    return invalid_argument("node server: world size must be in [1, 4096], got " +
                            std::to_string(options.world_size));
  }
  auto impl = std::make_unique<Impl>();
  pipeline::LoaderConfig& base = options.base;
  base.arena.shared = true;  // the clients map it
  int threads = base.threads;
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  base.threads = std::max(1, threads / options.world_size);
  base.rank.rank = 0;
  base.rank.world_size = options.world_size;
  STOKER_RETURN_IF_ERROR(base.validate());
  std::string path = options.socket_path;
  if (path.empty()) {
    STOKER_ASSIGN_OR_RETURN(path, default_socket_path("stoker"));
  } else {
    // A socket the user names: its folder must exist; the socket itself is made 0600.
    std::filesystem::path dir = std::filesystem::path(path).parent_path();
    if (!dir.empty() && !std::filesystem::is_directory(dir))
      return not_found("socket folder " + dir.string() + " does not exist");
  }
  options.socket_path = path;
  impl->options = std::move(options);
  impl->path = path;
  STOKER_ASSIGN_OR_RETURN(impl->server,
                          BatchServer::create(-1, 0, {.socket_path = path,
                                                      .window = impl->options.window,
                                                      .ranked = true}));
  for (int r = 0; r < impl->options.world_size; ++r) {
    impl->slots.push_back(std::make_unique<RankSlot>());
    impl->slots.back()->rank = r;
  }
  Impl* raw = impl.get();
  for (int r = 0; r < raw->options.world_size; ++r) {
    raw->workers.emplace_back(
        [raw, s = raw->slots[r].get()](std::stop_token st) { raw->serve_rank(st, *s); });
  }
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "listening on %s (world size %d, batch %d, %d threads per rank, arena %llu MiB "
                "per rank); clients: stoker.Loader(connect=\"%s\")",
                raw->server->socket_path().c_str(), raw->options.world_size, base.batch_size,
                raw->options.base.threads,
                static_cast<unsigned long long>(raw->options.base.arena.bytes >> 20), path.c_str());
  raw->log(buf);
  return std::unique_ptr<NodeServer>(new NodeServer(std::move(impl)));
}

const std::string& NodeServer::socket_path() const { return impl_->path; }

Status NodeServer::run(const std::function<bool()>& stop) {
  Impl& m = *impl_;
  if (m.ran) return invalid_argument("node server: run() once");
  m.ran = true;
  const double progress_s = m.options.progress_s;
  std::int64_t next_progress = now_ns() + static_cast<std::int64_t>(progress_s * 1e9);
  std::int64_t last_attached = now_ns();
  std::optional<Error> failure;
  bool stopped = false;
  for (;;) {
    if (stop && stop()) {
      stopped = true;
      break;
    }
    bool all_done = true, attached = false;
    for (auto& s : m.slots) {
      all_done = all_done && s->finished();
      std::lock_guard lock(s->mu);
      if (!s->error.empty() && !failure) {
        // The rank's own code (a failure budget stop is DataLoss), not Internal.
        failure = Error(s->error_code, "rank " + std::to_string(s->rank) + ": " + s->error);
        m.failed_rank = s->rank;
      }
      attached = attached || (s->active != 0 && m.server->client_alive(s->active));
    }
    if (all_done) {
      m.all_done = true;
      break;
    }
    if (failure) break;
    if (attached) last_attached = now_ns();
    if (m.options.idle_timeout_s >= 0 &&
        now_ns() - last_attached > static_cast<std::int64_t>(m.options.idle_timeout_s * 1e9)) {
      failure = deadline_exceeded("no process attached for " +
                                  std::to_string(m.options.idle_timeout_s) +
                                  " s while ranks are unfinished (idle timeout)");
      break;
    }
    Result<AttachRequest> a = m.server->next_attach(std::chrono::milliseconds(200));
    if (a.ok()) m.handle_attach(*a);
    if (progress_s > 0 && now_ns() >= next_progress) {
      m.log_progress(/*all=*/false);
      next_progress = now_ns() + static_cast<std::int64_t>(progress_s * 1e9);
    }
  }
  m.stopped = stopped;
  m.stop_workers();
  if (failure) return *failure;
  return ok_status();
}

void NodeServer::close() { impl_->close(); }

// Close the clients first (what they hold is reclaimed, counted per rank and in total), so the
// per-rank lines and the summary are final and add up; then the socket goes.
void NodeServer::Impl::close() {
  if (closed) return;
  closed = true;
  stop_workers();
  server->close_clients();
  final_stats = server->stats();
  log_progress(/*all=*/true);
  server.reset();  // unlinks the socket
  const ServerStats& st = final_stats;
  std::string why = all_done ? "every rank finished" : stopped ? "stopped by signal" : "stopped";
  if (!all_done && !stopped && failed_rank >= 0) {
    std::lock_guard lock(slots[failed_rank]->mu);
    why = "stopped: rank " + std::to_string(failed_rank) + " failed (" +
          std::string(error_code_name(slots[failed_rank]->error_code)) + ", above)";
  }
  char buf[384];
  std::snprintf(buf, sizeof buf,
                "%s; %lld batches sent, %lld released, %lld reclaimed, %lld clients (%lld lost, "
                "%lld refused); socket removed",
                why.c_str(),
                static_cast<long long>(st.batches_sent), static_cast<long long>(st.batches_released),
                static_cast<long long>(st.batches_reclaimed),
                static_cast<long long>(st.clients_accepted), static_cast<long long>(st.clients_lost),
                static_cast<long long>(st.clients_rejected));
  log(buf);
}

bool NodeServer::finished() const { return impl_->all_done; }

std::vector<RankReport> NodeServer::ranks() const {
  std::vector<RankReport> out;
  for (const auto& s : impl_->slots) {
    std::lock_guard lock(s->mu);
    out.push_back({.rank = s->rank,
                   .attached = impl_->alive(s->active),
                   .ended = s->ended,
                   .batches_sent = s->batches_sent,
                   .batches_released = s->batches_released,
                   .batches_reclaimed = s->batches_reclaimed,
                   .attaches = s->attaches,
                   .committed = s->committed,
                   .error = s->error});
  }
  return out;
}

ServerStats NodeServer::stats() const {
  return impl_->server ? impl_->server->stats() : impl_->final_stats;
}

// Each rank's Loader metrics (label rank) and its delivery, plus the server's.
std::string NodeServer::metrics_text() const {
  obs::MetricText m;
  for (const auto& s : impl_->slots) {
    std::shared_ptr<pipeline::Loader> loader;
    std::int64_t sent, released, reclaimed, attaches;
    bool attached;
    {
      std::lock_guard lock(s->mu);
      loader = s->live;
      sent = s->batches_sent, released = s->batches_released;
      reclaimed = s->batches_reclaimed, attaches = s->attaches;
      attached = impl_->alive(s->active);
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
  const ServerStats st = stats();
  m.counter("stoker_serve_clients_accepted_total", "Client connections accepted.", {},
            static_cast<double>(st.clients_accepted));
  m.counter("stoker_serve_clients_lost_total", "Client connections lost.", {},
            static_cast<double>(st.clients_lost));
  return m.str();
}

Status serve_result(Status served, const Status& trace_written, bool strict_outputs,
                    std::string_view who) {
  Status trace = diagnostic_output(trace_written, strict_outputs && served.ok(), who);
  return served.ok() ? trace : served;
}

}  // namespace stoker::shm
