// Where a node-local hand-off socket lives: private to the user. default_socket_path() picks
// $XDG_RUNTIME_DIR/stoker/<name>.sock (the runtime dir is 0700 by spec) or, without one,
// /tmp/stoker-<uid>/<name>.sock, creating the folder 0700. A folder that exists but is not a real
// directory owned by this user with no group/other access is refused (someone could have planted
// it to intercept the socket). Thread-safe; touches the filesystem.
// Errors: PermissionDenied (folder not private), InvalidArgument (name, path too long), Internal.
#pragma once

#include <string>
#include <string_view>

#include "stoker/base/result.h"

namespace stoker::shm {

Result<std::string> default_socket_path(std::string_view name = "stoker");

// Creates `dir` (one level) with mode 0700 if missing; checks it is private to this user.
Status ensure_private_dir(const std::string& dir);

}  // namespace stoker::shm
