// The number and text formats of `stoker inspect`'s table and summary (inspect_cmd.cc,
// inspect_audio.cc).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace stoker::cli {

inline std::string human_time(double s) {
  char buf[32];
  if (s < 1e-3) std::snprintf(buf, sizeof buf, "%.0f us", s * 1e6);
  else if (s < 1) std::snprintf(buf, sizeof buf, "%.1f ms", s * 1e3);
  else std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

inline std::string human_bytes(double b) {
  char buf[32];
  if (b < 1e3) std::snprintf(buf, sizeof buf, "%.0f B", b);
  else if (b < 1e6) std::snprintf(buf, sizeof buf, "%.1f kB", b / 1e3);
  else if (b < 1e9) std::snprintf(buf, sizeof buf, "%.1f MB", b / 1e6);
  else std::snprintf(buf, sizeof buf, "%.2f GB", b / 1e9);
  return buf;
}

inline std::string with_commas(std::int64_t v) {
  const std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out = v < 0 ? "-" : "";
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// "…tail" so that the end of a long path (the file name) stays visible.
inline std::string fit(const std::string& s, std::size_t width) {
  if (s.size() <= width) return s;
  std::size_t start = s.size() - (width - 3);
  while (start < s.size() && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80) ++start;
  std::string out = "...";
  out.append(s, start);
  return out;
}

template <typename T>
T percentile(std::vector<T> v, double p) {
  if (v.empty()) return T{};
  std::sort(v.begin(), v.end());
  std::size_t rank = static_cast<std::size_t>(std::ceil(p / 100.0 * v.size()));
  return v[std::clamp<std::size_t>(rank, 1, v.size()) - 1];
}

}  // namespace stoker::cli
