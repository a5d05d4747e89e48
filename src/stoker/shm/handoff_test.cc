// The hand-off between processes: forked consumers (fork happens before the server's thread
// exists) read batches in place and report over a pipe what they saw.
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "stoker/base/hash.h"
#include "stoker/batch/arena.h"
#include "stoker/shm/client.h"
#include "stoker/shm/server.h"
#include "stoker/shm/socket_path.h"

namespace stoker::shm {
namespace {

using namespace std::chrono_literals;

std::uint64_t fnv1a(const std::uint8_t* p, std::size_t n) { return fnv1a64(p, n); }

// A private temp folder with a socket path in it.
struct TempSocket {
  std::string dir, path;
  TempSocket() {
    char tmpl[] = "/tmp/stoker-shm-test-XXXXXX";
    dir = ::mkdtemp(tmpl);
    path = dir + "/s.sock";
  }
  ~TempSocket() { std::filesystem::remove_all(dir); }
};

// A child process running `body(write_fd)`; its exit status is body's return value.
struct Child {
  pid_t pid = -1;
  int out = -1;  // read end: what the child wrote
  int go = -1;   // write end: a byte here lets a waiting child proceed
  static Child fork_run(std::function<int(int out_fd, int go_fd)> body) {
    int out_pipe[2], go_pipe[2];
    STOKER_CHECK(::pipe(out_pipe) == 0 && ::pipe(go_pipe) == 0, "pipe");
    Child c;
    c.pid = ::fork();
    STOKER_CHECK(c.pid >= 0, "fork");
    if (c.pid == 0) {
      ::close(out_pipe[0]);
      ::close(go_pipe[1]);
      int rc = body(out_pipe[1], go_pipe[0]);
      ::_exit(rc);
    }
    ::close(out_pipe[1]);
    ::close(go_pipe[0]);
    c.out = out_pipe[0];
    c.go = go_pipe[1];
    return c;
  }
  std::string read_line() {  // blocks
    std::string s;
    char ch;
    while (::read(out, &ch, 1) == 1 && ch != '\n') s += ch;
    return s;
  }
  std::string read_all() {
    std::string s;
    char buf[4096];
    ssize_t n;
    while ((n = ::read(out, buf, sizeof(buf))) > 0) s.append(buf, n);
    return s;
  }
  void release_go() { [[maybe_unused]] ssize_t n = ::write(go, "g", 1); }
  int wait() {
    int status = 0;
    ::waitpid(pid, &status, 0);
    ::close(out);
    ::close(go);
    return status;
  }
};

void write_str(int fd, const std::string& s) {
  std::size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n <= 0) return;
    off += n;
  }
}

// Consumes until the end; per batch one line: step hash inside wire_bytes handoff_ns.
int consume_and_report(const std::string& path, int out,
                       std::optional<ClientAttach> attach = std::nullopt) {
  auto client = BatchClient::connect(
      {.socket_path = path, .connect_timeout_ms = 10000, .attach = attach});
  if (!client.ok()) {
    write_str(out, "error " + client.error().to_string() + "\n");
    return 3;
  }
  const std::uint8_t* lo = (*client)->base();
  const std::uint8_t* hi = lo + (*client)->arena_bytes();
  for (;;) {
    auto b = (*client)->next();
    if (!b.ok()) {
      write_str(out, "error " + b.error().to_string() + "\n");
      return 4;
    }
    if (!*b) break;
    const RemoteBatch& rb = **b;
    std::uint64_t h = 0;
    bool inside = true;
    for (const batch::TensorView& t : rb.layout().tensors) {
      const std::uint8_t* p = rb.data(t);
      inside = inside && p >= lo && p + t.bytes() <= hi;
      h = h * 31 + fnv1a(p, t.bytes());
    }
    std::ostringstream line;
    line << rb.layout().step << ' ' << h << ' ' << inside << ' ' << rb.wire_bytes() << ' '
         << rb.handoff_ns() << '\n';
    write_str(out, line.str());
  }
  write_str(out, "end " + std::to_string((*client)->stats().socket_bytes) + "\n");
  return 0;
}

// Fills a block with a deterministic pattern as two tensors; returns the layout and its hash.
struct Produced {
  batch::BatchLayout layout;
  std::uint64_t hash = 0;
};

Produced produce(batch::Arena& arena, std::uint64_t step) {
  const std::int64_t rows = 64 + static_cast<std::int64_t>(step % 7) * 16;
  const std::uint64_t ids_bytes = 2 * 128 * 8, pix_bytes = rows * 1176 * 4;
  auto block = arena.allocate(ids_bytes + pix_bytes);
  STOKER_CHECK(block.ok(), "allocate");
  Produced p;
  p.layout.block = *block;
  p.layout.step = step;
  p.layout.tensors = {{"input_ids", batch::DType::kInt64, {2, 128}, block->offset},
                      {"pixel_values", batch::DType::kFloat32, {rows, 1176},
                       block->offset + ids_bytes}};
  std::uint64_t x = step * 0x9e3779b97f4a7c15ull + 1;
  std::uint8_t* base = arena.base() + block->offset;
  for (std::uint64_t i = 0; i < ids_bytes + pix_bytes; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    base[i] = static_cast<std::uint8_t>(x);
  }
  for (const batch::TensorView& t : p.layout.tensors)
    p.hash = p.hash * 31 + fnv1a(arena.base() + t.offset, t.bytes());
  return p;
}

std::unique_ptr<batch::Arena> make_arena(std::size_t bytes = 64 << 20) {
  auto a = batch::Arena::create({.bytes = bytes, .shared = true, .name = "shm-test"});
  STOKER_CHECK(a.ok(), "arena");
  return std::move(*a);
}

bool eventually(const std::function<bool()>& cond, std::chrono::milliseconds limit = 5s) {
  auto end = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < end) {
    if (cond()) return true;
    std::this_thread::sleep_for(2ms);
  }
  return cond();
}

TEST(HandoffTest, ConsumerProcessReadsProducerBytesInPlace) {
  TempSocket sock;
  Child child = Child::fork_run([&](int out, int) { return consume_and_report(sock.path, out); });
  auto arena = make_arena();
  // window 1: the consumer is always waiting in next() when a descriptor leaves, so the
  // measured hand-off is the latency of the hand-off itself, not time queued behind a batch.
  auto server = BatchServer::create(*arena, {.socket_path = sock.path, .window = 1});
  ASSERT_TRUE(server.ok()) << server.error().to_string();
  ASSERT_TRUE((*server)->wait_for_clients(1, 10s).ok());
  constexpr int kBatches = 200;
  std::vector<std::uint64_t> expected;
  for (int i = 0; i < kBatches; ++i) {
    Produced p = produce(*arena, i);
    expected.push_back(p.hash);
    batch::Block block = p.layout.block;
    batch::Arena* a = arena.get();
    ASSERT_TRUE((*server)->send(p.layout, [a, block] { a->release(block); }).ok());
  }
  ASSERT_TRUE((*server)->finish(10s).ok());
  std::string report = child.read_all();
  EXPECT_EQ(child.wait(), 0) << report;
  EXPECT_EQ(arena->in_use(), 0u) << "every released batch went back to the arena";

  std::istringstream in(report);
  std::vector<std::int64_t> handoff;
  std::int64_t max_wire = 0;
  for (int i = 0; i < kBatches; ++i) {
    std::uint64_t step, hash;
    int inside;
    std::int64_t wire, ns;
    ASSERT_TRUE(in >> step >> hash >> inside >> wire >> ns) << report;
    EXPECT_EQ(step, static_cast<std::uint64_t>(i));
    EXPECT_EQ(hash, expected[i]) << "batch " << i << ": consumer saw other bytes";
    EXPECT_TRUE(inside) << "batch " << i << ": a tensor pointer outside the arena mapping";
    max_wire = std::max(max_wire, wire);
    handoff.push_back(ns);
  }
  std::string end;
  std::int64_t socket_bytes = 0;
  ASSERT_TRUE(in >> end >> socket_bytes);
  EXPECT_EQ(end, "end");
  // Zero copy: the socket carried descriptors only. A batch here is 300+ KB of pixels.
  EXPECT_LE(max_wire, 512);
  EXPECT_LE(socket_bytes, (kBatches + 1) * 512);
  std::sort(handoff.begin(), handoff.end());
  double p50_us = handoff[handoff.size() / 2] / 1e3;
  double p99_us = handoff[handoff.size() * 99 / 100] / 1e3;
  std::printf("hand-off (descriptor send -> view in consumer), %d batches: p50 %.1f us, p99 %.1f "
              "us (target p50 <= 100 us); descriptor %lld bytes, batch ~%lld KB\n",
              kBatches, p50_us, p99_us, static_cast<long long>(max_wire),
              static_cast<long long>((2 * 128 * 8 + 64 * 1176 * 4) / 1024));
  (*server)->stats();
  // Printed, not asserted: a timing in a unit test fails on a loaded machine (it did, at load
  // 13+). The hand-off latency target lives in `stoker bench ladder` (handoff p50, zero-copy row).
}

// A trainer that writes into a batch (`labels[labels == 198] = -100`, issue 15) neither faults
// nor changes the server's bytes (the mapping is copy-on-write), and its private copy is gone
// when the block comes back with the next batch: every batch reads as the server wrote it.
TEST(HandoffTest, ConsumerWritesStayPrivateAndNeverOutliveTheBatch) {
  TempSocket sock;
  Child child = Child::fork_run([&](int out, int go) {
    auto client = BatchClient::connect({.socket_path = sock.path, .connect_timeout_ms = 10000});
    if (!client.ok()) return 3;
    for (;;) {
      auto b = (*client)->next();
      if (!b.ok()) return 4;
      if (!*b) return 0;
      std::uint64_t h = 0;
      for (const batch::TensorView& t : (*b)->layout().tensors) {
        h = h * 31 + fnv1a((*b)->data(t), t.bytes());
        std::memset(const_cast<std::uint8_t*>((*b)->data(t)), 0xAB, t.bytes());  // the write
      }
      std::uint64_t after = 0;
      for (const batch::TensorView& t : (*b)->layout().tensors)
        after = after * 31 + fnv1a((*b)->data(t), t.bytes());
      write_str(out, std::to_string((*b)->layout().step) + " " + std::to_string(h) + " " +
                         std::to_string(after) + "\n");
      char ch;
      if (::read(go, &ch, 1) != 1) return 5;  // held until the server has checked its bytes
    }  // the batch is released here
  });
  auto arena = make_arena(4 << 20);
  auto server = BatchServer::create(*arena, {.socket_path = sock.path, .window = 1});
  ASSERT_TRUE(server.ok()) << server.error().to_string();
  ASSERT_TRUE((*server)->wait_for_clients(1, 10s).ok());
  batch::Arena* a = arena.get();
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(eventually([&] { return arena->in_use() == 0; })) << "batch " << i - 1;
    Produced p = produce(*arena, i);
    ASSERT_EQ(p.layout.block.offset, 0u) << "the same block again (first fit)";
    batch::Block block = p.layout.block;
    ASSERT_TRUE((*server)->send(p.layout, [a, block] { a->release(block); }).ok());
    std::istringstream line(child.read_line());
    std::uint64_t step = 0, seen = 0, after = 0;
    ASSERT_TRUE(line >> step >> seen >> after) << "the consumer died (SIGSEGV on the write?)";
    EXPECT_EQ(step, static_cast<std::uint64_t>(i));
    EXPECT_EQ(seen, p.hash) << "batch " << i << ": stale bytes from the consumer's last write";
    EXPECT_NE(after, p.hash) << "batch " << i << ": the consumer's write did not land";
    std::uint64_t mine = 0;
    for (const batch::TensorView& t : p.layout.tensors)
      mine = mine * 31 + fnv1a(arena->base() + t.offset, t.bytes());
    EXPECT_EQ(mine, p.hash) << "batch " << i << ": the consumer's write reached the server";
    child.release_go();
  }
  ASSERT_TRUE((*server)->finish(10s).ok());
  EXPECT_EQ(child.wait(), 0);
}

TEST(HandoffTest, KilledConsumerIsReclaimedAndTheNextOneServed) {
  TempSocket sock;
  // A: takes 3 batches, never releases them, waits to be killed.
  Child a = Child::fork_run([&](int out, int) {
    auto client = BatchClient::connect({.socket_path = sock.path, .connect_timeout_ms = 10000});
    if (!client.ok()) return 3;
    std::vector<RemoteBatch> held;
    for (int i = 0; i < 3; ++i) {
      auto b = (*client)->next();
      if (!b.ok() || !*b) return 4;
      held.push_back(std::move(**b));
    }
    write_str(out, "holding 3\n");
    for (;;) ::pause();
  });
  // B: starts only when told, then consumes normally.
  Child b = Child::fork_run([&](int out, int go) {
    char ch;
    if (::read(go, &ch, 1) != 1) return 5;
    return consume_and_report(sock.path, out);
  });
  auto arena = make_arena();
  auto server = BatchServer::create(*arena, {.socket_path = sock.path, .window = 4});
  ASSERT_TRUE(server.ok()) << server.error().to_string();
  ASSERT_TRUE((*server)->wait_for_clients(1, 10s).ok());
  batch::Arena* ap = arena.get();
  auto send_one = [&](int step) {
    Produced p = produce(*arena, step);
    batch::Block block = p.layout.block;
    return (*server)->send(p.layout, [ap, block] { ap->release(block); });
  };
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(send_one(i).ok());
  EXPECT_EQ(a.read_line(), "holding 3");
  EXPECT_GT(arena->in_use(), 0u);
  ::kill(a.pid, SIGKILL);
  int status = a.wait();
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_TRUE(eventually([&] { return arena->in_use() == 0; }))
      << "the dead consumer's blocks were not reclaimed";
  ServerStats st = (*server)->stats();
  EXPECT_EQ(st.batches_reclaimed, 3);
  EXPECT_EQ(st.clients_lost, 1);
  EXPECT_EQ(st.outstanding, 0);

  b.release_go();
  for (int i = 3; i < 13; ++i) ASSERT_TRUE(send_one(i).ok());  // waits for B to connect
  ASSERT_TRUE((*server)->finish(10s).ok());
  std::string report = b.read_all();
  EXPECT_EQ(b.wait(), 0) << report;
  EXPECT_EQ(std::count(report.begin(), report.end(), '\n'), 11) << report;  // 10 batches + end
  EXPECT_EQ(report.substr(0, 2), "3 ") << report;
  EXPECT_EQ(arena->in_use(), 0u);
  EXPECT_EQ((*server)->stats().batches_released, 10);
}

TEST(HandoffTest, TwoConsumersShareTheStreamWithoutOverlap) {
  TempSocket sock;
  Child a = Child::fork_run([&](int out, int) { return consume_and_report(sock.path, out); });
  Child b = Child::fork_run([&](int out, int) { return consume_and_report(sock.path, out); });
  auto arena = make_arena();
  auto server = BatchServer::create(*arena, {.socket_path = sock.path, .window = 2});
  ASSERT_TRUE(server.ok()) << server.error().to_string();
  ASSERT_TRUE((*server)->wait_for_clients(2, 10s).ok());
  constexpr int kBatches = 40;
  std::vector<std::uint64_t> expected;
  batch::Arena* ap = arena.get();
  for (int i = 0; i < kBatches; ++i) {
    Produced p = produce(*arena, i);
    expected.push_back(p.hash);
    batch::Block block = p.layout.block;
    ASSERT_TRUE((*server)->send(p.layout, [ap, block] { ap->release(block); }).ok());
  }
  ASSERT_TRUE((*server)->finish(10s).ok());
  std::vector<int> seen(kBatches, 0);
  int per_child[2] = {0, 0};
  for (int c = 0; c < 2; ++c) {
    Child& child = c == 0 ? a : b;
    std::string report = child.read_all();
    EXPECT_EQ(child.wait(), 0) << report;
    std::istringstream in(report);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("end", 0) == 0) break;
      std::istringstream f(line);
      std::uint64_t step, hash;
      ASSERT_TRUE(f >> step >> hash) << line;
      ASSERT_LT(step, static_cast<std::uint64_t>(kBatches));
      EXPECT_EQ(hash, expected[step]) << "batch " << step;
      ++seen[step];
      ++per_child[c];
    }
  }
  for (int i = 0; i < kBatches; ++i) EXPECT_EQ(seen[i], 1) << "batch " << i;
  EXPECT_GT(per_child[0], 0);
  EXPECT_GT(per_child[1], 0);
  EXPECT_EQ(arena->in_use(), 0u);
}

// Issue 30 §8: `for b in Loader(connect=…)` keeps the previous batch alive (the loop variable)
// while next() waits. With window 1 that used to hang forever after batch 1; the client now says
// it waits, and the window counts the batch being replaced: one more is sent, no further.
TEST(HandoffTest, WindowCountsTheBatchBeingReplaced) {
  TempSocket sock;
  auto arena = make_arena(1 << 20);
  auto server = BatchServer::create(*arena, {.socket_path = sock.path, .window = 1});
  ASSERT_TRUE(server.ok());
  auto client = BatchClient::connect({.socket_path = sock.path});
  ASSERT_TRUE(client.ok()) << client.error().to_string();
  auto send_one = [&](int step) {
    auto block = arena->allocate(4096);
    batch::BatchLayout l{.block = *block,
                         .tensors = {{"x", batch::DType::kUInt8, {4096}, block->offset}},
                         .step = static_cast<std::uint64_t>(step)};
    return (*server)->send(l, [&, blk = *block] { arena->release(blk); });
  };
  std::atomic<int> sent{0};
  std::thread producer([&] {
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(send_one(i).ok());
      ++sent;
    }
  });
  auto held = (*client)->next();  // batch 0, kept (the loop variable)
  ASSERT_TRUE(held.ok() && *held);
  auto next = (*client)->next();  // waits with batch 0 held: batch 1 must still come
  ASSERT_TRUE(next.ok() && *next) << "next() with one batch held and window 1";
  EXPECT_EQ((*next)->layout().step, 1u);
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(sent, 2) << "two held and not waiting: the third send waits for a release";
  (*held)->release();  // the loop variable moves on
  auto third = (*client)->next();
  ASSERT_TRUE(third.ok() && *third);
  EXPECT_EQ((*third)->layout().step, 2u);
  producer.join();
  next->reset();
  third->reset();
  ASSERT_TRUE((*server)->finish(5s).ok());
}

TEST(HandoffTest, WindowMakesSendWaitForARelease) {
  TempSocket sock;
  auto arena = make_arena(1 << 20);
  auto server = BatchServer::create(*arena, {.socket_path = sock.path, .window = 1});
  ASSERT_TRUE(server.ok());
  auto client = BatchClient::connect({.socket_path = sock.path});
  ASSERT_TRUE(client.ok()) << client.error().to_string();
  std::atomic<int> released{0};
  auto send_one = [&](int step) {
    auto block = arena->allocate(4096);
    batch::BatchLayout l{.block = *block,
                         .tensors = {{"x", batch::DType::kUInt8, {4096}, block->offset}},
                         .step = static_cast<std::uint64_t>(step)};
    return (*server)->send(l, [&, blk = *block] {
      arena->release(blk);
      ++released;
    });
  };
  ASSERT_TRUE(send_one(0).ok());
  std::atomic<bool> second_sent{false};
  std::thread t([&] {
    EXPECT_TRUE(send_one(1).ok());
    second_sent = true;
  });
  auto first = (*client)->next();
  ASSERT_TRUE(first.ok() && *first);
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(second_sent) << "window 1: the second send must wait for the first release";
  (*first)->release();
  t.join();
  EXPECT_TRUE(eventually([&] { return released == 1; }));
  auto second = (*client)->next();
  ASSERT_TRUE(second.ok() && *second);
  EXPECT_EQ((*second)->layout().step, 1u);
  EXPECT_EQ((*second)->layout().find("x")->shape[0], 4096);
  second->reset();  // destructor releases
  ASSERT_TRUE((*server)->finish(5s).ok());
  EXPECT_EQ(released, 2);
  auto end = (*client)->next();
  ASSERT_TRUE(end.ok());
  EXPECT_FALSE(end->has_value());
}

TEST(HandoffTest, SendRejectsLayoutOutsideTheArenaAndReleasesIt) {
  TempSocket sock;
  auto arena = make_arena(1 << 20);
  auto server = BatchServer::create(*arena, {.socket_path = sock.path});
  ASSERT_TRUE(server.ok());
  bool released = false;
  batch::BatchLayout l{.block = {1 << 20, 4096}, .tensors = {}};
  Status s = (*server)->send(l, [&] { released = true; });
  EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_TRUE(released);
}

TEST(HandoffTest, NoConsumerWithinIdleTimeoutIsUnavailable) {
  TempSocket sock;
  auto arena = make_arena(1 << 20);
  auto server =
      BatchServer::create(*arena, {.socket_path = sock.path, .idle_timeout_ms = 100});
  ASSERT_TRUE(server.ok());
  bool released = false;
  auto start = std::chrono::steady_clock::now();
  Status s = (*server)->send({.block = {0, 4096}, .tensors = {}}, [&] { released = true; });
  EXPECT_EQ(s.error().code(), ErrorCode::kUnavailable);
  EXPECT_TRUE(released);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
}

TEST(SocketTest, DefaultPathIsPrivateAndUnlinkedOnExit) {
  auto path = default_socket_path("shm-test-" + std::to_string(::getpid()));
  ASSERT_TRUE(path.ok()) << path.error().to_string();
  struct stat st {};
  std::string dir = path->substr(0, path->rfind('/'));
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(st.st_uid, ::geteuid());
  auto arena = make_arena(1 << 20);
  {
    auto server = BatchServer::create(*arena, {.socket_path = *path});
    ASSERT_TRUE(server.ok()) << server.error().to_string();
    ASSERT_EQ(::lstat(path->c_str(), &st), 0);
    EXPECT_TRUE(S_ISSOCK(st.st_mode));
    EXPECT_EQ(st.st_mode & 0777, 0600u);
  }
  EXPECT_NE(::lstat(path->c_str(), &st), 0) << "socket not unlinked";
}

TEST(SocketTest, RefusesAFolderOthersCanEnter) {
  TempSocket sock;
  std::string open_dir = sock.dir + "/open";
  ASSERT_EQ(::mkdir(open_dir.c_str(), 0755), 0);
  ::chmod(open_dir.c_str(), 0755);
  EXPECT_EQ(ensure_private_dir(open_dir).error().code(), ErrorCode::kPermissionDenied);
  EXPECT_TRUE(ensure_private_dir(sock.dir + "/new").ok());
}

TEST(SocketTest, StaleSocketIsReplacedLiveOneIsNot) {
  TempSocket sock;
  // A crashed server leaves a socket file nobody listens on.
  {
    int fd = ::socket(AF_UNIX, SOCK_SEQPACKET, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, sock.path.c_str());
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ::close(fd);
  }
  auto arena = make_arena(1 << 20);
  auto first = BatchServer::create(*arena, {.socket_path = sock.path});
  ASSERT_TRUE(first.ok()) << first.error().to_string();
  auto second = BatchServer::create(*arena, {.socket_path = sock.path});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.error().code(), ErrorCode::kUnavailable) << second.error().to_string();
  // The failed second server must not have unlinked the live one's socket.
  auto client = BatchClient::connect({.socket_path = sock.path, .connect_timeout_ms = 1000});
  EXPECT_TRUE(client.ok());
  // A regular file at the path is never replaced.
  std::string file = sock.dir + "/file";
  std::fclose(std::fopen(file.c_str(), "w"));
  auto third = BatchServer::create(*arena, {.socket_path = file});
  EXPECT_EQ(third.error().code(), ErrorCode::kInvalidArgument);
}

TEST(SocketTest, ConnectWithoutServerIsNotFound) {
  TempSocket sock;
  auto client = BatchClient::connect({.socket_path = sock.path, .connect_timeout_ms = 50});
  ASSERT_FALSE(client.ok());
  EXPECT_EQ(client.error().code(), ErrorCode::kNotFound);
}

TEST(HandoffTest, RankedServerGivesEachRankItsOwnArenaAndStream) {
  TempSocket sock;
  auto attach = [](int rank, int world) {
    return ClientAttach{.rank = rank, .world_size = world, .has_state = false, .state = {}};
  };
  Child r0 = Child::fork_run([&](int out, int) { return consume_and_report(sock.path, out, attach(0, 2)); });
  Child r1 = Child::fork_run([&](int out, int) { return consume_and_report(sock.path, out, attach(1, 2)); });
  Child bad = Child::fork_run([&](int out, int) { return consume_and_report(sock.path, out, attach(0, 3)); });
  std::unique_ptr<batch::Arena> arenas[2] = {make_arena(), make_arena()};
  auto server = BatchServer::create(-1, 0, {.socket_path = sock.path, .window = 2, .ranked = true});
  ASSERT_TRUE(server.ok()) << server.error().to_string();
  EXPECT_FALSE((*server)->send(batch::BatchLayout{}, [] {}).ok()) << "ranked: send_to only";
  std::uint64_t client_of[2] = {0, 0};
  for (int i = 0; i < 3; ++i) {
    auto a = (*server)->next_attach(10s);
    ASSERT_TRUE(a.ok()) << a.error().to_string();
    if (a->world_size != 2) {
      (*server)->refuse(a->client, "world size 2, not " + std::to_string(a->world_size));
      continue;
    }
    client_of[a->rank] = a->client;
    const batch::Arena& arena = *arenas[a->rank];
    ASSERT_TRUE((*server)->accept_attach(a->client, arena.fd(), arena.capacity()).ok());
  }
  std::atomic<int> consumed{0}, reclaimed{0};
  std::vector<std::uint64_t> hashes[2];
  for (int r = 0; r < 2; ++r) {
    for (std::uint64_t step = 0; step < 5; ++step) {
      batch::Arena* ap = arenas[r].get();
      Produced p = produce(*ap, 100 * r + step);
      hashes[r].push_back(p.hash);
      batch::Block block = p.layout.block;
      ASSERT_TRUE((*server)->send_to(client_of[r], p.layout, [&, ap, block](bool c) {
        ap->release(block);
        ++(c ? consumed : reclaimed);
      }).ok());
    }
  }
  for (int r = 0; r < 2; ++r) EXPECT_TRUE((*server)->end_client(client_of[r]));
  Child* kids[2] = {&r0, &r1};
  for (int r = 0; r < 2; ++r) {
    std::istringstream in(kids[r]->read_all());
    EXPECT_EQ(kids[r]->wait(), 0);
    for (std::uint64_t step = 0; step < 5; ++step) {
      std::uint64_t got_step = 0, hash = 0;
      int inside = 0;
      std::string rest;
      ASSERT_TRUE(in >> got_step >> hash >> inside) << "rank " << r;
      std::getline(in, rest);
      EXPECT_EQ(got_step, 100 * r + step) << "rank " << r << " got another rank's batch";
      EXPECT_EQ(hash, hashes[r][step]);
      EXPECT_EQ(inside, 1) << "not read in place in its own arena mapping";
    }
  }
  std::string refused = bad.read_all();
  EXPECT_NE(bad.wait(), 0);
  EXPECT_NE(refused.find("world size 2, not 3"), std::string::npos) << refused;
  EXPECT_TRUE(eventually([&] { return consumed == 10; }));
  EXPECT_EQ(reclaimed, 0);
  EXPECT_EQ(arenas[0]->in_use() + arenas[1]->in_use(), 0u);
}

}  // namespace
}  // namespace stoker::shm
