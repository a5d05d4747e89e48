// `.tar.idx` and sample grouping against independent implementations: Python's tarfile (member
// offsets, Energon's regexes re-implemented in the test script) on archives written by GNU tar
// (gnu, pax, ustar formats) and by Python's tarfile (gnu, pax with a global header).
#include <gtest/gtest.h>

#include "stoker/dataset/sources_test_util.h"
#include "stoker/dataset/wds.h"

namespace stoker::dataset {
namespace {

using testing::TempDir;

// Energon's prepare + reader logic, written independently in Python: index bytes to argv[2],
// samples as JSON lines "key_hex part_hex offset_data size".
constexpr char kOracle[] = R"PY(
import re, struct, sys, tarfile
split_name_re = re.compile(r"^((?:.*/|)[^.]+)[.]([^/]*)$")
skip_meta_re = re.compile(r"__[^/]*__($|/)")
offsets, lines, last = [], [], None
def b(s): return s.encode("utf-8", "surrogateescape").hex()
with tarfile.open(sys.argv[1], "r:") as tar:
    for m in tar:
        if not m.isreg() or skip_meta_re.match(m.name):
            continue
        mm = split_name_re.match(m.name)
        if not mm:
            continue
        if mm.group(1) != last:
            offsets.append(m.offset)
            last = mm.group(1)
            lines.append("S " + b(last))
        lines.append("P %s %d %d" % (b(mm.group(2)), m.offset_data, m.size))
    offsets.append(tar.offset)
open(sys.argv[2], "wb").write(b"".join(struct.pack("<Q", o) for o in offsets))
print("\n".join(lines))
)PY";

std::string hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += d[c >> 4];
    out += d[c & 15];
  }
  return out;
}

// The tree every archive is made from: short and long names, dots in folders, a name over 255
// bytes, non-ASCII, meta members, a file without a dot, a hidden file, multi-part samples, a
// member spanning many blocks.
std::vector<std::pair<std::string, std::string>> tree(bool ustar_only) {
  // ustar splits a long path at a '/' into prefix (≤ 155) + name (≤ 100): two folders.
  const std::string deep = ustar_only ? std::string(60, 'd') + "/" + std::string(60, 'e') : std::string(120, 'd');
  std::vector<std::pair<std::string, std::string>> f = {
      {"s000.jpg", "jpeg bytes 0"},
      {"s000.json", "{\"a\": 0}"},
      {"dir.with.dots/s001.jpg", std::string(1500, 'x')},
      {"dir.with.dots/s001.txt", "t"},
      {deep + "/s002.png", std::string(100000, 'p')},
      {deep + "/s002.cls", "7"},
      {"\xC3\xBCn\xC3\xAF" "c\xC3\xB6" "d\xC3\xA9_\xE5\x90\x8D/s003.jpg", "u"},
      {"\xC3\xBCn\xC3\xAF" "c\xC3\xB6" "d\xC3\xA9_\xE5\x90\x8D/s003.json", "{}"},
      {"__meta__/info.json", "meta"},
      {"README", "no dot"},
      {"hidden/.dotfile", "h"},
      {"s004.0.jpg", "a"},
      {"s004.1.jpg", "b"},
      {"s004.json", ""},
  };
  if (!ustar_only) {
    f.push_back({std::string(150, 'x') + "/" + std::string(150, 'y') + ".jpg", "long"});
    f.push_back({std::string(150, 'x') + "/" + std::string(150, 'y') + ".txt", "long2"});
  }
  return f;
}

class WdsIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::have_python()) GTEST_SKIP() << "needs /usr/bin/python3 (tarfile)";
  }

  void make_tree(const std::string& root, bool ustar_only) {
    for (const auto& [name, data] : tree(ustar_only)) dir_.write(root + "/" + name, data);
    // a symlink (non-regular member) with a target longer than 100 bytes (GNU 'K' header)
    std::filesystem::create_symlink(std::string(130, 't') + ".jpg", dir_ / (root + "/link.jpg"));
  }

  // Our index and samples vs the oracle's, for one archive.
  void check(const std::string& tar, const std::string& what) {
    SCOPED_TRACE(what);
    const std::string idx = tar + ".oracle-idx";
    const std::string listing = testing::python(dir_, kOracle, tar + " " + idx);
    auto shard = WdsShard::from_scan(std::shared_ptr<const ByteSource>(*open_file_source(tar)));
    ASSERT_TRUE(shard.ok()) << shard.error().to_string();
    ASSERT_TRUE((*shard)->cacheable()) << ((*shard)->damage() ? (*shard)->damage()->to_string() : "problems");
    const auto ours = (*shard)->index_bytes();
    const std::string theirs = testing::read_all(idx);
    ASSERT_EQ(std::string(ours.begin(), ours.end()), theirs) << "index bytes differ";
    ASSERT_GE((*shard)->count(), 5);

    std::string got;
    for (std::int64_t i = 0; i < (*shard)->count(); ++i) {
      auto s = (*shard)->read(i);
      ASSERT_TRUE(s.ok()) << s.error().to_string();
      got += "S " + hex(s->key) + "\n";
      for (const WdsPart& p : s->parts) {
        got += "P " + hex(p.name) + " " + std::to_string(p.offset) + " " + std::to_string(p.size) + "\n";
        // the bytes at the part's range are the file's
        const std::string member_file = dir_ / ("root/" + p.member.substr(p.member.rfind("./", 0) == 0 ? 2 : 0));
        auto bytes = (*shard)->read_part(*s, p);
        ASSERT_TRUE(bytes.ok());
        if (std::filesystem::exists(member_file)) {
          EXPECT_EQ(std::string(bytes->begin(), bytes->end()), testing::read_all(member_file)) << p.member;
        }
      }
    }
    EXPECT_EQ(got, listing);

    // Reading through the oracle's index gives the same samples.
    auto again = WdsShard::from_index(std::shared_ptr<const ByteSource>(*open_file_source(tar)),
                                      testing::bytes_of(theirs));
    ASSERT_TRUE(again.ok()) << again.error().to_string();
    for (std::int64_t i = 0; i < (*again)->count(); ++i) {
      auto s = (*again)->read(i);
      ASSERT_TRUE(s.ok()) << s.error().to_string();
    }
  }

  TempDir dir_;
};

TEST_F(WdsIndexTest, GnuTarFormatsMatchTarfile) {
  if (!testing::have_gnu_tar()) GTEST_SKIP() << "needs GNU tar";
  make_tree("root", false);
  for (const char* format : {"gnu", "pax", "oldgnu"}) {
    const std::string out = dir_ / (std::string("gnu-") + format + ".tar");
    auto [rc, text] = testing::run("tar --format=" + std::string(format) + " --sort=name -cf " + out + " -C " +
                                   (dir_ / "root") + " . 2>&1");
    ASSERT_EQ(rc, 0) << text;
    check(out, std::string("GNU tar --format=") + format);
  }
}

TEST_F(WdsIndexTest, GnuTarUstarPrefixMatchesTarfile) {
  if (!testing::have_gnu_tar()) GTEST_SKIP() << "needs GNU tar";
  make_tree("root", true);
  std::filesystem::remove(dir_ / "root/link.jpg");  // ustar cannot hold its long target
  const std::string out = dir_ / "ustar.tar";
  auto [rc, text] = testing::run("tar --format=ustar --sort=name -cf " + out + " -C " + (dir_ / "root") + " . 2>&1");
  ASSERT_EQ(rc, 0) << text;
  check(out, "GNU tar --format=ustar (names split into prefix + name)");
}

TEST_F(WdsIndexTest, PythonTarfileFormatsMatch) {
  make_tree("root", false);
  for (const char* format : {"GNU_FORMAT", "PAX_FORMAT"}) {
    const std::string out = dir_ / (std::string("py-") + format + ".tar");
    testing::python(dir_, std::string(R"PY(
import os, sys, tarfile
root, out = sys.argv[1], sys.argv[2]
names = []
for d, dirs, files in os.walk(root):
    dirs.sort()
    for f in sorted(files):
        names.append(os.path.relpath(os.path.join(d, f), root))
extra = {"comment": "a global header"} if tarfile.)PY") + format + R"PY( == tarfile.PAX_FORMAT else {}
with tarfile.open(out, "w", format=tarfile.)PY" + format + R"PY(, pax_headers=extra) as t:
    for n in sorted(names):
        t.add(os.path.join(root, n), arcname=n, recursive=False)
)PY",
                    (dir_ / "root") + " " + out);
    check(out, std::string("Python tarfile ") + format);
  }
}

TEST_F(WdsIndexTest, SampleNameSplitMatchesEnergonRegexes) {
  // Every name over a small alphabet up to length 6, through both regexes.
  std::vector<std::string> names;
  const std::string alphabet = "a./_";
  std::vector<std::string> level = {""};
  for (int len = 1; len <= 6; ++len) {
    std::vector<std::string> next;
    for (const auto& s : level)
      for (char c : alphabet) next.push_back(s + c);
    names.insert(names.end(), next.begin(), next.end());
    level = std::move(next);
  }
  std::string input;
  for (const auto& n : names) input += n + "\n";
  const std::string file = dir_.write("names.txt", input);
  const std::string out = testing::python(dir_, R"PY(
import re, sys
split_name_re = re.compile(r"^((?:.*/|)[^.]+)[.]([^/]*)$")
skip_meta_re = re.compile(r"__[^/]*__($|/)")
for n in open(sys.argv[1]).read().split("\n")[:-1]:
    m = split_name_re.match(n)
    print("%s|%s|%d" % (m.group(1) if m else "-", m.group(2) if m else "-", 1 if skip_meta_re.match(n) else 0))
)PY", file);
  std::istringstream lines(out);
  std::string line;
  for (const auto& n : names) {
    ASSERT_TRUE(std::getline(lines, line));
    const auto s = split_sample_name(n);
    const std::string ours = (s ? std::string(s->first) + "|" + std::string(s->second) : std::string("-|-")) +
                             "|" + (is_meta_member(n) ? "1" : "0");
    ASSERT_EQ(ours, line) << "name '" << n << "'";
  }
}

}  // namespace
}  // namespace stoker::dataset
