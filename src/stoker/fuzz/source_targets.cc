// Record-source parsers (issue 23): a tar shard (headers, grouping, index round trip, crude
// records), a pickle (the restricted reader), and mixture YAML (the YAML subset + MetadatasetV2,
// with a nested file and Energon's dataset.yaml).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "stoker/dataset/chatml.h"
#include "stoker/dataset/energon.h"
#include "stoker/dataset/mixture.h"
#include "stoker/dataset/pickle.h"
#include "stoker/dataset/wds.h"
#include "stoker/dataset/yaml.h"
#include "stoker/fuzz/scratch.h"
#include "stoker/fuzz/targets.h"

namespace stoker::fuzz {
namespace {

using namespace stoker::dataset;

// ---- tar ----

// The bytes as a shard: scan it (small caps), read every sample, check what the index promises,
// and that an index written from a clean scan reads the same samples back.
void run_tar(const std::uint8_t* data, std::size_t size) {
  ShardOptions o;
  o.limits.max_member_bytes = 1 << 16;
  o.limits.max_extended_bytes = 1 << 12;
  o.whole_sample_bytes = (size & 1) ? 0 : 1 << 20;  // odd sizes: walk headers and read parts on demand
  o.scan_chunk_bytes = 4096;
  auto shard = WdsShard::from_scan(make_memory_source("f.tar", std::vector<std::uint8_t>(data, data + size)), o);
  check(shard.ok(), "a scan of bytes in memory always returns a shard");
  const auto& off = (*shard)->offsets();
  check(!off.empty() && off.back() <= size, "the index ends inside the shard");
  for (std::size_t i = 0; i < off.size(); ++i) {
    check(off[i] % 512 == 0, "index entries are header boundaries");
    if (i) check(off[i] > off[i - 1], "index entries ascend");
  }
  if ((*shard)->damage()) check_error_named(Result<int>((*shard)->damage().value()));
  const std::int64_t n = std::min<std::int64_t>((*shard)->count(), 64);
  std::vector<std::string> keys;
  for (std::int64_t i = 0; i < n; ++i) {
    auto s = (*shard)->read(i);
    check_error_named(s);
    if (!s.ok()) continue;
    keys.push_back(s->key);
    for (const WdsPart& p : s->parts) {
      check(p.offset >= static_cast<std::int64_t>(off[i]) && p.offset + p.size <= static_cast<std::int64_t>(off[i + 1]),
            "a part lies inside its sample's range");
      auto bytes = (*shard)->read_part(*s, p);
      check(bytes.ok() && bytes->size() == static_cast<std::size_t>(p.size), "a part of a good sample reads");
    }
    check_error_named(crude_record(**shard, *s));
  }
  if ((*shard)->cacheable()) {
    auto again = WdsShard::from_index(make_memory_source("f.tar", std::vector<std::uint8_t>(data, data + size)),
                                      (*shard)->index_bytes(), o);
    check(again.ok(), "the index of a clean scan is accepted");
    for (std::int64_t i = 0; i < n; ++i) {
      auto s = (*again)->read(i);
      check(s.ok() && s->key == keys[static_cast<std::size_t>(i)], "reading through the index gives the same samples");
    }
  }
}

std::string header(const std::string& name, std::size_t size, char type) {
  std::string h(512, '\0');
  std::memcpy(&h[0], name.data(), std::min<std::size_t>(name.size(), 100));
  std::snprintf(&h[100], 8, "%07o", 0644);
  std::snprintf(&h[124], 12, "%011llo", static_cast<unsigned long long>(size));
  std::snprintf(&h[136], 12, "%011o", 0);
  h[156] = type;
  std::memcpy(&h[257], "ustar\0" "00", 8);
  std::memset(&h[148], ' ', 8);
  unsigned sum = 0;
  for (unsigned char c : h) sum += c;
  std::snprintf(&h[148], 8, "%06o", sum);
  return h;
}
std::string member(const std::string& name, const std::string& data, char type = '0') {
  std::string m = header(name, data.size(), type) + data;
  return m + std::string((512 - data.size() % 512) % 512, '\0');
}

void tar_seeds(const std::string& dir) {
  const std::string rec = R"({"messages":[{"role":"user","content":[{"type":"image","image":"jpg"}]},{"role":"assistant","content":"a"}]})";
  write_seed(dir, "two-samples", member("a.json", rec) + member("a.jpg", "\xff\xd8\xff") + member("b.json", "{}") +
                                     std::string(1024, '\0'));
  const std::string longname = std::string(120, 'd') + "/k.json";
  write_seed(dir, "gnu-longname", member("././@LongLink", longname + '\0', 'L') + member("x", "{}") + std::string(1024, '\0'));
  write_seed(dir, "pax", member("PaxHeaders/x", "20 path=dir/p.q.json\n", 'x') + member("x", "{}") + std::string(1024, '\0'));
  write_seed(dir, "split-key", member("a.jpg", "1") + member("b.jpg", "2") + member("a.txt", "3"));
  write_seed(dir, "meta-dir", member("__meta__/i.json", "{}") + member("dir/", "", '5') + member("dir/k.txt", "t"));
}

// ---- pickle ----

void run_pickle(const std::uint8_t* data, std::size_t size) {
  PickleLimits lim;
  lim.max_values = 1 << 14;
  auto v = read_pickle(std::span<const std::uint8_t>(data, size), lim);
  check_error_named(v);
  if (!v.ok()) return;
  std::vector<const PickleValue*> todo = {&*v};
  std::size_t seen = 0;
  while (!todo.empty()) {
    const PickleValue* p = todo.back();
    todo.pop_back();
    ++seen;
    if (p->kind == PickleValue::Kind::kBytes || p->kind == PickleValue::Kind::kStr)
      check(p->offset <= size && p->length <= size - p->offset, "bytes and str values lie in the input");
    for (const PickleValue& c : p->items) todo.push_back(&c);
  }
  check(seen <= lim.max_values, "no more values than the cap");
  (void)pickle_repr(*v, std::span<const std::uint8_t>(data, size));
}

template <std::size_t N>
std::string lit(const char (&s)[N]) {  // a literal with NULs inside
  return std::string(s, N - 1);
}

void pickle_seeds(const std::string& dir) {
  // pickle.dumps([b"ab", b"cd"], protocol=4) and friends, byte for byte
  write_seed(dir, "list-bytes", lit("\x80\x04\x95\x0f\x00\x00\x00\x00\x00\x00\x00]\x94(C\x02" "ab\x94" "C\x02" "cd\x94" "e."));
  write_seed(dir, "frames", lit("\x80\x05]\x94]\x94(C\x01" "a\x94" "C\x01" "b\x94" "ea."));
  write_seed(dir, "tuple-str-int", lit("\x80\x02X\x03\x00\x00\x00" "abcK\x05\x8a\x02\xff\x7fN\x88\x87q\x00h\x00\x86."));
  write_seed(dir, "global", lit("\x80\x04\x8c\x08" "builtins\x94\x8c\x04" "eval\x94\x93\x94."));
}

// ---- YAML / MetadatasetV2 ----

// The input is a metadataset at /f/m.yaml; after "\n#FILE#\n", the nested /f/n.yaml.
void run_yaml(const std::uint8_t* data, std::size_t size) {
  const auto [main_text, nested] = split2(as_text(data, size), "\n#FILE#\n");
  auto tree = parse_yaml(main_text, "m.yaml");
  if (!tree.ok()) {
    const std::string& m = tree.error().message();
    check(m.rfind("m.yaml:", 0) == 0, "a YAML error starts with the file name");
    std::size_t p = 7, digits = 0;
    while (p < m.size() && m[p] >= '0' && m[p] <= '9') ++p, ++digits;
    check(digits > 0 && p < m.size() && m[p] == ':', "a YAML error names its line");
  } else {
    (void)yaml_to_json(*tree);
  }
  (void)parse_dataset_yaml(main_text, "dataset.yaml");
  const std::map<std::string, std::string> files = {{"/f/m.yaml", std::string(main_text)}, {"/f/n.yaml", std::string(nested)}};
  TextReader read = [&files](const std::string& p) -> Result<std::string> {
    auto it = files.find(p);
    if (it == files.end()) return not_found(p + ": no such file");
    return it->second;
  };
  auto spec = load_mixture("/f/m.yaml", read);
  check_error_named(spec);
  if (!spec.ok()) return;
  check(!spec->leaves.empty(), "a mixture has a source");
  if (spec->mode == MixMode::kWeighted) {
    double sum = 0;
    for (const MixtureLeaf& l : spec->leaves) {
      check(l.weight > 0, "weights are positive");
      sum += l.weight;
    }
    check(std::fabs(sum - 1) < 1e-9, "weights sum to 1");
  }
  auto again = load_mixture("/f/m.yaml", read);
  check(again.ok() && again->hash == spec->hash, "the spec hash is a function of the spec");
}

void yaml_seeds(const std::string& dir) {
  write_seed(dir, "blend",
             "__module__: megatron.energon\n__class__: MetadatasetV2\nsplits:\n  train:\n    blend:\n"
             "      - weight: 5\n        path: ./coco\n        subflavors: {a: 1}\n      - weight: 2\n        path: n.yaml\n"
             "\n#FILE#\n__module__: megatron.energon\n__class__: MetadatasetV2\nsplits:\n  train:\n    blend:\n"
             "    - {weight: 1, path: x.jsonl}\n    - {weight: 3, path: 'y', split_part: val}\n");
  write_seed(dir, "epochized",
             "__class__: MetadatasetV2\nsplits:\n  train:\n    blend_epochized:\n    - repetitions: 2.5\n      path: a\n"
             "    - {repetitions: 0.3, path: \"b\\u00e9\"}  # comment\n");
  write_seed(dir, "split", "split_parts:\n  train:\n  - shards/data-{000..009}.tar\nexclude:\n- shards/data-003.tar/k_1\n");
  write_seed(dir, "chatml", "__module__: megatron.bridge.data.energon.task_encoder_utils\n__class__: ChatMLWebdataset\n"
                            "field_map:\n  imgs: jpgs\n  conversation: conversation.json\nsubflavors: {}\n");
}

}  // namespace

const Target kTarTarget{"tar", "tar shard: WdsShard::from_scan (ustar/GNU/pax, grouping), read every sample, index round trip, crude records",
                        nullptr, run_tar, tar_seeds};
const Target kPickleTarget{"pickle", "restricted pickle reader (protocols 2-5, data opcodes only): values inside the input, bounded",
                           nullptr, run_pickle, pickle_seeds};
const Target kYamlSpecTarget{"yaml_spec", "YAML subset (line:col errors) + dataset.yaml + MetadatasetV2 mixture with a nested file",
                             nullptr, run_yaml, yaml_seeds};

}  // namespace stoker::fuzz
