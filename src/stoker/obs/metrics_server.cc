#include "stoker/obs/metrics_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "stoker/base/clock.h"

namespace stoker::obs {
namespace {

constexpr std::size_t kMaxRequest = 8192;
constexpr std::int64_t kReadLimitNs = 2'000'000'000;
constexpr std::int64_t kWriteLimitNs = 5'000'000'000;

// Waits for `events` on fd until the deadline; false on timeout or error.
bool wait_for(int fd, short events, std::int64_t deadline_ns) {
  for (;;) {
    const std::int64_t left_ms = (deadline_ns - now_ns()) / 1'000'000;
    if (left_ms <= 0) return false;
    pollfd p{fd, events, 0};
    const int r = ::poll(&p, 1, static_cast<int>(left_ms));
    if (r > 0) return (p.revents & (events | POLLHUP | POLLERR)) != 0;
    if (r < 0 && errno != EINTR) return false;
  }
}

bool send_all(int fd, const std::string& data) {
  const std::int64_t deadline = now_ns() + kWriteLimitNs;
  std::size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      if (!wait_for(fd, POLLOUT, deadline)) return false;
    } else {
      return false;
    }
  }
  return true;
}

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
  if (::listen(s->listen_fd_, 16) != 0) {
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

void MetricsServer::loop(std::stop_token stop) {
  while (!stop.stop_requested()) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    if (::poll(p, 2, 1000) <= 0) continue;
    if (p[1].revents != 0) return;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) continue;
    serve_one(fd);
    ::close(fd);
  }
}

void MetricsServer::serve_one(int fd) {
  std::string req;
  const std::int64_t deadline = now_ns() + kReadLimitNs;
  char buf[1024];
  while (req.find("\r\n\r\n") == std::string::npos && req.find("\n\n") == std::string::npos) {
    if (req.size() >= kMaxRequest) {
      send_all(fd, response("431 Request Header Fields Too Large", "text/plain", "too large\n"));
      return;
    }
    if (!wait_for(fd, POLLIN, deadline)) return;
    const ssize_t n = ::recv(fd, buf, std::min(sizeof buf, kMaxRequest - req.size()), 0);
    if (n == 0) break;  // the client half-closed after its request: answer what we have
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      return;
    }
    req.append(buf, static_cast<std::size_t>(n));
  }
  const std::size_t eol = req.find_first_of("\r\n");
  const std::string line = req.substr(0, eol);
  const std::size_t sp1 = line.find(' ');
  const std::size_t sp2 = sp1 == std::string::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp1 == std::string::npos) {
    send_all(fd, response("400 Bad Request", "text/plain", "bad request\n"));
    return;
  }
  const std::string method = line.substr(0, sp1);
  std::string path = line.substr(sp1 + 1, sp2 == std::string::npos ? sp2 : sp2 - sp1 - 1);
  if (const std::size_t q = path.find('?'); q != std::string::npos) path.resize(q);
  if (method != "GET" && method != "HEAD") {
    send_all(fd, response("405 Method Not Allowed", "text/plain", "GET /metrics\n"));
    return;
  }
  if (path != "/metrics") {
    send_all(fd, response("404 Not Found", "text/plain", "stoker: metrics are at /metrics\n"));
    return;
  }
  scrapes_.fetch_add(1);
  std::string body = render_();
  std::string r = response("200 OK", "text/plain; version=0.0.4; charset=utf-8", body);
  if (method == "HEAD") r.resize(r.size() - body.size());
  send_all(fd, r);
}

}  // namespace stoker::obs
