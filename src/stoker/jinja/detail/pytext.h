// Python's text rules, as templates see them through jinja2: float repr, str repr, Unicode
// whitespace (str.strip/split, re's \s), case mapping (upper/lower/title/capitalize), UTF-8
// stepping, strftime in the C locale. Pure functions, thread-safe.
// Case mapping is per code point (utf8proc's simple mappings): Python's full mappings differ for
// a handful of characters ('ß'.upper() == 'SS'); see README.
#pragma once

#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>

namespace stoker::jinja::detail {

// repr(float) / str(float): shortest round trip, Python's layout ("1.0", "1e+16", "1e-05",
// "nan", "inf", "-0.0").
void append_float_repr(std::string& out, double d);
// Python round(x, ndigits) for a float (correctly rounded, half-even on exact ties).
double round_float(double x, int ndigits);

// repr(str): single quotes unless the text has ' and no ", escapes as CPython.
void append_str_repr(std::string& out, std::string_view s);

// Decodes one code point at s[i] (invalid bytes decode as themselves, one byte long).
std::uint32_t decode_utf8(std::string_view s, std::size_t i, std::size_t* len);
void append_utf8(std::string& out, std::uint32_t cp);
std::size_t count_code_points(std::string_view s);
// Byte offset of code point index `cp` (clamped to the size).
std::size_t byte_offset_of(std::string_view s, std::int64_t cp);

// Py_UNICODE_ISSPACE: what str.strip()/split() and re's \s treat as whitespace.
bool is_py_space(std::uint32_t cp);
// Length of the whitespace run at the start / end of s.
std::size_t leading_space(std::string_view s);
std::size_t trailing_space(std::string_view s);

std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_title(std::string_view s);       // str.title()
std::string py_capitalize(std::string_view s);  // str.capitalize()
std::string py_swapcase(std::string_view s);
bool py_isupper(std::string_view s);
bool py_islower(std::string_view s);
bool py_isdigit(std::string_view s);
bool py_isalpha(std::string_view s);
bool py_isalnum(std::string_view s);
bool py_isspace(std::string_view s);
bool is_cased(std::uint32_t cp);

// time.strftime(fmt, tm) with the C locale ("%d %b %Y" -> "26 Jul 2026").
std::string strftime_c(std::string_view fmt, const std::tm& tm);

}  // namespace stoker::jinja::detail
