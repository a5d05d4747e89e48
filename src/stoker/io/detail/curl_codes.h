// What a libcurl result code means to the request path (http_client.cc, README "Outage or bad
// object?"): a transient transport failure worth another attempt, or a malformed answer to this
// one request (per object, never retried, never an outage). Codes are passed as int so that
// <curl/curl.h> stays out of headers. Pure functions; thread-safe.
#pragma once

namespace stoker::io::detail {

// Connect, DNS, timeout, send/receive errors, an empty reply, a partial body, HTTP/2 stream and
// TLS handshake failures.
bool retryable_curl_error(int code);

// Not HTTP at all, a header line without a colon, a bad content encoding, a range or size the
// server got wrong, a redirect loop.
bool malformed_answer(int code);

}  // namespace stoker::io::detail
