// What the HTTP and S3 backends read from bytes a server chose: response header lines as libcurl
// hands them over, the Content-Range of a 206, the body of a (ranged) GET, a HEAD's size. Kept
// apart from the curl plumbing so the fuzzer (src/stoker/fuzz) and unit tests reach them.
// Pure functions; thread-safe. Errors: DataLoss / FailedPrecondition / InvalidArgument naming `what`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "stoker/base/result.h"
#include "stoker/io/http_client.h"
#include "stoker/io/object_store.h"

namespace stoker::io::detail {

// One header line ("Name: value\r\n", any case) into `resp`: ETag (quotes stripped),
// Content-Length, Content-Range. Other lines (the status line, the blank line, other headers)
// change nothing. True when the line was a Content-Length.
bool apply_header_line(std::string_view line, HttpResponse* resp);

// The status of a status line ("HTTP/1.1 403 Forbidden\r\n" → 403; "HTTP/2 200" → 200), -1 for
// any other line (a header, the blank line). The reason phrase is never looked at.
int parse_status_line(std::string_view line);

// A Content-Length value: -1 (unknown) unless it is a plain decimal that fits an int64.
std::int64_t parse_content_length(std::string_view value);

// The response of a (possibly ranged) GET → exactly the bytes asked for. A server may ignore
// Range and send the whole object (200): it is sliced here.
Result<Bytes> body_for_range(HttpResponse resp, const ReadOptions& range, const std::string& what);

// A HEAD response → size and ETag.
Result<ObjectInfo> info_from(const HttpResponse& resp, const std::string& what);

}  // namespace stoker::io::detail
