// stoker_fuzz: one libFuzzer binary for every target (one link instead of fourteen: CI time).
//   stoker_fuzz --target=NAME [libFuzzer flags] [CORPUS_DIR... | INPUT_FILE...]
//   stoker_fuzz --list
//   stoker_fuzz --target=NAME --write-seeds=DIR   (the target's hand-made seeds, then exit)
// libFuzzer ignores flags that start with "--", so --target travels beside its own flags (and
// into -fork/-jobs children). STOKER_FUZZ_TARGET=NAME works too.
#include <cstring>
#include <filesystem>
#include <string_view>

#include "stoker/fuzz/targets.h"

namespace {

using stoker::fuzz::Target;

const Target* const kTargets[] = {
    &stoker::fuzz::kRecordTarget,   &stoker::fuzz::kManifestTarget,
    &stoker::fuzz::kChatTarget,     &stoker::fuzz::kTokenizerTarget,
    &stoker::fuzz::kTokenizerJsonTarget, &stoker::fuzz::kModelTarget,
    &stoker::fuzz::kJpegTarget,     &stoker::fuzz::kPngTarget,
    &stoker::fuzz::kWebpTarget,     &stoker::fuzz::kWireTarget,
    &stoker::fuzz::kHttpTarget,     &stoker::fuzz::kXmlTarget,
    &stoker::fuzz::kAwsTarget,      &stoker::fuzz::kUriTarget,
    &stoker::fuzz::kStateTarget,    &stoker::fuzz::kVideoTarget,
    &stoker::fuzz::kJinjaTarget,
    &stoker::fuzz::kTarTarget,      &stoker::fuzz::kPickleTarget,
    &stoker::fuzz::kYamlSpecTarget,
    &stoker::fuzz::kAudioTarget,
};

const Target* g_target = nullptr;

const Target* find(std::string_view name) {
  for (const Target* t : kTargets)
    if (name == t->name) return t;
  return nullptr;
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr, "stoker_fuzz: %s\nusage: stoker_fuzz --target=NAME [libFuzzer flags] "
                       "[corpus...]   (stoker_fuzz --list: the targets)\n", why);
  std::exit(2);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  const char* name = std::getenv("STOKER_FUZZ_TARGET");
  const char* seeds_dir = nullptr;
  for (int i = 1; i < *argc; ++i) {
    const char* a = (*argv)[i];
    if (std::strcmp(a, "--list") == 0) {
      for (const Target* t : kTargets) std::printf("%-15s %s\n", t->name, t->what);
      std::exit(0);
    }
    if (std::strncmp(a, "--target=", 9) == 0) name = a + 9;
    if (std::strncmp(a, "--write-seeds=", 14) == 0) seeds_dir = a + 14;
  }
  if (name == nullptr) usage("no --target given");
  g_target = find(name);
  if (g_target == nullptr) usage("unknown target (see --list)");
  if (seeds_dir != nullptr) {
    std::error_code ec;
    std::filesystem::create_directories(seeds_dir, ec);
    if (g_target->seeds != nullptr) g_target->seeds(seeds_dir);
    std::exit(0);
  }
  if (g_target->init != nullptr) g_target->init();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  g_target->run(data, size);
  return 0;
}
