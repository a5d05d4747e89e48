// Energon-prepared folders and the two sample formats, on folders written by an independent
// writer (Python: tarfile, pickle, yaml.dump, struct for .tar.idx — what `energon prepare` and
// Megatron-Bridge's converters produce): records, media byte ranges equal to the original bytes,
// split brace expansion and excludes, .info fallbacks, and every refusal named.
#include <gtest/gtest.h>

#include "stoker/dataset/conversation.h"
#include "stoker/dataset/shard_source.h"
#include "stoker/dataset/sources_test_util.h"

namespace stoker::dataset {
namespace {

using testing::TempDir;

// ROOT/shards/part-{000..002}.tar + .tar.idx, ROOT/.nv-meta/{dataset.yaml, split.yaml, .info.json};
// ROOT/expect/<global index>_<k>.bin = the k-th medium of a sample in placeholder order.
constexpr char kMakeFolder[] = R"PY(
import io, json, os, pickle, struct, sys, tarfile, yaml
root = sys.argv[1]
os.makedirs(os.path.join(root, "shards"), exist_ok=True)
os.makedirs(os.path.join(root, ".nv-meta"), exist_ok=True)
os.makedirs(os.path.join(root, "expect"), exist_ok=True)
def img(i, k): return b"\xff\xd8\xff\xe0" + bytes([i, k]) * (50 + 13 * k)
samples = []
for i in range(9):
    kind = i % 3
    media = []
    if kind == 0:   # ShareGPT, tags, a pickled jpgs list
        imgs = [img(i, 0), img(i, 1)]
        conv = [{"from": "human", "value": "<image>look <image> here"}, {"from": "gpt", "value": "ok"}]
        parts = {"conversation.json": json.dumps(conv).encode(), "jpgs": pickle.dumps(imgs)}
        media = imgs
    elif kind == 1:  # OpenAI typed parts, wrapped in {"messages": ...}, one video of frames
        frames = [img(i, 5), img(i, 6), img(i, 7)]
        conv = {"messages": [{"role": "user", "content": [{"type": "video", "fps": 2}, {"type": "text", "text": "what?"}]},
                             {"role": "assistant", "content": "that"}], "tools": [{"type": "function", "function": {"name": "f"}}]}
        parts = {"conversation.json": json.dumps(conv).encode(), "videos": pickle.dumps([frames], protocol=5)}
        media = frames
    else:            # OpenAI string content, no media
        conv = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
        parts = {"conversation.json": json.dumps(conv).encode()}
    samples.append(("%s_%05d" % ("k", i), parts))
    for k, m in enumerate(media):
        open(os.path.join(root, "expect", "%d_%d.bin" % (i, k)), "wb").write(m)
counts = {}
for s in range(3):
    name = "shards/part-%03d.tar" % s
    path = os.path.join(root, name)
    offsets = []
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as t:
        for key, parts in samples[s * 3:(s + 1) * 3]:
            for p, data in parts.items():
                ti = tarfile.TarInfo(key + "." + p)
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
    with tarfile.open(path) as t:
        last = None
        for m in t:
            b = m.name.split(".")[0]
            if b != last:
                offsets.append(m.offset)
                last = b
        offsets.append(t.offset)
    open(path[:-4] + ".tar.idx", "wb").write(b"".join(struct.pack("<Q", o) for o in offsets))
    counts[name] = 3
meta = os.path.join(root, ".nv-meta")
json.dump({"energon_version": "7.4.0", "shard_counts": counts}, open(os.path.join(meta, ".info.json"), "w"), indent=2)
yaml.dump({"split_parts": {"train": ["shards/part-{000..002}.tar"], "val": ["shards/part-002.tar"]},
           "exclude": ["shards/part-001.tar/k_00004"]}, open(os.path.join(meta, "split.yaml"), "w"), sort_keys=False)
yaml.dump({"__module__": "megatron.bridge.data.energon.task_encoder_utils", "__class__": "ChatMLWebdataset",
           "field_map": {"imgs": "jpgs", "videos": "videos", "conversation": "conversation.json"},
           "subflavors": {}}, open(os.path.join(meta, "dataset.yaml"), "w"), sort_keys=False)
)PY";

class EnergonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::have_python_module("yaml")) GTEST_SKIP() << "needs /usr/bin/python3 with yaml";
    testing::python(dir_, kMakeFolder, dir_ / "ds");
  }
  Result<std::unique_ptr<ShardSource>> open(const std::string& split = "train") {
    return ShardSource::open_energon(dir_ / "ds", split, local_shard_opener({}, {}, &warnings_), local_text_reader());
  }
  std::string bytes_at(const ByteRange& r) {
    const std::string all = testing::read_all(r.object);
    return all.substr(static_cast<std::size_t>(r.offset), static_cast<std::size_t>(r.length));
  }
  TempDir dir_;
  std::vector<std::string> warnings_;
};

TEST_F(EnergonTest, ChatmlRecordsAndMediaRanges) {
  auto src = open();
  ASSERT_TRUE(src.ok()) << src.error().to_string();
  ASSERT_EQ((*src)->count(), 8);  // 9 samples, k_00004 excluded by key
  EXPECT_TRUE(warnings_.empty()) << warnings_[0];
  int with_media = 0;
  for (std::int64_t i = 0; i < (*src)->count(); ++i) {
    auto r = (*src)->read(i);
    ASSERT_TRUE(r.ok()) << r.error().to_string();
    EXPECT_EQ(r->location.find("shards/part-"), r->location.find("/ds/") + 4) << r->location;
    EXPECT_EQ(r->location.find("k_00004"), std::string::npos);
    auto conv = parse_record(r->text);
    ASSERT_TRUE(conv.ok()) << conv.error().to_string() << "\n" << r->text;
    ASSERT_TRUE(validate_for_sft(*conv).ok()) << r->text;
    // the global index of the original sample (key k_0000N)
    const std::size_t kpos = r->location.find("(key 'k_") + 8;
    const int orig = std::stoi(r->location.substr(kpos, 5));
    int k = 0;
    for (const Message& m : conv->messages) {
      for (const Part& p : m.parts) {
        std::vector<std::string> refs = p.frames;
        if (p.kind == Part::Kind::kImage) refs.push_back(p.value);
        for (const std::string& ref : refs) {
          const ByteRange* br = r->find_media(ref);
          ASSERT_NE(br, nullptr) << ref;
          EXPECT_EQ(bytes_at(*br), testing::read_all(dir_ / ("ds/expect/" + std::to_string(orig) + "_" + std::to_string(k++) + ".bin")))
              << r->location << " " << ref;
        }
        if (p.kind == Part::Kind::kVideo) {
          EXPECT_EQ(p.video.fps, 2.0);  // the placeholder's own keys are kept
        }
      }
    }
    if (k > 0) ++with_media;
    if (orig % 3 == 0) {
      EXPECT_EQ(conv->messages[0].parts.size(), 4u) << r->text;  // image, "look ", image, " here"
      EXPECT_EQ(conv->messages[0].parts[1].value, "look ");
    }
    if (orig % 3 == 1) {
      EXPECT_NE(r->text.find("\"tools\":[{"), std::string::npos) << r->text;
    }
  }
  EXPECT_EQ(with_media, 5);
}

TEST_F(EnergonTest, SplitPartsInfoYamlAndExcludes) {
  auto val = open("val");
  ASSERT_TRUE(val.ok()) << val.error().to_string();
  EXPECT_EQ((*val)->count(), 3);
  auto missing = open("test");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message().find("no split part 'test' (it has: train, val)"), std::string::npos)
      << missing.error().to_string();

  // .info.yaml when there is no .info.json (older Energon)
  std::filesystem::remove(dir_ / "ds/.nv-meta/.info.json");
  dir_.write("ds/.nv-meta/.info.yaml", "energon_version: 7.1.0\nshard_counts:\n  shards/part-000.tar: 3\n"
                                       "  shards/part-001.tar: 3\n  shards/part-002.tar: 3\n");
  auto y = open();
  ASSERT_TRUE(y.ok()) << y.error().to_string();
  EXPECT_EQ((*y)->count(), 8);

  // excluding a whole shard and an unknown key
  dir_.write("ds/.nv-meta/split.yaml", "split_parts:\n  train:\n  - shards/part-{000..002}.tar\nexclude:\n"
                                       "- shards/part-000.tar\n- shards/part-002.tar/nope\n- other/x.tar\n");
  warnings_.clear();
  auto ex = open();
  ASSERT_TRUE(ex.ok()) << ex.error().to_string();
  EXPECT_EQ((*ex)->count(), 6);
  ASSERT_EQ(warnings_.size() + (*ex)->warnings().size(), 2u);
  std::string all;
  for (const auto& w : (*ex)->warnings()) all += w + "\n";
  EXPECT_NE(all.find("exclude 'shards/part-002.tar/nope' matches no sample key"), std::string::npos) << all;
  EXPECT_NE(all.find("exclude entry 'other/x.tar' matches no shard"), std::string::npos) << all;
}

TEST_F(EnergonTest, MissingShardFailsItsSamplesOnly) {
  std::filesystem::remove(dir_ / "ds/shards/part-001.tar");
  auto src = open();
  ASSERT_TRUE(src.ok()) << src.error().to_string();
  ASSERT_EQ((*src)->count(), 9);  // its excludes cannot be applied: counts from .info
  int failed = 0;
  for (std::int64_t i = 0; i < (*src)->count(); ++i) {
    auto r = (*src)->read(i);
    if (!r.ok()) {
      ++failed;
      EXPECT_EQ(r.error().code(), ErrorCode::kNotFound);
      EXPECT_NE(r.error().message().find("part-001.tar"), std::string::npos) << r.error().to_string();
    }
  }
  EXPECT_EQ(failed, 3);
}

TEST_F(EnergonTest, InfoCountDisagreeingWithTheIndexFailsTheShard) {
  dir_.write("ds/.nv-meta/.info.json", R"({"shard_counts": {"shards/part-000.tar": 4, "shards/part-001.tar": 3, "shards/part-002.tar": 3}})");
  auto src = open();
  ASSERT_TRUE(src.ok());
  auto r = (*src)->read(0);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("its index has 3 samples but .info lists 4"), std::string::npos) << r.error().to_string();
  EXPECT_TRUE((*src)->read(4).ok());
}

TEST_F(EnergonTest, MalformedMetadataIsRefusedWithItsPosition) {
  const std::string meta = "ds/.nv-meta/";
  struct Case {
    std::string file, text, want;
  };
  const std::vector<Case> cases = {
      {"dataset.yaml", "__module__: megatron.energon\n__class__: [CrudeWebdataset\n", "dataset.yaml:2:12: unclosed '['"},
      {"dataset.yaml", "__module__: x\n__class__: CaptioningWebdataset\n", "dataset.yaml:2:12: sample class 'CaptioningWebdataset' is not supported"},
      {"dataset.yaml", "sample_type:\n  __module__: megatron.energon\n  __class__: CaptioningSample\nfield_map: {image: jpg}\n",
       "typed samples (sample_type CaptioningSample) are not supported"},
      {"dataset.yaml", "__class__: ChatMLWebdataset\nfield_map: {imgs: jpgs}\n", "needs field_map.conversation"},
      {"split.yaml", "split_parts:\n  train: []\n", "split.yaml:2:10: split part 'train' has no shards"},
      {"split.yaml", "split_parts:\n  train:\n  - shards/part-000.tar\nexclude: [shards/part-000.tar]\n", "has no shards after exclude"},
      {"split.yaml", "split_parts:\n  train:\n  - shards/part-{0000000..9999999}.tar\n",
       "split.yaml:3:5: brace pattern 'shards/part-{0000000..9999999}.tar' expands to 10000000 names"},
      {"split.yaml", "split_parts:\n  train:\n  - shards/part-009.tar\n", "shard 'shards/part-009.tar' is not in"},
      {"split.yaml", "split_parts:\n  train:\n  - a\n - b\n", "split.yaml:4:2:"},
      {".info.json", "{\"shard_counts\": {\"shards/part-000.tar\": -3}}", "must be a count"},
      {".info.json", "{\"shard_counts\": ", ".info.json: not valid JSON"},
  };
  for (const Case& c : cases) {
    const std::string path = dir_ / (meta + c.file);
    const std::string saved = testing::read_all(path);
    dir_.write(meta + c.file, c.text);
    auto r = open();
    ASSERT_FALSE(r.ok()) << c.file << ": " << c.text;
    EXPECT_NE(r.error().to_string().find(c.want), std::string::npos) << r.error().to_string();
    dir_.write(meta + c.file, saved);
  }
  std::filesystem::remove(dir_ / "ds/.nv-meta/dataset.yaml");
  auto none = open();
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().to_string().find("not an Energon folder"), std::string::npos) << none.error().to_string();
}

TEST_F(EnergonTest, ForbiddenPickleOpcodeFailsItsSample) {
  // Replace sample 0's jpgs with a pickle calling os.system, through Python's own pickler.
  testing::python(dir_, R"PY(
import io, os, pickle, struct, sys, tarfile
root = sys.argv[1]
class Evil:
    def __reduce__(self): return (os.system, ("true",))
path = os.path.join(root, "shards/part-000.tar")
members = []
with tarfile.open(path) as t:
    for m in t:
        members.append((m.name, t.extractfile(m).read()))
members = [(n, pickle.dumps([Evil()]) if n == "k_00000.jpgs" else d) for n, d in members]
with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as t:
    for n, d in members:
        ti = tarfile.TarInfo(n); ti.size = len(d); t.addfile(ti, io.BytesIO(d))
with tarfile.open(path) as t:
    offs, last = [], None
    for m in t:
        if m.name.split(".")[0] != last: offs.append(m.offset); last = m.name.split(".")[0]
    offs.append(t.offset)
open(path[:-4] + ".tar.idx", "wb").write(b"".join(struct.pack("<Q", o) for o in offs))
)PY", dir_ / "ds");
  auto src = open();
  ASSERT_TRUE(src.ok()) << src.error().to_string();
  auto r = (*src)->read(0);
  ASSERT_FALSE(r.ok());
  const std::string m = r.error().to_string();
  EXPECT_NE(m.find("part-000.tar: sample 0 (key 'k_00000'): part 'jpgs'"), std::string::npos) << m;
  EXPECT_NE(m.find("STACK_GLOBAL"), std::string::npos) << m;
  EXPECT_TRUE((*src)->read(1).ok());
}

TEST(CrudeTest, JsonPartIsTheRecordAndPartNamesAreMedia) {
  TempDir dir;
  const std::string rec = R"({"messages":[{"role":"user","content":[{"type":"image","image":"0.png"},)"
                          R"({"type":"image","image":"../x.jpg"}]},{"role":"assistant","content":"a"}]})";
  dir.write("s/a.tar", testing::make_tar({{"dir/a1.json", rec}, {"dir/a1.0.png", "PNGDATA"}, {"b2.txt", "no json"}}));
  std::vector<std::string> warnings;
  auto src = ShardSource::open_shards(dir / "s/{a,a}.tar", local_shard_opener({}, {}, &warnings));
  ASSERT_TRUE(src.ok()) << src.error().to_string();
  EXPECT_EQ((*src)->count(), 4);
  auto r = (*src)->read(0);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ(r->text, rec);
  const ByteRange* png = r->find_media("0.png");
  ASSERT_NE(png, nullptr);
  EXPECT_EQ(png->length, 7);
  ASSERT_NE(r->find_media("a1.0.png"), nullptr);
  EXPECT_EQ(r->find_media("a1.0.png")->offset, png->offset);
  EXPECT_NE(r->find_media("dir/a1.0.png"), nullptr);
  EXPECT_EQ(r->find_media("../x.jpg"), nullptr);  // an outside path, resolved against base
  EXPECT_EQ(r->base, dir / "s");
  auto bad = (*src)->read(1);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("a.tar: sample 1 (key 'b2'): no 'json' part"), std::string::npos)
      << bad.error().to_string();
  EXPECT_EQ((*src)->describe(3), dir / "s/a.tar" + ": sample 1");
  auto gone = ShardSource::open_shards(dir / "s/{a,zzz}.tar", local_shard_opener());
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.error().to_string().find("zzz.tar: no such file"), std::string::npos) << gone.error().to_string();
}

}  // namespace
}  // namespace stoker::dataset
