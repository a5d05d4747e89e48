// Small text codecs the io backends share: RFC 3986 percent-encoding (S3 keys for SigV4, form
// values for STS), the text of an XML element (S3 error bodies, STS responses), and text a server
// chose made fit to quote in a message. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace stoker::io::detail {

// Unreserved characters (A-Z a-z 0-9 - _ . ~) stay, every other byte becomes %XX; '/' stays too
// when `keep_slash` (an S3 key's path, the form SigV4 canonicalises).
std::string percent_encode(std::string_view s, bool keep_slash);

// The text of the first <name>…</name> in `xml`, with the five predefined entities decoded;
// "" when absent. Enough for the flat documents S3 and STS send — not a general XML parser.
std::string xml_text(std::string_view xml, std::string_view name);

// Text a server chose (an S3 <Message>, libcurl's error buffer quoting a reply) as one line fit
// for a message: control characters and whitespace runs become one space, bytes that are not
// UTF-8 become '?', trimmed, then elided in the middle past `max` bytes (base/elide.h).
std::string server_text(std::string_view text, std::size_t max);

}  // namespace stoker::io::detail
