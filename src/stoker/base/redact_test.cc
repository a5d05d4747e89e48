#include "stoker/base/redact.h"

#include <gtest/gtest.h>

#include "stoker/base/result.h"

namespace stoker {
namespace {

TEST(RedactTest, PresignedS3UrlKeepsPathAndHarmlessParameters) {
  const std::string url =
      "https://b.s3.amazonaws.com/img/a.jpg?X-Amz-Algorithm=AWS4-HMAC-SHA256"
      "&X-Amz-Credential=AKIAEXAMPLE%2F20261201%2Fus-east-1%2Fs3%2Faws4_request"
      "&X-Amz-Date=20261201T000000Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host"
      "&X-Amz-Security-Token=FwoGZXIvYXdzEJr&X-Amz-Signature=deadbeefcafe";
  const std::string r = redact_secrets("GET " + url + ": HTTP 403");
  EXPECT_EQ(r,
            "GET https://b.s3.amazonaws.com/img/a.jpg?X-Amz-Algorithm=AWS4-HMAC-SHA256"
            "&X-Amz-Credential=REDACTED&X-Amz-Date=20261201T000000Z&X-Amz-Expires=3600"
            "&X-Amz-SignedHeaders=host&X-Amz-Security-Token=REDACTED"
            "&X-Amz-Signature=REDACTED: HTTP 403");
}

TEST(RedactTest, OtherSchemesParametersAndCase) {
  EXPECT_EQ(redact_secrets("https://acct.blob.core.windows.net/c/x.png?sv=2021&sig=abc%2B/x=&se=1"),
            "https://acct.blob.core.windows.net/c/x.png?sv=2021&sig=REDACTED&se=1");
  EXPECT_EQ(redact_secrets("http://h/x?TOKEN=t0k#frag"), "http://h/x?TOKEN=REDACTED#frag");
  EXPECT_EQ(redact_secrets("http://h/x?Signature=s&AWSAccessKeyId=AKIA&Expires=9"),
            "http://h/x?Signature=REDACTED&AWSAccessKeyId=REDACTED&Expires=9");
  EXPECT_EQ(redact_secrets("x?X-Goog-Signature=ff&X-Goog-Credential=svc"),
            "x?X-Goog-Signature=REDACTED&X-Goog-Credential=REDACTED");
  // Not a query: a file name with '=' in it stays.
  EXPECT_EQ(redact_secrets("/data/sig=1/a.jpg and a=b"), "/data/sig=1/a.jpg and a=b");
  // A parameter merely containing a secret name stays.
  EXPECT_EQ(redact_secrets("http://h/x?design=1&signatures_seen=2"),
            "http://h/x?design=1&signatures_seen=2");
}

TEST(RedactTest, ValueEndsAtQuotesAndWhitespace) {
  EXPECT_EQ(redact_secrets("{\"uri\": \"http://h/a?sig=zzz\", \"n\": 1}"),
            "{\"uri\": \"http://h/a?sig=REDACTED\", \"n\": 1}");
  EXPECT_EQ(redact_secrets("'http://h/a?token=q' failed\n"), "'http://h/a?token=REDACTED' failed\n");
}

TEST(RedactTest, UserinfoInAuthority) {
  EXPECT_EQ(redact_secrets("GET https://alice:hunter2@h:8/p?q=1"), "GET https://REDACTED@h:8/p?q=1");
  EXPECT_EQ(redact_secrets("s3://bucket/key@v2"), "s3://bucket/key@v2");  // '@' after the host
  EXPECT_EQ(redact_secrets("http://h/x"), "http://h/x");
}

TEST(RedactTest, HeaderValues) {
  EXPECT_EQ(redact_secrets("sent Authorization: AWS4-HMAC-SHA256 Credential=AKIA/x, Signature=f\nok"),
            "sent Authorization: REDACTED\nok");
  EXPECT_EQ(redact_secrets("x-amz-security-token: FQoG\""), "x-amz-security-token: REDACTED\"");
}

TEST(RedactTest, EveryErrorMessageAndContextIsRedacted) {
  Error e = not_found("GET https://b.s3.amazonaws.com/k?X-Amz-Signature=secret123: HTTP 404");
  e.with_context("reading http://u:pw@h/m.jsonl?token=tok456");
  const std::string s = e.to_string();
  EXPECT_EQ(s.find("secret123"), std::string::npos) << s;
  EXPECT_EQ(s.find("tok456"), std::string::npos) << s;
  EXPECT_EQ(s.find("pw@"), std::string::npos) << s;
  EXPECT_NE(s.find("https://b.s3.amazonaws.com/k?X-Amz-Signature=REDACTED"), std::string::npos) << s;
}

}  // namespace
}  // namespace stoker
