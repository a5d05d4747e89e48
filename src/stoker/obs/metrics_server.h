// MetricsServer: a minimal HTTP/1.0 endpoint for Prometheus scrapes. `GET /metrics` answers the
// text `render()` returns (text/plain; version=0.0.4); any other path 404, any other method 405.
// Loopback by default (127.0.0.1); another address only when the caller names one. One thread
// serves up to kMaxConnections connections at once (poll): each request must arrive within 2 s
// and fit 8 KiB, each answer is written within 5 s, then the connection closes; at the bound, the
// oldest connection still waiting for its request is closed to make room — so idle or slow
// clients cost bounded time and memory and never delay a scrape (they used to be served one at a
// time, 2 s each: 20 idle connections delayed a scrape by 37 s). `render` runs on the server's
// thread (it must be thread-safe with the run).
// Errors from start(): InvalidArgument (address), Unavailable (bind/listen: port taken...).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "stoker/base/result.h"

namespace stoker::obs {

struct MetricsServerOptions {
  std::string address = "127.0.0.1";  // numeric IPv4 or IPv6 address
  int port = 0;                       // 0: an ephemeral port (see port())
};

class MetricsServer {
 public:
  static constexpr int kMaxConnections = 64;
  static Result<std::unique_ptr<MetricsServer>> start(const MetricsServerOptions& options,
                                                      std::function<std::string()> render);
  ~MetricsServer();  // stops and joins the thread
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  int port() const { return port_; }
  const std::string& address() const { return address_; }
  std::string url() const;  // http://ADDR:PORT/metrics
  std::int64_t scrapes() const { return scrapes_.load(); }

 private:
  MetricsServer() = default;
  void loop(std::stop_token stop);
  std::string answer(const std::string& request);  // the whole HTTP response
  int listen_fd_ = -1;
  int wake_fd_ = -1;  // eventfd: wakes the loop to stop
  int port_ = 0;
  std::string address_;
  std::function<std::string()> render_;
  std::atomic<std::int64_t> scrapes_{0};
  std::jthread thread_;
};

}  // namespace stoker::obs
