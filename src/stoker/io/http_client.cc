#include "stoker/io/http_client.h"

#include "stoker/base/elide.h"
#include "stoker/io/detail/curl_codes.h"
#include "stoker/io/detail/response.h"
#include "stoker/io/detail/text.h"

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_set>

namespace stoker::io {
namespace {

using Clock = std::chrono::steady_clock;

// The HEAD that tells an outage from a broken object when nothing else says (one attempt).
constexpr std::chrono::seconds kProbeTimeout{5};

// What one response may bring before it is refused as malformed (its object fails, nothing
// else): header bytes and lines in all (status lines included), and the body of a status that is
// not 2xx — an error document is read this far, for the S3 <Code>/<Message>, and the rest never.
// libcurl itself refuses one header line over 100 KB (CURLE_OUT_OF_MEMORY) and 300 KB in all.
constexpr std::size_t kMaxHeaderBytes = 64 << 10;
constexpr int kMaxHeaderLines = 1000;
constexpr std::size_t kMaxErrorBodyBytes = 16 << 10;

bool is_2xx(long status) { return status >= 200 && status < 300; }

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

Status HttpClientOptions::validate() const {
  if (max_requests_in_flight < 1) return invalid_argument("max_requests_in_flight must be >= 1");
  if (max_bytes_in_flight < 1) return invalid_argument("max_bytes_in_flight must be >= 1");
  if (attempt_timeout.count() < 1 || deadline.count() < 1 || connect_timeout.count() < 1)
    return invalid_argument("timeouts must be positive");
  if (max_broken_responses < 1) return invalid_argument("max_broken_responses must be >= 1");
  if (low_speed_bytes_per_s < 0 || low_speed_window.count() < 0)
    return invalid_argument("low-speed limits must be >= 0");
  return backoff.validate();
}

struct HttpClient::Impl {
  // One request through all its attempts. Owned by exactly one of: incoming_, pending_, timers_,
  // or the multi handle (in flight, found again through CURLOPT_PRIVATE).
  struct Op {
    HttpRequest req;
    Callback callback;
    Clock::time_point submitted;
    Clock::time_point deadline;
    Clock::time_point attempt_started{};  // the attempt on the wire (or the last one)
    std::optional<Clock::time_point> first_failure;  // when the first attempt failed
    exec::Backoff backoff;
    CURL* easy = nullptr;
    curl_slist* headers = nullptr;
    HttpResponse resp;
    std::int64_t reserved = 0;  // bytes charged against the in-flight budget
    char errbuf[CURL_ERROR_SIZE] = {};
    std::optional<Error> last_error;  // of the previous attempt, while waiting to retry
    bool too_large = false;  // this attempt's body went over req.max_body_bytes
    std::string malformed;   // why this attempt's response was refused as malformed ("" if not)
    std::size_t header_bytes = 0;
    int header_lines = 0;
    bool error_body_cut = false;  // a non-2xx body stopped at kMaxErrorBodyBytes
    bool counted = false;         // in requests_by_host
    bool cut_by_deadline = false;  // this attempt's timeout is the time left, not attempt_timeout
    int broken = 0;          // 2xx responses whose body broke off
    Impl* impl = nullptr;
    Op(HttpRequest r, Callback cb, Clock::time_point now, Clock::time_point d,
       const exec::BackoffOptions& b)
        : req(std::move(r)), callback(std::move(cb)), submitted(now), deadline(d), backoff(b, d) {}
  };
  using OpPtr = std::unique_ptr<Op>;

  HttpClientOptions options;
  CURLM* multi = nullptr;
  std::thread thread;
  std::mutex mu;
  std::deque<OpPtr> incoming;  // guarded by mu
  bool stopping = false;       // guarded by mu
  std::uint64_t next_seed = 0;  // guarded by mu

  // I/O-thread state.
  std::deque<OpPtr> pending;                     // admitted in order
  std::multimap<Clock::time_point, OpPtr> timers;  // waiting out a backoff delay
  std::vector<CURL*> idle_handles;
  std::unordered_set<CURL*> active;  // handles in the multi handle
  int in_flight = 0;
  std::int64_t bytes_in_flight = 0;
  // The latest start time of an attempt that got an answer (status < 500): an answer to a request
  // SENT after a failing request's first failure proves the network and the store worked after
  // it — which tells a broken object from an outage when that request's retries are spent
  // (a request merely answered after it, but sent before an outage began, proves nothing).
  Clock::time_point last_answered_start{};
  // Per host (scheme://authority): the last request answered with a 2xx, replayed as a HEAD probe
  // when a request's window is spent with no other evidence (see give_up_or_probe).
  std::map<std::string, HttpRequest> last_ok_by_host;
  std::optional<HttpRequest> last_ok_any;  // the last request any host answered with a 2xx
  // Requests (not attempts) started per host, for hosts that never answered: one request alone to
  // a host nobody else uses is one record's problem, not a shared failure. Forgotten past
  // kMaxHostsCounted hosts (then the probe falls back to the object itself).
  static constexpr std::size_t kMaxHostsCounted = 4096;
  std::map<std::string, int> requests_by_host;

  std::atomic<std::int64_t> attempts{0}, retries{0}, succeeded{0}, failed{0}, bytes_received{0},
      peak_in_flight{0}, connections{0};

  static size_t on_body(char* data, size_t size, size_t n, void* user) {
    Op* op = static_cast<Op*>(user);
    const size_t len = size * n;
    if (!is_2xx(op->resp.status)) {
      // An error document: its first kMaxErrorBodyBytes, then the transfer stops (a 50 MB 403
      // body is never read, let alone held).
      const std::size_t room = kMaxErrorBodyBytes - std::min(kMaxErrorBodyBytes, op->resp.body.size());
      op->resp.body.insert(op->resp.body.end(), data, data + std::min(room, len));
      if (len <= room) return len;
      op->error_body_cut = true;
      return 0;
    }
    const std::int64_t cap = op->req.max_body_bytes;
    if (cap >= 0 && static_cast<std::int64_t>(op->resp.body.size() + len) > cap) {
      op->too_large = true;
      return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
    }
    op->resp.body.insert(op->resp.body.end(), data, data + len);
    const auto have = static_cast<std::int64_t>(op->resp.body.size());
    if (have > op->reserved) {  // bigger than estimated: charge what actually arrived
      op->impl->bytes_in_flight += have - op->reserved;
      op->reserved = have;
    }
    return len;
  }

  static size_t on_header(char* data, size_t size, size_t n, void* user) {
    Op* op = static_cast<Op*>(user);
    const size_t len = size * n;
    const std::string_view line(data, len);
    op->header_bytes += len;
    if (op->header_bytes > kMaxHeaderBytes || ++op->header_lines > kMaxHeaderLines) {
      op->malformed = "the response headers are over " +
                      (op->header_bytes > kMaxHeaderBytes
                           ? std::to_string(kMaxHeaderBytes >> 10) + " KiB"
                           : std::to_string(kMaxHeaderLines) + " lines");
      return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
    }
    if (const int status = detail::parse_status_line(line); status >= 0) {
      op->resp.status = status;  // a new response (after a 1xx): its own Content-Length
      op->resp.content_length = -1;
      return len;
    }
    if (!detail::apply_header_line(line, &op->resp)) return len;
    // Content-Length of a 2xx: refuse an over-large body before a byte of it is read, and make
    // one allocation for it (a HEAD's length describes no body; a hostile value is capped). An
    // error status's body is read only up to kMaxErrorBodyBytes, whatever it claims.
    if (op->req.method == "HEAD" || !is_2xx(op->resp.status)) return len;
    const std::int64_t cap = op->req.max_body_bytes;
    if (cap >= 0 && op->resp.content_length > cap) {
      op->too_large = true;
      return 0;
    }
    if (op->resp.content_length > 0 && op->resp.content_length <= (std::int64_t{1} << 30))
      op->resp.body.reserve(static_cast<std::size_t>(op->resp.content_length));
    return len;
  }

  void finish(OpPtr op, Result<HttpResponse> result) {
    (result.ok() ? succeeded : failed).fetch_add(1);
    Callback cb = std::move(op->callback);
    op.reset();
    cb(std::move(result));
  }

  void start(OpPtr op) {
    const auto now = Clock::now();
    CURL* easy;
    if (!idle_handles.empty()) {
      easy = idle_handles.back();
      idle_handles.pop_back();
      curl_easy_reset(easy);
    } else {
      easy = curl_easy_init();
    }
    op->easy = easy;
    op->impl = this;
    if (!op->counted && !op->req.probe) {
      op->counted = true;
      if (requests_by_host.size() >= kMaxHostsCounted) requests_by_host.clear();
      ++requests_by_host[host_of(op->req.url)];
    }
    op->resp = HttpResponse{};
    op->errbuf[0] = 0;
    op->too_large = false;
    op->malformed.clear();
    op->header_bytes = 0;
    op->header_lines = 0;
    op->error_body_cut = false;
    op->attempt_started = now;
    const HttpRequest& r = op->req;
    curl_easy_setopt(easy, CURLOPT_URL, r.url.c_str());
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");  // whatever the URL says
    curl_easy_setopt(easy, CURLOPT_PRIVATE, op.get());
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, op->errbuf);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &Impl::on_body);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, op.get());
    curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, &Impl::on_header);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, op.get());
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options.connect_timeout.count()));
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(op->deadline - now);
    long timeout = static_cast<long>(std::max<std::int64_t>(
        1, std::min(left.count(), static_cast<std::int64_t>(options.attempt_timeout.count()))));
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, timeout);
    op->cut_by_deadline = left.count() < options.attempt_timeout.count();
    if (options.low_speed_bytes_per_s > 0 && options.low_speed_window.count() > 0) {
      curl_easy_setopt(easy, CURLOPT_LOW_SPEED_LIMIT, options.low_speed_bytes_per_s);
      curl_easy_setopt(easy, CURLOPT_LOW_SPEED_TIME, static_cast<long>(options.low_speed_window.count()));
    }
    if (r.method == "HEAD") {
      curl_easy_setopt(easy, CURLOPT_NOBODY, 1L);
    } else if (r.method == "PUT") {
      curl_easy_setopt(easy, CURLOPT_POSTFIELDS, reinterpret_cast<const char*>(r.body.data()));
      curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
      curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, "PUT");
    } else if (r.method != "GET") {
      curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, r.method.c_str());
    }
    curl_slist* headers = nullptr;
    for (const std::string& h : r.headers) headers = curl_slist_append(headers, h.c_str());
    // Not "Expect:" to suppress 100-continue: libcurl's signer would sign the header it then
    // drops from the request, and the server's signature would differ.
    if (r.method == "PUT") headers = curl_slist_append(headers, "Content-Type: application/octet-stream");
    op->headers = headers;
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers);
    if (!r.aws_sigv4.empty()) {
      curl_easy_setopt(easy, CURLOPT_AWS_SIGV4, r.aws_sigv4.c_str());
      curl_easy_setopt(easy, CURLOPT_USERPWD, r.credentials.c_str());
    }
    op->reserved = r.expected_bytes >= 0 ? r.expected_bytes : options.unknown_size_estimate;
    bytes_in_flight += op->reserved;
    ++in_flight;
    peak_in_flight.store(std::max<std::int64_t>(peak_in_flight.load(), in_flight));
    attempts.fetch_add(1);
    active.insert(easy);
    curl_multi_add_handle(multi, easy);
    op.release();  // owned by the multi handle until done()
  }

  // Frees the transfer's slot and handle; the Op itself comes back to the caller.
  OpPtr detach(CURL* easy) {
    Op* raw = nullptr;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, reinterpret_cast<char**>(&raw));
    OpPtr op(raw);
    curl_multi_remove_handle(multi, easy);
    active.erase(easy);
    curl_slist_free_all(op->headers);
    op->headers = nullptr;
    idle_handles.push_back(easy);
    op->easy = nullptr;
    --in_flight;
    bytes_in_flight -= op->reserved;
    op->reserved = 0;
    return op;
  }

  // What one finished attempt means: a response, a final error, or (retry=true) try again.
  // Per object or shared (README "Outage or bad object?"): an answer of THIS request — a status
  // other than 5xx/408/429, or a reply malformed in any way — is about this object and final; a
  // failure with no answer (connect, DNS, TLS, reset, timeout) or a 5xx/408/429 may be shared by
  // every request, and is retried until the deadline, then judged by give_up_or_probe.
  Result<HttpResponse> classify(Op& op, CURLcode code, bool* retry) {
    *retry = false;
    const std::string what = op.req.method + " " + op.req.display;
    long status = 0;
    curl_easy_getinfo(op.easy, CURLINFO_RESPONSE_CODE, &status);
    op.resp.status = status;
    const bool malformed = !op.malformed.empty() || detail::malformed_answer(code) ||
                           code == CURLE_OUT_OF_MEMORY;
    if ((status > 0 && status < 500) || malformed) {
      last_answered_start = std::max(last_answered_start, op.attempt_started);
    }
    if (op.too_large) {
      std::string size = op.resp.content_length >= 0
                             ? std::to_string(op.resp.content_length) + " bytes"
                             : "more than that";
      return resource_exhausted(what + ": the response (" + size + ") is over the " +
                                std::to_string(op.req.max_body_bytes) + "-byte object cap");
    }
    if (!op.malformed.empty()) return data_loss(what + ": malformed response: " + op.malformed);
    if (code == CURLE_OUT_OF_MEMORY) {
      // libcurl's answer to a header line over its 100 KB limit (a huge header, reason phrase or
      // Location): the reply, not the store. (A real allocation failure would fail every request.)
      return data_loss(what + ": malformed response: a header line over libcurl's 100 KB limit");
    }
    if (op.error_body_cut && code == CURLE_WRITE_ERROR) code = CURLE_OK;  // we stopped reading
    if (code != CURLE_OK) {
      // libcurl's words (its error buffer may quote the reply: shown bounded, control-free).
      std::string why = curl_easy_strerror(code);
      if (op.errbuf[0]) why += " (" + detail::server_text(op.errbuf, kShownServerTextBytes) + ")";
      if (detail::malformed_answer(code)) return data_loss(what + ": malformed response: " + why);
      const std::string msg = what + ": " + why;
      *retry = detail::retryable_curl_error(code);
      if (*retry && is_2xx(status) && ++op.broken >= options.max_broken_responses) {
        // The server answers, and the body breaks off every time: the object, not the store.
        *retry = false;
        return data_loss(what + ": " + std::to_string(op.broken) +
                         " responses broke off mid-body; last: " + msg);
      }
      if (code == CURLE_OPERATION_TIMEDOUT) return deadline_exceeded(msg);
      return *retry ? unavailable(msg) : invalid_argument(msg);  // e.g. bad TLS
    }
    if (is_2xx(status)) {
      if (!op.req.probe) {
        last_ok_by_host.insert_or_assign(host_of(op.req.url), op.req);
        last_ok_any = op.req;
      }
      return std::move(op.resp);
    }
    // Quoted from an error body: only an S3 <Code> identifier and a bounded <Message>.
    std::string body(op.resp.body.begin(), op.resp.body.end());
    auto [xml_code, xml_message] = parse_xml_error(body);
    std::string msg = what + ": HTTP " + std::to_string(status);
    if (!xml_code.empty()) msg += " " + xml_code;
    if (!xml_message.empty()) msg += ": " + xml_message;
    if (status == 404) return not_found(msg);
    if (status == 401 || status == 403) return permission_denied(msg);
    if (status == 412) return failed_precondition(msg + " (If-Match: the object was replaced)");
    if (status == 416) return invalid_argument(msg + " (range not satisfiable)");
    if (status >= 500 || status == 429 || status == 408) {
      *retry = true;
      return unavailable(msg);
    }
    if (status >= 300 && status < 400) return invalid_argument(msg + " (redirects are not followed)");
    return invalid_argument(msg);
  }

  // The retries are spent. If other requests got answers meanwhile, the store works and this
  // object is broken: a per-object error. Otherwise the store is down: an outage.
  static std::string host_of(const std::string& url) {
    const std::size_t scheme = url.find("://");
    const std::size_t start = scheme == std::string::npos ? 0 : scheme + 3;
    return url.substr(0, url.find_first_of("/?#", start));
  }

  // The retries of `op` are spent. With evidence that the store answered requests sent after
  // `op` first failed: a per-object error now. Without (the failing sample is at the head of an
  // in-order stream, so nothing newer was sent): one HEAD probe — of the last request this host
  // answered, else of the last any host answered, else of this object — decides: answered
  // (< 500) → the object is bad; not → outage.
  void give_up_or_probe(OpPtr op, Error last, bool deadline_passed) {
    const bool evidence = op->first_failure && last_answered_start > *op->first_failure;
    if (evidence || op->req.probe) return finish(std::move(op), give_up(*op, last, deadline_passed, evidence));
    // What to probe: this host's last answered request; for a host that never answered and that
    // no other request used (one record naming its own host), the last request any host answered
    // — is the network up? then this record's host is the problem —; else the object itself.
    const std::string host = host_of(op->req.url);
    auto it = last_ok_by_host.find(host);
    auto used = requests_by_host.find(host);
    const bool alone = used != requests_by_host.end() && used->second == 1;
    HttpRequest probe = it != last_ok_by_host.end() ? it->second
                        : alone && last_ok_any  ? *last_ok_any
                                                : op->req;
    probe.method = "HEAD";
    probe.body.clear();
    probe.expected_bytes = 0;
    probe.max_body_bytes = -1;
    probe.probe = true;
    std::erase_if(probe.headers, [](const std::string& h) {
      return h.rfind("Range:", 0) == 0 || h.rfind("If-Match:", 0) == 0;
    });
    auto held = std::make_shared<OpPtr>(std::move(op));
    auto shared_last = std::make_shared<Error>(std::move(last));
    Callback decide = [this, held, shared_last, deadline_passed](Result<HttpResponse> r) {
      Op& o = **held;
      if (!r.ok() && r.error().code() == ErrorCode::kCancelled) {
        return finish(std::move(*held), r.error());
      }
      const bool answered = r.ok() || (r.error().code() != ErrorCode::kUnavailable &&
                                       r.error().code() != ErrorCode::kDeadlineExceeded);
      Error e = give_up(o, *shared_last, deadline_passed, answered);
      finish(std::move(*held), std::move(e));
    };
    exec::BackoffOptions once = options.backoff;
    once.max_attempts = 1;
    const auto now = Clock::now();
    pending.push_front(std::make_unique<Op>(std::move(probe), std::move(decide), now,
                                            now + kProbeTimeout, once));
  }

  Error give_up(const Op& op, Error last, bool deadline_passed, bool store_answers) {
    const int tries = op.backoff.attempts_made();
    const double secs = std::chrono::duration<double>(Clock::now() - op.submitted).count();
    char span[32];
    std::snprintf(span, sizeof span, "%.1f", secs);
    const std::string gave_up = "gave up after " + std::to_string(tries) + " attempts over " +
                                span + " s";
    if (store_answers) {
      const bool unknown_host = last.message().find("resolve host") != std::string::npos;
      std::string msg = gave_up + " while the store answered other requests (so this object, " +
                        "not the store, is failing); last: " + last.to_string();
      return unknown_host ? not_found(msg) : data_loss(msg);
    }
    const bool deadline = deadline_passed ||
                          op.backoff.give_up_reason().code() == ErrorCode::kDeadlineExceeded ||
                          last.code() == ErrorCode::kDeadlineExceeded;
    return Error(deadline ? ErrorCode::kDeadlineExceeded : ErrorCode::kUnavailable,
                 gave_up + (deadline ? " (deadline reached)" : "") + "; last: " + last.to_string());
  }

  void on_done(CURL* easy, CURLcode code) {
    Op* raw = nullptr;
    curl_easy_getinfo(easy, CURLINFO_PRIVATE, reinterpret_cast<char**>(&raw));
    long opened = 0;
    curl_easy_getinfo(easy, CURLINFO_NUM_CONNECTS, &opened);
    connections.fetch_add(opened);
    bool retry = false;
    Result<HttpResponse> result = classify(*raw, code, &retry);
    if (!result.ok() && !raw->first_failure) raw->first_failure = Clock::now();
    OpPtr op = detach(easy);
    if (result.ok()) bytes_received.fetch_add(static_cast<std::int64_t>(result->body.size()));
    if (!retry) return finish(std::move(op), std::move(result));
    const auto now = Clock::now();
    std::optional<std::chrono::nanoseconds> delay = op->backoff.next_delay(now);
    Error last = std::move(result).error();
    // An attempt the deadline cut short says only "timed out": the one before says why. Kept
    // also when a retry is still scheduled — the deadline may pass while it waits (admit()
    // then gives up with last_error), and under load that is the usual way it ends.
    if (op->cut_by_deadline && last.code() == ErrorCode::kDeadlineExceeded && op->last_error) {
      last = *op->last_error;
    }
    if (!delay) return give_up_or_probe(std::move(op), std::move(last), false);
    retries.fetch_add(1);
    op->last_error = std::move(last);
    timers.emplace(now + *delay, std::move(op));
  }

  void admit() {
    const auto now = Clock::now();
    while (!timers.empty() && timers.begin()->first <= now) {
      pending.push_front(std::move(timers.begin()->second));
      timers.erase(timers.begin());
    }
    while (!pending.empty() && in_flight < options.max_requests_in_flight) {
      Op& op = *pending.front();
      if (op.deadline <= now) {
        OpPtr dead = std::move(pending.front());
        pending.pop_front();
        if (dead->last_error) {
          Error last = *dead->last_error;
          give_up_or_probe(std::move(dead), std::move(last), /*deadline_passed=*/true);
        } else {
          finish(std::move(dead), deadline_exceeded(dead->req.method + " " + dead->req.display +
                                                    ": deadline passed while queued for admission"));
        }
        continue;
      }
      std::int64_t want = op.req.expected_bytes >= 0 ? op.req.expected_bytes
                                                      : options.unknown_size_estimate;
      if (in_flight > 0 && bytes_in_flight + want > options.max_bytes_in_flight) break;
      OpPtr next = std::move(pending.front());
      pending.pop_front();
      start(std::move(next));
    }
  }

  int poll_timeout_ms() {
    long curl_ms = -1;
    curl_multi_timeout(multi, &curl_ms);
    long ms = curl_ms < 0 ? 1000 : std::min(curl_ms, 1000L);
    if (!timers.empty()) {
      auto until = std::chrono::duration_cast<std::chrono::milliseconds>(timers.begin()->first -
                                                                         Clock::now());
      ms = std::min<long>(ms, std::max<long>(0, until.count() + 1));
    }
    if (!pending.empty() && in_flight == 0) ms = 0;
    return static_cast<int>(ms);
  }

  void loop() {
    for (;;) {
      {
        std::lock_guard lock(mu);
        if (stopping) break;
        while (!incoming.empty()) {
          pending.push_back(std::move(incoming.front()));
          incoming.pop_front();
        }
      }
      admit();
      int running = 0;
      curl_multi_perform(multi, &running);
      int left = 0;
      while (CURLMsg* msg = curl_multi_info_read(multi, &left)) {
        if (msg->msg == CURLMSG_DONE) on_done(msg->easy_handle, msg->data.result);
      }
      admit();
      curl_multi_poll(multi, nullptr, 0, poll_timeout_ms(), nullptr);
    }
    shutdown();
  }

  void shutdown() {
    std::vector<OpPtr> dropped;
    {
      std::lock_guard lock(mu);
      for (auto& op : incoming) dropped.push_back(std::move(op));
      incoming.clear();
    }
    for (auto& op : pending) dropped.push_back(std::move(op));
    pending.clear();
    for (auto& [at, op] : timers) dropped.push_back(std::move(op));
    timers.clear();
    // Transfers still on the wire.
    std::vector<CURL*> still(active.begin(), active.end());
    for (CURL* easy : still) dropped.push_back(detach(easy));
    for (auto& op : dropped) {
      Error e = cancelled(op->req.method + " " + op->req.display + ": client shut down");
      finish(std::move(op), std::move(e));
    }
    for (CURL* easy : idle_handles) curl_easy_cleanup(easy);
    idle_handles.clear();
  }
};

HttpClient::HttpClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<HttpClient>> HttpClient::create(const HttpClientOptions& options) {
  STOKER_RETURN_IF_ERROR(options.validate());
  global_init();
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->multi = curl_multi_init();
  if (impl->multi == nullptr) return internal_error("curl_multi_init failed");
  if (options.max_connections > 0)
    curl_multi_setopt(impl->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, options.max_connections);
  // Keep as many idle connections as we may have requests in flight, so they are reused.
  curl_multi_setopt(impl->multi, CURLMOPT_MAXCONNECTS,
                    static_cast<long>(options.max_requests_in_flight));
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] { raw->loop(); });
  return std::unique_ptr<HttpClient>(new HttpClient(std::move(impl)));
}

HttpClient::~HttpClient() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  curl_multi_wakeup(impl_->multi);
  impl_->thread.join();
  curl_multi_cleanup(impl_->multi);
}

void HttpClient::submit(HttpRequest request, Callback callback) {
  exec::BackoffOptions backoff = impl_->options.backoff;
  {
    std::lock_guard lock(impl_->mu);
    // Each request its own jitter stream, so requests failing together do not retry together.
    backoff.seed = backoff.seed * 0x9e3779b97f4a7c15ull + (++impl_->next_seed);
    if (!impl_->stopping) {
      const auto now = Clock::now();
      impl_->incoming.push_back(std::make_unique<Impl::Op>(
          std::move(request), std::move(callback), now, now + impl_->options.deadline, backoff));
      callback = nullptr;
    }
  }
  if (callback) {
    callback(cancelled(request.method + " " + request.display + ": client shut down"));
    return;
  }
  curl_multi_wakeup(impl_->multi);
}

exec::Future<HttpResponse> HttpClient::submit(HttpRequest request) {
  auto promise = std::make_shared<exec::Promise<HttpResponse>>();
  exec::Future<HttpResponse> future = promise->get_future();
  submit(std::move(request),
         [promise](Result<HttpResponse> r) { promise->set(std::move(r)); });
  return future;
}

HttpClientStats HttpClient::stats() const {
  return {impl_->attempts.load(), impl_->retries.load(), impl_->succeeded.load(),
          impl_->failed.load(), impl_->bytes_received.load(), impl_->peak_in_flight.load(),
          impl_->connections.load()};
}

const HttpClientOptions& HttpClient::options() const { return impl_->options; }

}  // namespace stoker::io
