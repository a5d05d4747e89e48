// LoaderState's text form (the state file a job saves and hands back on resume: untrusted bytes,
// fuzzed by src/stoker/fuzz). Apart from loader.cc so that the fuzzer links it without the engine.
// Errors name the field ("field 'position': 'x1' is not a number"); whatever the bytes, a message
// quotes at most 40 of them, control and non-ASCII bytes shown as '?'.
#include <charconv>
#include <cstdio>

#include "stoker/pipeline/state.h"

namespace stoker::pipeline {

std::string detail::shown_state_text(std::string_view text) {
  std::string out = "'";
  for (char c : text.substr(0, 40)) {
    const auto u = static_cast<unsigned char>(c);
    out += u < 0x20 || u >= 0x7f ? '?' : c;
  }
  return out + (text.size() > 40 ? "...'" : "'");
}

namespace {

constexpr auto shown = detail::shown_state_text;

constexpr std::string_view kFpPrefix = "fp.";

}  // namespace

std::string LoaderState::serialize() const {
  std::string s = "stoker-state v1 epoch=" + std::to_string(epoch) + " position=" +
                  std::to_string(position) + " errors=" + std::to_string(errors);
  if (plan != 0) {
    char hex[16];
    std::snprintf(hex, sizeof hex, "%08x", plan);
    s += " packs=" + std::to_string(packs) + " plan=" + hex;
  }
  if (!mix.empty()) s += " mix=" + mix;
  for (const auto& [name, value] : fingerprint.fields) {
    s += " ";
    s += kFpPrefix;
    s += name + "=" + value;
  }
  return s;
}

Result<LoaderState> LoaderState::parse(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  constexpr std::string_view kMagic = "stoker-state v1";
  if (text.empty()) return invalid_argument("loader state: empty, expected 'stoker-state v1 ...'");
  if (text.substr(0, kMagic.size()) != kMagic ||
      (text.size() > kMagic.size() && text[kMagic.size()] != ' ')) {
    return invalid_argument("loader state: expected 'stoker-state v1 ...', got " + shown(text));
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
    if (eq == std::string_view::npos || eq == 0) {
      return invalid_argument("loader state: field " + shown(field) + " is not NAME=VALUE");
    }
    std::string_view key = field.substr(0, eq), value = field.substr(eq + 1);
    if (key.substr(0, kFpPrefix.size()) == kFpPrefix) {
      const std::string_view name = key.substr(kFpPrefix.size());
      if (!Fingerprint::valid_name(name) || !Fingerprint::valid_value(value)) {
        return invalid_argument("loader state: fingerprint field " + shown(field) +
                                " is not fp.NAME=VALUE (NAME: a-z and _, VALUE: at most " +
                                std::to_string(Fingerprint::kMaxValue) +
                                " of A-Z a-z 0-9 . _ : / + -)");
      }
      if (s.fingerprint.find(name) != nullptr) {
        return invalid_argument("loader state: fingerprint field " + shown(key) + " appears twice");
      }
      if (s.fingerprint.fields.size() == Fingerprint::kMaxFields) {
        return invalid_argument("loader state: more than " +
                                std::to_string(Fingerprint::kMaxFields) + " fingerprint fields");
      }
      s.fingerprint.fields.emplace_back(std::string(name), std::string(value));
      continue;
    }
    if (key == "mix") {
      if (!s.mix.empty() || value.empty()) {
        return invalid_argument(value.empty() ? std::string("loader state: field 'mix' is empty")
                                              : std::string("loader state: field 'mix' appears twice"));
      }
      if (value.size() > kMaxMix) {
        return invalid_argument("loader state: field 'mix' is longer than " + std::to_string(kMaxMix) + " bytes");
      }
      for (char c : value) {
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == 'w' || c == '.' || c == '_')) {
          return invalid_argument("loader state: field 'mix' must be of 0-9 a-f w . _, got " + shown(value));
        }
      }
      s.mix = std::string(value);
      continue;
    }
    int idx = key == "epoch" ? 0 : key == "position" ? 1 : key == "errors" ? 2
              : key == "packs" ? 3 : key == "plan" ? 4 : -1;
    if (idx < 0) continue;  // unknown fields: written by a newer version, ignored
    if (seen[idx]) {
      return invalid_argument("loader state: field '" + std::string(key) + "' appears twice");
    }
    std::uint64_t v = 0;
    auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v, idx == 4 ? 16 : 10);
    if (ec != std::errc() || ptr != value.data() + value.size() || (idx == 4 && v > 0xffffffffu)) {
      const char* want = idx == 4 ? "a hexadecimal number of at most 8 digits"
                                  : "a number in [0, 18446744073709551615]";
      return invalid_argument("loader state: field '" + std::string(key) + "' must be " + want +
                              ", got " + shown(value));
    }
    if (idx == 3) s.packs = v;
    else if (idx == 4) s.plan = static_cast<std::uint32_t>(v);
    else (idx == 0 ? s.epoch : idx == 1 ? s.position : s.errors) = v;
    seen[idx] = true;
  }
  if (!seen[0]) return invalid_argument("loader state: field 'epoch' is missing");
  if (!seen[1]) return invalid_argument("loader state: field 'position' is missing");
  if (seen[3] != seen[4]) return invalid_argument("loader state: packs= and plan= go together");
  // Plan ids are never 0 (0 means "not a packing state", and serialize() then drops packs=):
  // accepting "packs=3 plan=0" resumed without the 3 consumed packs (found by the fuzzer).
  if (seen[4] && s.plan == 0) return invalid_argument("loader state: plan=0 is not a packing plan");
  return s;
}

}  // namespace stoker::pipeline
