// Uri: an object's location, parsed once — `file:///a/b`, a plain path, `s3://bucket/key`,
// `http(s)://host[:port]/path`. resolve_uri() turns a media reference found inside a manifest
// into an absolute URI, relative to the manifest's own URI (as HTML resolves links).
// Plain values; thread-safe. Errors: InvalidArgument (empty, unknown scheme, s3 URI without bucket).
#pragma once

#include <string>

#include "stoker/base/result.h"

namespace stoker::io {

enum class Scheme { kFile, kS3, kHttp, kHttps };

struct Uri {
  Scheme scheme = Scheme::kFile;
  std::string authority;  // bucket for s3, host[:port] for http(s), empty for files
  std::string path;       // file: a path; s3: the key (no leading '/'); http: "/..." + query
  std::string to_string() const;
};

Result<Uri> parse_uri(const std::string& text);

// `ref` as written in a manifest at `base` (a URI or path): absolute URIs and absolute paths stay,
// "file://x" becomes the path x, a relative reference joins the directory of `base` with "." and
// ".." segments folded (never above the bucket or the host root).
std::string resolve_uri(const std::string& ref, const std::string& base);

}  // namespace stoker::io
