// The fuzz targets of the one `stoker_fuzz` binary (main.cc picks one by --target=NAME). Each
// target is a libFuzzer entry point: `run` gets arbitrary bytes and must return normally for every
// input — a crash, a sanitizer report, a hang or a check() failure is a finding. `init` runs once
// (load the real Qwen tokenizer, create a scratch folder); it aborts with a reason when it cannot.
// Targets keep no state between inputs except what `init` built (immutable or per-input reset).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

namespace stoker::fuzz {

struct Target {
  const char* name;
  const char* what;  // one line for --list and the README table
  void (*init)();    // may be null
  void (*run)(const std::uint8_t* data, std::size_t size);
  // Writes hand-made seeds (the real encoders' output where one exists) into `dir`; may be null.
  // The generated corpora (stoker synth, the bad-input suite) come from make_seeds.py.
  void (*seeds)(const std::string& dir) = nullptr;
};

// An invariant the harness checks beyond "no crash": abort (libFuzzer saves the input).
inline void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "stoker_fuzz: invariant broken: %s\n", what);
    std::abort();
  }
}

// Every failure must say why (it reaches a person as the sample's reason): for a Result or Status.
template <typename R>
void check_error_named(const R& r) {
  if (!r.ok()) check(!r.error().message().empty(), "an error carries a message");
}

// The bytes as text (most parsers take a string_view).
inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return std::string_view(reinterpret_cast<const char*>(data), size);
}

// Splits the input at the first occurrence of `sep` (the rest without it): one input gives two
// documents (tokenizer.json + tokenizer_config.json, config.json + preprocessor_config.json).
inline std::pair<std::string_view, std::string_view> split2(std::string_view text,
                                                            std::string_view sep) {
  const std::size_t at = text.find(sep);
  if (at == std::string_view::npos) return {text, {}};
  return {text.substr(0, at), text.substr(at + sep.size())};
}

// Defined in the target files.
extern const Target kRecordTarget, kChatTarget, kTokenizerTarget, kTokenizerJsonTarget,
    kModelTarget, kJpegTarget, kPngTarget, kWebpTarget, kWireTarget, kHttpTarget, kXmlTarget,
    kAwsTarget, kUriTarget, kStateTarget, kManifestTarget, kVideoTarget, kJinjaTarget, kTarTarget,
    kPickleTarget, kYamlSpecTarget, kAudioTarget;

}  // namespace stoker::fuzz
