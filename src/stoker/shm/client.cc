#include "stoker/shm/client.h"

#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "stoker/base/clock.h"
#include "stoker/shm/detail/wire.h"
#include "stoker/shm/socket_path.h"

namespace stoker::shm {
namespace detail {

struct Connection {
  int fd = -1;
  const std::uint8_t* base = nullptr;
  std::uint64_t arena_bytes = 0;
  int server_pid = 0;
  int pagemap_fd = -1;  // /proc/self/pagemap: which pages of a block this process wrote
  std::mutex send_mu;  // releases may come from any thread
  std::vector<std::uint8_t> buf = std::vector<std::uint8_t>(kMaxMessageBytes);

  ~Connection() {
    if (base != nullptr) ::munmap(const_cast<std::uint8_t*>(base), arena_bytes);
    if (fd >= 0) ::close(fd);
    if (pagemap_fd >= 0) ::close(pagemap_fd);
  }

  // Drops this process's private copies of the block's pages (made by writes into a batch: the
  // mapping is copy-on-write), so the block reads the server's bytes again when it is reused.
  // Only the copied pages are dropped: /proc/self/pagemap tells them (present or swapped, not
  // file-backed); pages still shared with the server stay mapped, so a reused block costs no
  // faults. Without pagemap the whole block is dropped (correct; its pages fault in again).
  void discard_private(std::uint64_t offset, std::uint64_t size) {
    constexpr std::uint64_t kPage = 4096;
    constexpr std::uint64_t kPresent = 1ull << 63, kSwapped = 1ull << 62, kFile = 1ull << 61;
    if (base == nullptr || size == 0 || offset >= arena_bytes) return;
    // Whole pages only: blocks are page-aligned (batch::Arena); a hostile server's odd block
    // at worst drops this process's own writes to a neighbour.
    const std::uint64_t first = offset / kPage * kPage;
    const std::uint64_t last = std::min(arena_bytes, (offset + size + kPage - 1) / kPage * kPage);
    auto* p = const_cast<std::uint8_t*>(base);
    if (pagemap_fd < 0) {
      ::madvise(p + first, last - first, MADV_DONTNEED);
      return;
    }
    std::array<std::uint64_t, 512> entries;
    for (std::uint64_t at = first; at < last;) {
      const std::uint64_t pages =
          std::min<std::uint64_t>(entries.size(), (last - at + kPage - 1) / kPage);
      const auto vpage = (reinterpret_cast<std::uintptr_t>(p) + at) / kPage;
      const ssize_t n = ::pread(pagemap_fd, entries.data(), pages * 8, static_cast<off_t>(vpage * 8));
      if (n != static_cast<ssize_t>(pages * 8)) {
        ::madvise(p + at, last - at, MADV_DONTNEED);
        return;
      }
      for (std::uint64_t i = 0; i < pages;) {
        auto copied = [&](std::uint64_t j) {
          return (entries[j] & (kPresent | kSwapped)) != 0 && (entries[j] & kFile) == 0;
        };
        if (!copied(i)) {
          ++i;
          continue;
        }
        std::uint64_t j = i;
        while (j < pages && copied(j)) ++j;
        ::madvise(p + at + i * kPage, (j - i) * kPage, MADV_DONTNEED);
        i = j;
      }
      at += pages * kPage;
    }
  }

  void send_release(std::uint64_t id) {
    std::string msg = encode_release(id);
    std::lock_guard lock(send_mu);
    // A server that is gone reclaims everything anyway: a failed release needs no handling.
    ::send(fd, msg.data(), msg.size(), MSG_NOSIGNAL);
  }
};

}  // namespace detail

namespace {

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

Result<int> connect_with_retry(const std::string& path, std::int64_t timeout_ms) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path))
    return invalid_argument("bad socket path '" + path + "'");
  std::memcpy(addr.sun_path, path.data(), path.size());
  std::int64_t deadline = now_ns() + timeout_ms * 1'000'000;
  for (;;) {
    int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) return internal_error(errno_text("socket"));
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) return fd;
    int err = errno;
    ::close(fd);
    if (err != ENOENT && err != ECONNREFUSED && err != EAGAIN) {
      errno = err;
      return err == EACCES ? permission_denied(errno_text("connecting to " + path))
                           : unavailable(errno_text("connecting to " + path));
    }
    if (now_ns() >= deadline) {
      errno = err;
      return err == ENOENT
                 ? not_found("no hand-off server at " + path + " (waited " +
                             std::to_string(timeout_ms) + " ms)")
                 : unavailable(errno_text("connecting to " + path));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// The server's uid (SO_PEERCRED, set by the kernel at connect): ours, or the one the user named
// (ClientOptions::server_uid; the front ends resolve $STOKER_SERVER_UID into it).
Status check_server_uid(int fd, const std::string& path, std::optional<std::uint32_t> allowed) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    return permission_denied(errno_text("reading the credentials of the server at " + path));
  }
  const uid_t me = ::geteuid();
  if (cred.uid == me || (allowed && cred.uid == *allowed)) return ok_status();
  return permission_denied(
      "the hand-off server at " + path + " runs as uid " + std::to_string(cred.uid) + " (pid " +
      std::to_string(cred.pid) + "), not as this user (uid " + std::to_string(me) +
      "): refusing it, another user's server could hand over forged batches" +
      (allowed ? " (allowed: uid " + std::to_string(*allowed) + ")"
               : "; to trust it, set STOKER_SERVER_UID=" + std::to_string(cred.uid) +
                     " (Python: server_uid=" + std::to_string(cred.uid) + ")"));
}

// Receives the hello and the arena fd that rides with it.
Status receive_hello(detail::Connection& c) {
  alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int) * 4)> control{};
  iovec iov{c.buf.data(), c.buf.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  ssize_t n = ::recvmsg(c.fd, &msg, MSG_CMSG_CLOEXEC);
  if (n <= 0) return unavailable(n == 0 ? "server closed before the hello" : errno_text("hello"));
  int arena_fd = -1;
  for (cmsghdr* h = CMSG_FIRSTHDR(&msg); h != nullptr; h = CMSG_NXTHDR(&msg, h)) {
    if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) continue;
    std::size_t count = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(int));
      if (arena_fd < 0) arena_fd = fd;
      else ::close(fd);  // never leak what a confused peer sent
    }
  }
  auto m = detail::decode({c.buf.data(), static_cast<std::size_t>(n)}, 0);
  if (m.ok() && m->type == detail::MsgType::kRefuse) {
    if (arena_fd >= 0) ::close(arena_fd);
    return unavailable("the server refused this client: " + m->reason);
  }
  if (!m.ok() || m->type != detail::MsgType::kHello || arena_fd < 0 ||
      (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
    if (arena_fd >= 0) ::close(arena_fd);
    return m.ok() ? data_loss("hello without the arena fd") : m.error();
  }
  struct stat st {};
  if (::fstat(arena_fd, &st) != 0 || static_cast<std::uint64_t>(st.st_size) < m->hello.arena_bytes) {
    ::close(arena_fd);
    return data_loss("arena fd smaller than the announced " +
                     std::to_string(m->hello.arena_bytes) + " bytes");
  }
  // Private and writable: reads see the server's pages in place (no copy), and a consumer that
  // writes into a batch (`labels[labels == x] = -100`) gets its own copy of the pages it writes
  // (copy-on-write) — never a SIGSEGV, never a change the server or another process sees. The
  // copies are dropped when the batch is released (discard_private), before the block is reused.
  void* p = m->hello.arena_bytes == 0
                ? nullptr
                : ::mmap(nullptr, m->hello.arena_bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE,
                         arena_fd, 0);
  ::close(arena_fd);  // the mapping keeps the memory alive
  if (p == MAP_FAILED) return internal_error(errno_text("mapping the arena"));
  c.base = static_cast<const std::uint8_t*>(p);
  c.arena_bytes = m->hello.arena_bytes;
  c.pagemap_fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);  // -1: drop whole blocks
  c.server_pid = m->hello.server_pid;
  return ok_status();
}

}  // namespace

RemoteBatch::RemoteBatch(RemoteBatch&& o) noexcept { *this = std::move(o); }

RemoteBatch& RemoteBatch::operator=(RemoteBatch&& o) noexcept {
  if (this != &o) {
    release();
    layout_ = std::move(o.layout_);
    base_ = o.base_;
    id_ = o.id_;
    handoff_ns_ = o.handoff_ns_;
    wire_bytes_ = o.wire_bytes_;
    conn_ = std::move(o.conn_);
    o.base_ = nullptr;
  }
  return *this;
}

RemoteBatch::~RemoteBatch() { release(); }

void RemoteBatch::release() {
  if (!conn_) return;
  // Before the release: once the server has it, it may write the next batch into this block.
  conn_->discard_private(layout_.block.offset, layout_.block.size);
  conn_->send_release(id_);
  conn_.reset();
  base_ = nullptr;
}

BatchClient::BatchClient(std::shared_ptr<detail::Connection> conn) : conn_(std::move(conn)) {}
BatchClient::~BatchClient() = default;

Result<std::unique_ptr<BatchClient>> BatchClient::connect(const ClientOptions& options) {
  std::string path = options.socket_path;
  if (path.empty()) {
    STOKER_ASSIGN_OR_RETURN(path, default_socket_path("stoker"));
  }
  auto conn = std::make_shared<detail::Connection>();
  STOKER_ASSIGN_OR_RETURN(conn->fd, connect_with_retry(path, options.connect_timeout_ms));
  STOKER_RETURN_IF_ERROR(check_server_uid(conn->fd, path, options.server_uid));
  if (options.attach) {
    const ClientAttach& a = *options.attach;
    Result<std::string> encoded = detail::encode_attach(
        {.rank = a.rank, .world_size = a.world_size, .has_state = a.has_state, .state = a.state});
    if (!encoded.ok()) return std::move(encoded).error().with_context("hand-off client " + path);
    const std::string& msg = *encoded;
    if (::send(conn->fd, msg.data(), msg.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(msg.size()))
      return unavailable(errno_text("sending the attach to " + path));
  }
  if (Status s = receive_hello(*conn); !s.ok())
    return std::move(s).error().with_context("hand-off client " + path);
  return std::unique_ptr<BatchClient>(new BatchClient(std::move(conn)));
}

namespace {

// Nothing queued: tell the server this client now waits, so the window counts the batch the
// consumer is replacing (`for b in loader` keeps the previous batch alive during next()).
void say_waiting_if_idle(int fd) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 0) != 0) return;  // a message (or the hang-up) is there already
  const std::string msg = detail::encode_waiting();
  ::send(fd, msg.data(), msg.size(), MSG_NOSIGNAL | MSG_DONTWAIT);  // best effort
}

}  // namespace

Result<std::optional<RemoteBatch>> BatchClient::next(const std::function<bool()>& interrupted,
                                                     std::chrono::milliseconds poll) {
  const int ms = static_cast<int>(std::clamp<std::int64_t>(poll.count(), 1, 60'000));
  say_waiting_if_idle(conn_->fd);
  for (;;) {
    pollfd p{conn_->fd, POLLIN, 0};
    const int n = ::poll(&p, 1, ms);
    if (n > 0) return next();  // a message, or the hang-up next() reports
    if (n < 0 && errno != EINTR) return unavailable(errno_text("waiting for a batch"));
    if (interrupted()) return cancelled("next() interrupted while waiting for the server");
  }
}

Result<std::optional<RemoteBatch>> BatchClient::next() {
  detail::Connection& c = *conn_;
  say_waiting_if_idle(c.fd);
  ssize_t n;
  do {
    n = ::recv(c.fd, c.buf.data(), c.buf.size(), MSG_TRUNC);
  } while (n < 0 && errno == EINTR);
  if (n == 0) return unavailable("the hand-off server closed the connection");
  if (n < 0) return unavailable(errno_text("receiving a batch"));
  if (static_cast<std::size_t>(n) > c.buf.size()) return data_loss("oversized hand-off message");
  stats_.socket_bytes += n;
  STOKER_ASSIGN_OR_RETURN(detail::Message m,
                          detail::decode({c.buf.data(), static_cast<std::size_t>(n)}, c.arena_bytes));
  if (m.type == detail::MsgType::kEnd) return std::optional<RemoteBatch>();
  if (m.type == detail::MsgType::kRefuse) {
    // The server ended this stream with an error (BatchServer::fail_client): "<Code>: text".
    ErrorCode code = ErrorCode::kUnavailable;
    std::string text = m.reason;
    for (int k = 0; k <= static_cast<int>(ErrorCode::kFailedPrecondition); ++k) {
      const std::string name(error_code_name(static_cast<ErrorCode>(k)));
      if (text.rfind(name + ": ", 0) == 0) {
        code = static_cast<ErrorCode>(k);
        text = text.substr(name.size() + 2);
        break;
      }
    }
    return Error(code, "the server stopped this stream: " + text);
  }
  if (m.type != detail::MsgType::kBatch)
    return data_loss("unexpected message type " + std::to_string(static_cast<int>(m.type)));
  RemoteBatch b;
  b.layout_ = std::move(m.batch.layout);
  b.base_ = c.base;
  b.id_ = m.batch.id;
  b.wire_bytes_ = n;
  b.conn_ = conn_;
  b.handoff_ns_ = now_ns() - m.batch.sent_ns;
  ++stats_.batches;
  return std::optional<RemoteBatch>(std::move(b));
}

const std::uint8_t* BatchClient::base() const { return conn_->base; }
std::uint64_t BatchClient::arena_bytes() const { return conn_->arena_bytes; }
int BatchClient::server_pid() const { return conn_->server_pid; }

}  // namespace stoker::shm
