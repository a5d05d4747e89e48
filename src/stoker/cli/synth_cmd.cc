// `stoker synth`: writes a deterministic synthetic SFT dataset (see synth/README.md).
#include <cstdio>
#include <limits>

#include "stoker/cli/args.h"
#include "stoker/cli/commands.h"
#include "stoker/synth/shards.h"
#include "stoker/synth/audio.h"
#include "stoker/synth/synth.h"
#include "stoker/synth/video.h"

namespace stoker::cli {
namespace {

constexpr char kHelp[] = R"(usage: stoker synth --out DIR [options]

Generates a deterministic synthetic SFT dataset: DIR/data.jsonl (OpenAI-messages records, image
paths relative to the file), DIR/images/, DIR/images.jsonl (per image: path, variant, Pillow mode,
size, content, bytes). Same options -> byte-identical files.

The mix: single-image VQA, multi-image (2-4), multi-turn (images in later turns too), text-only,
some system messages; tokenizer-stressing text (CJK, emoji, digits, code, whitespace runs).
Images from 32 px to 3840x2160 and aspect ratios to ~50:1, as JPEG (baseline/progressive, 4:2:0/
4:4:4, grey, CMYK), PNG (RGB, RGBA, grey 1-16 bit, grey+alpha, palette 1-8 bit) and WebP (lossy,
lossless, with alpha); content: gradients, noise, checkerboards, zone plates, photo-like, documents.

options:
  --out DIR             output directory (created)
  --n N                 number of records (default 64)
  --seed S              seed (default 0)
  --max-side PX         no image side above PX (default 3840, min 32)
  --bad-fraction F      make a share F of the records deliberately broken (missing image, corrupt
                        image, truncated image, malformed JSON line, no assistant turn) and list
                        them in DIR/bad.jsonl {"line","id","kind","image","reason"} (default 0)
  --threads T           encoder threads (default: all cores; output does not depend on it)
  --videos N            also write N small videos (DIR/videos/, described in DIR/videos.jsonl) and
                        append one video record per video to data.jsonl; the kinds cycle through
                        long-GOP H.264 with B-frames, MPEG-4 at 29.97, VFR odd-size H.264 at
                        23.976, 60 fps with an AAC track, a 90-degree rotation tag, short GOP, VP9
                        and AV1 (when this FFmpeg encodes them); plus videos/one_frame.mp4 and
                        videos/zero_frames.mp4 (not referenced). Encoded with libavcodec.
  --audio N             also write N audio files (DIR/audio/, described in DIR/audio.jsonl) and
                        append one record each: speech-like sound, tones, a chirp, noise and silence
                        at 1343 Hz to 96 kHz, 1 to 6 channels, as WAV (16/24-bit, float), FLAC, OGG
                        Vorbis, Opus, MP3 and M4A, a 31 s clip, and MP4 videos with an AAC track
                        (records with "use_audio_in_video": true); see synth/audio.h
  --images-only         benchmark mode: N photo-like images of one size and format
  --size WxH            image size for --images-only (default 1920x1080)
  --format F            jpeg | jpeg-progressive | jpeg444 | png | webp, or any variant name
                        (see images.jsonl "variant"; default jpeg)
  --shards N            also write the records as N WebDataset shards (DIR/shards/data-000.tar ...:
                        KEY.json + KEY.<k>.<ext> media members) and as an Energon-prepared folder
                        (DIR/energon: .nv-meta, the same shards, their .tar.idx)
)";

constexpr int kMaxRecords = 10'000'000;  // synth's own cap (SynthConfig::validate)

// "WxH", each side in [1, 16383] (ImagesOnlyConfig's bounds).
Result<std::pair<int, int>> parse_size(const std::string& s) {
  const std::size_t x = s.find('x');
  if (x == std::string::npos) return invalid_argument("--size expects WxH, got '" + s + "'");
  STOKER_ASSIGN_OR_RETURN(long long w, parse_int("--size width", s.substr(0, x), 1, 16383));
  STOKER_ASSIGN_OR_RETURN(long long h, parse_int("--size height", s.substr(x + 1), 1, 16383));
  return std::pair{static_cast<int>(w), static_cast<int>(h)};
}

Result<synth::SynthResult> run(const Args& args) {
  if (!args.has("out")) return invalid_argument("--out DIR is required (see --help)");
  constexpr int kIntMax = std::numeric_limits<int>::max();
  STOKER_ASSIGN_OR_RETURN(std::uint64_t seed, args.get_int<std::uint64_t>("seed", 0));
  STOKER_ASSIGN_OR_RETURN(int threads, args.get_int<int>("threads", 0, 0, kIntMax));
  if (args.has("images-only")) {
    if (args.has("shards")) return invalid_argument("--shards writes the records as shards: not with --images-only");
    synth::ImagesOnlyConfig c{.out_dir = args.get("out")};
    STOKER_ASSIGN_OR_RETURN(c.count, args.get_int<int>("n", 64, 1, kMaxRecords));
    STOKER_ASSIGN_OR_RETURN(auto size, parse_size(args.get("size", "1920x1080")));
    STOKER_ASSIGN_OR_RETURN(c.variant, synth::parse_variant(args.get("format", "jpeg")));
    c.seed = seed;
    c.width = size.first;
    c.height = size.second;
    c.threads = threads;
    return synth::generate_images_only(c);
  }
  for (const char* f : {"size", "format"})
    if (args.has(f)) return invalid_argument(std::string("--") + f + " needs --images-only");
  synth::SynthConfig c{.out_dir = args.get("out")};
  STOKER_ASSIGN_OR_RETURN(c.records, args.get_int<int>("n", c.records, 1, kMaxRecords));
  STOKER_ASSIGN_OR_RETURN(c.max_side, args.get_int<int>("max-side", c.max_side, 32, kIntMax));
  STOKER_ASSIGN_OR_RETURN(c.bad_fraction, args.get_double("bad-fraction", 0.0, 0, 1));
  c.seed = seed;
  c.threads = threads;
  STOKER_ASSIGN_OR_RETURN(int videos, args.get_int<int>("videos", 0, 0, 100000));
  STOKER_ASSIGN_OR_RETURN(int audio, args.get_int<int>("audio", 0, 0, 100000));
  STOKER_ASSIGN_OR_RETURN(synth::SynthResult r, synth::generate_dataset(c));
  if (videos > 0) {
    STOKER_ASSIGN_OR_RETURN(synth::VideoMixResult v, synth::add_video_records(c.out_dir, videos, seed));
    r.records += v.records;
    std::printf("videos: %d records, %zu files, %.1f KiB (DIR/videos.jsonl)\n", v.records,
                v.paths.size() + 2, static_cast<double>(v.bytes) / 1024);
  }
  if (args.has("shards")) {
    STOKER_ASSIGN_OR_RETURN(int shards, args.get_int<int>("shards", 1, 1, kMaxRecords));
    STOKER_ASSIGN_OR_RETURN(synth::ShardsResult s, synth::write_shards(c.out_dir, shards));
    std::printf("shards: %d samples in %s (%.1f MiB), Energon folder %s\n", s.samples, s.shards_pattern.c_str(),
                static_cast<double>(s.bytes) / (1 << 20), s.energon_dir.c_str());
  }
  if (audio > 0) {
    STOKER_ASSIGN_OR_RETURN(synth::AudioMixResult a, synth::add_audio_records(c.out_dir, audio, seed));
    r.records += a.records;
    std::printf("audio: %d records, %.1f KiB (DIR/audio.jsonl)\n", a.records, static_cast<double>(a.bytes) / 1024);
  }
  return r;
}

}  // namespace

int run_synth(int argc, char** argv) {
  auto args = Args::parse(argc, argv, {"out", "n", "seed", "max-side", "bad-fraction", "threads", "size", "format", "videos", "shards", "audio"},
                          {"images-only", "help"});
  if (!args.ok()) return report("synth", args.error());
  if (args->has("help")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  if (!args->positional().empty()) return report("synth", invalid_argument("unexpected argument '" + args->positional()[0] + "'"));
  auto result = run(*args);
  if (!result.ok()) return report("synth", result.error());
  std::printf("%s\n", synth::summary_text(*result).c_str());
  return 0;
}

}  // namespace stoker::cli
