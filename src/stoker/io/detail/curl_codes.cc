#include "stoker/io/detail/curl_codes.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>

#include "stoker/base/elide.h"
#include "stoker/io/detail/text.h"
#include "stoker/io/http_client.h"

namespace stoker::io {
namespace detail {

// Transient transport failures: the next attempt may well succeed.
bool retryable_curl_error(int code) {
  switch (static_cast<CURLcode>(code)) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
      return true;
    default:
      return false;
  }
}

// Failures of the answer to THIS request — the server (or whatever holds the port) replied, and
// the reply is not one we can use: per-object, never retried, never an outage.
bool malformed_answer(int code) {
  switch (static_cast<CURLcode>(code)) {
    case CURLE_UNSUPPORTED_PROTOCOL:  // "Received HTTP/0.9 when not allowed": not HTTP at all
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_BAD_CONTENT_ENCODING:
    case CURLE_RANGE_ERROR:
    case CURLE_TOO_MANY_REDIRECTS:
    case CURLE_FILESIZE_EXCEEDED:
      return true;
    default:
      return false;
  }
}

}  // namespace detail

std::pair<std::string, std::string> parse_xml_error(const std::string& body) {
  std::string code = detail::xml_text(body, "Code");
  // An S3 error code is a short identifier; anything else is not quoted.
  const bool identifier = !code.empty() && code.size() <= 64 &&
      std::all_of(code.begin(), code.end(), [](unsigned char c) { return std::isalnum(c) || c == '.'; });
  if (!identifier) code.clear();
  return {code, detail::server_text(detail::xml_text(body, "Message"), kShownServerTextBytes)};
}

}  // namespace stoker::io
