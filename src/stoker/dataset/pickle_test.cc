// The restricted pickle reader against Python's own pickler (protocols 2-5): values equal to the
// objects pickled, and every pickle holding an opcode outside the allow-list (decided by
// pickletools in the test script, not by the reader) refused; hostile pickles.
#include "stoker/dataset/pickle.h"

#include <gtest/gtest.h>

#include "stoker/dataset/sources_test_util.h"

namespace stoker::dataset {
namespace {

using testing::TempDir;

template <std::size_t N>
std::string lit(const char (&s)[N]) {  // a literal with NULs inside
  return std::string(s, N - 1);
}

// Writes case_N.pkl files and one line per case: "ACCEPT <repr>" or "REFUSE <opcode name>".
constexpr char kGenerator[] = R"PY(
import os, pickle, pickletools, sys
out = sys.argv[1]
ALLOWED = {"PROTO", "FRAME", "STOP", "MARK", "EMPTY_LIST", "APPEND", "APPENDS", "LIST", "EMPTY_TUPLE",
           "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "NONE", "NEWTRUE", "NEWFALSE", "BININT", "BININT1",
           "BININT2", "LONG1", "LONG4", "BINFLOAT", "SHORT_BINBYTES", "BINBYTES", "BINBYTES8",
           "BYTEARRAY8", "SHORT_BINUNICODE", "BINUNICODE", "BINUNICODE8", "MEMOIZE", "BINPUT",
           "LONG_BINPUT", "BINGET", "LONG_BINGET"}
def r(o):
    if o is None: return "N"
    if o is True: return "T"
    if o is False: return "F"
    if isinstance(o, int): return "i%d" % o
    if isinstance(o, float): return "f%.17g" % o
    if isinstance(o, (bytes, bytearray)): return "b" + bytes(o).hex()
    if isinstance(o, str): return "s" + o.encode("utf-8", "surrogatepass").hex()
    if isinstance(o, list): return "[" + ",".join(r(x) for x in o) + "]"
    if isinstance(o, tuple): return "(" + ",".join(r(x) for x in o) + ")"
    raise TypeError(type(o))
class Thing: pass
img = bytes(range(256)) * 3
shared = b"shared frame"
objects = [
    [b"\xff\xd8jpeg one", b"\x89PNG two", img],
    [[b"f0", b"f1", b"f2"], [b"g0"]],
    [shared, shared, [shared]],
    "caf\u00e9 \u540d\u524d \U0001F600", "x" * 300, b"y" * 70000,
    [0, 1, 255, 256, 65535, 65536, -1, -129, 2**31 - 1, -2**31, 2**31, 2**40, 2**63 - 1, -2**63],
    [0.0, -1.5, 1e300, 3.141592653589793], [True, False, None],
    (), (1,), (1, 2), (1, 2, 3), (1, 2, 3, 4), ([], [()]), list(range(2500)), bytearray(b"ba"),
    {"a": 1}, {1, 2}, Thing(), 2**64, "\ud800",
]
n = 0
for proto in (2, 3, 4, 5):
    for o in objects:
        try:
            data = pickle.dumps(o, protocol=proto)
        except Exception:
            continue
        bad = [op.name for op, arg, pos in pickletools.genops(data) if op.name not in ALLOWED]
        bad += ["LONG" for op, arg, pos in pickletools.genops(data) if isinstance(arg, int) and not -2**63 <= arg < 2**63]
        path = os.path.join(out, "case_%d.pkl" % n)
        open(path, "wb").write(data)
        print(path + " " + ("REFUSE " + bad[0] if bad else "ACCEPT " + r(o)))
        n += 1
)PY";

TEST(PickleTest, MatchesPythonPicklerAndRefusesEveryOtherOpcode) {
  if (!testing::have_python()) GTEST_SKIP() << "needs /usr/bin/python3";
  TempDir dir;
  const std::string out = testing::python(dir, kGenerator, dir.path().string());
  std::istringstream lines(out);
  std::string line;
  int accepted = 0, refused = 0;
  while (std::getline(lines, line)) {
    const std::size_t sp = line.find(' ');
    const std::string path = line.substr(0, sp);
    const std::string verdict = line.substr(sp + 1, 6);
    const std::string rest = line.substr(sp + 8);
    const auto bytes = testing::bytes_of(testing::read_all(path));
    auto v = read_pickle(bytes);
    if (verdict == "ACCEPT") {
      ASSERT_TRUE(v.ok()) << path << ": " << v.error().to_string();
      EXPECT_EQ(pickle_repr(*v, bytes), rest) << path;
      ++accepted;
    } else {
      ASSERT_FALSE(v.ok()) << path << " holds " << rest << " but was read";
      // The refusal names an opcode (or the 64-bit bound for a wide LONG).
      EXPECT_TRUE(v.error().message().find("opcode") != std::string::npos ||
                  v.error().message().find("wider than 64 bits") != std::string::npos)
          << v.error().to_string();
      ++refused;
    }
  }
  EXPECT_GT(accepted, 60);
  EXPECT_GT(refused, 15);
}

TEST(PickleTest, ForbiddenOpcodesAreNamed) {
  // protocol 4: builtins.eval("1") via STACK_GLOBAL + TUPLE1 + REDUCE
  const std::string evil = "\x80\x04\x8c\x08" "builtins\x94\x8c\x04" "eval\x94\x93\x94\x8c\x01" "1\x94\x85\x94R\x94.";
  auto r = read_pickle(testing::bytes_of(evil));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("opcode STACK_GLOBAL (0x93) at byte 20 is not allowed"), std::string::npos)
      << r.error().to_string();
  // protocol 0 os.system: no PROTO
  auto old = read_pickle(testing::bytes_of("cos\nsystem\n(S'true'\ntR."));
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.error().message().find("not a protocol 2-5 pickle"), std::string::npos);
  auto dict = read_pickle(testing::bytes_of(std::string("\x80\x04}\x94.", 5)));
  ASSERT_FALSE(dict.ok());
  EXPECT_NE(dict.error().message().find("EMPTY_DICT ('}')"), std::string::npos) << dict.error().to_string();
}

TEST(PickleTest, HostileShapesAreBounded) {
  // 100 nested lists
  std::string deep = "\x80\x04";
  for (int i = 0; i < 100; ++i) deep += "]";
  for (int i = 0; i < 99; ++i) deep += "a";
  deep += ".";
  auto d = read_pickle(testing::bytes_of(deep));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code(), ErrorCode::kResourceExhausted);
  // a list appended to itself (a cycle)
  auto cyc = read_pickle(testing::bytes_of(std::string("\x80\x04]\x94h\x00" "a.", 8)));
  ASSERT_FALSE(cyc.ok());
  EXPECT_NE(cyc.error().message().find("cycle"), std::string::npos) << cyc.error().to_string();
  // "billion laughs": each level a pair of references to the previous one (2^40 values)
  std::string laughs = "\x80\x04" "C\x01x\x94";
  for (int i = 0; i < 40; ++i) laughs += "h" + std::string(1, static_cast<char>(i)) + "h" + std::string(1, static_cast<char>(i)) + "\x86\x94";
  laughs += ".";
  PickleLimits lim;
  lim.max_depth = 64;
  auto l = read_pickle(testing::bytes_of(laughs), lim);
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.error().message().find("shared references"), std::string::npos) << l.error().to_string();
  // every truncation of a real pickle is an error, never a crash
  const std::string good = lit("\x80\x04\x95\x0f\x00\x00\x00\x00\x00\x00\x00]\x94(C\x02" "ab\x94" "C\x02" "cd\x94" "e.");
  { auto g = read_pickle(testing::bytes_of(good)); ASSERT_TRUE(g.ok()) << g.error().to_string(); }
  for (std::size_t n = 0; n + 1 < good.size(); ++n) EXPECT_FALSE(read_pickle(testing::bytes_of(good.substr(0, n))).ok()) << n;
  // a length running past the end, a memo GET of nothing, APPEND to a tuple, a 9-byte integer
  EXPECT_FALSE(read_pickle(testing::bytes_of(std::string("\x80\x04" "B\xff\xff\xff\x7f" "ab.", 10))).ok());
  EXPECT_FALSE(read_pickle(testing::bytes_of(std::string("\x80\x04h\x05.", 5))).ok());
  EXPECT_FALSE(read_pickle(testing::bytes_of(std::string("\x80\x04)N" "a.", 6))).ok());
  EXPECT_FALSE(read_pickle(testing::bytes_of(std::string("\x80\x04\x8a\x09" "123456789.", 14))).ok());
}

}  // namespace
}  // namespace stoker::dataset
