// blocking_http: one small HTTP exchange on the calling thread (a libcurl easy handle of its own)
// for credential endpoints — STS, the container credentials endpoint, EC2 instance metadata.
// Not the HttpClient: a credential fetch may be triggered from any thread that builds an S3
// request, the I/O thread included (a read issued from a callback), and submit().get() there would
// wait on itself. It also must not queue behind hundreds of S3 GETs for admission, and wants short
// timeouts of its own. Bounded: connect and total timeouts, a response-size cap, no redirects.
// Errors name the request by `display` only (never headers or body): Unavailable (connect/timeout,
// 5xx), PermissionDenied (401/403), ResourceExhausted (body over the cap), InvalidArgument (other).
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::io::detail {

struct BlockingHttpRequest {
  std::string method = "GET";        // GET, PUT or POST
  std::string url;
  std::vector<std::string> headers;  // "Name: value"; may carry tokens: never logged
  std::string body;                  // PUT/POST payload
  std::string display;               // how errors name it, e.g. "STS AssumeRoleWithWebIdentity"
  std::chrono::milliseconds connect_timeout{2000};
  std::chrono::milliseconds total_timeout{5000};
  std::size_t max_response_bytes = 64 * 1024;
  bool no_proxy = false;  // link-local / loopback services are never reached through a proxy
  int attempts = 2;       // on connection errors, timeouts and 5xx only
};

struct BlockingHttpResponse {
  long status = 0;
  std::string body;
};

// Any 2xx → the response. Other statuses → an Error whose message holds the status only; the
// caller may look at `*error_body` (when given) to extract a service's error code.
Result<BlockingHttpResponse> blocking_http(const BlockingHttpRequest& request,
                                           std::string* error_body = nullptr);

}  // namespace stoker::io::detail
