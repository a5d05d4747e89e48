#include "stoker/obs/metrics_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "stoker/base/clock.h"

namespace stoker::obs {
namespace {

constexpr std::size_t kMaxRequest = 8192;
constexpr std::int64_t kReadLimitNs = 2'000'000'000;
constexpr std::int64_t kWriteLimitNs = 5'000'000'000;

std::string response(const char* status, const char* type, const std::string& body) {
  return std::string("HTTP/1.0 ") + status + "\r\nContent-Type: " + type +
         "\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nConnection: close\r\n\r\n" + body;
}

}  // namespace

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const MetricsServerOptions& options,
                                                            std::function<std::string()> render) {
  if (options.port < 0 || options.port > 65535) {
    return invalid_argument("metrics port must be in [0, 65535], got " + std::to_string(options.port));
  }
  sockaddr_storage addr{};
  socklen_t len = 0;
  int family = AF_INET;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
  if (::inet_pton(AF_INET, options.address.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<std::uint16_t>(options.port));
    len = sizeof *v4;
  } else if (::inet_pton(AF_INET6, options.address.c_str(), &v6->sin6_addr) == 1) {
    family = AF_INET6;
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<std::uint16_t>(options.port));
    len = sizeof *v6;
  } else {
    return invalid_argument("metrics address must be a numeric IPv4 or IPv6 address, got '" +
                            options.address + "'");
  }
  std::unique_ptr<MetricsServer> s(new MetricsServer());
  s->listen_fd_ = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (s->listen_fd_ < 0) return unavailable(std::string("metrics socket: ") + std::strerror(errno));
  const int one = 1;
  ::setsockopt(s->listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const std::string where = options.address + ":" + std::to_string(options.port);
  if (::bind(s->listen_fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    return unavailable("metrics endpoint: binding " + where + ": " + std::strerror(errno));
  }
  if (::listen(s->listen_fd_, 128) != 0) {
    return unavailable("metrics endpoint: listening on " + where + ": " + std::strerror(errno));
  }
  sockaddr_storage bound{};
  socklen_t blen = sizeof bound;
  ::getsockname(s->listen_fd_, reinterpret_cast<sockaddr*>(&bound), &blen);
  s->port_ = ntohs(family == AF_INET ? reinterpret_cast<sockaddr_in*>(&bound)->sin_port
                                     : reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
  s->address_ = options.address;
  s->wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (s->wake_fd_ < 0) return unavailable(std::string("metrics eventfd: ") + std::strerror(errno));
  s->render_ = std::move(render);
  MetricsServer* raw = s.get();
  s->thread_ = std::jthread([raw](std::stop_token stop) { raw->loop(stop); });
  return s;
}

MetricsServer::~MetricsServer() {
  if (thread_.joinable()) {
    thread_.request_stop();
    const std::uint64_t one = 1;
    (void)!::write(wake_fd_, &one, sizeof one);
    thread_.join();
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

std::string MetricsServer::url() const {
  const bool v6 = address_.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + address_ + "]" : address_) + ":" + std::to_string(port_) +
         "/metrics";
}

namespace {

// One connection: reading its request until `deadline`, then writing `out`.
struct Conn {
  int fd = -1;
  std::string in;
  std::string out;
  std::size_t sent = 0;
  bool writing = false;
  std::int64_t deadline = 0;
  std::int64_t opened = 0;
};

bool request_complete(const std::string& req) {
  return req.find("\r\n\r\n") != std::string::npos || req.find("\n\n") != std::string::npos;
}

}  // namespace

void MetricsServer::loop(std::stop_token stop) {
  std::vector<Conn> conns;
  std::vector<pollfd> fds;
  auto start_writing = [&](Conn& c, std::string response_text) {
    c.out = std::move(response_text);
    c.writing = true;
    c.deadline = now_ns() + kWriteLimitNs;
  };
  while (!stop.stop_requested()) {
    fds.assign({{wake_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}});
    std::int64_t next_deadline = now_ns() + 1'000'000'000;
    for (const Conn& c : conns) {
      fds.push_back({c.fd, static_cast<short>(c.writing ? POLLOUT : POLLIN), 0});
      next_deadline = std::min(next_deadline, c.deadline);
    }
    const int wait_ms = static_cast<int>(std::max<std::int64_t>(0, (next_deadline - now_ns()) / 1'000'000) + 1);
    if (::poll(fds.data(), fds.size(), wait_ms) < 0 && errno != EINTR) continue;
    if (fds[0].revents != 0) return;
    // Connections first (their indices match fds[2...]), then new ones.
    const std::int64_t now = now_ns();
    for (std::size_t i = 0; i < conns.size(); ++i) {
      Conn& c = conns[i];
      const short rev = fds[i + 2].revents;
      if (!c.writing && (rev & (POLLIN | POLLHUP | POLLERR))) {
        char buf[1024];
        const ssize_t n = ::recv(c.fd, buf, std::min(sizeof buf, kMaxRequest + 1 - c.in.size()), 0);
        if (n > 0) c.in.append(buf, static_cast<std::size_t>(n));
        if (n < 0 && errno != EAGAIN && errno != EINTR) {
          c.deadline = 0;  // broken: closed below
        } else if (c.in.size() > kMaxRequest) {
          start_writing(c, response("431 Request Header Fields Too Large", "text/plain", "too large\n"));
        } else if (request_complete(c.in) || (n == 0 && !c.in.empty())) {
          start_writing(c, answer(c.in));  // n == 0: half-closed after its request
        } else if (n == 0) {
          c.deadline = 0;  // closed without a request
        }
      } else if (c.writing && (rev & (POLLOUT | POLLHUP | POLLERR))) {
        const ssize_t n = ::send(c.fd, c.out.data() + c.sent, c.out.size() - c.sent,
                                 MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) c.sent += static_cast<std::size_t>(n);
        if ((n < 0 && errno != EAGAIN && errno != EINTR) || c.sent == c.out.size()) c.deadline = 0;
      }
    }
    // Done, broken or out of time: closed.
    std::erase_if(conns, [&](const Conn& c) {
      if (c.deadline > now && c.deadline != 0) return false;
      ::close(c.fd);
      return true;
    });
    if (fds[1].revents & POLLIN) {
      for (;;) {  // every pending connection
        const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) break;
        if (static_cast<int>(conns.size()) >= kMaxConnections) {
          // Full: the oldest connection still waiting for its request makes room (an idle or
          // slow client must not keep a scraper out); none waiting: the new one is refused.
          auto oldest = conns.end();
          for (auto it = conns.begin(); it != conns.end(); ++it) {
            if (!it->writing && (oldest == conns.end() || it->opened < oldest->opened)) oldest = it;
          }
          if (oldest == conns.end()) {
            ::close(fd);
            continue;
          }
          ::close(oldest->fd);
          conns.erase(oldest);
        }
        Conn c;
        c.fd = fd;
        c.opened = now_ns();
        c.deadline = c.opened + kReadLimitNs;
        conns.push_back(std::move(c));
      }
    }
  }
  for (const Conn& c : conns) ::close(c.fd);
}

std::string MetricsServer::answer(const std::string& req) {
  const std::size_t eol = req.find_first_of("\r\n");
  const std::string line = req.substr(0, eol);
  const std::size_t sp1 = line.find(' ');
  const std::size_t sp2 = sp1 == std::string::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp1 == std::string::npos) return response("400 Bad Request", "text/plain", "bad request\n");
  const std::string method = line.substr(0, sp1);
  std::string path = line.substr(sp1 + 1, sp2 == std::string::npos ? sp2 : sp2 - sp1 - 1);
  if (const std::size_t q = path.find('?'); q != std::string::npos) path.resize(q);
  if (method != "GET" && method != "HEAD") {
    return response("405 Method Not Allowed", "text/plain", "GET /metrics\n");
  }
  if (path != "/metrics") {
    return response("404 Not Found", "text/plain", "stoker: metrics are at /metrics\n");
  }
  scrapes_.fetch_add(1);
  std::string body = render_();
  std::string r = response("200 OK", "text/plain; version=0.0.4; charset=utf-8", body);
  if (method == "HEAD") r.resize(r.size() - body.size());
  return r;
}

}  // namespace stoker::obs
