// LoaderState's text form (the state file a job saves and hands back on resume: untrusted bytes,
// fuzzed by src/stoker/fuzz). Apart from loader.cc so that the fuzzer links it without the engine.
#include <charconv>
#include <cstdio>

#include "stoker/pipeline/state.h"

namespace stoker::pipeline {

std::string LoaderState::serialize() const {
  std::string s = "stoker-state v1 epoch=" + std::to_string(epoch) + " position=" +
                  std::to_string(position) + " errors=" + std::to_string(errors);
  if (plan != 0) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "%08x", plan);
    s += " packs=" + std::to_string(packs) + " plan=" + hex;
  }
  return s;
}

Result<LoaderState> LoaderState::parse(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  constexpr std::string_view kMagic = "stoker-state v1";
  if (text.substr(0, kMagic.size()) != kMagic) {
    return invalid_argument("loader state: expected 'stoker-state v1 ...', got '" +
                            std::string(text.substr(0, 40)) + "'");
  }
  text.remove_prefix(kMagic.size());
  LoaderState s;
  bool seen[5] = {false, false, false, false, false};
  while (!text.empty()) {
    if (text.front() == ' ') {
      text.remove_prefix(1);
      continue;
    }
    std::size_t end = text.find(' ');
    std::string_view field = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end);
    std::size_t eq = field.find('=');
    if (eq == std::string_view::npos) {
      return invalid_argument("loader state: bad field '" + std::string(field) + "'");
    }
    std::string_view key = field.substr(0, eq), value = field.substr(eq + 1);
    int idx = key == "epoch" ? 0 : key == "position" ? 1 : key == "errors" ? 2
              : key == "packs" ? 3 : key == "plan" ? 4 : -1;
    if (idx < 0) continue;  // unknown fields: written by a newer version, ignored
    std::uint64_t v = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v, idx == 4 ? 16 : 10);
    if (ec != std::errc() || ptr != value.data() + value.size() || (idx == 4 && v > 0xffffffffu)) {
      return invalid_argument("loader state: bad number in '" + std::string(field) + "'");
    }
    if (idx == 3) s.packs = v;
    else if (idx == 4) s.plan = static_cast<std::uint32_t>(v);
    else (idx == 0 ? s.epoch : idx == 1 ? s.position : s.errors) = v;
    seen[idx] = true;
  }
  if (!seen[0] || !seen[1]) return invalid_argument("loader state: needs epoch= and position=");
  if (seen[3] != seen[4]) return invalid_argument("loader state: packs= and plan= go together");
  // Plan ids are never 0 (0 means "not a packing state", and serialize() then drops packs=):
  // accepting "packs=3 plan=0" resumed without the 3 consumed packs (found by the fuzzer).
  if (seen[4] && s.plan == 0) return invalid_argument("loader state: plan=0 is not a packing plan");
  return s;
}

}  // namespace stoker::pipeline
