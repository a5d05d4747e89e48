#include "stoker/base/result.h"

#include "stoker/base/elide.h"
#include "stoker/base/redact.h"

namespace stoker {

std::string_view error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument: return "InvalidArgument";
    case ErrorCode::kNotFound: return "NotFound";
    case ErrorCode::kPermissionDenied: return "PermissionDenied";
    case ErrorCode::kUnavailable: return "Unavailable";
    case ErrorCode::kDeadlineExceeded: return "DeadlineExceeded";
    case ErrorCode::kDataLoss: return "DataLoss";
    case ErrorCode::kResourceExhausted: return "ResourceExhausted";
    case ErrorCode::kUnimplemented: return "Unimplemented";
    case ErrorCode::kCancelled: return "Cancelled";
    case ErrorCode::kInternal: return "Internal";
    case ErrorCode::kFailedPrecondition: return "FailedPrecondition";
  }
  return "Unknown";
}

Error::Error(ErrorCode code, std::string message)
    : code_(code), message_(elide_middle(redact_secrets(message), kMaxErrorTextBytes)) {}

std::string Error::to_string() const { return context_ + message_; }

Error& Error::with_context(std::string context) & {
  context_ = elide_middle(redact_secrets(context), kMaxErrorTextBytes) + ": " + context_;
  return *this;
}

Error&& Error::with_context(std::string context) && {
  context_ = elide_middle(redact_secrets(context), kMaxErrorTextBytes) + ": " + context_;
  return std::move(*this);
}

Error invalid_argument(std::string m) { return Error(ErrorCode::kInvalidArgument, std::move(m)); }
Error not_found(std::string m) { return Error(ErrorCode::kNotFound, std::move(m)); }
Error permission_denied(std::string m) { return Error(ErrorCode::kPermissionDenied, std::move(m)); }
Error unavailable(std::string m) { return Error(ErrorCode::kUnavailable, std::move(m)); }
Error deadline_exceeded(std::string m) { return Error(ErrorCode::kDeadlineExceeded, std::move(m)); }
Error data_loss(std::string m) { return Error(ErrorCode::kDataLoss, std::move(m)); }
Error resource_exhausted(std::string m) { return Error(ErrorCode::kResourceExhausted, std::move(m)); }
Error unimplemented(std::string m) { return Error(ErrorCode::kUnimplemented, std::move(m)); }
Error cancelled(std::string m) { return Error(ErrorCode::kCancelled, std::move(m)); }
Error internal_error(std::string m) { return Error(ErrorCode::kInternal, std::move(m)); }
Error failed_precondition(std::string m) {
  return Error(ErrorCode::kFailedPrecondition, std::move(m));
}

void check_failed(const char* expr, const char* file, int line, const std::string& why) {
  std::fprintf(stderr, "stoker: check failed at %s:%d: %s (%s)\n", file, line, expr, why.c_str());
  std::abort();
}

}  // namespace stoker
