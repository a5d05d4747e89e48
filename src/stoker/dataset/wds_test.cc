// The tar reader and shard layer on hand-built and damaged archives: every hostile kind fails its
// sample (or the rest of the shard) with a reason naming shard, sample and member; good samples
// stay readable; index files are checked, cached and refused as documented.
#include <gtest/gtest.h>

#include <cstring>

#include "stoker/dataset/sources_test_util.h"
#include "stoker/dataset/wds.h"

namespace stoker::dataset {
namespace {

using testing::bytes_of;
using testing::make_tar;
using testing::TempDir;

std::shared_ptr<WdsShard> scan(const std::string& tar, const ShardOptions& o = {}) {
  auto s = WdsShard::from_scan(make_memory_source("shard.tar", bytes_of(tar)), o);
  EXPECT_TRUE(s.ok()) << s.error().to_string();
  return s.ok() ? *s : nullptr;
}

std::string message(const Result<WdsSample>& r) { return r.ok() ? std::string("ok") : r.error().to_string(); }

TEST(TarNumberTest, OctalBase256AndJunk) {
  auto n = [](std::string s) { return parse_tar_number(std::span(reinterpret_cast<const std::uint8_t*>(s.data()), s.size())); };
  EXPECT_EQ(n(std::string("00000001750\0", 12)), 1000);
  EXPECT_EQ(n(std::string("  1750 \0    ", 12)), 1000);
  EXPECT_EQ(n(std::string(12, '\0')), 0);
  EXPECT_FALSE(n("0000000175x\0").has_value());
  EXPECT_FALSE(n("00000001759\0").has_value());
  std::string b256(12, '\0');
  b256[0] = '\x80';
  b256[7] = '\x02';  // 2 << 32
  EXPECT_EQ(n(b256), std::int64_t{2} << 32);
  b256[0] = '\xff';
  EXPECT_FALSE(n(b256).has_value());  // negative
}

TEST(WdsTest, GroupsAdjacentMembersIntoSamples) {
  auto shard = scan(make_tar({{"a.jpg", "A"}, {"a.json", "{}"}, {"b.jpg", "B"}, {"c.txt", "C"}}));
  ASSERT_EQ(shard->count(), 3);
  EXPECT_TRUE(shard->cacheable());
  auto a = shard->read(0);
  ASSERT_TRUE(a.ok()) << a.error().to_string();
  EXPECT_EQ(a->key, "a");
  ASSERT_EQ(a->parts.size(), 2u);
  EXPECT_EQ(a->parts[1].name, "json");
  EXPECT_EQ(std::string(a->data(a->parts[1])->begin(), a->data(a->parts[1])->end()), "{}");
  EXPECT_EQ(shard->offsets(), (std::vector<std::uint64_t>{0, 2048, 3072, 4096}));
}

TEST(WdsTest, LargeSamplesAreWalkedAndReadOnDemand) {
  ShardOptions o;
  o.whole_sample_bytes = 1024;  // force the header walk
  auto shard = scan(make_tar({{"a.bin", std::string(5000, 'z')}, {"a.txt", "t"}}), o);
  auto a = shard->read(0);
  ASSERT_TRUE(a.ok());
  EXPECT_FALSE(a->data(a->parts[0]).has_value());
  auto bytes = shard->read_part(*a, a->parts[0]);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(bytes->size(), 5000u);
}

TEST(WdsTest, KeySplitAcrossNonAdjacentMembersFailsBothHalves) {
  auto shard = scan(make_tar({{"a.jpg", "A"}, {"b.jpg", "B"}, {"a.json", "{}"}, {"c.jpg", "C"}}));
  ASSERT_EQ(shard->count(), 4);
  EXPECT_FALSE(shard->cacheable());
  for (int i : {0, 2}) {
    const std::string m = message(shard->read(i));
    EXPECT_NE(m.find("shard.tar: sample " + std::to_string(i) + " (key 'a')"), std::string::npos) << m;
    EXPECT_NE(m.find("member 'a.json'"), std::string::npos) << m;
    EXPECT_NE(m.find("adjacent"), std::string::npos) << m;
  }
  EXPECT_TRUE(shard->read(1).ok());
  EXPECT_TRUE(shard->read(3).ok());
}

TEST(WdsTest, SameKeyTwiceFailsEveryOccurrence) {
  auto shard = scan(make_tar({{"k.jpg", "1"}, {"k.json", "{}"}, {"x.jpg", "x"}, {"k.jpg", "2"},
                              {"k.json", "{}"}, {"y.jpg", "y"}, {"k.txt", "3"}}));
  ASSERT_EQ(shard->count(), 5);
  for (int i : {0, 2, 4}) EXPECT_FALSE(shard->read(i).ok()) << i;
  for (int i : {1, 3}) EXPECT_TRUE(shard->read(i).ok()) << i;
}

TEST(WdsTest, DuplicatePartInOneSampleFails) {
  auto shard = scan(make_tar({{"a.jpg", "1"}, {"a.jpg", "2"}, {"b.jpg", "3"}}));
  ASSERT_EQ(shard->count(), 2);
  const std::string m = message(shard->read(0));
  EXPECT_NE(m.find("two members named 'a.jpg'"), std::string::npos) << m;
  EXPECT_TRUE(shard->read(1).ok());
}

TEST(WdsTest, MemberOverTheCapFailsItsSampleOnly) {
  ShardOptions o;
  o.limits.max_member_bytes = 1000;
  auto shard = scan(make_tar({{"a.jpg", "small"}, {"b.mp4", std::string(4000, 'v')}, {"c.jpg", "ok"}}), o);
  ASSERT_EQ(shard->count(), 3);
  auto b = shard->read(1);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().code(), ErrorCode::kResourceExhausted);
  EXPECT_NE(b.error().message().find("member 'b.mp4' is 4000 bytes, over the cap of 1000"), std::string::npos)
      << b.error().to_string();
  EXPECT_TRUE(shard->read(0).ok());
  EXPECT_TRUE(shard->read(2).ok());
  // The same cap holds when the index comes from elsewhere (no scan to flag it).
  auto indexed = WdsShard::from_index(make_memory_source("shard.tar", bytes_of(make_tar({{"b.mp4", std::string(4000, 'v')}}))),
                                      encode_tar_index(std::vector<std::uint64_t>{0, 4608}), o);
  ASSERT_TRUE(indexed.ok()) << indexed.error().to_string();
  EXPECT_EQ((*indexed)->read(0).error().code(), ErrorCode::kResourceExhausted);
}

TEST(WdsTest, CorruptHeaderChecksumKeepsEarlierSamples) {
  std::string tar = make_tar({{"a.jpg", "A"}, {"a.txt", "t"}, {"b.jpg", "B"}, {"c.jpg", "C"}});
  tar[2048 + 10] ^= 0x20;  // b.jpg's header
  auto shard = scan(tar);
  ASSERT_TRUE(shard->damage().has_value());
  EXPECT_NE(shard->damage()->message().find("header at byte 2048: bad header checksum"), std::string::npos)
      << shard->damage()->to_string();
  ASSERT_EQ(shard->count(), 1);  // 'a' was in progress when the damaged header came: it may be incomplete
  const std::string m = message(shard->read(0));
  EXPECT_NE(m.find("sample 0 (key 'a'): the shard is damaged"), std::string::npos) << m;
  EXPECT_FALSE(shard->cacheable());
}

TEST(WdsTest, DamageAfterACompleteSampleKeepsIt) {
  std::string tar = make_tar({{"a.jpg", "A"}, {"b.jpg", "B"}, {"c.jpg", "C"}});
  tar[2048 + 10] ^= 0x20;  // c.jpg's header: a is complete, b is in progress
  auto shard = scan(tar);
  ASSERT_EQ(shard->count(), 2);
  EXPECT_TRUE(shard->read(0).ok());
  EXPECT_FALSE(shard->read(1).ok());
}

TEST(WdsTest, TruncatedArchives) {
  // a.jpg [0, 1024), b.jpg [1024, 4608) (3000 bytes), c.jpg [4608, 5632), end blocks.
  const std::string full = make_tar({{"a.jpg", "A"}, {"b.jpg", std::string(3000, 'b')}, {"c.jpg", "C"}});
  {  // cut inside b's data: b's header names it, so a is complete and kept, and b — cut
     // off — is counted and fails naming its member (it never vanishes from the plan)
    auto shard = scan(full.substr(0, 1636));
    ASSERT_TRUE(shard->damage().has_value());
    EXPECT_NE(shard->damage()->message().find("member 'b.jpg' claims 3000 bytes"), std::string::npos)
        << shard->damage()->to_string();
    ASSERT_EQ(shard->count(), 2);
    EXPECT_TRUE(shard->read(0).ok());
    const std::string m = message(shard->read(1));
    EXPECT_NE(m.find("shard.tar: sample 1 (key 'b'): member 'b.jpg'"), std::string::npos) << m;
    EXPECT_NE(m.find("truncated"), std::string::npos) << m;
  }
  {  // cut inside c's header: b may have had more members, so it fails; a is kept
    auto shard = scan(full.substr(0, 4808));
    ASSERT_TRUE(shard->damage().has_value());
    EXPECT_NE(shard->damage()->message().find("header at byte 4608: truncated header"), std::string::npos)
        << shard->damage()->to_string();
    ASSERT_EQ(shard->count(), 2);
    EXPECT_TRUE(shard->read(0).ok());
    const std::string m = message(shard->read(1));
    EXPECT_NE(m.find("shard.tar: sample 1 (key 'b'): the shard is damaged before its end"), std::string::npos) << m;
  }
  {  // cut right after c's data (no end blocks): tarfile accepts this, so do we
    auto shard = scan(full.substr(0, 5632));
    EXPECT_FALSE(shard->damage().has_value());
    ASSERT_EQ(shard->count(), 3);
    EXPECT_TRUE(shard->read(2).ok());
  }
}

// Fuzz finding (tar target): the last member's data complete but its block padding cut off made
// the index end past the shard. Like tarfile ("unexpected end of data"), that member is truncated.
TEST(WdsTest, LastMemberWithoutItsPaddingIsTruncated) {
  const std::string full = make_tar({{"a.jpg", "A"}, {"b.jpg", "BB"}});
  auto shard = scan(full.substr(0, 1024 + 512 + 2));  // b's header and its 2 bytes, no padding
  ASSERT_TRUE(shard->damage().has_value());
  EXPECT_NE(shard->damage()->message().find("member 'b.jpg' claims 2 bytes"), std::string::npos) << shard->damage()->to_string();
  EXPECT_LE(shard->offsets().back(), 1024u + 512 + 2);
  ASSERT_EQ(shard->count(), 2);  // b counted, failing with the damage
  EXPECT_TRUE(shard->read(0).ok());
  EXPECT_FALSE(shard->read(1).ok());
}

TEST(WdsTest, ExtendedHeadersChainTheirOffset) {
  // A hand-made GNU long name: the sample starts at the 'L' header (tarfile's offset).
  const std::string longname = std::string(130, 'n') + ".jpg";
  std::string l = testing::tar_header("././@LongLink", longname.size() + 1, 'L') + longname + '\0';
  l.append((512 - l.size() % 512) % 512, '\0');
  std::string tar = testing::tar_member("a.jpg", "A") + l + testing::tar_member("truncated-name.jpg", "L") +
                    std::string(1024, '\0');
  auto shard = scan(tar);
  ASSERT_EQ(shard->count(), 2);
  EXPECT_EQ(shard->offsets()[1], 1024u);
  auto s = shard->read(1);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->key, std::string(130, 'n'));
}

TEST(WdsTest, PaxRecordsAreChecked) {
  auto pax = [](const std::string& records) {
    std::string x = testing::tar_header("PaxHeaders/a", records.size(), 'x') + records;
    x.append((512 - x.size() % 512) % 512, '\0');
    return x + testing::tar_member("a.jpg", "AAAA") + std::string(1024, '\0');
  };
  auto good = scan(pax("17 path=b/c.json\n"));
  ASSERT_EQ(good->count(), 1);
  EXPECT_EQ(good->read(0)->key, "b/c");
  for (const std::string& bad : {std::string("99 path=x\n"), std::string("6 path=x\n"), std::string("9 size=z\n"),
                                 std::string("20 GNU.sparse.map=0\n"), std::string("abc\n")}) {
    auto s = scan(pax(bad));
    ASSERT_TRUE(s->damage().has_value()) << bad;
    EXPECT_NE(s->damage()->message().find("header at byte 0"), std::string::npos) << s->damage()->to_string();
  }
}

TEST(WdsTest, IndexValidation) {
  const std::string tar = make_tar({{"a.jpg", "A"}, {"b.jpg", "B"}});
  auto src = [&] { return make_memory_source("shard.tar", bytes_of(tar)); };
  auto idx = [](std::vector<std::uint64_t> v) { return encode_tar_index(v); };
  EXPECT_TRUE(WdsShard::from_index(src(), idx({0, 1024, 2048})).ok());
  // not N+1 uint64s, not ascending, not at header boundaries, past the end, stale end
  EXPECT_FALSE(WdsShard::from_index(src(), std::vector<std::uint8_t>(12)).ok());
  EXPECT_FALSE(WdsShard::from_index(src(), idx({1024, 0, 2048})).ok());
  EXPECT_FALSE(WdsShard::from_index(src(), idx({0, 1000, 2048})).ok());
  auto past = WdsShard::from_index(src(), idx({0, 1024, 1 << 20}));
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.error().message().find("shard.tar.idx: ends at byte 1048576 but the shard has"), std::string::npos)
      << past.error().to_string();
  EXPECT_FALSE(WdsShard::from_index(src(), idx({0, 1024})).ok());  // the archive goes on
  // An index from another shard with the same sample count: the sample's range does not parse
  // as exactly one sample.
  const std::string other = make_tar({{"a.jpg", std::string(600, 'a')}, {"b.jpg", "B"}});
  auto shifted = WdsShard::from_index(make_memory_source("shard.tar", bytes_of(other)), idx({0, 1024, 2560}));
  ASSERT_TRUE(shifted.ok()) << shifted.error().to_string();
  const std::string m = message((*shifted)->read(0));
  EXPECT_NE(m.find("the index disagrees with the shard"), std::string::npos) << m;
}

TEST(WdsTest, LocalShardIndexIsCachedBesideOrInTheCacheFolder) {
  TempDir dir;
  const std::string tar = dir.write("data/s-000.tar", make_tar({{"a.jpg", "A"}, {"b.jpg", "B"}}));
  std::vector<std::string> warnings;
  auto first = open_local_shard(tar, {}, {}, &warnings);
  ASSERT_TRUE(first.ok()) << first.error().to_string();
  EXPECT_TRUE((*first)->scanned());
  EXPECT_TRUE(std::filesystem::exists(dir / "data/s-000.tar.idx"));
  auto second = open_local_shard(tar, {}, {}, &warnings);
  ASSERT_TRUE(second.ok());
  EXPECT_FALSE((*second)->scanned());
  EXPECT_TRUE(warnings.empty());

  // Appending samples makes the index stale: refused with a warning, rescanned.
  {
    const std::string grown = make_tar({{"a.jpg", "A"}, {"b.jpg", "B"}, {"c.jpg", "C"}});
    dir.write("data/s-000.tar", grown);
  }
  auto third = open_local_shard(tar, {}, {}, &warnings);
  ASSERT_TRUE(third.ok());
  EXPECT_TRUE((*third)->scanned());
  EXPECT_EQ((*third)->count(), 3);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("stale"), std::string::npos) << warnings[0];

  // A read-only folder: the index goes to the cache folder instead.
  const std::string ro = dir.write("ro/t.tar", make_tar({{"x.jpg", "X"}}));
  std::filesystem::permissions(dir / "ro", std::filesystem::perms::owner_read | std::filesystem::perms::owner_exec);
  std::filesystem::create_directories(dir / "cache");
  LocalIndexOptions idx{.cache_dir = dir / "cache"};
  warnings.clear();
  ASSERT_TRUE(open_local_shard(ro, {}, idx, &warnings).ok());
  if (::geteuid() != 0) {  // root writes anywhere
    EXPECT_TRUE(warnings.empty()) << warnings[0];
    int cached = 0;
    for (auto& e : std::filesystem::directory_iterator(dir / "cache")) cached += e.path().string().ends_with(".tar.idx");
    EXPECT_EQ(cached, 1);
    auto again = open_local_shard(ro, {}, idx, &warnings);
    ASSERT_TRUE(again.ok());
    EXPECT_FALSE((*again)->scanned());
  }
}

TEST(WdsTest, RemoteShardsAreReadByRangeNeverWhole) {
  // A shard behind a ranged-GET callback (what io/ plugs in for S3/HTTP): the scan reads it in
  // chunks, a sample is one GET of its range, a large part one GET of its own range.
  std::string tar;
  std::vector<std::pair<std::string, std::string>> members;
  for (int i = 0; i < 40; ++i) {
    members.push_back({"s" + std::to_string(i) + ".json", "{}"});
    members.push_back({"s" + std::to_string(i) + ".jpg", std::string(3000 + i, 'x')});
  }
  tar = make_tar(members);
  struct Get {
    std::int64_t offset, length;
  };
  auto gets = std::make_shared<std::vector<Get>>();
  auto source = make_range_source("s3://bucket/shard.tar", static_cast<std::int64_t>(tar.size()),
                                  [tar, gets](std::int64_t off, std::span<std::uint8_t> out) -> Status {
                                    gets->push_back({off, static_cast<std::int64_t>(out.size())});
                                    std::memcpy(out.data(), tar.data() + off, out.size());
                                    return ok_status();
                                  });
  ShardOptions o;
  o.scan_chunk_bytes = 64 << 10;
  auto shard = WdsShard::from_scan(std::move(source), o);
  ASSERT_TRUE(shard.ok());
  ASSERT_EQ((*shard)->count(), 40);
  EXPECT_LE(gets->size(), tar.size() / (64 << 10) + 2) << "the scan reads in chunks";
  gets->clear();
  auto s = (*shard)->read(17);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  ASSERT_EQ(gets->size(), 1u);
  EXPECT_EQ((*gets)[0].offset, static_cast<std::int64_t>((*shard)->offsets()[17]));
  EXPECT_EQ((*gets)[0].length, static_cast<std::int64_t>((*shard)->offsets()[18] - (*shard)->offsets()[17]));
  EXPECT_LT((*gets)[0].length, 5000);
  // past the end: refused before any GET
  gets->clear();
  std::vector<std::uint8_t> buf(20);
  EXPECT_FALSE((*shard)->source().read_at(static_cast<std::int64_t>(tar.size()) - 10, buf).ok());
  EXPECT_TRUE(gets->empty());
}

// Records the prefetch hints; serves read_at from the last hinted range when inside it (as the
// remote source does), counting those reads.
class HintedSource final : public ByteSource {
 public:
  explicit HintedSource(std::string bytes) : bytes_(std::move(bytes)) {}
  const std::string& name() const override { return name_; }
  std::int64_t size() const override { return static_cast<std::int64_t>(bytes_.size()); }
  Status read_at(std::int64_t offset, std::span<std::uint8_t> out) const override {
    if (offset < 0 || offset + static_cast<std::int64_t>(out.size()) > size()) return data_loss("truncated");
    for (const auto& [b, n] : hints)
      if (offset >= b && offset + static_cast<std::int64_t>(out.size()) <= b + n) ++served;
    std::memcpy(out.data(), bytes_.data() + offset, out.size());
    return ok_status();
  }
  void prefetch(std::int64_t offset, std::int64_t length) const override { hints.push_back({offset, length}); }
  mutable std::vector<std::pair<std::int64_t, std::int64_t>> hints;
  mutable int served = 0;

 private:
  std::string name_ = "http://host/shard.tar", bytes_;
};

TEST(WdsTest, PrefetchHintsRunsOfAdjacentSamples) {
  std::vector<std::pair<std::string, std::string>> members;
  for (int i = 0; i < 8; ++i) members.push_back({"s" + std::to_string(i) + ".json", std::string(700 + i, 'j')});
  members.push_back({"big.bin", std::string(6000, 'b')});  // sample 8: read part by part
  auto src = std::make_shared<HintedSource>(make_tar(members));
  ShardOptions o;
  o.whole_sample_bytes = 5000;  // a run holds at most three of the 1.5 KiB samples
  auto shard = WdsShard::from_scan(src, o);
  ASSERT_TRUE(shard.ok());
  const auto& off = (*shard)->offsets();
  ASSERT_EQ((*shard)->count(), 9);
  const std::vector<std::int64_t> ids = {6, 0, 1, 3, 4, 5, 1, 8, 42, -1};  // any order, repeats, out of range
  (*shard)->prefetch(ids);
  auto range = [&](int a, int b) {  // samples [a, b)
    return std::make_pair(static_cast<std::int64_t>(off[a]), static_cast<std::int64_t>(off[b] - off[a]));
  };
  EXPECT_EQ(src->hints, (std::vector<std::pair<std::int64_t, std::int64_t>>{range(0, 2), range(3, 6), range(6, 7)}));
  // Reads of hinted samples come from their range; the checks are the same
  for (std::int64_t i : {0, 1, 3, 4, 5, 6}) {
    auto r = (*shard)->read(i);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(r->key, "s" + std::to_string(i));
  }
  EXPECT_EQ(src->served, 6);
}

TEST(WdsTest, PrefetchedRangeOfADisagreeingIndexStillFails) {
  const std::string tar = make_tar({{"a.json", "{}"}, {"b.json", "{}"}, {"c.json", "{}"}});
  auto src = std::make_shared<HintedSource>(tar);
  // An index that merges samples a and b into one range: sound in itself, wrong for the shard.
  const std::vector<std::uint64_t> offsets = {0, 2048, 3072};
  auto shard = WdsShard::from_index(src, encode_tar_index(offsets));
  ASSERT_TRUE(shard.ok()) << shard.error().to_string();
  const std::vector<std::int64_t> ids = {0, 1};
  (*shard)->prefetch(ids);
  ASSERT_EQ(src->hints.size(), 1u);
  auto r = (*shard)->read(0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("the index disagrees with the shard"), std::string::npos) << r.error().to_string();
  EXPECT_EQ(src->served, 1);
}

TEST(WdsTest, MissingShardIsNotFound) {
  auto r = open_local_shard("/nonexistent/shard-007.tar");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(r.error().message().find("shard-007.tar"), std::string::npos);
}

TEST(WdsTest, ProblemScansAreNotCached) {
  TempDir dir;
  const std::string tar = dir.write("bad.tar", make_tar({{"a.jpg", "1"}, {"b.jpg", "2"}, {"a.txt", "3"}}));
  std::vector<std::string> warnings;
  ASSERT_TRUE(open_local_shard(tar, {}, {}, &warnings).ok());
  EXPECT_FALSE(std::filesystem::exists(dir / "bad.tar.idx"));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("2 bad sample(s)"), std::string::npos) << warnings[0];
}

TEST(WdsTest, IndexPathFollowsEnergon) {
  EXPECT_EQ(tar_index_path("a/x.tar"), "a/x.tar.idx");
  EXPECT_EQ(tar_index_path("a/x.y.tar"), "a/x.y.tar.idx");
  EXPECT_EQ(tar_index_path("a.b/shard"), "a.b/shard.tar.idx");
}

TEST(WdsTest, NotATarIsOneNamedError) {
  auto shard = scan(std::string(4096, 'j'));
  ASSERT_TRUE(shard->damage().has_value());
  EXPECT_EQ(shard->count(), 0);
  EXPECT_NE(shard->damage()->message().find("shard.tar: header at byte 0: bad header checksum"), std::string::npos);
}

}  // namespace
}  // namespace stoker::dataset
