// What servers and configuration files hand the io module: HTTP response headers and ranged
// bodies, S3/STS XML bodies, the AWS shared files and credential JSON, and the media references of
// a manifest (URIs resolved against the manifest's own).
#include <arpa/inet.h>
#include <curl/curl.h>

#include <cctype>
#include <string>

#include "stoker/base/elide.h"
#include "stoker/fuzz/scratch.h"
#include "stoker/fuzz/targets.h"
#include "stoker/io/aws_config.h"
#include "stoker/io/credentials.h"
#include "stoker/io/detail/credential_sources.h"
#include "stoker/io/detail/response.h"
#include "stoker/io/detail/text.h"
#include "stoker/io/http_client.h"
#include "stoker/io/uri.h"

namespace stoker::fuzz {
namespace {

bool has_control(std::string_view s) {
  for (unsigned char c : s)
    if (c < 0x20 || c == 0x7f) return true;
  return false;
}

// Byte 0: status 200/206 and an If-Match; bytes 1-2: the range asked for (offset, length or -1);
// then header lines up to a blank line, then the body.
void run_http(const std::uint8_t* data, std::size_t size) {
  if (size < 3) return;
  io::ReadOptions range{.offset = data[1] % 64, .length = data[2] == 255 ? -1 : data[2] % 128};
  if (data[0] & 2) range.if_match = "abc";
  io::HttpResponse resp;
  resp.status = (data[0] & 1) ? 206 : 200;
  std::string_view rest = as_text(data + 3, size - 3);
  while (!rest.empty()) {
    const std::size_t nl = rest.find('\n');
    const std::string_view line = rest.substr(0, nl == std::string_view::npos ? rest.size() : nl + 1);
    rest.remove_prefix(line.size());
    if (line == "\n" || line == "\r\n") break;
    const int status = io::detail::parse_status_line(line);
    check(status >= -1 && status <= 999, "a status is three digits or none");
    io::detail::apply_header_line(line, &resp);
  }
  check(resp.content_length >= -1, "a Content-Length is a size or unknown");
  resp.body.assign(rest.begin(), rest.end());
  const std::size_t body = resp.body.size();
  Result<io::Bytes> b = io::detail::body_for_range(std::move(resp), range, "http://h/k");
  if (!b.ok()) {
    check(!b.error().message().empty(), "an error carries a message");
    return;
  }
  check(b->size() <= body, "never more than the server sent");
  if (range.length >= 0) check(b->size() <= static_cast<std::size_t>(range.length), "never more than asked");
}

void run_xml(const std::uint8_t* data, std::size_t size) {
  const std::string body(as_text(data, size));
  const auto [code, message] = io::parse_xml_error(body);
  check(code.size() <= 64 && message.size() <= kShownServerTextBytes, "quoted server text is bounded");
  check(!has_control(code) && !has_control(message), "quoted server text is one line");
  for (const char* name : {"Key", "Code", "Message", "AccessKeyId"})
    check(io::detail::xml_text(body, name).size() <= body.size(), "entities only shrink");
  Result<io::AwsCredentials> c = io::detail::parse_sts_credentials(body);
  if (!c.ok()) check(!c.error().message().empty(), "an error carries a message");
}

// The INI files, credential JSON (container/IMDS, credential_process), a credential_process
// command line, an Expiration time.
void run_aws(const std::uint8_t* data, std::size_t size) {
  const std::string text(as_text(data, size));
  (void)io::parse_ini(text);
  for (auto r : {io::detail::parse_json_credentials(text, "container"),
                 io::detail::parse_process_credentials(text)}) {
    if (!r.ok()) check(!r.error().message().empty(), "an error carries a message");
  }
  (void)io::detail::shell_split(text);
  (void)io::parse_iso8601(text);
  auto [rel, full] = split2(text, "\n");
  (void)io::detail::container_url(std::string(rel), std::string(full));
}

bool has_dot_segment(std::string_view p) {
  for (std::size_t i = 0; i <= p.size();) {
    std::size_t j = p.find('/', i);
    if (j == std::string_view::npos) j = p.size();
    const std::string_view seg = p.substr(i, j - i);
    if (seg == "." || seg == "..") return true;
    i = j + 1;
  }
  return false;
}

// What libcurl makes of a URL: its scheme, host (IPv6 in canonical form) and port, or ok=false.
struct CurlView {
  bool ok = false;
  std::string scheme, host, port;
};

std::string canonical_host(std::string h) {
  if (h.size() < 2 || h[0] != '[') return h;
  in6_addr a{};
  char out[INET6_ADDRSTRLEN];
  if (inet_pton(AF_INET6, h.substr(1, h.size() - 2).c_str(), &a) != 1) return "bad " + h;
  return "[" + std::string(inet_ntop(AF_INET6, &a, out, sizeof out)) + "]";
}

CurlView curl_view(const std::string& url) {
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
  v.host = canonical_host(v.host);
  return v;
}

// The validation rules of parse_uri, re-read from what it accepted (uri.h), and libcurl — the
// parser that picks the peer — agreeing on scheme, host and port.
void check_accepted(std::string_view text, const io::Uri& u) {
  if (u.scheme == io::Scheme::kS3) {
    check(!u.authority.empty() && u.authority.size() <= 255, "a bucket of 1-255 bytes");
    for (char c : u.authority)
      check(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_',
            "bucket characters");
    check(u.path.size() <= io::kMaxS3KeyBytes && !has_control(u.path), "an S3 key S3 accepts");
    return;
  }
  if (u.scheme != io::Scheme::kHttp && u.scheme != io::Scheme::kHttps) return;
  check(text.size() <= io::kMaxUrlBytes, "a URL within the length limit");
  check(!has_control(text), "no control character in a URL");
  check(u.authority.find('\\') == std::string::npos, "no backslash in the authority");
  check(u.port >= 0 && u.port <= 65535, "a port in range");
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%')
      check(i + 2 < text.size() && std::isxdigit(static_cast<unsigned char>(text[i + 1])) &&
                std::isxdigit(static_cast<unsigned char>(text[i + 2])),
            "every '%' starts an escape");
  }
  const CurlView c = curl_view(io::request_url(text));
  check(c.ok, "libcurl parses every URL parse_uri accepts");
  check(c.scheme == (u.scheme == io::Scheme::kHttps ? "https" : "http"), "the same scheme as libcurl");
  check(c.host == canonical_host(u.host), "the same host as libcurl");
  check(c.port == (u.port ? std::to_string(u.port) : ""), "the same port as libcurl");
}

// Messages show data bounded and without control characters.
void check_message(const Error& e) {
  const std::string m = e.to_string();
  check(!m.empty(), "an error carries a message");
  check(m.size() <= kShownNameBytes + 400, "a URI error is bounded");
}

// "ref\nbase": a manifest's media reference resolved against the manifest's own location.
void run_uri(const std::uint8_t* data, std::size_t size) {
  auto [ref, base] = split2(as_text(data, size), "\n");
  Result<io::Uri> u = io::parse_uri(ref);
  if (u.ok()) {
    check_accepted(ref, *u);
    Result<io::Uri> again = io::parse_uri(u->to_string());
    check(again.ok() && again->scheme == u->scheme && again->authority == u->authority &&
          again->path == u->path, "parse_uri(to_string()) round trip");
  } else {
    check_message(u.error());
  }
  const std::string shown = io::shown_uri(ref);
  check(shown.size() <= kShownNameBytes && !has_control(shown), "shown_uri is bounded, one line");
  const std::string folded = io::fold_dots(ref);
  check(!has_dot_segment(folded), "fold_dots leaves no dot segment");
  check(io::fold_dots(folded) == folded, "fold_dots is idempotent");
  Result<std::string> r = io::resolve_uri(ref, base);
  if (!r.ok()) {
    check(!r.error().message().empty(), "an error carries a message");
  } else if (io::is_remote_uri(*r)) {
    Result<io::Uri> resolved = io::parse_uri(*r);
    check(resolved.ok(), "a resolved remote reference is a valid URI");
    check_accepted(*r, *resolved);
  }
}

// ---- hand-made seeds: responses as S3/s3rver/nginx send them, documents as AWS writes them ----

void http_seeds(const std::string& dir) {
  const std::string ranged = "HTTP/1.1 206 Partial Content\r\nETag: \"abc\"\r\nContent-Length: 10\r\n"
                             "Content-Range: bytes 5-14/100\r\n\r\n0123456789";
  write_seed(dir, "206", std::string("\x03\x05\x0a") + ranged);
  write_seed(dir, "200-whole", std::string("\x00\x00\xff") +
                                   "HTTP/1.1 200 OK\r\ncontent-length:  4\r\netag: x\r\n\r\nbody");
  write_seed(dir, "200-sliced", std::string("\x02\x02\x03") +
                                    "HTTP/1.1 200 OK\r\nETag: \"abc\"\r\nContent-Length: 99999999999999999999\r\n\r\nabcdefgh");
}

void xml_seeds(const std::string& dir) {
  write_seed(dir, "s3-error", R"(<?xml version="1.0" encoding="UTF-8"?>
<Error><Code>SignatureDoesNotMatch</Code><Message>The request signature we calculated does not match &amp; &lt;x&gt;</Message><Key>a/b.jpg</Key><RequestId>1</RequestId></Error>)");
  write_seed(dir, "sts", R"(<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">
<AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>ASIAEXAMPLE</AccessKeyId><SecretAccessKey>secret</SecretAccessKey><SessionToken>tok&quot;en</SessionToken><Expiration>2030-01-01T00:00:00Z</Expiration></Credentials></AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>)");
}

void aws_seeds(const std::string& dir) {
  write_seed(dir, "config", "[default]\nregion = eu-west-1\n# c\n[profile dev]\nregion=us-east-1\n"
                            "credential_process = /bin/echo 'a b' \"c\\\"d\" e\\ f\n; x\ns3 =\n  addressing_style = path\n");
  write_seed(dir, "container-json", R"({"AccessKeyId":"AKIA","SecretAccessKey":"s","Token":"t","Expiration":"2030-01-01T00:00:00Z"})");
  write_seed(dir, "process-json", R"({"Version":1,"AccessKeyId":"AKIA","SecretAccessKey":"s","SessionToken":"t","Expiration":"2030-05-01T12:00:00.123+02:00"})");
  write_seed(dir, "iso", "2024-05-01T12:00:00+0000");
  write_seed(dir, "container-url", "/v2/credentials/x\nhttp://127.0.0.1:8080/creds");
}

void uri_seeds(const std::string& dir) {
  write_seed(dir, "backslash", "http://127.0.0.1:8080\\@host/x.png\nhttp://h/m.jsonl");
  write_seed(dir, "userinfo-ipv6", "http://u:p%40@[::1]:9000/a%20b?q#f\nhttps://h/m.jsonl");
  write_seed(dir, "ipv4-forms", "http://0x7f.1/x\nhttp://2130706433/m.jsonl");
  write_seed(dir, "s3", "images/../a b.jpg\ns3://bucket/data/train.jsonl");
  write_seed(dir, "http", "http://host:8080/x/./y?q=1#f\nhttps://h/m.jsonl");
  write_seed(dir, "file", "file:///abs/p.png\n/data/set/m.jsonl");
  write_seed(dir, "relative", "../../../../etc/passwd\ns3://b/k");
}

}  // namespace

const Target kHttpTarget{"http", "HTTP response header lines + ranged GET body (200/206, Content-Range, If-Match)",
                         nullptr, run_http, http_seeds};
const Target kXmlTarget{"xml", "S3 XML error body, xml_text, STS AssumeRoleWithWebIdentity response",
                        nullptr, run_xml, xml_seeds};
const Target kAwsTarget{"aws", "AWS INI files, credential JSON, credential_process split, ISO 8601, container URL",
                        nullptr, run_aws, aws_seeds};
const Target kUriTarget{"uri", "parse_uri validation vs libcurl's URL parser, round trip, fold_dots, resolve_uri (media references)", nullptr,
                        run_uri, uri_seeds};

}  // namespace stoker::fuzz
