// Secrets out of text. Credentials ride in URLs — presigned S3/GCS/Azure query parameters
// (X-Amz-Signature, X-Amz-Credential, X-Amz-Security-Token, Signature, sig, token, ...) and
// `user:password@` in an authority — and URLs end up in error messages, reports and progress
// lines. redact_secrets() replaces each such value with "REDACTED", leaving the rest of the text
// (the object's path, other parameters) readable. Header forms too, with or without the
// header's name (an endpoint that echoes the request in its error): "AWS4-HMAC-SHA256 ...",
// "AWS <key id>:<sig>", "Bearer ...", Credential=/Signature= parts, and AWS access key ids. Every Error message goes through it (result.cc),
// so no message built from a URL can carry a signature; text printed without an Error (manifest
// names in summaries) must call it. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace stoker {

inline constexpr std::string_view kRedacted = "REDACTED";

// True for a query-parameter name that carries a credential (case-insensitive).
bool is_secret_parameter(std::string_view name);

// `text` with every secret query value, userinfo and Authorization header value replaced.
std::string redact_secrets(std::string_view text);

}  // namespace stoker
