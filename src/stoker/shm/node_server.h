// NodeServer: the node's data server — the one library behind `stoker serve`, Python's
// `stoker.serve()` and `stoker cluster --serve` (DESIGN.md §4 "One node"). One process per node
// serves every rank of a W-rank job its own shard over a ranked shm::BatchServer on a private Unix
// socket: a process attaches (stoker.Loader(connect=...), or any shm::BatchClient with an attach)
// saying which global rank of which world size it is, and gets descriptors of its own shard's
// batches, read in place in that rank's shared arena (memfd, mapped copy-on-write).
// One pipeline::Loader per rank (LoaderConfig.rank set), created when the rank attaches, each with
// threads / W pool threads and its own memfd arena (the Loader API cannot share a pool or an arena).
// Crash / reattach — exactly once: a rank's state is the position after the longest prefix of
// batches its process RELEASED; batches a dead process held are reclaimed and sent again, first,
// to the next process that attaches as that rank (a fresh Loader resumed from that state); a
// client's own saved state wins (shm/README.md). Per-rank counters (sent = released + reclaimed +
// held) and Prometheus metrics with a `rank` label.
// Threads: run() on the caller's thread (attaches, progress), one worker thread per rank, the
// BatchServer's I/O thread; metrics_text()/ranks()/stats() may be called from any thread.
// Errors: those of shm::BatchServer::create (socket), InvalidArgument (options), a rank's Loader
// error (run() returns it once the clients are closed), DeadlineExceeded (idle timeout).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/config/settings.h"
#include "stoker/pipeline/loader.h"
#include "stoker/shm/server.h"

namespace stoker::shm {

struct NodeServerOptions {
  pipeline::LoaderConfig base;   // every rank's Loader config; rank and world set per rank, the
                                 // arena made shared; `threads` is for all ranks together (0: all
                                 // cores), split W ways
  int world_size = 1;
  std::string socket_path;       // empty: default_socket_path("stoker")
  int window = 4;                // unreleased batches one rank's process may hold [1, 64]
  double progress_s = 5;         // per-rank progress lines every this many seconds (0: none)
  double idle_timeout_s = -1;    // stop with DeadlineExceeded when no process has been attached
                                 // this long while ranks are unfinished (-1: never)
  // The attach, progress, error and summary lines (no trailing newline); null: none. The CLI and
  // Python both print them to stdout after "stoker serve: ".
  std::function<void(const std::string&)> log;

  // The options of `stoker serve`, serve() and cluster --serve, from their settings.
  static NodeServerOptions from(const config::Settings& settings);
};

// One rank's counters.
struct RankReport {
  int rank = 0;
  bool attached = false, ended = false;
  std::int64_t batches_sent = 0, batches_released = 0, batches_reclaimed = 0, attaches = 0;
  pipeline::LoaderState committed;  // after the longest prefix of released batches
  std::string error;
};

class NodeServer {
 public:
  // Listens (the socket exists when this returns) and logs the "listening on ..." line.
  static Result<std::unique_ptr<NodeServer>> create(NodeServerOptions options);
  ~NodeServer();  // stops the workers, closes the clients, unlinks the socket
  NodeServer(const NodeServer&) = delete;
  NodeServer& operator=(const NodeServer&) = delete;

  const std::string& socket_path() const;

  // Serves until every rank finished its epochs and every batch was released (Ok), `stop`
  // returns true (Ok: polled every 200 ms), a rank's Loader fails (that error), or the idle
  // timeout passes (DeadlineExceeded); the rank workers are stopped on return. Once.
  Status run(const std::function<bool()>& stop);
  bool finished() const;          // every rank finished (run() returned Ok for that reason)
  // After run() (and after whatever scrapes metrics_text() stopped): closes the clients (what
  // they hold is reclaimed, so the counters are final and add up), logs the per-rank lines and
  // the summary, unlinks the socket. Idempotent; the destructor does it silently otherwise.
  void close();

  std::vector<RankReport> ranks() const;
  ServerStats stats() const;
  // Prometheus text: each rank's Loader metrics and delivery (label rank) and the server's.
  std::string metrics_text() const;

 private:
  struct Impl;
  explicit NodeServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// How a serve front end (`stoker serve`, serve(), cluster --serve) ends: the server's own result
// `served` first; the trace that front end wrote after it (`trace_written`, a diagnostic output,
// issue #28) failing is then a warning on stderr naming it — or, with strict_outputs, the error
// when serving itself succeeded (base/atomic_file.h diagnostic_output). `who`: "serve", "serve()".
Status serve_result(Status served, const Status& trace_written, bool strict_outputs,
                    std::string_view who);

}  // namespace stoker::shm
