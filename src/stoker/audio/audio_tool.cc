// stoker_audio_tool: the audio module from the command line, for the Python parity and bad-input
// tests (tests/python/test_audio_*.py) and manual checks. Prints one JSON line; exit 1 with the
// error on stderr.
//   probe FILE                       header info (no decoding)
//   decode FILE [--out RAW]          interleaved float32 as decoded (before mono / resampling)
//   load FILE [--offset S] [--duration S] [--out RAW]      mono 16 kHz float32 (librosa.load)
//   features --model M [--out RAW] [--mask RAW] (FILE | --raw F32FILE)...
//                                    one feature-extractor call on the clips (loaded, or raw
//                                    16 kHz float32 files): input_features, mask, token counts
//   Limits: --max-duration S, --max-channels N, --max-rate HZ, --max-seconds S.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "stoker/audio/decode.h"
#include "stoker/audio/features.h"
#include "stoker/audio/load.h"
#include "stoker/base/file.h"

using namespace stoker;
using namespace stoker::audio;

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "%s\n", what.c_str());
  std::exit(1);
}

void write_raw(const std::string& path, const void* data, std::size_t n) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || (n && std::fwrite(data, 1, n, f) != n)) fail("cannot write " + path);
  std::fclose(f);
}

std::string info_json(const AudioInfo& i) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "\"backend\": \"%s\", \"container\": \"%s\", \"codec\": \"%s\", \"sample_rate\": %d, "
                "\"channels\": %d, \"frames\": %lld, \"frames_exact\": %s",
                backend_name(i.backend), i.container.c_str(), i.codec.c_str(), i.sample_rate, i.channels,
                static_cast<long long>(i.frames), i.frames_exact ? "true" : "false");
  return buf;
}

std::string join(const std::vector<std::int64_t>& v) {
  std::string s;
  for (std::size_t k = 0; k < v.size(); ++k) s += (k ? ", " : "") + std::to_string(v[k]);
  return s;
}

std::vector<std::uint8_t> read_or_die(const std::string& path) {
  auto b = read_file(path);
  if (!b.ok()) fail(b.error().to_string());
  return std::move(b).value();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: stoker_audio_tool probe|decode|load|features ... (see the source)\n");
    return 2;
  }
  const std::string cmd = argv[1];
  LoadOptions lo;
  std::string out, mask_out, model = "qwen2-audio";
  std::vector<std::string> files, raws;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) fail(a + " needs a value");
      return argv[++i];
    };
    if (a == "--out") out = next();
    else if (a == "--mask") mask_out = next();
    else if (a == "--model") model = next();
    else if (a == "--raw") raws.push_back(next());
    else if (a == "--offset") lo.offset_s = std::atof(next().c_str());
    else if (a == "--duration") lo.duration_s = std::atof(next().c_str());
    else if (a == "--max-duration") lo.limits.max_duration_s = std::atof(next().c_str());
    else if (a == "--max-channels") lo.limits.max_channels = std::atoi(next().c_str());
    else if (a == "--max-rate") lo.limits.max_sample_rate = std::atoi(next().c_str());
    else if (a == "--max-seconds") lo.limits.max_seconds = std::atof(next().c_str());
    else if (!a.empty() && a[0] == '-') fail("unknown option " + a);
    else files.push_back(a);
  }
  if (cmd == "probe" || cmd == "decode" || cmd == "load") {
    if (files.size() != 1) fail(cmd + ": one FILE");
    const std::vector<std::uint8_t> bytes = read_or_die(files[0]);
    if (cmd == "probe") {
      auto i = probe(bytes, lo.limits);
      if (!i.ok()) fail(i.error().to_string());
      std::printf("{%s}\n", info_json(*i).c_str());
    } else if (cmd == "decode") {
      auto d = decode_all(bytes, lo.limits);
      if (!d.ok()) fail(d.error().to_string());
      if (!out.empty()) write_raw(out, d->samples.data(), d->samples.size() * sizeof(float));
      std::printf("{%s, \"decoded_frames\": %lld}\n", info_json(d->info).c_str(), static_cast<long long>(d->frames));
    } else {
      auto w = load(bytes, lo);
      if (!w.ok()) fail(w.error().to_string());
      if (!out.empty()) write_raw(out, w->samples.data(), w->samples.size() * sizeof(float));
      std::printf("{%s, \"source_frames\": %lld, \"samples\": %zu}\n", info_json(w->info).c_str(),
                  static_cast<long long>(w->source_frames), w->samples.size());
    }
    return 0;
  }
  if (cmd == "features") {
    auto m = parse_audio_model(model);
    if (!m.ok()) fail(m.error().to_string());
    std::vector<std::vector<float>> waves;
    for (const std::string& f : files) {
      auto w = load(read_or_die(f), lo);
      if (!w.ok()) fail(f + ": " + w.error().to_string());
      waves.push_back(std::move(w->samples));
    }
    for (const std::string& f : raws) {
      const std::vector<std::uint8_t> b = read_or_die(f);
      std::vector<float> w(b.size() / sizeof(float));
      std::memcpy(w.data(), b.data(), w.size() * sizeof(float));
      waves.push_back(std::move(w));
    }
    std::vector<std::span<const float>> clips(waves.begin(), waves.end());
    auto ex = WhisperFeatureExtractor::create(WhisperConfig::for_model(*m));
    if (!ex.ok()) fail(ex.error().to_string());
    auto feats = ex->extract(clips);
    if (!feats.ok()) fail(feats.error().to_string());
    if (!out.empty()) write_raw(out, feats->input_features.data(), feats->input_features.size() * sizeof(float));
    if (!mask_out.empty()) write_raw(mask_out, feats->attention_mask.data(), feats->attention_mask.size() * 4);
    std::vector<std::int64_t> tokens;
    for (std::int64_t s : feats->mask_sums) tokens.push_back(audio_token_count(*m, s));
    std::printf("{\"clips\": %lld, \"n_mels\": %lld, \"frames\": %lld, \"mask_sums\": [%s], \"tokens\": [%s]}\n",
                static_cast<long long>(feats->clips), static_cast<long long>(feats->n_mels),
                static_cast<long long>(feats->frames), join(feats->mask_sums).c_str(), join(tokens).c_str());
    return 0;
  }
  fail("unknown command " + cmd);
}
