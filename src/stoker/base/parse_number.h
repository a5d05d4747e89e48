// Strict numbers from text (flags, environment variables, stoker.json): the whole text, in a
// range, or InvalidArgument naming where it came from and the range: "--batch-size must be an
// integer in [1, 65536], got '8x'". `hint` follows the range, e.g. why the range is what it is
// on this machine (" (4 x 2 cores, at least 64)"). Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

#include "stoker/base/result.h"

namespace stoker {

// `text` whole as a base-10 integer in [lo, hi] (no sign '+', spaces or junk; overflow is out of
// range). `what` names the source in the error: "--batch-size", "$WORLD_SIZE".
Result<long long> parse_int(std::string_view what, std::string_view text, long long lo,
                            long long hi, std::string_view hint = {});
Result<unsigned long long> parse_uint(std::string_view what, std::string_view text,
                                      unsigned long long lo, unsigned long long hi,
                                      std::string_view hint = {});
// A finite decimal number in [lo, hi] ("nan", "inf" and hex floats are refused).
Result<double> parse_double(std::string_view what, std::string_view text, double lo, double hi,
                            std::string_view hint = {});
// A byte count in [lo, hi]: plain bytes, or an integer with a binary suffix K/M/G/T or
// KiB/MiB/GiB/TiB (case-insensitive; "256M" = "256MiB" = 268435456), or "B". Decimal "MB"/"GB"
// are refused rather than guessed (1e6 or 2^20?). Overflow of the multiplication is out of range.
Result<std::int64_t> parse_bytes(std::string_view what, std::string_view text, std::int64_t lo,
                                 std::int64_t hi, std::string_view hint = {});

}  // namespace stoker
