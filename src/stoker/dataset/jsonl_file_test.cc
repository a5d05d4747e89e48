// Compressed JSONL (files made by the gzip and zstd command-line tools and Python's gzip module)
// decompressed into the cache byte-identical to the original and indexed like any JSONL; damage
// and bombs refused at start with a reason; Energon's .jsonl.idx (written by a Python
// re-implementation of `energon prepare` for JSONL) giving the same records as ManifestIndex.
#include "stoker/dataset/jsonl_file.h"

#include <gtest/gtest.h>

#include "stoker/dataset/manifest.h"
#include "stoker/dataset/sources_test_util.h"

namespace stoker::dataset {
namespace {

using testing::TempDir;

const std::string kJsonl =
    "{\"id\": 1, \"text\": \"caf\xC3\xA9\"}\n\n{\"id\": 2}\r\n  \n{\"id\": 3, \"x\": [1, 2]}\n{\"id\": 4}";

class JsonlFileTest : public ::testing::Test {
 protected:
  DecompressOptions options() {
    DecompressOptions o;
    o.cache_dir = dir_ / "cache";
    return o;
  }
  void expect_same_as_original(const std::string& compressed) {
    SCOPED_TRACE(compressed);
    bool reused = true;
    auto out = decompress_jsonl_to_cache(compressed, options(), &reused);
    ASSERT_TRUE(out.ok()) << out.error().to_string();
    EXPECT_FALSE(reused);
    EXPECT_EQ(testing::read_all(*out), kJsonl);
    auto again = decompress_jsonl_to_cache(compressed, options(), &reused);
    ASSERT_TRUE(again.ok());
    EXPECT_TRUE(reused);
    EXPECT_EQ(*again, *out);
    auto index = ManifestIndex::open({*out});
    ASSERT_TRUE(index.ok()) << index.error().to_string();
    EXPECT_EQ((*index)->size(), 4u);
  }
  TempDir dir_;
};

TEST_F(JsonlFileTest, GzipAndZstdFromTheirOwnTools) {
  const std::string plain = dir_.write("d.jsonl", kJsonl);
  auto [rc1, o1] = testing::run("gzip -kn9 " + plain + " 2>&1");
  ASSERT_EQ(rc1, 0) << o1;
  expect_same_as_original(plain + ".gz");
  auto [rc2, o2] = testing::run("zstd -q -19 " + plain + " -o " + plain + ".zst 2>&1");
  if (rc2 == 0) expect_same_as_original(plain + ".zst");
  else GTEST_LOG_(INFO) << "no zstd tool: " << o2;
}

TEST_F(JsonlFileTest, MultiMemberGzipAndMultiFrameZstd) {
  // Two halves compressed separately and concatenated (pigz, split uploads, `cat a.gz b.gz`).
  const std::string a = dir_.write("a.jsonl", kJsonl.substr(0, 20)), b = dir_.write("b.jsonl", kJsonl.substr(20));
  ASSERT_EQ(testing::run("gzip -kn " + a + " " + b + " && cat " + a + ".gz " + b + ".gz > " + (dir_ / "m.jsonl.gz")).first, 0);
  expect_same_as_original(dir_ / "m.jsonl.gz");
  if (testing::run("zstd -q " + a + " -o " + a + ".zst && zstd -q " + b + " -o " + b + ".zst").first == 0) {
    ASSERT_EQ(testing::run("cat " + a + ".zst " + b + ".zst > " + (dir_ / "m.jsonl.zst")).first, 0);
    expect_same_as_original(dir_ / "m.jsonl.zst");
  }
}

TEST_F(JsonlFileTest, DamageIsRefusedAndLeavesNoFile) {
  if (!testing::have_python()) GTEST_SKIP();
  std::string big;
  for (int i = 0; i < 5000; ++i) big += "{\"id\": " + std::to_string(i * 7919 % 100003) + ", \"pad\": \"" + std::to_string(i * i) + "\"}\n";
  testing::python(dir_, R"PY(
import gzip, sys
data = open(sys.argv[1], "rb").read()
gz = gzip.compress(data, mtime=0)
open(sys.argv[1] + ".gz", "wb").write(gz)
bad = bytearray(gz); bad[len(bad) // 2] ^= 0xff
open(sys.argv[1] + ".corrupt.gz", "wb").write(bytes(bad))
open(sys.argv[1] + ".cut.gz", "wb").write(gz[: len(gz) * 2 // 3])
open(sys.argv[1] + ".fake.gz", "wb").write(b"not gzip at all")
open(sys.argv[1] + ".bomb.gz", "wb").write(gzip.compress(b"a" * (8 << 20)))
open(sys.argv[1] + ".lines.gz", "wb").write(gzip.compress(b"{}\n" * 100000))
)PY", dir_.write("big.jsonl", big));
  const std::string base = dir_ / "big.jsonl";
  ASSERT_TRUE(decompress_jsonl_to_cache(base + ".gz", options()).ok());
  struct Case {
    std::string file;
    ErrorCode code;
    std::string want;
    DecompressOptions opt;
  };
  DecompressOptions small = options();
  small.max_record_bytes = 1 << 20;
  DecompressOptions few = options();
  few.max_records = 1000;
  DecompressOptions capped = options();
  capped.max_output_bytes = 100000;
  for (const Case& c : {Case{".corrupt.gz", ErrorCode::kDataLoss, "corrupt gzip data near compressed byte", options()},
                        Case{".cut.gz", ErrorCode::kDataLoss, "truncated gzip data", options()},
                        Case{".fake.gz", ErrorCode::kInvalidArgument, "not gzip data (wrong magic bytes)", options()},
                        Case{".bomb.gz", ErrorCode::kResourceExhausted, "line 1 is longer than the 1048576-byte record cap", small},
                        Case{".lines.gz", ErrorCode::kResourceExhausted, "more than 1000 lines", few},
                        Case{".lines.gz", ErrorCode::kResourceExhausted, "decompresses to more than 100000 bytes", capped}}) {
    auto r = decompress_jsonl_to_cache(base + c.file, c.opt);
    ASSERT_FALSE(r.ok()) << c.file;
    EXPECT_EQ(r.error().code(), c.code) << r.error().to_string();
    EXPECT_NE(r.error().message().find(c.want), std::string::npos) << r.error().to_string();
    EXPECT_NE(r.error().message().find("big.jsonl" + c.file), std::string::npos) << r.error().to_string();
  }
  int files = 0;
  for ([[maybe_unused]] auto& e : std::filesystem::directory_iterator(dir_ / "cache")) ++files;
  EXPECT_EQ(files, 1);  // only the good one; no temporary left behind
}

TEST_F(JsonlFileTest, EnergonJsonlIndexGivesTheManifestRecords) {
  if (!testing::have_python()) GTEST_SKIP();
  const std::string body = "\n\n" + kJsonl + "\n\n";  // leading and trailing blank lines
  const std::string path = dir_.write("e.jsonl", body);
  // energon prepare for a JSONL file (flavors/jsonl/jsonl_prepare.py), re-implemented.
  testing::python(dir_, R"PY(
import struct, sys
path = sys.argv[1]
offsets, last = [], 0
with open(path, "rb") as f:
    while True:
        line = f.readline()
        if not line:
            break
        if not line.strip():
            if last:
                last = f.tell()
            continue
        offsets.append(last)
        last = f.tell()
    offsets.append(last)
open(path[:-6] + ".jsonl.idx", "wb").write(b"".join(struct.pack("<Q", o) for o in offsets))
)PY", path);
  EXPECT_EQ(jsonl_index_path(path), dir_ / "e.jsonl.idx");
  const std::string idx = testing::read_all(jsonl_index_path(path));
  auto offsets = decode_jsonl_index(testing::bytes_of(idx), body.size(), "e.jsonl.idx");
  ASSERT_TRUE(offsets.ok()) << offsets.error().to_string();
  auto index = ManifestIndex::open({path});
  ASSERT_TRUE(index.ok());
  ASSERT_EQ(offsets->size() - 1, (*index)->size());
  for (std::size_t i = 0; i + 1 < offsets->size(); ++i) {
    const std::string_view range(body.data() + (*offsets)[i], (*offsets)[i + 1] - (*offsets)[i]);
    EXPECT_EQ(std::string(trim_jsonl_record(range)), *(*index)->read_record(i)) << i;
  }
  // stale (the file grew), malformed
  EXPECT_NE(decode_jsonl_index(testing::bytes_of(idx), body.size() + 10, "e.jsonl.idx").error().message().find("stale index"),
            std::string::npos);
  EXPECT_FALSE(decode_jsonl_index(testing::bytes_of(idx.substr(0, 12)), body.size(), "x").ok());
  std::string swapped = idx;
  std::swap_ranges(swapped.begin(), swapped.begin() + 8, swapped.begin() + 8);
  EXPECT_FALSE(decode_jsonl_index(testing::bytes_of(swapped), body.size(), "x").ok());
}

TEST(JsonlCompressionTest, BySuffix) {
  EXPECT_EQ(compression_of("a.jsonl.gz"), Compression::kGzip);
  EXPECT_EQ(compression_of("s3://b/a.jsonl.zst"), Compression::kZstd);
  EXPECT_EQ(compression_of("a.jsonl"), Compression::kNone);
}

}  // namespace
}  // namespace stoker::dataset
