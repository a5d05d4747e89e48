// Bounded text: any value that reaches a message — a URL, a path, a server's words — is shown
// whole up to a fixed length, and past it as its head and tail with the middle cut out
// ("http://host/very…[98304 bytes]…/name.png"), so the part that tells one object from another
// (the host, the file name) stays and a 100 KB URL or a 50 MB body cannot flood a terminal or a
// log. Cuts fall on UTF-8 character boundaries (a multi-byte character is never split; bytes that
// are not UTF-8 are counted as single characters). Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace stoker {

// How long a URL, key or path is shown in a message before its middle is elided.
inline constexpr std::size_t kShownNameBytes = 200;
// Text a server chose (an S3 error <Message>): quoted at most this long.
inline constexpr std::size_t kShownServerTextBytes = 256;
// The backstop for a whole Error message and for each context added to it (result.cc).
inline constexpr std::size_t kMaxErrorTextBytes = 4096;

// `text` when it is at most `max` bytes; else its head, "…[N bytes]…" (N: the bytes left out)
// and its tail, `max` bytes or fewer in all (a max under 64 counts as 64).
std::string elide_middle(std::string_view text, std::size_t max = kShownNameBytes);

}  // namespace stoker
