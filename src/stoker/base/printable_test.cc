#include "stoker/base/printable.h"

#include <gtest/gtest.h>

#include "stoker/base/json_text.h"

namespace stoker {
namespace {

TEST(PrintableTest, ControlsBecomeVisibleEscapes) {
  EXPECT_EQ(printable("id-\x1b[31mred\x1b[0m"), "id-\\x1b[31mred\\x1b[0m");
  EXPECT_EQ(printable("a\n{\"sample\": 0}\r\tb"), "a\\n{\"sample\": 0}\\r\\tb");
  EXPECT_EQ(printable(std::string("nul\0x\x7f", 6)), "nul\\x00x\\x7f");
  EXPECT_EQ(printable("\x07\x08"), "\\x07\\x08");  // BEL, BS
}

TEST(PrintableTest, Utf8PassesButC1BidiAndBrokenBytesDoNot) {
  EXPECT_EQ(printable("蓝色 émoji 🙂 ok"), "蓝色 émoji 🙂 ok");
  EXPECT_EQ(printable("\xc2\x9b" "31m"), "\\u009b31m");             // C1 CSI
  EXPECT_EQ(printable("a\xe2\x80\xae" "b"), "a\\u202eb");              // RIGHT-TO-LEFT OVERRIDE
  EXPECT_EQ(printable("\xff\xfe"), "\\xff\\xfe");                   // not UTF-8
  EXPECT_EQ(printable("\xc0\xaf"), "\\xc0\\xaf");                   // overlong '/'
  EXPECT_EQ(printable("\xed\xa0\x80"), "\\xed\\xa0\\x80");          // a surrogate
  EXPECT_EQ(printable("\xe4\xb8"), "\\xe4\\xb8");                   // cut short
  EXPECT_EQ(printable("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80"); // over U+10FFFF
}

// Issue 30 §5: a manifest name that is not UTF-8 must still give a valid JSON line (the error
// report's "file" field): its bytes are written as \xNN text, and UTF-8 passes unchanged.
TEST(PrintableTest, JsonStringsStayValidUtf8) {
  EXPECT_EQ(json_string("data-\xff\xfe.jsonl"), "\"data-\\\\xff\\\\xfe.jsonl\"");
  EXPECT_EQ(json_string("蓝色\x1b"), "\"蓝色\\u001b\"");
  EXPECT_EQ(json_string("\xe2\x80\xae"), "\"\xe2\x80\xae\"");  // valid UTF-8: JSON escapes it not
}

}  // namespace
}  // namespace stoker
