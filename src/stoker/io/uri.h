// Uri: an object's location, parsed once — `file:///a/b`, a plain path, `s3://bucket/key`,
// `http(s)://host[:port]/path`. has_scheme() is THE test for "this text names a scheme" and
// resolve_uri() THE resolver of a media reference found inside a manifest: every caller (engine,
// inspect, tools) goes through these two, so a reference means the same thing everywhere.
// Plain values; thread-safe. Errors: InvalidArgument (empty, NUL byte, unknown scheme, s3 URI
// without bucket, file URI naming another host).
#pragma once

#include <string>
#include <string_view>

#include "stoker/base/result.h"

namespace stoker::io {

enum class Scheme { kFile, kS3, kHttp, kHttps };

struct Uri {
  Scheme scheme = Scheme::kFile;
  std::string authority;  // bucket for s3, host[:port] for http(s), empty for files
  std::string path;       // file: a path; s3: the key (no leading '/'); http: "/..." + query
  bool remote() const { return scheme != Scheme::kFile; }
  std::string to_string() const;
};

// "name://" at the start, the name made of letters, digits, '+', '-', '.' (RFC 3986) and
// starting with a letter: "s3://b/k", "gs://x", "file:///p". A path such as "a/b://c" or
// "./x://y" has none.
bool has_scheme(std::string_view text);

// s3:// and http(s):// (file:// and plain paths are local).
bool is_remote_uri(std::string_view text);

Result<Uri> parse_uri(std::string_view text);

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
