#include "stoker/base/redact.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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

// Issue 30 §4: an S3-compatible endpoint that echoes the Authorization header in its error
// message — without the header's name, in XML, JSON or prose — must not get the credential or
// the signature printed.
TEST(RedactTest, EchoedAuthorizationHeaderForms) {
  const std::string sig = "fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024";
  const std::string v4 = "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/"
                         "aws4_request, SignedHeaders=host;range;x-amz-date, Signature=" + sig;
  const std::vector<std::string> echoes = {
      "<Error><Code>AccessDenied</Code><AuthorizationHeader>" + v4 +
          "</AuthorizationHeader></Error>",
      "HTTP 403: the request signature we calculated does not match (" + v4 + ")",
      "{\"Authorization\": \"" + v4 + "\"}",
      "Authorization=" + v4,
      "bad header 'Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
      "Signature=" + sig + "'",
      "SigV2: AWS AKIAIOSFODNN7EXAMPLE:frJIUN8DYpKDtOLCwo//yllqDzg= rejected",
      "key id ASIAIOSFODNN7EXAMPLE expired",
  };
  for (const std::string& e : echoes) {
    const std::string r = redact_secrets(e);
    EXPECT_EQ(r.find("IOSFODNN7EXAMPLE"), std::string::npos) << r;
    EXPECT_EQ(r.find(sig), std::string::npos) << r;
    EXPECT_EQ(r.find("yllqDzg"), std::string::npos) << r;
    EXPECT_NE(r.find("REDACTED"), std::string::npos) << r;
  }
  EXPECT_EQ(redact_secrets("<AuthorizationHeader>" + v4 + "</AuthorizationHeader>"),
            "<AuthorizationHeader>AWS4-HMAC-SHA256 REDACTED</AuthorizationHeader>");
  EXPECT_EQ(redact_secrets("x, Signature=abc, y"), "x, Signature=REDACTED, y");
  EXPECT_EQ(redact_secrets("Bearer eyJhbGciOi.x.y\nnext"), "Bearer REDACTED\nnext");
  // Prose around them stays readable.
  EXPECT_EQ(redact_secrets("AWS returned 403 for images/a.png"), "AWS returned 403 for images/a.png");
  EXPECT_EQ(redact_secrets("Authorization header is malformed"), "Authorization header is malformed");
  EXPECT_EQ(redact_secrets("the signature does not match"), "the signature does not match");
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
