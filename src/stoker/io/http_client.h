// HttpClient: the ONE path every remote object-store request takes —
//   admission (max requests and bytes in flight) → attempt with a timeout inside the request's
//   deadline → on a transient failure (5xx, 429, 503 SlowDown, connection refused/reset,
//   timeout, a body that broke off) capped exponential backoff with full jitter (exec::Backoff)
//   until the request's deadline (a span of time, default 120 s, not an attempt count) → the
//   response or one clear Error. 404 → NotFound, 401/403 → PermissionDenied carrying the server's
//   error code from its XML body, 412 → FailedPrecondition (If-Match), a body over
//   `max_body_bytes` → ResourceExhausted, a malformed answer (headers over 64 KiB or 1,000
//   lines, a header line over libcurl's 100 KB, not HTTP) → DataLoss: none of them retried.
// Outage or bad object? When the retries of a request are spent, the client looks at whether a
// request SENT after this one first failed got an answer (a status below 500): if so the network
// and the store worked all along and this object is broken — DataLoss (NotFound for an unknown
// host), a per-sample error; if not, the store is down — Unavailable / DeadlineExceeded, which
// callers treat as an outage (resumable). When nothing else was sent meanwhile (the failing
// sample heads an in-order stream), one HEAD probe — of the last request that host answered; for a
// host that never answered and no other request used, of the last any host answered; else of the
// object itself — decides: answered (< 500) → the object is bad; not → the store is down.
// A body that keeps breaking off after the headers (`max_broken_responses` times) is DataLoss at
// once: the server answers, the object is bad.
// One event-driven I/O thread runs a libcurl multi handle (curl_multi_poll, woken by
// curl_multi_wakeup on submit) and keeps hundreds of requests in flight over reused connections.
// Thread-safe: submit from any thread. Callbacks run on the I/O thread — keep them short (set a
// promise, push to a queue). Destroying the client fails what is still queued with Cancelled.
// Errors name the request by its `display` name only: never the signed headers or credentials.
// Error text is bounded: a non-2xx body is read to 16 KiB, and only its S3 <Code> and a bounded
// <Message> are quoted (README.md "Bounded error text").
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/exec/backoff.h"
#include "stoker/exec/future.h"

namespace stoker::io {

struct HttpRequest {
  std::string method = "GET";        // GET, HEAD or PUT
  std::string url;                   // already percent-encoded
  std::vector<std::string> headers;  // "Name: value"
  std::string aws_sigv4;             // "" or libcurl's provider string "aws:amz:REGION:s3"
  std::string credentials;           // "KEY_ID:SECRET" for the signer; never logged
  std::vector<std::uint8_t> body;    // PUT payload
  std::int64_t expected_bytes = -1;  // response size if known (ranged GET), for admission
  std::int64_t max_body_bytes = -1;  // a larger response (Content-Length or bytes) fails; -1: none
  std::string display;               // how errors name it, e.g. "s3://bucket/key"
  bool probe = false;                // internal: the client's own outage probe (never probed)
};

struct HttpResponse {
  long status = 0;
  std::vector<std::uint8_t> body;
  std::string etag;               // quotes stripped
  std::int64_t content_length = -1;
  std::string content_range;      // "bytes a-b/total" on a 206
};

struct HttpClientOptions {
  int max_requests_in_flight = 256;
  std::int64_t max_bytes_in_flight = std::int64_t{512} << 20;
  std::int64_t unknown_size_estimate = std::int64_t{1} << 20;  // admission charge, size unknown
  std::chrono::milliseconds connect_timeout{5000};
  std::chrono::milliseconds attempt_timeout{30000};  // one try
  std::chrono::milliseconds deadline{120000};        // all tries of one request together
  // No attempt limit by default: retries continue until `deadline`.
  exec::BackoffOptions backoff{.initial_delay = std::chrono::milliseconds(100),
                               .max_delay = std::chrono::seconds(5),
                               .multiplier = 2.0,
                               .max_attempts = 0,
                               .seed = 0x5eed};
  int max_broken_responses = 3;  // 2xx bodies that broke off before a request is DataLoss
  // An attempt slower than this over the window is abandoned (and retried): a trickling server
  // cannot hold a request for the whole attempt timeout.
  long low_speed_bytes_per_s = 1024;
  std::chrono::seconds low_speed_window{10};
  long max_connections = 0;  // 0 = libcurl's default (no limit on the pool)

  Status validate() const;
};

// Counters since creation; read at any time from any thread.
struct HttpClientStats {
  std::int64_t attempts = 0;   // requests put on the wire, retries included
  std::int64_t retries = 0;
  std::int64_t succeeded = 0;
  std::int64_t failed = 0;
  std::int64_t bytes_received = 0;
  std::int64_t peak_in_flight = 0;
  std::int64_t connections = 0;  // new connections opened (the rest reused a pooled one)
};

class HttpClient {
 public:
  using Callback = std::function<void(Result<HttpResponse>)>;

  static Result<std::unique_ptr<HttpClient>> create(const HttpClientOptions& options = {});
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  void submit(HttpRequest request, Callback callback);
  exec::Future<HttpResponse> submit(HttpRequest request);
  HttpClientStats stats() const;
  const HttpClientOptions& options() const;

 private:
  struct Impl;
  explicit HttpClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The <Code> (an identifier of ≤ 64 letters, digits and dots, else "") and <Message> (one line,
// at most kShownServerTextBytes) of an S3-style XML error body ("" when absent).
std::pair<std::string, std::string> parse_xml_error(const std::string& body);

}  // namespace stoker::io
