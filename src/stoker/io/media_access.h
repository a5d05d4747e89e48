// The trust boundary around media (DESIGN.md §2, README "Trust boundary"). A record may name
// media anywhere — a relative or absolute path, file://, s3://, http(s):// — but:
//   - a local manifest reads local files only beneath its own folder and the media roots the
//     user names (`--media-root`), unless `trust_media_paths` lifts that rule;
//   - a remote manifest (s3://, http(s)://) never reads local files;
//   - s3:// media are read only from a remote manifest's own bucket and the buckets the user
//     allows (`--allow-bucket`, "*" = any): a manifest cannot make the loader use its
//     credentials on buckets nobody chose.
// MediaScope is one manifest's view: resolve() turns a reference into the URI to read, or a
// PermissionDenied naming the rule. It judges the lexically folded path; the local store then
// opens it beneath its root with the kernel's RESOLVE_BENEATH (local_store.cc), so a symlink or
// ".." cannot lead outside either. Immutable after make(); thread-safe.
// Errors: InvalidArgument (bad reference, a media root that does not exist), PermissionDenied.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::io {

struct MediaAccess {
  std::vector<std::string> media_roots = {};  // extra local folders (absolute or cwd-relative)
  bool trust_media_paths = false;
  std::vector<std::string> allow_buckets = {};
};

// A local folder that media may lie beneath: as named (absolute, folded) and its real path, so
// a reference spelled either way is recognised.
struct MediaRoot {
  std::string path;
  std::string real;
};

// The root holding `path` (an absolute, folded path), preferring the longest; `rel` gets the
// path below it ("" for the root itself). nullptr when none holds it.
const MediaRoot* find_root(const std::vector<MediaRoot>& roots, std::string_view path,
                           std::string* rel);

// `dir` made absolute (against the cwd), folded, and its real path. InvalidArgument when it
// does not exist or is not a directory.
Result<MediaRoot> make_media_root(std::string_view dir);

class MediaScope {
 public:
  // `manifest`: the manifest's path or URI as given.
  static Result<MediaScope> make(std::string_view manifest, const MediaAccess& access);

  Result<std::string> resolve(std::string_view ref) const;

  bool remote() const { return remote_; }
  // Where this manifest's records may read local files (empty: remote, or trusted).
  const std::vector<MediaRoot>& roots() const { return roots_; }

 private:
  std::string base_;  // absolute manifest path, or its URI
  bool remote_ = false;
  bool trust_ = false;
  bool any_bucket_ = false;
  std::vector<MediaRoot> roots_;
  std::vector<std::string> buckets_;  // the manifest's own (if s3) + allowed
};

}  // namespace stoker::io
