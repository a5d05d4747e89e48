// Small files written so that a reader only ever sees the old or the new content — never a
// truncated or half-written one, whatever happens meanwhile (SIGKILL, a full disk, a crash or a
// power loss after the call returned) — and small files read as untrusted input: regular files
// only, a size cap, no blocking open.
//
// write_file_atomic: the bytes go to `<path>.tmp` (created 0644 & ~umask, O_NOFOLLOW: a link
// planted there is refused, not followed), are fsync'ed, the temporary is renamed over `path`,
// and the folder is fsync'ed so the rename itself is durable. Any failure removes the temporary
// and returns an error naming the path and the step that failed ("writing", "fsync", "rename",
// ...): ENOSPC/EDQUOT/EFBIG are ResourceExhausted, EACCES/EPERM/EROFS PermissionDenied, ENOENT
// NotFound, the rest DataLoss. A killed writer leaves at most `<path>.tmp` behind (the next write
// replaces it); `path` keeps its previous content. One writer per path at a time.
//
// read_small_file: open(O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC) — a FIFO without a writer
// does not block the open — then fstat on the descriptor: anything but a regular file (FIFO,
// device such as /dev/zero, socket, folder) is InvalidArgument at once, nothing read; a file over
// `max_bytes` is ResourceExhausted, nothing read; then at most `max_bytes` + 1 bytes are read
// (a file growing meanwhile is caught too). Bounded time on a local file system.
//
// probe_writable: the start-of-run check of an output path (config/outputs.cc): the parent folder
// exists and is a folder; an existing path is a regular file (or a character device such as
// /dev/null) opened for appending — never truncated —; for a missing one, its name is checked
// against NAME_MAX and a temporary file of its own is created beside it and removed (never the
// path: ranks of one job probing the same output must not fail or remove each other's); a folder
// output (`folder` = true) is probed with a temporary file inside it. FIFOs,
// sockets and folders where a file is wanted are refused without blocking.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "stoker/base/result.h"

namespace stoker {

struct AtomicWriteOptions {
  // Test hook: called after half of the bytes are in the temporary file (before the rest, the
  // fsync and the rename) — the kill tests widen the window in which a write is interrupted.
  void (*midway)(void* arg) = nullptr;
  void* midway_arg = nullptr;
};

Status write_file_atomic(const std::string& path, std::string_view bytes,
                         const AtomicWriteOptions& options = {});

Result<std::string> read_small_file(const std::string& path, std::size_t max_bytes);

Status probe_writable(const std::string& path, bool folder = false);

// The end-of-run rule for a diagnostic output (trace, report, error report, summary JSON;
// config/schema.h Output): `written` Ok → Ok. Otherwise, with `strict` (--strict-outputs /
// strict_outputs=True) its error; without, Ok after one warning line on stderr, "stoker WHO:
// warning: ERROR (a diagnostic output: the run's result stands; --strict-outputs makes this an
// error)" (control bytes escaped). Every front end (run, serve, serve(), cluster) ends with it.
Status diagnostic_output(const Status& written, bool strict, std::string_view who);

}  // namespace stoker
