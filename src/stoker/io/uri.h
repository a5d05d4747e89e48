// Uri: an object's location, parsed once — `file:///a/b`, a plain path, `s3://bucket/key`,
// `http(s)://host[:port]/path`. has_scheme() is THE test for "this text names a scheme" and
// resolve_uri() THE resolver of a media reference found inside a manifest: every caller (engine,
// inspect, tools) goes through these two, so a reference means the same thing everywhere.
// http(s) and s3 URIs are validated here, before anything is sent (see "URLs" in README.md):
// one grammar, checked against libcurl's own parser (io_test, the `uri` fuzz target), so the host
// we judge is the host curl connects to.
// Plain values; thread-safe. Errors: InvalidArgument (empty, NUL byte, unknown scheme, s3 URI
// without bucket, file URI naming another host, a malformed or over-long http(s)/s3 URI), the
// URI in the message elided past kShownNameBytes.
#pragma once

#include <string>
#include <string_view>

#include "stoker/base/result.h"

namespace stoker::io {

enum class Scheme { kFile, kS3, kHttp, kHttps };

// An http(s) URL longer than this is refused (common servers cap a request line at 8 KiB).
inline constexpr std::size_t kMaxUrlBytes = 8192;
// S3's own limit on a key, in bytes.
inline constexpr std::size_t kMaxS3KeyBytes = 1024;

struct Uri {
  Scheme scheme = Scheme::kFile;
  std::string authority;  // bucket for s3, [userinfo@]host[:port] for http(s), empty for files
  std::string path;       // file: a path; s3: the key (no leading '/'); http: "/..." + query
  std::string host;       // http(s): the host as written ("[::1]" with brackets for IPv6)
  int port = 0;           // http(s): the port written in the URI, 0 when none
  bool remote() const { return scheme != Scheme::kFile; }
  std::string to_string() const;
};

// "name://" at the start, the name made of letters, digits, '+', '-', '.' (RFC 3986) and
// starting with a letter: "s3://b/k", "gs://x", "file:///p". A path such as "a/b://c" or
// "./x://y" has none.
bool has_scheme(std::string_view text);

// s3:// and http(s):// (file:// and plain paths are local).
bool is_remote_uri(std::string_view text);

// http(s): scheme "http"/"https" (lower case); authority `[userinfo@]host[:port]` ending at the
// first '/', '?' or '#': no backslash, no second '@', userinfo of RFC 3986 characters, host
// letters/digits/'.'/'-'/'_' (≤ 253 bytes) or a bracketed IPv6 address, port 1–65535; no control
// character anywhere; every '%' followed by two hex digits; at most kMaxUrlBytes in all. Spaces
// and non-ASCII bytes in the path are allowed (request_url encodes them). s3: bucket of
// letters/digits/'.'/'-'/'_' (≤ 255), key ≤ kMaxS3KeyBytes without control characters.
Result<Uri> parse_uri(std::string_view text);

// How a message shows a URI, key or path that came from data: elided in the middle past
// kShownNameBytes (base/elide.h), control characters as '?'.
std::string shown_uri(std::string_view text);

// The URL put on the wire for a URI parse_uri accepted: bytes the URL grammar forbids (space,
// non-ASCII, `"<>\^`{|}`) percent-encoded in the path and query, the rest as written.
std::string request_url(std::string_view uri);

// `ref` as written in a manifest at `base` (a URI or a path), as HTML resolves links:
// - an absolute s3/http(s) URI stays as written; "file:///x" and "file://localhost/x" become
//   the path /x;
// - an absolute path stays a local path (whatever `base` is: the trust boundary, not the
//   resolver, decides whether a remote manifest may name one);
// - a relative reference joins the directory of `base`.
// "." and ".." segments of local paths and of relative references are folded lexically (never
// above "/", the bucket or the host root), so the trust boundary judges the path that will be
// opened ("link/../x" is therefore root/x, not the kernel's parent-of-the-link's-target/x).
Result<std::string> resolve_uri(std::string_view ref, std::string_view base);

// "." and ".." folded; a leading '/' kept; "" for a path that folds to nothing.
std::string fold_dots(std::string_view path);

}  // namespace stoker::io
