#include "stoker/shm/server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "stoker/base/clock.h"
#include "stoker/shm/detail/wire.h"
#include "stoker/shm/socket_path.h"

namespace stoker::shm {
namespace {

// done(consumed): true for the client's release, false when reclaimed (client gone, send failed).
using Release = std::function<void(bool consumed)>;
using Done = std::pair<Release, bool>;

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

void run_all(std::vector<Done>& releases) {
  for (auto& [r, consumed] : releases)
    if (r) r(consumed);
  releases.clear();
}

Result<sockaddr_un> socket_address(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path))
    return invalid_argument("socket path must be 1.." + std::to_string(sizeof(addr.sun_path) - 1) +
                            " bytes: '" + path + "'");
  std::memcpy(addr.sun_path, path.data(), path.size());
  return addr;
}

// True when a server answers on `path` (a refused connect means a stale socket file).
bool server_alive(const sockaddr_un& addr) {
  int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  bool alive = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return alive;
}

// socket + bind (replacing a stale socket file) + chmod 0600 + listen.
Result<int> listen_on(const std::string& path, dev_t& dev, ino_t& ino) {
  STOKER_ASSIGN_OR_RETURN(sockaddr_un addr, socket_address(path));
  int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return internal_error(errno_text("socket"));
  for (int attempt = 0;; ++attempt) {
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) break;
    int err = errno;
    if (err != EADDRINUSE || attempt >= 3) {
      ::close(fd);
      errno = err;
      return err == EACCES ? permission_denied(errno_text(("binding " + path).c_str()))
                           : internal_error(errno_text(("binding " + path).c_str()));
    }
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && !S_ISSOCK(st.st_mode)) {
      ::close(fd);
      return invalid_argument(path + " exists and is not a socket; not replacing it");
    }
    if (server_alive(addr)) {
      ::close(fd);
      return unavailable("a live server already listens on " + path);
    }
    ::unlink(path.c_str());  // stale: its server died without unlinking
  }
  // The folder should already be private; 0600 on the socket is the second lock.
  struct stat st {};
  if (::chmod(path.c_str(), 0600) != 0 || ::stat(path.c_str(), &st) != 0 ||
      ::listen(fd, 64) != 0) {
    std::string why = errno_text(("setting up " + path).c_str());
    ::close(fd);
    ::unlink(path.c_str());
    return internal_error(why);
  }
  dev = st.st_dev;
  ino = st.st_ino;
  return fd;
}

Status send_hello(int fd, int arena_fd, const std::string& hello) {
  iovec iov{const_cast<char*>(hello.data()), hello.size()};
  alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int))> control{};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(c), &arena_fd, sizeof(int));
  if (::sendmsg(fd, &msg, MSG_NOSIGNAL) != static_cast<ssize_t>(hello.size()))
    return unavailable(errno_text("sending hello"));
  return ok_status();
}

}  // namespace

Status ServerOptions::validate() const {
  if (window < 1 || window > 64)
    return invalid_argument("window must be in [1, 64], got " + std::to_string(window));
  if (idle_timeout_ms < -1) return invalid_argument("idle_timeout_ms must be ≥ -1");
  return ok_status();
}

struct BatchServer::Impl {
  struct Client {
    int fd = -1;
    std::uint64_t id = 0;
    bool gone = false;
    bool ended = false;
    bool awaiting_attach = false;  // ranked: no hello yet (not yet a client in the stats)
    bool attach_seen = false;      // ranked: its attach was queued (a second one drops it)
    std::uint64_t arena_bytes = 0;  // ranked: the arena its hello carried
    std::uint64_t last_sent = 0;  // batch id of the last send: ties go to the least recent
    // The client blocks in next() with nothing queued (its "waiting"): the batch its consumer
    // is replacing does not hold the window shut until the next send.
    bool waiting = false;
    bool has_room(int window) const {
      return static_cast<int>(outstanding.size()) < window + (waiting ? 1 : 0);
    }
    std::unordered_map<std::uint64_t, Release> outstanding;  // batch id → release
    ~Client() {
      if (fd >= 0) ::close(fd);
    }
  };
  using ClientPtr = std::shared_ptr<Client>;

  ServerOptions options;
  std::string path;
  int arena_fd = -1;
  std::uint64_t arena_bytes = 0;
  int listen_fd = -1;
  int wake_fd = -1;
  dev_t dev = 0;
  ino_t ino = 0;
  std::string hello;

  mutable std::mutex mu;
  std::condition_variable_any cv;
  std::map<std::uint64_t, ClientPtr> clients;
  std::deque<AttachRequest> attaches;  // ranked: waiting for next_attach()
  std::uint64_t next_client = 1;
  std::uint64_t next_batch = 1;
  bool finished = false;
  bool stopping = false;
  std::int64_t idle_since_ns = now_ns();  // when the last client left (or creation)
  // Release callbacks taken out of `outstanding` but not yet run (they run unlocked); finish()
  // waits for them too, so a caller that returns from finish() sees every callback's effect.
  std::int64_t releasing = 0;

  void run_releases(std::vector<Done>& releases) {
    const auto n = static_cast<std::int64_t>(releases.size());
    if (n == 0) return;
    run_all(releases);
    std::lock_guard lock(mu);
    releasing -= n;
    cv.notify_all();
  }
  ServerStats stats;
  std::jthread io;

  ~Impl() {
    {
      std::lock_guard lock(mu);
      stopping = true;
    }
    cv.notify_all();  // a send() still waiting returns Cancelled
    wake();
    if (io.joinable()) io.join();
    std::vector<Done> releases;
    {
      std::lock_guard lock(mu);
      while (!clients.empty()) {
        ClientPtr c = clients.begin()->second;  // a copy: drop_locked erases the map's
        drop_locked(c, releases);
      }
    }
    run_releases(releases);
    if (listen_fd >= 0) ::close(listen_fd);
    if (wake_fd >= 0) ::close(wake_fd);
    // Unlink only our own socket: a later server may have replaced a path we thought stale.
    struct stat st {};
    if (!path.empty() && ::lstat(path.c_str(), &st) == 0 && st.st_dev == dev && st.st_ino == ino)
      ::unlink(path.c_str());
  }

  void wake() {
    std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd, &one, sizeof(one));
  }

  // Removes a client; its outstanding releases are appended to `releases` (run them unlocked).
  void drop_locked(const ClientPtr& c, std::vector<Done>& releases) {
    if (c->gone) return;
    c->gone = true;
    // Lost: a served client (it had its hello and at least one batch) gone before its end. A
    // connection that never attached (another server probing whether this one is alive), a
    // refused attach, or a client the server closed itself is not.
    if (!c->awaiting_attach && (!c->outstanding.empty() || (!c->ended && c->last_sent != 0)))
      ++stats.clients_lost;
    for (auto& [id, r] : c->outstanding) {
      releases.emplace_back(std::move(r), false);
      ++releasing;
      ++stats.batches_reclaimed;
    }
    stats.outstanding -= static_cast<std::int64_t>(c->outstanding.size());
    c->outstanding.clear();
    ::shutdown(c->fd, SHUT_RDWR);
    clients.erase(c->id);
    if (clients.empty()) idle_since_ns = now_ns();
    cv.notify_all();
  }

  void accept_one() {
    int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN (spurious) or the peer gave up already
    ucred cred{};
    socklen_t len = sizeof(cred);
    bool ok = ::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
              cred.uid == ::geteuid() &&
              (options.ranked || send_hello(fd, arena_fd, hello).ok());
    std::lock_guard lock(mu);
    if (!ok) {
      ::close(fd);
      ++stats.clients_rejected;
      return;
    }
    auto c = std::make_shared<Client>();
    c->fd = fd;
    c->id = next_client++;
    c->awaiting_attach = options.ranked;
    if (finished && !options.ranked) {
      std::string end = detail::encode_end();
      ::send(fd, end.data(), end.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
      c->ended = true;
    }
    clients.emplace(c->id, c);
    if (!options.ranked) ++stats.clients_accepted;  // ranked: counted at accept_attach
    cv.notify_all();
  }

  // Reads every pending message of a client: releases, or the end of the connection.
  void service(const ClientPtr& c) {
    // Room for the largest message a client sends: an attach with its state text (version 4).
    std::array<std::uint8_t, detail::kMaxAttachBytes> buf;
    std::vector<Done> releases;
    for (;;) {
      ssize_t n = ::recv(c->fd, buf.data(), buf.size(), MSG_DONTWAIT | MSG_TRUNC);
      if (n < 0 && (errno == EAGAIN || errno == EINTR)) break;
      std::lock_guard lock(mu);
      if (c->gone) break;
      if (n <= 0) {
        drop_locked(c, releases);  // closed, died (ECONNRESET)
        break;
      }
      auto m = static_cast<std::size_t>(n) > buf.size()
                   ? Result<detail::Message>(data_loss(
                         "a message of " + std::to_string(n) + " bytes (at most " +
                         std::to_string(buf.size()) + ")"))
                   : detail::decode({buf.data(), static_cast<std::size_t>(n)}, 0);
      if (!m.ok() && options.ranked && c->awaiting_attach && !c->attach_seen) {
        // Not a valid attach (another protocol version, a state too long, junk): say why
        // before hanging up, as for an attach the owner refuses (issue 28: a reason, never a
        // silent drop); the server goes on serving everyone else.
        std::string msg = detail::encode_refuse("attach refused: " + m.error().message());
        ::send(c->fd, msg.data(), msg.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        c->ended = true;
        ++stats.clients_rejected;
        drop_locked(c, releases);
        break;
      }
      if (m.ok() && m->type == detail::MsgType::kAttach) {
        if (!options.ranked) continue;  // an unranked server serves one stream: rank is moot
        if (c->attach_seen) {
          drop_locked(c, releases);
          break;
        }
        c->attach_seen = true;
        const detail::Attach& a = m->attach;
        attaches.push_back({.client = c->id, .rank = a.rank, .world_size = a.world_size,
                            .has_state = a.has_state, .state = a.state});
        cv.notify_all();
        continue;
      }
      if (m.ok() && m->type == detail::MsgType::kWaiting) {
        c->waiting = true;
        cv.notify_all();
        continue;
      }
      if (!m.ok() || m->type != detail::MsgType::kRelease) {
        drop_locked(c, releases);
        break;
      }
      auto it = c->outstanding.find(m->release_id);
      if (it == c->outstanding.end()) continue;  // unknown or repeated: never another's batch
      releases.emplace_back(std::move(it->second), true);
      ++releasing;
      c->outstanding.erase(it);
      --stats.outstanding;
      ++stats.batches_released;
      cv.notify_all();
    }
    run_releases(releases);
  }

  void loop(std::stop_token) {
    std::vector<pollfd> fds;
    std::vector<ClientPtr> polled;
    for (;;) {
      fds.assign({{wake_fd, POLLIN, 0}, {listen_fd, POLLIN, 0}});
      polled.clear();
      {
        std::lock_guard lock(mu);
        if (stopping) return;
        for (auto& [id, c] : clients) {
          fds.push_back({c->fd, POLLIN, 0});
          polled.push_back(c);
        }
      }
      if (::poll(fds.data(), fds.size(), -1) < 0) continue;  // EINTR
      if (fds[0].revents & POLLIN) {
        std::uint64_t v;
        [[maybe_unused]] ssize_t n = ::read(wake_fd, &v, sizeof(v));
      }
      if (fds[1].revents & POLLIN) accept_one();
      for (std::size_t i = 0; i < polled.size(); ++i)
        if (fds[i + 2].revents != 0) service(polled[i]);
    }
  }

  // The arena a client's blocks must lie in; unbounded for a client that is gone (send_to then
  // reports it gone rather than a bad layout).
  std::uint64_t arena_bytes_for(std::uint64_t client) const {
    std::lock_guard lock(mu);
    auto it = clients.find(client);
    if (it == clients.end()) return ~std::uint64_t{0};
    return it->second->arena_bytes != 0 ? it->second->arena_bytes : arena_bytes;
  }

  // The connected client with window room holding the fewest batches, the least recently served
  // among equals (so a fast consumer that always releases at once cannot starve the others).
  ClientPtr pick_locked() const {
    ClientPtr best;
    for (auto& [id, c] : clients) {
      if (c->ended || c->awaiting_attach || !c->has_room(options.window)) continue;
      if (!best || c->outstanding.size() < best->outstanding.size() ||
          (c->outstanding.size() == best->outstanding.size() && c->last_sent < best->last_sent))
        best = c;
    }
    return best;
  }

  // The batch message under a fresh id (its send time is stamped by transmit_locked).
  Result<std::string> encode(const batch::BatchLayout& layout, std::uint64_t* id) {
    {
      std::lock_guard lock(mu);
      *id = next_batch++;
    }
    return detail::encode_batch({.id = *id, .sent_ns = 0, .layout = layout});
  }

  // Registers `release` as c's outstanding batch `id` and sends `msg`, stamped now. The window
  // keeps a client's socket buffer far from full, so this never blocks; sending under the lock
  // means a release can never arrive for a batch not yet registered. False: the send failed and
  // the release is still among c's outstanding ones (the caller takes it back or drops c).
  bool transmit_locked(const ClientPtr& c, std::uint64_t id, std::string& msg, Release release) {
    constexpr std::size_t kSentAt = 8 + sizeof(std::uint64_t);  // header, id, then sent_ns
    const std::int64_t t = now_ns();
    std::memcpy(msg.data() + kSentAt, &t, sizeof(t));
    c->outstanding.emplace(id, std::move(release));
    const ssize_t n = ::send(c->fd, msg.data(), msg.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n != static_cast<ssize_t>(msg.size())) return false;
    c->last_sent = id;
    c->waiting = false;
    ++stats.batches_sent;
    ++stats.outstanding;
    stats.descriptor_bytes += n;
    return true;
  }
};

BatchServer::BatchServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
BatchServer::~BatchServer() = default;

Result<std::unique_ptr<BatchServer>> BatchServer::create(const batch::Arena& arena,
                                                         const ServerOptions& options) {
  if (arena.fd() < 0)
    return invalid_argument("the arena is not shared (ArenaOptions::shared = false): no memfd");
  return create(arena.fd(), arena.capacity(), options);
}

Result<std::unique_ptr<BatchServer>> BatchServer::create(int arena_fd, std::uint64_t arena_bytes,
                                                         const ServerOptions& options) {
  STOKER_RETURN_IF_ERROR(options.validate());
  struct stat st {};
  if (options.ranked && arena_fd < 0) {
    // Ranked: every client's hello names its own arena (accept_attach).
  } else if (arena_fd < 0 || ::fstat(arena_fd, &st) != 0)
    return invalid_argument("arena fd " + std::to_string(arena_fd) + " is not open");
  if (static_cast<std::uint64_t>(st.st_size) < arena_bytes)
    return invalid_argument("arena fd holds " + std::to_string(st.st_size) + " bytes, fewer than " +
                            std::to_string(arena_bytes));
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->arena_fd = arena_fd;
  impl->arena_bytes = arena_bytes;
  if (options.socket_path.empty()) {
    STOKER_ASSIGN_OR_RETURN(impl->path, default_socket_path("stoker"));
  } else {
    impl->path = options.socket_path;
  }
  impl->hello = detail::encode_hello({.arena_bytes = arena_bytes, .server_pid = ::getpid()});
  impl->wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (impl->wake_fd < 0) return internal_error(errno_text("eventfd"));
  auto fd = listen_on(impl->path, impl->dev, impl->ino);
  if (!fd.ok()) {
    impl->path.clear();  // not ours: never unlink it
    return std::move(fd).error().with_context("hand-off server");
  }
  impl->listen_fd = *fd;
  Impl* raw = impl.get();
  impl->io = std::jthread([raw](std::stop_token st) { raw->loop(st); });
  return std::unique_ptr<BatchServer>(new BatchServer(std::move(impl)));
}

const std::string& BatchServer::socket_path() const { return impl_->path; }

Status BatchServer::send(batch::BatchLayout layout, std::function<void()> plain,
                         std::stop_token stop) {
  Impl& s = *impl_;
  Release release;
  if (plain) release = [plain = std::move(plain)](bool) { plain(); };
  std::vector<Done> releases;
  auto fail = [&](Error e) -> Status {
    s.run_releases(releases);
    if (release) release(false);
    return e;
  };
  if (s.options.ranked) return fail(invalid_argument("ranked server: use send_to()"));
  if (Status v = detail::validate_layout(layout, s.arena_bytes); !v.ok())
    return fail(invalid_argument(v.error().message()));
  std::uint64_t id = 0;
  auto encoded = s.encode(layout, &id);
  if (!encoded.ok()) return fail(std::move(encoded).error());

  std::unique_lock lock(s.mu);
  for (;;) {
    Impl::ClientPtr c;
    auto ready = [&] { return s.stopping || (c = s.pick_locked()) != nullptr; };
    // Re-check the idle deadline at least every 100 ms: clients may all leave while we wait.
    bool idle_check = s.options.idle_timeout_ms >= 0 && s.clients.empty();
    std::int64_t wake_at =
        idle_check ? s.idle_since_ns + s.options.idle_timeout_ms * 1'000'000 : now_ns() + 100'000'000;
    auto deadline =
        std::chrono::steady_clock::time_point(std::chrono::nanoseconds(wake_at));
    bool woke = s.cv.wait_until(lock, stop, deadline, ready);
    if (stop.stop_requested() || s.stopping) {
      lock.unlock();
      return fail(cancelled("send: stop requested"));
    }
    if (!woke) {
      if (s.options.idle_timeout_ms >= 0 && s.clients.empty() &&
          now_ns() >= s.idle_since_ns + s.options.idle_timeout_ms * 1'000'000) {
        lock.unlock();
        return fail(unavailable("no consumer connected to " + s.path + " for " +
                                std::to_string(s.options.idle_timeout_ms) + " ms"));
      }
      continue;
    }
    if (s.transmit_locked(c, id, *encoded, std::move(release))) return ok_status();
    release = std::move(c->outstanding[id]);
    c->outstanding.erase(id);
    s.drop_locked(c, releases);  // broken pipe, reset, or a client not reading: next client
    lock.unlock();
    s.run_releases(releases);
    s.wake();
    lock.lock();
  }
}

Result<AttachRequest> BatchServer::next_attach(std::chrono::milliseconds timeout,
                                              std::stop_token stop) {
  Impl& s = *impl_;
  std::unique_lock lock(s.mu);
  if (!s.cv.wait_for(lock, stop, timeout, [&] { return s.stopping || !s.attaches.empty(); }))
    return stop.stop_requested() ? Result<AttachRequest>(cancelled("next_attach: stop requested"))
                                 : Result<AttachRequest>(deadline_exceeded("no attach"));
  if (s.stopping) return cancelled("server stopping");
  AttachRequest a = s.attaches.front();
  s.attaches.pop_front();
  return a;
}

Status BatchServer::accept_attach(std::uint64_t client, int arena_fd, std::uint64_t arena_bytes) {
  Impl& s = *impl_;
  std::lock_guard lock(s.mu);
  auto it = s.clients.find(client);
  if (it == s.clients.end() || !it->second->awaiting_attach)
    return unavailable("client " + std::to_string(client) + " is gone");
  std::string hello = detail::encode_hello({.arena_bytes = arena_bytes, .server_pid = ::getpid()});
  // The hello is the first thing on an empty socket buffer: it does not block.
  STOKER_RETURN_IF_ERROR(send_hello(it->second->fd, arena_fd, hello));
  it->second->awaiting_attach = false;
  it->second->arena_bytes = arena_bytes;
  ++s.stats.clients_accepted;
  s.cv.notify_all();
  return ok_status();
}

void BatchServer::refuse(std::uint64_t client, const std::string& reason) {
  Impl& s = *impl_;
  std::vector<Done> releases;
  {
    std::lock_guard lock(s.mu);
    auto it = s.clients.find(client);
    if (it == s.clients.end()) return;
    Impl::ClientPtr c = it->second;
    std::string msg = detail::encode_refuse(reason);
    ::send(c->fd, msg.data(), msg.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    c->ended = true;  // refused is not lost
    ++s.stats.clients_rejected;
    s.drop_locked(c, releases);
  }
  s.run_releases(releases);
  s.wake();
}

Status BatchServer::send_to(std::uint64_t client, batch::BatchLayout layout,
                            std::function<void(bool)> done, std::stop_token stop) {
  Impl& s = *impl_;
  auto fail = [&](Error e) -> Status {
    if (done) done(false);
    return e;
  };
  if (Status v = detail::validate_layout(layout, s.arena_bytes_for(client)); !v.ok())
    return fail(invalid_argument(v.error().message()));
  std::uint64_t id = 0;
  auto encoded = s.encode(layout, &id);
  if (!encoded.ok()) return fail(std::move(encoded).error());

  std::unique_lock lock(s.mu);
  Impl::ClientPtr c;
  auto ready = [&] {
    auto it = s.clients.find(client);
    c = it == s.clients.end() ? nullptr : it->second;
    return s.stopping || c == nullptr || c->ended ||
           (!c->awaiting_attach && c->has_room(s.options.window));
  };
  s.cv.wait(lock, stop, ready);
  if (stop.stop_requested() || s.stopping) {
    lock.unlock();
    return fail(cancelled("send_to: stop requested"));
  }
  if (c == nullptr || c->ended) {
    lock.unlock();
    return fail(unavailable("client " + std::to_string(client) + " is gone"));
  }
  if (s.transmit_locked(c, id, *encoded, std::move(done))) return ok_status();
  // Never sent: take it back before dropping the client, so it is not counted as reclaimed.
  done = std::move(c->outstanding[id]);
  c->outstanding.erase(id);
  std::vector<Done> releases;
  s.drop_locked(c, releases);
  lock.unlock();
  s.run_releases(releases);
  s.wake();
  return fail(unavailable("client " + std::to_string(client) + ": send failed"));
}

bool BatchServer::end_client(std::uint64_t client) {
  Impl& s = *impl_;
  std::lock_guard lock(s.mu);
  auto it = s.clients.find(client);
  if (it == s.clients.end()) return false;
  std::string end = detail::encode_end();
  ::send(it->second->fd, end.data(), end.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  it->second->ended = true;
  s.cv.notify_all();
  return true;
}

bool BatchServer::fail_client(std::uint64_t client, const Error& error) {
  Impl& s = *impl_;
  std::lock_guard lock(s.mu);
  auto it = s.clients.find(client);
  if (it == s.clients.end()) return false;
  const std::string msg = detail::encode_refuse(std::string(error_code_name(error.code())) + ": " +
                                                error.to_string());
  ::send(it->second->fd, msg.data(), msg.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  it->second->ended = true;
  s.cv.notify_all();
  return true;
}

void BatchServer::fail_clients(const Error& error) {
  std::vector<std::uint64_t> ids;
  {
    std::lock_guard lock(impl_->mu);
    for (const auto& [id, c] : impl_->clients) {
      if (!c->ended) ids.push_back(id);
    }
  }
  for (std::uint64_t id : ids) fail_client(id, error);
}

bool BatchServer::client_alive(std::uint64_t client) const {
  std::lock_guard lock(impl_->mu);
  return impl_->clients.count(client) != 0;
}

int BatchServer::outstanding(std::uint64_t client) const {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->clients.find(client);
  return it == impl_->clients.end() ? 0 : static_cast<int>(it->second->outstanding.size());
}

Status BatchServer::wait_for_clients(int n, std::chrono::milliseconds timeout) {
  Impl& s = *impl_;
  std::unique_lock lock(s.mu);
  if (!s.cv.wait_for(lock, timeout, [&] { return static_cast<int>(s.clients.size()) >= n; }))
    return deadline_exceeded("waiting for " + std::to_string(n) + " consumer(s) on " + s.path);
  return ok_status();
}

Status BatchServer::finish(std::chrono::milliseconds timeout) {
  Impl& s = *impl_;
  std::unique_lock lock(s.mu);
  s.finished = true;
  std::string end = detail::encode_end();
  for (auto& [id, c] : s.clients) {
    if (c->ended || c->awaiting_attach) continue;
    ::send(c->fd, end.data(), end.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    c->ended = true;
  }
  if (!s.cv.wait_for(lock, timeout,
                     [&] { return s.stats.outstanding == 0 && s.releasing == 0; }))
    return deadline_exceeded(std::to_string(s.stats.outstanding) +
                             " batches still held by consumers");
  return ok_status();
}

void BatchServer::close_clients() {
  Impl& s = *impl_;
  std::vector<Done> releases;
  {
    std::lock_guard lock(s.mu);
    s.finished = true;
    while (!s.clients.empty()) {
      Impl::ClientPtr c = s.clients.begin()->second;
      c->ended = true;  // closed by us: not lost (what it held is reclaimed)
      s.drop_locked(c, releases);
    }
  }
  s.run_releases(releases);
  s.wake();
}

ServerStats BatchServer::stats() const {
  std::lock_guard lock(impl_->mu);
  ServerStats st = impl_->stats;
  st.clients_connected = static_cast<int>(impl_->clients.size());
  return st;
}

}  // namespace stoker::shm
