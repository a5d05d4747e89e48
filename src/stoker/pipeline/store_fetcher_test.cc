#include "stoker/pipeline/store_fetcher.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace stoker::pipeline {
namespace {

namespace fs = std::filesystem;

std::string temp_dir(const char* name) {
  fs::path d = fs::temp_directory_path() /
               (std::string("stoker-store-fetcher-") + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(ByteBudgetTest, LeaseResizeChargesAndReturnsWithoutWaiting) {
  ByteBudget budget(100);
  {
    ByteBudget::Lease a = budget.acquire(60).value();
    a.resize(150);  // over the limit: charged anyway, never blocks
    EXPECT_EQ(budget.in_flight(), 150);
    EXPECT_EQ(budget.peak(), 150);
    a.resize(10);
    EXPECT_EQ(budget.in_flight(), 10);
  }
  EXPECT_EQ(budget.in_flight(), 0);
}

// One fetcher for every scheme, with the object cap on every read.
TEST(StoreFetcherTest, OneFetcherRoutesBySchemeAndCapsObjects) {
  const std::string dir = temp_dir("route");
  std::ofstream(dir + "/a.bin") << std::string(1000, 'a');
  std::shared_ptr<io::ObjectStore> store = io::open_store({}).value();
  auto fetcher = make_store_fetcher(store, /*max_object_bytes=*/1000);
  auto code = [&](const std::string& uri) {
    Result<std::vector<std::uint8_t>> r = fetcher->fetch(uri);
    return r.ok() ? "ok " + std::to_string(r->size()) : std::string(error_code_name(r.error().code()));
  };
  EXPECT_EQ(code(dir + "/a.bin"), "ok 1000");
  EXPECT_EQ(code("file://" + dir + "/a.bin"), "ok 1000");
  EXPECT_EQ(code(dir + "/missing.bin"), "NotFound");
  EXPECT_EQ(code("gs://bucket/a.bin"), "InvalidArgument");
  std::ofstream(dir + "/a.bin", std::ios::app) << "x";  // 1001 bytes
  EXPECT_EQ(code(dir + "/a.bin"), "ResourceExhausted");
  fs::remove_all(dir);
}

// A sample takes one lease for all its images: more images than the budget holds is granted
// alone (it used to wait forever on its own leases: 257 images × 1 MiB in a 256 MiB budget).
TEST(StoreFetcherTest, ASampleWithMoreImagesThanTheBudgetIsNotStuck) {
  ByteBudget budget(std::int64_t{256} << 20);
  Result<SampleLease> big = SampleLease::acquire(budget, 300, {});
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(budget.in_flight(), 300 * kMediaSizeEstimate);
  for (int i = 0; i < 300; ++i) big->arrived(1000);  // estimates become sizes
  EXPECT_EQ(budget.in_flight(), 300 * 1000);
  big->reset();
  EXPECT_EQ(budget.in_flight(), 0);
}

// The manifest cache through the local store (same head + stream path as S3): reused while the
// object's ETag and size hold, fetched again when they change.
TEST(StoreFetcherTest, ManifestCacheFollowsTheEtag) {
  const std::string dir = temp_dir("cache");
  const std::string src = dir + "/data.jsonl";
  std::ofstream(src) << "{\"a\":1}\n{\"a\":2}\n";
  auto store = io::make_local_store().value();
  Result<std::string> first = cache_remote_manifest(*store, src, dir + "/cache");
  ASSERT_TRUE(first.ok()) << first.error().to_string();
  EXPECT_EQ(slurp(*first), slurp(src));
  Result<std::string> again = cache_remote_manifest(*store, src, dir + "/cache");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *first);
  std::ofstream(src, std::ios::app) << "{\"a\":3}\n";
  Result<std::string> changed = cache_remote_manifest(*store, src, dir + "/cache");
  ASSERT_TRUE(changed.ok());
  EXPECT_NE(*changed, *first);
  EXPECT_EQ(slurp(*changed), slurp(src));
  fs::remove_all(dir);
}

TEST(StoreFetcherTest, MissingManifestIsNotFound) {
  const std::string dir = temp_dir("missing");
  auto store = io::make_local_store().value();
  Result<std::string> r = cache_remote_manifest(*store, dir + "/nope.jsonl", dir + "/cache");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kNotFound);
  fs::remove_all(dir);
}

TEST(StoreFetcherTest, CacheDirFollowsTheEnvironment) {
  // $STOKER_CACHE_DIR is the cache_dir option's fallback, read by the option schema
  // (config/options_test.cc), never here.
  ::setenv("STOKER_CACHE_DIR", "/x/y", 1);
  ::setenv("XDG_CACHE_HOME", "/c", 1);
  EXPECT_EQ(default_cache_dir(), "/c/stoker");
  ::unsetenv("XDG_CACHE_HOME");
  ::unsetenv("STOKER_CACHE_DIR");
}

}  // namespace
}  // namespace stoker::pipeline
