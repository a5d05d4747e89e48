#include "stoker/base/atomic_file.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace stoker {
namespace {
namespace fs = std::filesystem;

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("stoker-atomic-" + std::to_string(::getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string path(const std::string& name) const { return (root_ / name).string(); }
  static std::string slurp(const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  fs::path root_;
};

TEST_F(AtomicFileTest, WritesAndReplacesLeavingNoTemporary) {
  const std::string p = path("state");
  ASSERT_TRUE(write_file_atomic(p, "one\n").ok());
  EXPECT_EQ(slurp(p), "one\n");
  ASSERT_TRUE(write_file_atomic(p, "two, longer\n").ok());
  EXPECT_EQ(slurp(p), "two, longer\n");
  EXPECT_FALSE(fs::exists(p + ".tmp"));
  Result<std::string> back = read_small_file(p, 64);
  ASSERT_TRUE(back.ok()) << back.error().to_string();
  EXPECT_EQ(*back, "two, longer\n");
}

// A writer killed in the middle of a write (SIGKILL from the midway hook) leaves the old content
// in place and at most a partial temporary, which the next write replaces.
TEST_F(AtomicFileTest, AKillMidWriteLeavesTheOldContent) {
  const std::string p = path("state");
  ASSERT_TRUE(write_file_atomic(p, "complete old state\n").ok());
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    AtomicWriteOptions o;
    o.midway = [](void*) { ::kill(::getpid(), SIGKILL); };
    (void)write_file_atomic(p, std::string(4096, 'x'), o);
    ::_exit(0);  // not reached
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(slurp(p), "complete old state\n");
  EXPECT_EQ(fs::file_size(p + ".tmp"), 2048u);  // the half written before the kill
  ASSERT_TRUE(write_file_atomic(p, "new\n").ok());
  EXPECT_EQ(slurp(p), "new\n");
  EXPECT_FALSE(fs::exists(p + ".tmp"));
}

// A full disk (here RLIMIT_FSIZE: writes past 100 bytes fail with EFBIG) is an error naming the
// path and the step; the old content stays and no temporary is left.
TEST_F(AtomicFileTest, AFullDiskIsAnErrorAndKeepsTheOldContent) {
  const std::string p = path("state");
  ASSERT_TRUE(write_file_atomic(p, "old\n").ok());
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl {100, 100};
    ::setrlimit(RLIMIT_FSIZE, &rl);
    Status s = write_file_atomic(p, std::string(1000, 'y'));
    const bool good = !s.ok() && s.error().code() == ErrorCode::kResourceExhausted &&
                      s.error().message().find(p + ".tmp") != std::string::npos &&
                      s.error().message().find("writing") != std::string::npos;
    ::_exit(good ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(slurp(p), "old\n");
  EXPECT_FALSE(fs::exists(p + ".tmp"));
}

TEST_F(AtomicFileTest, WriteErrorsNameThePath) {
  Status s = write_file_atomic(path("no/such/folder/state"), "x");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(s.error().message().find("no/such/folder/state.tmp"), std::string::npos);
  // A FIFO planted at the temporary's name is neither opened for long nor written through.
  const std::string p = path("state");
  ASSERT_EQ(::mkfifo((p + ".tmp").c_str(), 0600), 0);
  s = write_file_atomic(p, "x");
  EXPECT_FALSE(s.ok());
}

TEST_F(AtomicFileTest, ReadRefusesWhatIsNotASmallRegularFile) {
  using Clock = std::chrono::steady_clock;
  const std::string fifo = path("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto t0 = Clock::now();
  Result<std::string> r = read_small_file(fifo, 1 << 16);  // no writer: must not block
  EXPECT_LT(Clock::now() - t0, std::chrono::seconds(1));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("FIFO"), std::string::npos);
  r = read_small_file("/dev/zero", 1 << 16);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("character device"), std::string::npos);
  r = read_small_file(root_.string(), 1 << 16);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("folder"), std::string::npos);
  const std::string big = path("big");
  { std::ofstream(big) << std::string(5000, 'z'); }
  r = read_small_file(big, 4096);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(r.error().message().find("5000 bytes"), std::string::npos);
  r = read_small_file(path("missing"), 4096);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kNotFound);
  r = read_small_file(big, 5000);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->size(), 5000u);
}

TEST_F(AtomicFileTest, ProbeNeitherTruncatesNorLeavesFiles) {
  const std::string existing = path("log");
  { std::ofstream(existing) << "keep me\n"; }
  EXPECT_TRUE(probe_writable(existing).ok());
  EXPECT_EQ(slurp(existing), "keep me\n");
  const std::string fresh = path("trace.json");
  EXPECT_TRUE(probe_writable(fresh).ok());
  EXPECT_FALSE(fs::exists(fresh));
  EXPECT_TRUE(probe_writable("/dev/null").ok());
  Status s = probe_writable(path("missing/dir/t.json"));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(s.error().message().find("missing/dir"), std::string::npos);
  EXPECT_FALSE(probe_writable(root_.string()).ok());  // a folder where a file is wanted
  const std::string fifo = path("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  s = probe_writable(fifo);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("FIFO"), std::string::npos);
  // Folders: an existing one, one to be created (its parent exists), one under a file.
  EXPECT_TRUE(probe_writable(root_.string(), true).ok());
  EXPECT_TRUE(probe_writable(path("report"), true).ok());
  EXPECT_FALSE(fs::exists(path("report")));
  EXPECT_FALSE(probe_writable(existing + "/report", true).ok());
  EXPECT_FALSE(probe_writable(existing, true).ok());
  EXPECT_EQ(std::distance(fs::directory_iterator(root_), fs::directory_iterator()), 2);
}

}  // namespace
}  // namespace stoker
