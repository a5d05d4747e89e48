// The trust boundary (MediaScope) and the local store's hostile-input safety: each test builds
// the hostile thing for real (FIFO, socket, symlink loop, escaping symlink, sparse 2 GB file)
// in a temp folder and checks the exact error class — a property of the path fails that object,
// never hangs, never reads outside the roots, never allocates for an object over the cap.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "stoker/io/media_access.h"
#include "stoker/io/object_store.h"

namespace stoker::io {
namespace {

namespace fs = std::filesystem;

class Sandbox : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("stoker_media_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "set" / "img");
    fs::create_directories(root_ / "outside");
    write(root_ / "set" / "img" / "a.jpg", "inside");
    write(root_ / "outside" / "b.jpg", "outside");
  }
  void TearDown() override { fs::remove_all(root_); }

  static void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }
  std::string set() const { return (root_ / "set").string(); }
  std::string manifest() const { return (root_ / "set" / "m.jsonl").string(); }

  // A store allowed beneath the dataset folder only, as the engine builds it.
  std::unique_ptr<ObjectStore> restricted() const {
    return make_local_store({.restricted = true, .roots = {set()}}).value();
  }

  static ErrorCode code_of(ObjectStore& store, const std::string& path, ReadOptions o = {}) {
    Result<Bytes> r = read_sync(store, path, o);
    return r.ok() ? ErrorCode::kInternal : r.error().code();  // kInternal = "it was read"
  }

  fs::path root_;
};

TEST_F(Sandbox, LocalManifestReadsBeneathItsFolderOnly) {
  MediaScope scope = MediaScope::make(manifest(), {}).value();
  EXPECT_EQ(scope.resolve("img/a.jpg").value(), set() + "/img/a.jpg");
  EXPECT_EQ(scope.resolve("./img/../img/a.jpg").value(), set() + "/img/a.jpg");
  for (const char* ref : {"../outside/b.jpg", "../../../../etc/shadow", "/etc/shadow",
                          "file:///etc/shadow"}) {
    Result<std::string> r = scope.resolve(ref);
    ASSERT_FALSE(r.ok()) << ref;
    EXPECT_EQ(r.error().code(), ErrorCode::kPermissionDenied) << ref;
    EXPECT_NE(r.error().to_string().find("outside the manifest's folder"), std::string::npos)
        << r.error().to_string();
  }
  // A media root adds a folder; trust lifts the rule.
  MediaScope more = MediaScope::make(manifest(), {.media_roots = {(root_ / "outside").string()}}).value();
  EXPECT_TRUE(more.resolve("../outside/b.jpg").ok());
  EXPECT_FALSE(more.resolve("/etc/shadow").ok());
  MediaScope trusted = MediaScope::make(manifest(), {.trust_media_paths = true}).value();
  EXPECT_EQ(trusted.resolve("/etc/shadow").value(), "/etc/shadow");
  EXPECT_TRUE(trusted.roots().empty());
  // A media root that does not exist is a configuration error, not a silent no-op.
  EXPECT_EQ(MediaScope::make(manifest(), {.media_roots = {"/no/such/dir"}}).error().code(),
            ErrorCode::kInvalidArgument);
}

TEST_F(Sandbox, RemoteManifestNeverReadsLocalFiles) {
  MediaScope scope = MediaScope::make("s3://bkt/data/m.jsonl", {}).value();
  EXPECT_EQ(scope.resolve("img/a.jpg").value(), "s3://bkt/data/img/a.jpg");
  for (const char* ref : {"/etc/passwd", "file:///etc/passwd", "file://localhost/etc/passwd"}) {
    Result<std::string> r = scope.resolve(ref);
    ASSERT_FALSE(r.ok()) << ref;
    EXPECT_EQ(r.error().code(), ErrorCode::kPermissionDenied) << ref;
    EXPECT_NE(r.error().to_string().find("remote manifest never reads local files"),
              std::string::npos);
  }
  // Even with trust_media_paths: that option is about local manifests.
  MediaScope trusted = MediaScope::make("http://h/m.jsonl", {.trust_media_paths = true}).value();
  EXPECT_EQ(trusted.resolve("/etc/passwd").error().code(), ErrorCode::kPermissionDenied);
  EXPECT_EQ(trusted.resolve("x.png").value(), "http://h/x.png");
}

TEST_F(Sandbox, SignedS3OnlyInTheOwnAndAllowedBuckets) {
  MediaScope remote = MediaScope::make("s3://bkt/m.jsonl", {.allow_buckets = {"shared"}}).value();
  EXPECT_TRUE(remote.resolve("s3://bkt/x.jpg").ok());
  EXPECT_TRUE(remote.resolve("s3://shared/x.jpg").ok());
  Result<std::string> other = remote.resolve("s3://other/x.jpg");
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.error().code(), ErrorCode::kPermissionDenied);
  EXPECT_NE(other.error().to_string().find("--allow-bucket other"), std::string::npos);
  // A local manifest has no bucket of its own.
  MediaScope local = MediaScope::make(manifest(), {}).value();
  EXPECT_EQ(local.resolve("s3://bkt/x.jpg").error().code(), ErrorCode::kPermissionDenied);
  EXPECT_TRUE(MediaScope::make(manifest(), {.allow_buckets = {"*"}}).value().resolve("s3://any/x").ok());
  // HTTP media carry no credentials: allowed from any manifest.
  EXPECT_TRUE(local.resolve("http://127.0.0.1:9/x.jpg").ok());
}

TEST_F(Sandbox, SymlinksAndDotDotCannotLeaveTheRoot) {
  fs::create_symlink(root_ / "outside" / "b.jpg", root_ / "set" / "img" / "escape.jpg");
  fs::create_symlink(root_ / "outside", root_ / "set" / "dirlink");
  fs::create_symlink(root_ / "set" / "img" / "a.jpg", root_ / "set" / "inner.jpg");
  auto store = restricted();
  EXPECT_EQ(read_sync(*store, set() + "/img/a.jpg").value().size(), 6u);
  EXPECT_EQ(read_sync(*store, set() + "/inner.jpg").value().size(), 6u);  // stays inside: fine
  EXPECT_EQ(code_of(*store, set() + "/img/escape.jpg"), ErrorCode::kPermissionDenied);
  EXPECT_EQ(code_of(*store, set() + "/dirlink/b.jpg"), ErrorCode::kPermissionDenied);
  EXPECT_EQ(code_of(*store, (root_ / "outside" / "b.jpg").string()), ErrorCode::kPermissionDenied);
  EXPECT_EQ(code_of(*store, "/etc/passwd"), ErrorCode::kPermissionDenied);
  // The unrestricted store (tools) follows them.
  auto open = make_local_store().value();
  EXPECT_EQ(read_sync(*open, set() + "/img/escape.jpg").value().size(), 7u);
}

// A symlink in the dataset folder into another allowed folder (a media root) is followed; the
// store holds both roots, as the engine builds it.
TEST_F(Sandbox, SymlinkIntoAnotherMediaRootIsAllowed) {
  fs::create_symlink(root_ / "outside" / "b.jpg", root_ / "set" / "img" / "shared.jpg");
  auto both = make_local_store({.restricted = true,
                                .roots = {set(), (root_ / "outside").string()}}).value();
  EXPECT_EQ(read_sync(*both, set() + "/img/shared.jpg").value().size(), 7u);
  EXPECT_EQ(code_of(*restricted(), set() + "/img/shared.jpg"), ErrorCode::kPermissionDenied);
}

TEST_F(Sandbox, SpecialFilesFailAtOnceAsNotRegular) {
  ASSERT_EQ(::mkfifo((set() + "/fifo.jpg").c_str(), 0644), 0);
  int sock = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string sock_path = set() + "/sock.jpg";
  ASSERT_LT(sock_path.size(), sizeof addr.sun_path);
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", sock_path.c_str());
  ASSERT_EQ(::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  fs::create_directories(set() + "/dir.jpg");
  auto store = restricted();
  const auto t0 = std::chrono::steady_clock::now();
  for (const char* name : {"/fifo.jpg", "/sock.jpg", "/dir.jpg", ""}) {
    Result<Bytes> r = read_sync(*store, set() + name);
    ASSERT_FALSE(r.ok()) << name;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument) << r.error().to_string();
    EXPECT_NE(r.error().to_string().find("regular file"), std::string::npos) << r.error().to_string();
  }
  // A FIFO nobody writes to would block a plain open() forever.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(2));
  auto open = make_local_store().value();
  EXPECT_EQ(code_of(*open, "/dev/zero"), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of(*open, "/dev/null"), ErrorCode::kInvalidArgument);
  ::close(sock);
}

TEST_F(Sandbox, PathErrorsAreClassedPerObjectNotAsOutages) {
  fs::create_symlink(set() + "/loop1", set() + "/loop2");
  fs::create_symlink(set() + "/loop2", set() + "/loop1");
  auto store = restricted();
  EXPECT_EQ(code_of(*store, set() + "/loop1"), ErrorCode::kInvalidArgument);  // ELOOP
  EXPECT_EQ(code_of(*store, set() + "/" + std::string(300, 'x') + ".jpg"),
            ErrorCode::kInvalidArgument);  // ENAMETOOLONG
  EXPECT_EQ(code_of(*store, set() + "/missing.jpg"), ErrorCode::kNotFound);
  EXPECT_EQ(code_of(*store, set() + "/img/a.jpg/x.jpg"), ErrorCode::kNotFound);  // ENOTDIR
  auto open = make_local_store().value();
  EXPECT_EQ(code_of(*open, set() + "/loop1"), ErrorCode::kInvalidArgument);
  EXPECT_EQ(code_of(*open, set() + "/" + std::string(300, 'y')), ErrorCode::kInvalidArgument);
}

TEST_F(Sandbox, SizeCapCheckedBeforeReading) {
  const std::string big = set() + "/sparse.jpg";
  {
    int fd = ::open(big.c_str(), O_CREAT | O_WRONLY, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, std::int64_t{2} << 30), 0);  // 2 GiB, no blocks
    ::close(fd);
  }
  auto store = restricted();
  rusage before{};
  ::getrusage(RUSAGE_SELF, &before);
  Result<Bytes> r = read_sync(*store, big, {.max_bytes = std::int64_t{256} << 20});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(r.error().to_string().find("object cap"), std::string::npos);
  rusage after{};
  ::getrusage(RUSAGE_SELF, &after);
  EXPECT_LT(after.ru_maxrss - before.ru_maxrss, 64 * 1024);  // KiB: nothing near 2 GiB touched
  EXPECT_EQ(read_sync(*store, set() + "/img/a.jpg", {.max_bytes = 6}).value().size(), 6u);
  EXPECT_EQ(code_of(*store, set() + "/img/a.jpg", {.max_bytes = 5}), ErrorCode::kResourceExhausted);
}

TEST_F(Sandbox, IfMatchRefusesAReplacedFile) {
  auto store = make_local_store().value();
  const std::string path = set() + "/img/a.jpg";
  ObjectInfo info = head_sync(*store, path).value();
  EXPECT_TRUE(read_sync(*store, path, {.if_match = info.etag}).ok());
  write(path, "replaced, longer");
  EXPECT_EQ(code_of(*store, path, {.if_match = info.etag}), ErrorCode::kFailedPrecondition);
}

}  // namespace
}  // namespace stoker::io
