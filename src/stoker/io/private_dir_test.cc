#include "stoker/io/private_dir.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace stoker::io {
namespace {

namespace fs = std::filesystem;

std::string temp_dir(const char* name) {
  fs::path d = fs::temp_directory_path() /
               (std::string("stoker-private-dir-") + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

mode_t mode_of(const std::string& p) {
  struct stat st {};
  ::lstat(p.c_str(), &st);
  return st.st_mode & 07777;
}

class EnvGuard {
 public:
  explicit EnvGuard(std::initializer_list<const char*> names) {
    for (const char* n : names) {
      const char* v = std::getenv(n);
      saved_.emplace_back(n, v ? std::optional<std::string>(v) : std::nullopt);
      ::unsetenv(n);
    }
  }
  ~EnvGuard() {
    for (auto& [n, v] : saved_) {
      if (v) ::setenv(n.c_str(), v->c_str(), 1); else ::unsetenv(n.c_str());
    }
  }
 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST(PrivateDirTest, CacheDirIsPerUserEvenWithoutHome) {
  EnvGuard g({"STOKER_CACHE_DIR", "XDG_CACHE_HOME", "HOME", "TMPDIR"});
  const std::string uid = std::to_string(::geteuid());
  EXPECT_EQ(user_cache_dir(), "/tmp/stoker-cache-" + uid);
  ::setenv("TMPDIR", "/scratch", 1);
  EXPECT_EQ(user_cache_dir(), "/scratch/stoker-cache-" + uid);
  ::setenv("HOME", "/home/u", 1);
  EXPECT_EQ(user_cache_dir(), "/home/u/.cache/stoker");
  ::setenv("XDG_CACHE_HOME", "/c", 1);
  EXPECT_EQ(user_cache_dir(), "/c/stoker");
  // $STOKER_CACHE_DIR is the cache_dir option's fallback, read by the option schema
  // (config/options_test.cc), never here.
  ::setenv("STOKER_CACHE_DIR", "/x/y", 1);
  EXPECT_EQ(user_cache_dir(), "/c/stoker");
}

TEST(PrivateDirTest, CreatesTheFolder0700AndNarrowsAReadableOne) {
  const std::string d = temp_dir("create");
  Result<PrivateDir> a = PrivateDir::open(d + "/p/q/cache");
  ASSERT_TRUE(a.ok()) << a.error().to_string();
  EXPECT_EQ(mode_of(d + "/p/q/cache"), 0700u);
  ::chmod((d + "/p/q/cache").c_str(), 0755);  // as an older stoker made ~/.cache/stoker
  ASSERT_TRUE(PrivateDir::open(d + "/p/q/cache").ok());
  EXPECT_EQ(mode_of(d + "/p/q/cache"), 0700u);
  fs::remove_all(d);
}

TEST(PrivateDirTest, RefusesAFolderOthersCanWriteOrOwn) {
  const std::string d = temp_dir("refuse");
  fs::create_directories(d + "/open");
  ::chmod((d + "/open").c_str(), 0777);
  Result<PrivateDir> open = PrivateDir::open(d + "/open");
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.error().code(), ErrorCode::kPermissionDenied);
  EXPECT_NE(open.error().to_string().find("0777"), std::string::npos) << open.error().to_string();
  // A symlink to a folder of ours: never followed.
  fs::create_directories(d + "/real");
  ::chmod((d + "/real").c_str(), 0700);
  fs::create_directory_symlink(d + "/real", d + "/link");
  Result<PrivateDir> link = PrivateDir::open(d + "/link");
  ASSERT_FALSE(link.ok());
  EXPECT_NE(link.error().to_string().find("symlink"), std::string::npos) << link.error().to_string();
  if (::geteuid() == 0) {  // another owner (only root can chown)
    fs::create_directories(d + "/theirs");
    ::chmod((d + "/theirs").c_str(), 0700);
    ASSERT_EQ(::chown((d + "/theirs").c_str(), 65534, 65534), 0);
    Result<PrivateDir> theirs = PrivateDir::open(d + "/theirs");
    ASSERT_FALSE(theirs.ok());
    EXPECT_NE(theirs.error().to_string().find("uid 65534"), std::string::npos)
        << theirs.error().to_string();
    EXPECT_NE(theirs.error().to_string().find("uid 0"), std::string::npos);
  }
  fs::remove_all(d);
}

TEST(PrivateDirTest, FilesAreRegularOwnAndNotFollowed) {
  const std::string d = temp_dir("files");
  Result<PrivateDir> dir = PrivateDir::open(d + "/c");
  ASSERT_TRUE(dir.ok());
  ASSERT_TRUE(dir->write_atomic("a", "hello").ok());
  EXPECT_EQ(*dir->read_small("a", 100), "hello");
  EXPECT_EQ(mode_of(d + "/c/a"), 0600u);
  std::ofstream(d + "/victim") << "precious";
  fs::create_symlink(d + "/victim", d + "/c/b");
  Result<int> b = dir->open_file("b");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().code(), ErrorCode::kPermissionDenied);
  // Writing over a name held by a symlink replaces the link, never writes through it.
  ASSERT_TRUE(dir->write_atomic("b", "new").ok());
  EXPECT_EQ(*dir->read_small("b", 100), "new");
  std::ifstream in(d + "/victim");
  std::string v((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(v, "precious");
  fs::create_hard_link(d + "/c/a", d + "/c/a2");
  EXPECT_FALSE(dir->open_file("a").ok());  // two links: could be another user's file
  EXPECT_EQ(dir->open_file("missing").error().code(), ErrorCode::kNotFound);
  EXPECT_FALSE(dir->open_file("../victim").ok());
  EXPECT_TRUE(dir->verify().ok());
  fs::rename(d + "/c", d + "/moved");
  fs::create_directories(d + "/c");
  EXPECT_FALSE(dir->verify().ok());  // the name now means another folder
  fs::remove_all(d);
}

}  // namespace
}  // namespace stoker::io
