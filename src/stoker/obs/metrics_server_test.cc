#include "stoker/obs/metrics_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

namespace stoker::obs {
namespace {

int connect_to(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  return fd;
}

std::string http_exchange(int port, const std::string& request) {
  const int fd = connect_to(port);
  EXPECT_EQ(::send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof buf, 0)) > 0;) out.append(buf, n);
  ::close(fd);
  return out;
}

TEST(MetricsServerTest, ServesMetricsAndRefusesTheRest) {
  int renders = 0;
  auto s = MetricsServer::start({}, [&] { return "m " + std::to_string(++renders) + "\n"; });
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  const int port = (*s)->port();
  ASSERT_GT(port, 0);
  EXPECT_EQ((*s)->url(), "http://127.0.0.1:" + std::to_string(port) + "/metrics");
  std::string r = http_exchange(port, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.0 200 OK\r\n", 0), 0u) << r;
  EXPECT_NE(r.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_EQ(r.substr(r.find("\r\n\r\n") + 4), "m 1\n");
  EXPECT_EQ(http_exchange(port, "GET /other HTTP/1.1\r\n\r\n").rfind("HTTP/1.0 404", 0), 0u);
  EXPECT_EQ(http_exchange(port, "POST /metrics HTTP/1.1\r\n\r\n").rfind("HTTP/1.0 405", 0), 0u);
  EXPECT_EQ(http_exchange(port, std::string(9000, 'A')).rfind("HTTP/1.0 431", 0), 0u);
  EXPECT_EQ((*s)->scrapes(), 1);
}

TEST(MetricsServerTest, ASilentClientDoesNotBlockTheNext) {
  auto s = MetricsServer::start({}, [] { return std::string("ok\n"); });
  ASSERT_TRUE(s.ok());
  const int silent = connect_to((*s)->port());  // sends nothing: dropped after 2 s
  const auto t0 = std::chrono::steady_clock::now();
  std::string r = http_exchange((*s)->port(), "GET /metrics HTTP/1.0\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.0 200", 0), 0u);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(4));
  ::close(silent);
}

// Issue 30 §9: connections were served one at a time, 2 s each for an idle one: 20 idle
// connections delayed a scrape by 37 s. Now they are served concurrently, up to the bound.
TEST(MetricsServerTest, TwentyIdleConnectionsDoNotDelayAScrape) {
  auto s = MetricsServer::start({}, [] { return std::string("ok\n"); });
  ASSERT_TRUE(s.ok());
  std::vector<int> idle;
  for (int i = 0; i < 20; ++i) idle.push_back(connect_to((*s)->port()));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // all accepted, all silent
  const auto t0 = std::chrono::steady_clock::now();
  std::string r = http_exchange((*s)->port(), "GET /metrics HTTP/1.0\r\n\r\n");
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_EQ(r.rfind("HTTP/1.0 200", 0), 0u) << r;
  EXPECT_LT(took, std::chrono::milliseconds(1000))
      << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
  for (int fd : idle) ::close(fd);
}

// More idle connections than the bound: the oldest waiting one makes room, the scrape is served.
TEST(MetricsServerTest, AtTheBoundTheOldestIdleConnectionMakesRoom) {
  auto s = MetricsServer::start({}, [] { return std::string("ok\n"); });
  ASSERT_TRUE(s.ok());
  std::vector<int> idle;
  for (int i = 0; i < MetricsServer::kMaxConnections + 16; ++i) {
    idle.push_back(connect_to((*s)->port()));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const auto t0 = std::chrono::steady_clock::now();
  std::string r = http_exchange((*s)->port(), "GET /metrics HTTP/1.0\r\n\r\n");
  EXPECT_EQ(r.rfind("HTTP/1.0 200", 0), 0u) << r;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(1000));
  // The first idle connection was closed to make room: its read sees the end.
  char c;
  EXPECT_EQ(::recv(idle[0], &c, 1, 0), 0);
  for (int fd : idle) ::close(fd);
}

TEST(MetricsServerTest, BadAddressAndPortInUse) {
  EXPECT_FALSE(MetricsServer::start({.address = "localhost"}, [] { return std::string(); }).ok());
  EXPECT_FALSE(MetricsServer::start({.port = 70000}, [] { return std::string(); }).ok());
  auto a = MetricsServer::start({}, [] { return std::string(); });
  ASSERT_TRUE(a.ok());
  auto b = MetricsServer::start({.port = (*a)->port()}, [] { return std::string(); });
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().code(), ErrorCode::kUnavailable);
  EXPECT_NE(b.error().to_string().find(std::to_string((*a)->port())), std::string::npos);
}

}  // namespace
}  // namespace stoker::obs
