// Brace expansion of shard names, exactly as Python's braceexpand 0.1.7 (what webdataset and
// Energon's split.yaml use): `{a,b}` alternatives (nested, empty allowed), `{N..M[..S]}` integer
// ranges (either direction; zero-padded to the longer bound's width when a bound other than
// "0"/"-0" starts with "0" or "-0"), `{a..e[..S]}` letter ranges over A–Z a–z, `\` escapes (removed
// from the result), a `{…}` that is neither left literal (its inside still expanded); unbalanced
// braces are an error. The number of names is computed before any is made and refused over
// `max_names`, so `{0..999999999999}` costs nothing. Pure functions, thread-safe.
// Errors: InvalidArgument naming the pattern (unbalanced braces, a bound beyond 64 bits, too many
// names).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::dataset {

inline constexpr std::uint64_t kDefaultMaxBraceNames = 1 << 18;  // 262,144

// The names `pattern` expands to, in braceexpand's order.
Result<std::vector<std::string>> brace_expand(std::string_view pattern,
                                              std::uint64_t max_names = kDefaultMaxBraceNames);
// How many names it expands to (saturates at UINT64_MAX), without making them.
Result<std::uint64_t> brace_count(std::string_view pattern);

// A webdataset shard list: "::"-separated patterns, each expanded, concatenated in order; the
// total is capped at `max_names`.
Result<std::vector<std::string>> expand_shard_list(std::string_view spec,
                                                   std::uint64_t max_names = kDefaultMaxBraceNames);

}  // namespace stoker::dataset
