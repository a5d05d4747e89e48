#include "stoker/io/detail/blocking_http.h"

#include <curl/curl.h>

#include <algorithm>
#include <mutex>
#include <thread>

namespace stoker::io::detail {
namespace {

struct Sink {
  std::string* body;
  std::size_t cap;
  bool overflow = false;
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<Sink*>(user);
  const size_t len = size * n;
  if (sink->body->size() + len > sink->cap) {
    sink->overflow = true;
    return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
  }
  sink->body->append(data, len);
  return len;
}

// One attempt. *retry = a transient failure worth another attempt.
Result<BlockingHttpResponse> attempt(const BlockingHttpRequest& r, std::string* error_body,
                                     bool* retry) {
  *retry = false;
  CURL* easy = curl_easy_init();
  if (easy == nullptr) return internal_error(r.display + ": curl_easy_init failed");
  BlockingHttpResponse resp;
  Sink sink{&resp.body, r.max_response_bytes};
  char errbuf[CURL_ERROR_SIZE] = {};
  curl_slist* headers = nullptr;
  for (const std::string& h : r.headers) headers = curl_slist_append(headers, h.c_str());
  curl_easy_setopt(easy, CURLOPT_URL, r.url.c_str());
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &on_body);
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, &sink);
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(r.connect_timeout.count()));
  curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, static_cast<long>(r.total_timeout.count()));
  curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
  if (r.no_proxy) curl_easy_setopt(easy, CURLOPT_NOPROXY, "*");
  if (r.method == "POST" || r.method == "PUT") {
    curl_easy_setopt(easy, CURLOPT_POSTFIELDS, r.body.c_str());
    curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
    if (r.method == "PUT") curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, "PUT");
  }
  const CURLcode code = curl_easy_perform(easy);
  curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &resp.status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(easy);

  if (sink.overflow) {
    return resource_exhausted(r.display + ": response larger than " +
                              std::to_string(r.max_response_bytes) + " bytes");
  }
  if (code != CURLE_OK) {
    *retry = code != CURLE_URL_MALFORMAT && code != CURLE_UNSUPPORTED_PROTOCOL;
    std::string msg = r.display + ": " + curl_easy_strerror(code);
    if (errbuf[0]) msg += " (" + std::string(errbuf) + ")";
    return code == CURLE_OPERATION_TIMEDOUT ? deadline_exceeded(msg) : unavailable(msg);
  }
  if (resp.status >= 200 && resp.status < 300) return resp;
  if (error_body) *error_body = resp.body;
  const std::string msg = r.display + ": HTTP " + std::to_string(resp.status);
  if (resp.status == 401 || resp.status == 403) return permission_denied(msg);
  if (resp.status == 404) return not_found(msg);
  if (resp.status >= 500 || resp.status == 429 || resp.status == 408) {
    *retry = true;
    return unavailable(msg);
  }
  return invalid_argument(msg);
}

}  // namespace

Result<BlockingHttpResponse> blocking_http(const BlockingHttpRequest& request,
                                           std::string* error_body) {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  const int attempts = std::max(1, request.attempts);
  for (int i = 1;; ++i) {
    bool retry = false;
    Result<BlockingHttpResponse> r = attempt(request, error_body, &retry);
    if (r.ok() || !retry || i >= attempts) {
      if (!r.ok() && i > 1) {
        return Error(r.error().code(), "gave up after " + std::to_string(i) +
                                           " attempts; last: " + r.error().to_string());
      }
      return r;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100 * i));
  }
}

}  // namespace stoker::io::detail
