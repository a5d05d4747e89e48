// `synth --shards`: the shards read back by Python's tarfile (an independent reader): every
// .tar.idx byte-identical to the one computed from tarfile's member offsets, each sample's record
// equal to its data.jsonl line but for media paths, which name members holding the files' bytes;
// and the same records through stoker's Energon folder and shard-list sources.
#include "stoker/synth/shards.h"

#include <gtest/gtest.h>

#include "stoker/dataset/conversation.h"
#include "stoker/dataset/manifest.h"
#include "stoker/dataset/shard_source.h"
#include "stoker/dataset/sources_test_util.h"
#include "stoker/synth/synth.h"
#include "stoker/synth/video.h"

namespace stoker::synth {
namespace {

using dataset::testing::TempDir;

constexpr char kCheck[] = R"PY(
import glob, json, os, re, struct, sys, tarfile
root = sys.argv[1]
lines = open(os.path.join(root, "data.jsonl"), "rb").read().decode("utf-8").split("\n")[:-1]
split_name_re = re.compile(r"^((?:.*/|)[^.]+)[.]([^/]*)$")
seen = 0
for tar in sorted(glob.glob(os.path.join(root, "energon/shards/*.tar"))):
    offsets, last, samples = [], None, {}
    with tarfile.open(tar) as t:
        for m in t:
            key, part = split_name_re.match(m.name).groups()
            if key != last:
                offsets.append(m.offset)
                last = key
            samples.setdefault(key, {})[part] = t.extractfile(m).read()
        offsets.append(t.offset)
    assert open(tar[:-4] + ".tar.idx", "rb").read() == b"".join(struct.pack("<Q", o) for o in offsets), tar
    assert os.path.samefile(tar, os.path.join(root, "shards", os.path.basename(tar))) or \
        open(tar, "rb").read() == open(os.path.join(root, "shards", os.path.basename(tar)), "rb").read()
    for key, parts in samples.items():
        original = lines[int(key)]
        try:
            a = json.loads(original)
        except ValueError:
            assert parts["json"].decode() == original  # a deliberately broken line, carried as is
            seen += 1
            continue
        b = json.loads(parts["json"])
        def walk(x, y):
            if isinstance(x, dict):
                assert x.keys() == y.keys()
                for k in x: walk(x[k], y[k])
            elif isinstance(x, list):
                assert len(x) == len(y)
                for u, v in zip(x, y): walk(u, v)
            elif x != y:
                assert isinstance(x, str) and re.match(r"^(images|videos)/", x), (x, y)
                assert parts[y] == open(os.path.join(root, x), "rb").read(), (key, x, y)
        walk(a, b)
        seen += 1
print(seen)
)PY";

TEST(SynthShardsTest, ShardsAndEnergonFolderHoldTheSameRecords) {
  if (!dataset::testing::have_python()) GTEST_SKIP() << "needs /usr/bin/python3";
  TempDir dir;
  SynthConfig c{.out_dir = dir / "d", .records = 30, .seed = 7, .max_side = 128, .bad_fraction = 0.2, .threads = 1};
  c.flat_pixels = true;
  auto r = generate_dataset(c);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  ASSERT_TRUE(add_video_records(c.out_dir, 1, 7).ok());
  auto s = write_shards(c.out_dir, 4);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  EXPECT_EQ(s->samples, 31);
  EXPECT_EQ(s->shards_pattern, dir / "d/shards/data-{000..003}.tar");
  EXPECT_FALSE(write_shards(c.out_dir, 0).ok());
  EXPECT_FALSE(write_shards(c.out_dir, 32).ok());

  const std::string out = dataset::testing::python(dir, kCheck, c.out_dir);
  EXPECT_EQ(out, "31\n");

  // stoker reads the same records through the Energon folder and the shard list
  auto manifest = dataset::ManifestIndex::open({c.out_dir + "/data.jsonl"});
  ASSERT_TRUE(manifest.ok());
  auto energon = dataset::ShardSource::open_energon(s->energon_dir, "train", dataset::local_shard_opener(),
                                                    dataset::local_text_reader());
  ASSERT_TRUE(energon.ok()) << energon.error().to_string();
  auto plain = dataset::ShardSource::open_shards(s->shards_pattern, dataset::local_shard_opener());
  ASSERT_TRUE(plain.ok()) << plain.error().to_string();
  ASSERT_EQ((*energon)->count(), 31);
  ASSERT_EQ((*plain)->count(), 31);
  int media = 0;
  for (std::int64_t i = 0; i < 31; ++i) {
    auto a = (*energon)->read(i);
    auto b = (*plain)->read(i);
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->text, b->text);
    auto from_jsonl = dataset::parse_record(*(*manifest)->read_record(static_cast<std::uint64_t>(i)));
    auto from_shard = dataset::parse_record(a->text);
    ASSERT_EQ(from_jsonl.ok(), from_shard.ok()) << a->text;
    if (!from_jsonl.ok()) continue;
    ASSERT_EQ(from_jsonl->messages.size(), from_shard->messages.size());
    for (std::size_t m = 0; m < from_jsonl->messages.size(); ++m) {
      const auto& x = from_jsonl->messages[m].parts;
      const auto& y = from_shard->messages[m].parts;
      ASSERT_EQ(x.size(), y.size());
      for (std::size_t p = 0; p < x.size(); ++p) {
        if (x[p].kind == dataset::Part::Kind::kText) {
          EXPECT_EQ(x[p].value, y[p].value);
          continue;
        }
        const dataset::ByteRange* range = a->find_media(y[p].value);
        if (!range) {  // a missing file stays a path
          EXPECT_EQ(x[p].value, y[p].value);
          continue;
        }
        const std::string all = dataset::testing::read_all(range->object);
        EXPECT_EQ(all.substr(static_cast<std::size_t>(range->offset), static_cast<std::size_t>(range->length)),
                  dataset::testing::read_all(c.out_dir + "/" + x[p].value));
        ++media;
      }
    }
  }
  EXPECT_GT(media, 20);
}

}  // namespace
}  // namespace stoker::synth
