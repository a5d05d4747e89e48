// URL validation (parse_uri) checked against libcurl's own URL parser — the one that decides
// where a request goes: every URL we accept, curl accepts too, with the same scheme, host and
// port; the forms where URL parsers disagree (a backslash in the authority, two '@') are
// refused; a malformed URL fails with InvalidArgument and a bounded message. Also the bounded
// quoting of server text and the status-line parser the request path uses.
#include <arpa/inet.h>
#include <curl/curl.h>

#include <random>
#include <string>

#include <gtest/gtest.h>

#include "stoker/base/elide.h"
#include "stoker/io/detail/response.h"
#include "stoker/io/detail/text.h"
#include "stoker/io/http_client.h"
#include "stoker/io/uri.h"

namespace stoker::io {
namespace {

struct CurlView {
  bool ok = false;
  std::string scheme, host, port;
};

// What libcurl makes of the URL we would hand it (request_url of the validated URI).
CurlView curl_parse(const std::string& url) {
  CurlView v;
  CURLU* h = curl_url();
  if (curl_url_set(h, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK) {
    v.ok = true;
    for (auto [part, out] : {std::pair{CURLUPART_SCHEME, &v.scheme},
                             std::pair{CURLUPART_HOST, &v.host}, std::pair{CURLUPART_PORT, &v.port}}) {
      char* s = nullptr;
      if (curl_url_get(h, part, &s, 0) == CURLUE_OK && s != nullptr) *out = s;
      curl_free(s);
    }
  }
  curl_url_cleanup(h);
  return v;
}

std::string canonical_host(const std::string& h) {
  if (h.size() < 2 || h[0] != '[') return h;
  in6_addr a{};
  char out[INET6_ADDRSTRLEN];
  if (inet_pton(AF_INET6, h.substr(1, h.size() - 2).c_str(), &a) != 1) return "bad " + h;
  return "[" + std::string(inet_ntop(AF_INET6, &a, out, sizeof out)) + "]";
}

// parse_uri accepted `text` (http/https): curl must agree on everything that picks the peer.
void expect_curl_agrees(const std::string& text) {
  Result<Uri> u = parse_uri(text);
  ASSERT_TRUE(u.ok()) << text << ": " << u.error().to_string();
  const CurlView c = curl_parse(request_url(text));
  ASSERT_TRUE(c.ok) << "curl refuses what we accept: " << text;
  EXPECT_EQ(c.scheme, u->scheme == Scheme::kHttps ? "https" : "http") << text;
  // IPv6 literals: the same address (curl prints its canonical form, "[::0]" as "[::]").
  EXPECT_EQ(canonical_host(c.host), canonical_host(u->host)) << text;
  EXPECT_EQ(c.port, u->port ? std::to_string(u->port) : "") << text;
}

TEST(UrlValidationTest, AcceptsWhatPeopleWriteAndCurlAgrees) {
  for (const char* url : {
           "http://127.0.0.1:8080/x/y.png", "https://bucket.s3.eu-west-1.amazonaws.com/k/a.jpg",
           "http://h/a b/ü.png", "http://h/a%20b.png?x=1&y=%2F#frag", "http://h?q=1",
           "http://[::1]:9000/x", "http://[2001:db8::7]/x", "http://user:pa%40ss@h:1/x",
           "http://my_host.internal:65535/p", "http://h/dir\\file.png", "http://h/{a}|`^<>\"",
           "http://H.EXAMPLE/Case"}) {
    SCOPED_TRACE(url);
    expect_curl_agrees(url);
  }
}

TEST(UrlValidationTest, RefusesMalformedUrlsBeforeAnyRequest) {
  const std::string long_url = "http://h/" + std::string(100 * 1024, 'a') + ".png";
  const std::string cases[] = {
      "http://127.0.0.1:8080\\@evil.example/x.png",  // WHATWG: host 127.0.0.1; curl: evil.example
      "http://a@b@c/x", "http://h:0/x", "http://h:65536/x", "http://h:99999999/x", "http://h:/x",
      "http://h:8o/x", "http:///x", "http://:80/x", "http://h\tx/y", "http://h/x\r\nHost: evil",
      "http://h/x\x1b[2J", "http://h/%zz.png", "http://h/100%", "http://h%2e/x", "http://hé.fr/x",
      "http://[::1/x", "http://[]/x", "http://[::1]x/x", "http://[fe80::1%25eth0]/x",
      "http://us er@h/x", "http://h h/x", "http://" + std::string(300, 'a') + "/x",
      "s3://bkt\\x/k", "s3://b@k/k", "s3://b/" + std::string(1025, 'k'), "s3://b/a\nb",
      long_url};
  for (const std::string& url : cases) {
    SCOPED_TRACE(shown_uri(url));
    Result<Uri> u = parse_uri(url);
    ASSERT_FALSE(u.ok());
    EXPECT_EQ(u.error().code(), ErrorCode::kInvalidArgument);
    // The message names the problem, shows the URL bounded and without control characters.
    const std::string m = u.error().to_string();
    EXPECT_LE(m.size(), kShownNameBytes + 160) << m;
    for (unsigned char c : m) EXPECT_TRUE(c >= 0x20 && c != 0x7f) << m;
  }
  EXPECT_NE(parse_uri(long_url).error().message().find("102413 bytes"), std::string::npos);
  EXPECT_NE(parse_uri(cases[0]).error().message().find("backslash"), std::string::npos);
}

TEST(UrlValidationTest, ResolvedReferencesAreValidatedToo) {
  // A relative reference is a plain path on its own; joined to an http(s) base it is a URL.
  EXPECT_EQ(resolve_uri("a\rb.png", "http://h/d/m.jsonl").error().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(resolve_uri("100%.png", "http://h/d/m.jsonl").error().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(resolve_uri(std::string(9000, 'x'), "http://h/d/m.jsonl").error().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(resolve_uri(std::string(1100, 'k'), "s3://b/d/m.jsonl").error().code(),
            ErrorCode::kInvalidArgument);
  EXPECT_EQ(*resolve_uri("a b.png", "http://h/d/m.jsonl"), "http://h/d/a b.png");
}

// A small in-test fuzzer: mutations of valid URLs; whatever parse_uri accepts, curl must parse
// to the same peer (the `uri` fuzz target runs the same invariant for hours).
TEST(UrlValidationTest, MutatedUrlsNeverDisagreeWithCurl) {
  const std::string seeds[] = {"http://127.0.0.1:8080/a/b.png?x=1", "https://u:p@h.example:443/k",
                               "http://[::1]:80/x#f"};
  const std::string alphabet = std::string("\\@:/?#[]%.-_~ \t\x01\x7f\xc3\xa9") + "09azAZ";
  std::mt19937 rng(2029);
  int accepted = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string s = seeds[rng() % 3];
    for (int k = 1 + rng() % 3; k > 0; --k) {
      const std::size_t at = rng() % (s.size() + 1);
      const char c = alphabet[rng() % alphabet.size()];
      switch (rng() % 3) {
        case 0: s.insert(at, 1, c); break;
        case 1: if (at < s.size()) s[at] = c; break;
        default: if (at < s.size()) s.erase(at, 1); break;
      }
    }
    Result<Uri> u = parse_uri(s);
    if (!u.ok() || (u->scheme != Scheme::kHttp && u->scheme != Scheme::kHttps)) continue;
    ++accepted;
    SCOPED_TRACE(s);
    expect_curl_agrees(s);
    if (HasFailure()) return;
  }
  EXPECT_GT(accepted, 1000);
}

TEST(ServerTextTest, BoundedOneLineUtf8) {
  EXPECT_EQ(detail::server_text("  Access\r\n\tDenied \x1b[31m ", 256), "Access Denied [31m");
  EXPECT_EQ(detail::server_text("caf\xc3\xa9 \xff\xfe", 256), "caf\xc3\xa9 ??");
  const std::string huge(50 << 20, 'x');
  EXPECT_LE(detail::server_text(huge, 256).size(), 256u);
  auto [code, message] = parse_xml_error("<Error><Code>AccessDenied</Code><Message>" +
                                         std::string(1 << 20, 'm') + "</Message></Error>");
  EXPECT_EQ(code, "AccessDenied");
  EXPECT_LE(message.size(), kShownServerTextBytes);
  EXPECT_EQ(parse_xml_error("<Code>" + std::string(100, 'C') + "</Code>").first, "");
  EXPECT_EQ(parse_xml_error("<Code>Bad Code\n</Code>").first, "");
}

TEST(ResponseTest, StatusLines) {
  EXPECT_EQ(detail::parse_status_line("HTTP/1.1 403 Forbidden\r\n"), 403);
  EXPECT_EQ(detail::parse_status_line("HTTP/2 200\r\n"), 200);
  EXPECT_EQ(detail::parse_status_line("HTTP/1.0 302"), 302);
  EXPECT_EQ(detail::parse_status_line("HTTP/1.1 200 " + std::string(1 << 20, 'r') + "\r\n"), 200);
  for (const char* bad : {"Content-Length: 5\r\n", "\r\n", "HTTP/1.1 20\r\n", "HTTP/1.1 2000\r\n",
                          "HTTP/ 200\r\n", "HTTP/1.1 abc\r\n", "http/1.1 200\r\n"})
    EXPECT_EQ(detail::parse_status_line(bad), -1) << bad;
}

// ETag and Content-Range are the server's words too: quoted bounded in the errors they cause.
TEST(ResponseTest, ServerChosenHeaderValuesAreQuotedBounded) {
  HttpResponse r;
  r.status = 206;
  r.etag = std::string(60 << 10, 'e') + "\x1b[2J";
  EXPECT_LT(detail::body_for_range(r, ReadOptions{.offset = 0, .length = 4, .if_match = "x"}, "u")
                .error().to_string().size(), 400u);
  r.etag.clear();
  r.content_range = "bytes " + std::string(60 << 10, '9');
  const Error e = detail::body_for_range(r, ReadOptions{.offset = 0, .length = 4}, "u").error();
  EXPECT_LT(e.to_string().size(), 400u);
  EXPECT_EQ(e.code(), ErrorCode::kDataLoss);
}

}  // namespace
}  // namespace stoker::io
