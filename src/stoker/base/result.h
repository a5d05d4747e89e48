// Error and Result<T>: how every fallible stoker call reports failure.
// Expected failures (bad input, missing object, network trouble) are values, never exceptions;
// programmer bugs are STOKER_CHECK aborts with a reason. An Error carries a code, a message and
// a context chain ("reading a.jsonl: line 7: decoding img.png: truncated") built with
// with_context() as it travels up. Result<T> is shaped like std::expected<T, Error>.
// Thread-safety: plain values; copy or move freely.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>

namespace stoker {

enum class ErrorCode {
  kInvalidArgument,
  kNotFound,
  kPermissionDenied,
  kUnavailable,
  kDeadlineExceeded,
  kDataLoss,
  kResourceExhausted,
  kUnimplemented,
  kCancelled,
  kInternal,
  kFailedPrecondition,  // a condition the request set no longer holds (If-Match: object replaced)
};
inline constexpr ErrorCode kLastErrorCode = ErrorCode::kFailedPrecondition;  // wire range checks

std::string_view error_code_name(ErrorCode code);

class Error {
 public:
  // Message and context frames pass through redact_secrets (base/redact.h): an Error never
  // carries a presigned URL's signature or a URL's password, whoever built the message.
  Error(ErrorCode code, std::string message);

  ErrorCode code() const { return code_; }
  // The innermost reason, without context.
  const std::string& message() const { return message_; }
  // "context: context: message", outermost first.
  std::string to_string() const;

  // Prepends a context frame ("decoding cat.jpg"). Returns *this for chaining.
  Error& with_context(std::string context) &;
  Error&& with_context(std::string context) &&;

 private:
  ErrorCode code_;
  std::string message_;
  std::string context_;  // already joined, outermost first, ends with ": " when non-empty
};

Error invalid_argument(std::string message);
Error not_found(std::string message);
Error permission_denied(std::string message);
Error unavailable(std::string message);
Error deadline_exceeded(std::string message);
Error data_loss(std::string message);
Error resource_exhausted(std::string message);
Error unimplemented(std::string message);
Error cancelled(std::string message);
Error internal_error(std::string message);
Error failed_precondition(std::string message);

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}  // NOLINT implicit
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT implicit
  template <typename U, typename = std::enable_if_t<std::is_constructible_v<T, U&&> &&
                                                    !std::is_same_v<std::decay_t<U>, Error> &&
                                                    !std::is_same_v<std::decay_t<U>, Result>>>
  Result(U&& value) : v_(std::in_place_index<0>, T(std::forward<U>(value))) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & { check(); return std::get<0>(v_); }
  const T& value() const& { check(); return std::get<0>(v_); }
  T&& value() && { check(); return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const Error& error() const& { return std::get<1>(v_); }
  Error& error() & { return std::get<1>(v_); }
  Error&& error() && { return std::get<1>(std::move(v_)); }

 private:
  void check() const {
    if (v_.index() != 0) {
      std::fprintf(stderr, "stoker: value() on an error Result: %s\n",
                   std::get<1>(v_).to_string().c_str());
      std::abort();
    }
  }
  std::variant<T, Error> v_;
};

// Result<void>: success or an Error.
class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(Error error) : error_(std::move(error)), ok_(false) {}  // NOLINT implicit
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const& { return error_; }
  Error&& error() && { return std::move(error_); }

 private:
  Error error_{ErrorCode::kInternal, ""};
  bool ok_ = true;
};

inline Status ok_status() { return Status(); }

[[noreturn]] void check_failed(const char* expr, const char* file, int line, const std::string& why);

}  // namespace stoker

// Programmer-bug checks: abort with a reason. Never for bad input.
#define STOKER_CHECK(cond, why)                                      \
  do {                                                               \
    if (!(cond)) ::stoker::check_failed(#cond, __FILE__, __LINE__, (why)); \
  } while (0)

// Propagate an error: STOKER_RETURN_IF_ERROR(status_expr);
#define STOKER_RETURN_IF_ERROR(expr)            \
  do {                                          \
    auto stoker_status_ = (expr);               \
    if (!stoker_status_.ok()) return std::move(stoker_status_).error(); \
  } while (0)

#define STOKER_CONCAT_INNER_(a, b) a##b
#define STOKER_CONCAT_(a, b) STOKER_CONCAT_INNER_(a, b)
// STOKER_ASSIGN_OR_RETURN(auto x, make_x());
#define STOKER_ASSIGN_OR_RETURN(lhs, expr)                                  \
  auto STOKER_CONCAT_(stoker_result_, __LINE__) = (expr);                  \
  if (!STOKER_CONCAT_(stoker_result_, __LINE__).ok())                      \
    return std::move(STOKER_CONCAT_(stoker_result_, __LINE__)).error();    \
  lhs = std::move(STOKER_CONCAT_(stoker_result_, __LINE__)).value()
