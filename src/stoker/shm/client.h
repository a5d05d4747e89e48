// BatchClient: the consumer side of the zero-copy hand-off (see server.h). connect() receives the
// arena's memfd and maps it private copy-on-write (a write stays in this process and is
// dropped at release: never a fault, never seen by the server); next() receives one batch descriptor (a few hundred bytes)
// and returns a RemoteBatch whose tensor pointers lie inside that mapping — no pixel byte crosses
// the socket. Dropping a RemoteBatch (or release()) sends the release that lets the server reuse
// the block. A RemoteBatch may outlive its client (the mapping stays until the last one is gone).
// Thread-safety: next() for one consumer thread; RemoteBatches may be released from any thread.
// The server is trusted only when it runs as this uid (or ClientOptions::server_uid, which the
// front ends fill from $STOKER_SERVER_UID — the option schema's server_uid): SO_PEERCRED is
// checked before the hello; PermissionDenied otherwise.
// Errors: NotFound / Unavailable (no server at the path within connect_timeout_ms; the server
// went away; a ranked server refused the attach, with its reason), DataLoss (malformed descriptor, block outside the arena), Internal (mmap).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "stoker/base/result.h"
#include "stoker/batch/batch.h"

namespace stoker::shm {

// Sent first to a ranked server (`stoker serve`): which rank's shard this process wants, and
// optionally where to resume it: a saved state's text (pipeline::LoaderState::serialize(), a
// mixture's mix= cursors included; at most 8192 bytes, else connect() refuses it). Unranked
// servers ignore it.
struct ClientAttach {
  int rank = 0;
  int world_size = 1;
  bool has_state = false;
  std::string state;  // has_state: the state text (the server parses it like a state file)
};

struct ClientOptions {
  std::string socket_path;              // empty: default_socket_path("stoker")
  std::int64_t connect_timeout_ms = 5000;  // retry while the server is not up yet
  // The server must run as this process's effective uid (SO_PEERCRED), or as this uid when set
  // (Python's server_uid / $STOKER_SERVER_UID, resolved by the front end: this library reads no
  // environment); any other server is refused before a byte of it is read — a server of another
  // user could hand over forged batches.
  std::optional<std::uint32_t> server_uid = {};
  std::optional<ClientAttach> attach = {};  // required by ranked servers
};

struct ClientStats {
  std::int64_t batches = 0;
  std::int64_t socket_bytes = 0;  // everything read from the socket after the hello
};

namespace detail {
struct Connection;
}

class RemoteBatch {
 public:
  RemoteBatch() = default;
  RemoteBatch(RemoteBatch&&) noexcept;
  RemoteBatch& operator=(RemoteBatch&&) noexcept;
  ~RemoteBatch();  // release()

  const batch::BatchLayout& layout() const { return layout_; }
  const std::uint8_t* data(const batch::TensorView& t) const { return base_ + t.offset; }
  template <typename T>
  const T* as(const std::string& name) const {
    const batch::TensorView* t = layout_.find(name);
    return t ? reinterpret_cast<const T*>(data(*t)) : nullptr;
  }
  std::int64_t handoff_ns() const { return handoff_ns_; }  // server send → view ready here
  std::int64_t wire_bytes() const { return wire_bytes_; }  // the descriptor's size
  void release();

 private:
  friend class BatchClient;
  batch::BatchLayout layout_;
  const std::uint8_t* base_ = nullptr;
  std::uint64_t id_ = 0;
  std::int64_t handoff_ns_ = 0;
  std::int64_t wire_bytes_ = 0;
  std::shared_ptr<detail::Connection> conn_;
};

class BatchClient {
 public:
  static Result<std::unique_ptr<BatchClient>> connect(const ClientOptions& options);
  ~BatchClient();
  BatchClient(const BatchClient&) = delete;
  BatchClient& operator=(const BatchClient&) = delete;

  // Blocks for the next batch; nullopt once the server ended the stream.
  Result<std::optional<RemoteBatch>> next();
  // The same, interruptible: calls `interrupted` every `poll` while nothing has arrived; when it
  // returns true, next returns Cancelled (the connection stays usable; Python's Ctrl-C).
  Result<std::optional<RemoteBatch>> next(const std::function<bool()>& interrupted,
                                          std::chrono::milliseconds poll);

  const std::uint8_t* base() const;  // this process's (copy-on-write) mapping of the server's arena
  std::uint64_t arena_bytes() const;
  int server_pid() const;
  ClientStats stats() const { return stats_; }

 private:
  explicit BatchClient(std::shared_ptr<detail::Connection> conn);
  std::shared_ptr<detail::Connection> conn_;
  ClientStats stats_;
};

}  // namespace stoker::shm
