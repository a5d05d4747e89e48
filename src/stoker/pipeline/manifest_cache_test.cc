#include "stoker/pipeline/manifest_cache.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include "stoker/base/sha256.h"

namespace stoker::pipeline {
namespace {

namespace fs = std::filesystem;

std::string temp_dir(const char* name) {
  fs::path d = fs::temp_directory_path() /
               (std::string("stoker-manifest-cache-") + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The copy is reused only when its bytes hash to the digest recorded at download: a copy of the
// right size with other bytes (planted, damaged) is downloaded again, never used.
TEST(ManifestCacheTest, ACopyOfTheRightSizeWithOtherBytesIsNotUsed) {
  const std::string dir = temp_dir("digest");
  const std::string src = dir + "/data.jsonl";
  const std::string good = "{\"id\":1}\n{\"id\":2}\n";
  std::ofstream(src) << good;
  auto store = io::make_local_store().value();
  Result<std::string> first = cache_remote_manifest(*store, src, dir + "/cache");
  ASSERT_TRUE(first.ok()) << first.error().to_string();
  EXPECT_EQ(slurp(*first + ".sha256").substr(0, 71), "sha256 " + sha256_hex(good));
  std::string forged = "{\"id\":6}\n{\"id\":6}\n";
  ASSERT_EQ(forged.size(), good.size());
  std::ofstream(*first, std::ios::binary | std::ios::trunc) << forged;
  Result<std::string> again = cache_remote_manifest(*store, src, dir + "/cache");
  ASSERT_TRUE(again.ok()) << again.error().to_string();
  EXPECT_EQ(slurp(*again), good);
  // No sidecar: not a verified copy either.
  fs::remove(*again + ".sha256");
  std::ofstream(*again, std::ios::binary | std::ios::trunc) << forged;
  EXPECT_EQ(slurp(*cache_remote_manifest(*store, src, dir + "/cache")), good);
  fs::remove_all(dir);
}

// The copy goes through a fresh temporary name: a symlink planted at the final name is replaced,
// its target untouched.
TEST(ManifestCacheTest, APlantedSymlinkIsReplacedNotWrittenThrough) {
  const std::string dir = temp_dir("symlink");
  const std::string src = dir + "/data.jsonl";
  std::ofstream(src) << "{\"id\":1}\n";
  std::ofstream(dir + "/victim") << "precious";
  auto store = io::make_local_store().value();
  Result<std::string> first = cache_remote_manifest(*store, src, dir + "/cache");
  ASSERT_TRUE(first.ok());
  fs::remove(*first);
  fs::remove(*first + ".sha256");
  fs::create_symlink(dir + "/victim", *first);
  fs::create_symlink(dir + "/victim", *first + ".sha256");
  Result<std::string> again = cache_remote_manifest(*store, src, dir + "/cache");
  ASSERT_TRUE(again.ok()) << again.error().to_string();
  EXPECT_EQ(slurp(dir + "/victim"), "precious");
  EXPECT_FALSE(fs::is_symlink(*again));
  EXPECT_EQ(slurp(*again), "{\"id\":1}\n");
  fs::remove_all(dir);
}

TEST(ManifestCacheTest, AManifestOverTheCapIsRefusedBeforeAByteIsWritten) {
  const std::string dir = temp_dir("cap");
  const std::string src = dir + "/data.jsonl";
  std::ofstream(src) << std::string(1000, 'x') << "\n";
  auto store = io::make_local_store().value();
  Result<std::string> r = cache_remote_manifest(*store, src, dir + "/cache", {.max_bytes = 1000});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(r.error().to_string().find("1001 bytes, over the manifest cap of 1000"),
            std::string::npos) << r.error().to_string();
  EXPECT_FALSE(fs::exists(dir + "/cache"));  // refused before the cache is even opened
  EXPECT_TRUE(cache_remote_manifest(*store, src, dir + "/cache", {.max_bytes = 1001}).ok());
  fs::remove_all(dir);
}

TEST(ManifestCacheTest, AForeignCacheFolderIsRefused) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to chown";
  const std::string dir = temp_dir("foreign");
  const std::string src = dir + "/data.jsonl";
  std::ofstream(src) << "{\"id\":1}\n";
  fs::create_directories(dir + "/cache");
  ASSERT_EQ(::chown((dir + "/cache").c_str(), 65534, 65534), 0);
  auto store = io::make_local_store().value();
  Result<std::string> r = cache_remote_manifest(*store, src, dir + "/cache");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kPermissionDenied);
  EXPECT_NE(r.error().to_string().find("belongs to uid 65534"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace stoker::pipeline
