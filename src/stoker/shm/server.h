// BatchServer: the producer side of the zero-copy hand-off to other local processes. It listens
// on a private Unix socket (SOCK_SEQPACKET, 0600, unlinked on destruction; a stale socket left
// by a crashed server is detected by a refused connect and replaced; a live one is an error).
// Each client gets the arena's memfd once (SCM_RIGHTS) and then, per batch, a descriptor of a few
// hundred bytes (block, tensors, step, epoch); the client maps the arena (copy-on-write) and reads the
// batch in place. When the client drops its view it sends a release and the server calls the
// batch's release (returning the block to the arena). A client that disconnects or dies has all
// its outstanding batches released; the server keeps serving the others and new ones.
// Threads: one internal I/O thread (accept, releases, hang-ups); send()/finish() may be called
// from any one producer thread. Release callbacks run on the I/O thread, or in finish()/~.
// Ranked mode (options.ranked, `stoker serve`): each client first says which rank it is (attach:
// rank, world size, optional resume state); the owner takes attaches with next_attach(), answers
// with accept_attach(client, that rank's arena) or refuse(), and routes batches with send_to().
// Errors: InvalidArgument (options, layout outside the arena), Unavailable (a live server owns
// the path; no client within idle_timeout; the addressed client is gone), PermissionDenied,
// Cancelled (stop), DeadlineExceeded (next_attach), Internal.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>

#include "stoker/base/result.h"
#include "stoker/batch/arena.h"
#include "stoker/batch/batch.h"
#include "stoker/pipeline/loader.h"

namespace stoker::shm {

struct ServerOptions {
  std::string socket_path;  // empty: default_socket_path("stoker")
  int window = 4;           // unreleased batches one client may hold before send() waits [1, 64];
                            // +1 while the client says it waits in next() (the batch it replaces)
  // send() fails with Unavailable when no client has been connected for this long (-1: wait
  // forever). Keeps a producer from hanging on a consumer that never came or is gone for good.
  std::int64_t idle_timeout_ms = -1;
  // Clients must attach (say their rank) before they get a hello; send() is refused, send_to()
  // addresses one client. Unranked servers ignore an attach (the client has its hello already).
  bool ranked = false;

  Status validate() const;
};

// A client's request to be served as `rank` of `world_size` (ranked mode).
struct AttachRequest {
  std::uint64_t client = 0;  // the id accept_attach/refuse/send_to/end_client take
  int rank = 0;
  int world_size = 1;
  bool has_state = false;    // the client sent the state it saved
  std::string state;         // has_state: its text, unparsed (untrusted: the owner parses it)
};

struct ServerStats {
  // Ranked: a client is accepted when its attach is (accept_attach); a connection that never
  // attaches (e.g. another server checking whether this one is alive) is not a client.
  std::int64_t clients_accepted = 0;
  std::int64_t clients_lost = 0;        // went away holding batches, or after some and before its end
  std::int64_t clients_rejected = 0;    // another uid (SO_PEERCRED), failed hello, refused attach
  std::int64_t batches_sent = 0;        // written to a client's socket
  std::int64_t batches_released = 0;    // by a release message
  std::int64_t batches_reclaimed = 0;   // sent, then freed because their client went away
  // Every sent batch is released, reclaimed or outstanding: sent = released + reclaimed + outstanding.
  std::int64_t descriptor_bytes = 0;    // everything written to client sockets after the hello
  int clients_connected = 0;
  std::int64_t outstanding = 0;         // sent, not yet released
};

class BatchServer {
 public:
  // arena_fd: the arena's memfd (not owned; must stay open while the server lives).
  static Result<std::unique_ptr<BatchServer>> create(int arena_fd, std::uint64_t arena_bytes,
                                                     const ServerOptions& options);
  static Result<std::unique_ptr<BatchServer>> create(const batch::Arena& arena,
                                                     const ServerOptions& options);
  ~BatchServer();  // closes every client (their batches are released) and unlinks the socket
  BatchServer(const BatchServer&) = delete;
  BatchServer& operator=(const BatchServer&) = delete;

  const std::string& socket_path() const;

  // Hands `layout` to the connected client holding the fewest batches, waiting for a client and
  // for window room. `release` runs exactly once: when the client releases the batch, when it
  // goes away, or here if send() fails. A client lost while sending is skipped (the batch goes
  // to the next one).
  Status send(batch::BatchLayout layout, std::function<void()> release, std::stop_token stop = {});
  // The same for a Loader's batch (held until the client releases it; Batch::release then runs
  // on the I/O thread, which the Loader allows: its release returns the block to the arena).
  Status send(pipeline::Batch batch, std::stop_token stop = {});

  // Ranked mode. The next pending attach (in arrival order); DeadlineExceeded after `timeout`.
  Result<AttachRequest> next_attach(std::chrono::milliseconds timeout, std::stop_token stop = {});
  // Sends the hello with `arena_fd` (not owned; open while the server lives) to the client.
  // Unavailable when the client is already gone.
  Status accept_attach(std::uint64_t client, int arena_fd, std::uint64_t arena_bytes);
  // Tells the client why (its connect() fails with that text) and drops it.
  void refuse(std::uint64_t client, const std::string& reason);
  // Like send(), to one client. `done(consumed)` runs exactly once: consumed = true for the
  // client's release, false when the client went away holding it or the send failed. Waits for
  // window room; Unavailable once the client is gone (done(false) has run).
  Status send_to(std::uint64_t client, batch::BatchLayout layout,
                 std::function<void(bool consumed)> done, std::stop_token stop = {});
  // Sends `end` to one client (its next() returns nullopt); false when it is gone.
  bool end_client(std::uint64_t client);
  // Ends one client's stream with an error instead (its next() returns `error`'s code and text
  // once it has taken the batches sent before; a refuse message on the wire): a rank whose
  // Loader stopped (failure budget, outage) is not a clean end of the data.
  bool fail_client(std::uint64_t client, const Error& error);
  // fail_client for every connected client (unranked mode: the one stream stopped); call
  // finish() afterwards as usual.
  void fail_clients(const Error& error);
  bool client_alive(std::uint64_t client) const;
  // Unreleased batches one client holds (0 when gone).
  int outstanding(std::uint64_t client) const;

  // Blocks until `n` clients are connected. DeadlineExceeded after `timeout`.
  Status wait_for_clients(int n, std::chrono::milliseconds timeout);

  // Sends `end` to every client, then waits until all sent batches are released (or their
  // clients gone) and their release callbacks have returned. DeadlineExceeded after `timeout`
  // (the batches stay outstanding).
  Status finish(std::chrono::milliseconds timeout);

  // Closes every client now: each one's outstanding batches are reclaimed (their callbacks have
  // run on return), and the clients are not counted lost. For a final stats() before shutdown.
  void close_clients();

  ServerStats stats() const;

 private:
  struct Impl;
  explicit BatchServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Inline so that code using only the layout overload need not link the pipeline.
inline Status BatchServer::send(pipeline::Batch batch, std::stop_token stop) {
  auto held = std::make_shared<pipeline::Batch>(std::move(batch));
  batch::BatchLayout layout = held->layout();
  return send(std::move(layout), [held] { held->release(); }, std::move(stop));
}

}  // namespace stoker::shm
