#include "stoker/io/media_access.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "stoker/base/option_name.h"
#include "stoker/io/uri.h"

namespace stoker::io {
namespace {

// `path` below `prefix` (a folder): the rest without the separating '/', or nullopt.
bool below(std::string_view path, std::string_view prefix, std::string* rel) {
  if (prefix.empty() || path.substr(0, prefix.size()) != prefix) return false;
  if (prefix == "/") {
    *rel = std::string(path.substr(1));
    return true;
  }
  if (path.size() == prefix.size()) {
    rel->clear();
    return true;
  }
  if (path[prefix.size()] != '/') return false;
  *rel = std::string(path.substr(prefix.size() + 1));
  return true;
}

std::string absolute(std::string_view path) {
  if (!path.empty() && path[0] == '/') return fold_dots(path);
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof cwd) == nullptr) return fold_dots(path);
  return fold_dots(std::string(cwd) + "/" + std::string(path));
}

std::string quoted(std::string_view s) {
  std::string q(1, '\'');
  q.append(shown_uri(s));
  q.push_back('\'');
  return q;
}

}  // namespace

const MediaRoot* find_root(const std::vector<MediaRoot>& roots, std::string_view path,
                           std::string* rel) {
  const MediaRoot* best = nullptr;
  std::size_t best_len = 0;
  std::string r;
  for (const MediaRoot& root : roots) {
    for (const std::string* prefix : {&root.path, &root.real}) {
      if (prefix->size() >= best_len && below(path, *prefix, &r)) {
        best = &root;
        best_len = prefix->size();
        *rel = r;
      }
    }
  }
  return best;
}

Result<MediaRoot> make_media_root(std::string_view dir) {
  if (dir.empty()) return invalid_argument("an empty media root");
  MediaRoot root;
  root.path = absolute(dir);
  char real[PATH_MAX];
  if (::realpath(root.path.c_str(), real) == nullptr) {
    return invalid_argument("media root " + root.path + ": " + std::strerror(errno));
  }
  struct stat st {};
  if (::stat(real, &st) != 0 || !S_ISDIR(st.st_mode)) {
    return invalid_argument("media root " + root.path + " is not a directory");
  }
  root.real = real;
  return root;
}

Result<MediaScope> MediaScope::make(std::string_view manifest, const MediaAccess& access) {
  MediaScope s;
  s.trust_ = access.trust_media_paths;
  for (const std::string& b : access.allow_buckets) {
    if (b == "*") s.any_bucket_ = true;
    s.buckets_.push_back(b);
  }
  if (is_remote_uri(manifest)) {
    STOKER_ASSIGN_OR_RETURN(Uri u, parse_uri(manifest));
    s.remote_ = true;
    s.base_ = std::string(manifest);
    if (u.scheme == Scheme::kS3) s.buckets_.push_back(u.authority);
    return s;
  }
  STOKER_ASSIGN_OR_RETURN(Uri u, parse_uri(manifest));
  s.base_ = absolute(u.path);
  if (s.trust_) return s;
  const std::size_t slash = s.base_.rfind('/');
  STOKER_ASSIGN_OR_RETURN(MediaRoot own, make_media_root(slash == 0 ? "/" : s.base_.substr(0, slash)));
  s.roots_.push_back(std::move(own));
  for (const std::string& r : access.media_roots) {
    STOKER_ASSIGN_OR_RETURN(MediaRoot root, make_media_root(r));
    s.roots_.push_back(std::move(root));
  }
  return s;
}

Result<std::string> MediaScope::resolve(std::string_view ref) const {
  STOKER_ASSIGN_OR_RETURN(std::string uri, resolve_uri(ref, base_));
  if (!is_remote_uri(uri)) {
    if (remote_) {
      return permission_denied(quoted(ref) + " names a local file, and a remote manifest never " +
                               "reads local files (trust boundary)");
    }
    if (trust_) return uri;
    std::string rel;
    if (find_root(roots_, uri, &rel) == nullptr) {
      std::string where = "the manifest's folder " + roots_.front().path;
      if (roots_.size() > 1) where += " and the media roots";
      const std::string target = uri == ref ? "" : " resolves to " + shown_uri(uri) + ",";
      return permission_denied(quoted(ref) + target + " is outside " + where +
                               " (trust boundary: " + option_name("media_root", "--media-root DIR") +
                               " adds a folder, " +
                               option_name("trust_media_paths", "--trust-media-paths") +
                               " lifts the rule)");
    }
    return uri;
  }
  if (uri.rfind("s3://", 0) == 0 && !any_bucket_) {
    STOKER_ASSIGN_OR_RETURN(Uri u, parse_uri(uri));
    if (std::find(buckets_.begin(), buckets_.end(), u.authority) == buckets_.end()) {
      return permission_denied("s3 bucket " + quoted(u.authority) + " of " + quoted(ref) +
                               " is not " + (remote_ ? "the manifest's own bucket nor " : "") +
                               "an allowed bucket (trust boundary: " +
                               option_name("allow_buckets", "--allow-bucket") + " " + u.authority +
                               " allows it)");
    }
  }
  return uri;
}

}  // namespace stoker::io
