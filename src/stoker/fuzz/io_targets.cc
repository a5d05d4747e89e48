// What servers and configuration files hand the io module: HTTP response headers and ranged
// bodies, S3/STS XML bodies, the AWS shared files and credential JSON, and the media references of
// a manifest (URIs resolved against the manifest's own).
#include <string>

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
  check(code.size() <= body.size() && message.size() <= body.size(), "texts from the body");
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

// "ref\nbase": a manifest's media reference resolved against the manifest's own location.
void run_uri(const std::uint8_t* data, std::size_t size) {
  auto [ref, base] = split2(as_text(data, size), "\n");
  Result<io::Uri> u = io::parse_uri(ref);
  if (u.ok()) {
    Result<io::Uri> again = io::parse_uri(u->to_string());
    check(again.ok() && again->scheme == u->scheme && again->authority == u->authority &&
          again->path == u->path, "parse_uri(to_string()) round trip");
  }
  const std::string folded = io::fold_dots(ref);
  check(!has_dot_segment(folded), "fold_dots leaves no dot segment");
  check(io::fold_dots(folded) == folded, "fold_dots is idempotent");
  Result<std::string> r = io::resolve_uri(ref, base);
  if (!r.ok()) check(!r.error().message().empty(), "an error carries a message");
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
const Target kUriTarget{"uri", "parse_uri round trip, fold_dots, resolve_uri (media references)", nullptr,
                        run_uri, uri_seeds};

}  // namespace stoker::fuzz
