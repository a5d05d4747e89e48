// `stoker render`: one conversation record → the model's chat template, token ids with SFT
// labels side by side, and a summary of the mRoPE position ids. For looking at what the
// trainer will see for one sample; everything shown is what the pipeline computes.
// The record file and its images are read as `stoker run` reads them: through an io store (a
// regular file only, capped: --max-record-bytes for the record, --max-object-bytes per image,
// --max-media-per-record) and the record's trust boundary (io::MediaScope: beneath its folder
// and --media-root) — the option schema's "media and I/O" options (command render), parsed next
// to render's own flags (options_cli.h settings_from_args).
// A model of a family without a parsed ModelConfig (the audio families: qwen2-audio,
// qwen2.5-omni, Qwen3-Omni folders) is opened through its family as the Loader opens it, and its
// audio clips (and the tracks of videos with use_audio_in_video) are planned by the engine's own
// media kinds (pipeline/media.h): the token runs and positions are those `stoker run` makes.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "stoker/base/file.h"
#include "stoker/base/printable.h"
#include "stoker/batch/mrope.h"
#include "stoker/cli/args.h"
#include "stoker/cli/commands.h"
#include "stoker/cli/options_cli.h"
#include "stoker/dataset/conversation.h"
#include "stoker/io/media_access.h"
#include "stoker/io/object_store.h"
#include "stoker/io/uri.h"
#include "stoker/image/processor.h"
#include "stoker/model/family.h"
#include "stoker/model/model_config.h"
#include "stoker/pipeline/loader_config.h"
#include "stoker/pipeline/media.h"
#include "stoker/pipeline/prepare.h"
#include "stoker/video/processor.h"
#include "stoker/text/chat_template.h"
#include "stoker/text/labels.h"
#include "stoker/text/qwen_vl.h"
#include "stoker/text/tokenizer.h"

namespace stoker::cli {
namespace {

constexpr char kHelp[] = R"(usage: stoker render [--model M] [--tokenizer DIR] [options] conversation.json

Renders one record (a JSON file holding one OpenAI-messages, ShareGPT or LLaVA record) with the
model's chat template, then prints its token ids and SFT labels aligned (vision pad runs folded
into one line), then the mRoPE position ids (3 rows) in summary.

Images are read for their header only (relative paths are resolved against the JSON file's
folder) and planned with the model's image processor to get their grids. Videos use a fixed grid.
The record and its images are read as `stoker run` reads them: regular files only, within the
caps, and images only beneath the record's folder and --media-root (media options below, the
same as run's).

options:
  --model M            qwen2-vl | qwen2.5-vl (default) | qwen3-vl | qwen2-audio | qwen2.5-omni |
                       a Hugging Face model folder (those families and Qwen3-Omni), rendered with
                       its own chat template (chat_template.jinja / .json, tokenizer_config.json,
                       found as transformers finds it) by stoker's Jinja engine; no template
                       there: the family's stock one. Audio models: each audio clip (and a video's
                       track with use_audio_in_video) is read and planned as `stoker run` plans it
                       (16 kHz length from the header or a decode, the model's feature frames and
                       token formula); its token run is shown with its feature frames, then the
                       model's positions (TMRoPE 3 rows; Qwen2-Audio 1 row, 0..L-1).
  --chat-template NAME a named template of the folder (e.g. tool_use)
  --chat-template-kwargs JSON
                       template variables for the record, e.g. '{"enable_thinking": false}'
                       (the record's own "chat_template_kwargs" win)
  --tokenizer DIR      folder with tokenizer.json (default: the model folder; for a preset, the
                       Qwen tokenizer installed with stoker, share/stoker/tokenizers)
  --no-images          don't read images; use --image-grid for each
  --image-grid T,H,W   grid for --no-images (default 1,8,8: 16 tokens at merge 2)
  --video-grid T,H,W   grid for every video (default 2,8,8)
  --video-fps F        Qwen3-VL timestamps / Qwen2.5-VL seconds per grid assume frames sampled
                       at F fps (default 2)
  --last-turn-only     supervise only the last assistant turn (native stock templates)
  --think MODE         Qwen3-VL stock template: none (HF Instruct template, default) | answer |
                       prompt (LLaMA-Factory's empty think block in the answer / the prompt)
  --max-length N       apply the overflow policy at N tokens
  --truncate           overflow policy: drop trailing whole turns (default: drop the sample)
  --text-only          print the rendered template only
)";

// "T,H,W", each in [1, 1024] (so T·H·W, the patch count, fits an int).
Result<text::VisionGrid> parse_grid(const std::string& flag, const std::string& s) {
  std::stringstream in(s);
  std::string item;
  std::vector<int> v;
  while (std::getline(in, item, ',')) {
    STOKER_ASSIGN_OR_RETURN(long long x, parse_int(flag + " T,H,W", item, 1, 1024));
    v.push_back(static_cast<int>(x));
  }
  if (v.size() != 3) return invalid_argument(flag + " expects T,H,W, got '" + s + "'");
  return text::VisionGrid{v[0], v[1], v[2], {}};
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c == '"') out += "\\\"";
    else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

// Where render reads from: the record through a store that refuses special files and caps its
// size (the file named on the command line may lie anywhere), the images through a store
// confined to the record's trust boundary, as the engine's (pipeline::open_sources).
// `media`: the schema's media options (Settings::loader's media_roots, trust_media_paths,
// allow_buckets, caps, io_deadline_ms, io_max_attempts, imds).
struct Sources {
  io::MediaScope scope;
  std::unique_ptr<io::ObjectStore> record_store;
  std::unique_ptr<io::ObjectStore> media_store;
  pipeline::LoaderConfig media;
};

Result<Sources> open_render_sources(const std::string& record, const pipeline::LoaderConfig& media) {
  io::MediaAccess access{.media_roots = media.media_roots,
                         .trust_media_paths = media.trust_media_paths,
                         .allow_buckets = media.allow_buckets};
  STOKER_ASSIGN_OR_RETURN(io::MediaScope scope, io::MediaScope::make(record, access));
  io::StoreOptions media_options;
  media_options.local.restricted = !media.trust_media_paths;
  for (const io::MediaRoot& r : scope.roots()) media_options.local.roots.push_back(r.path);
  media_options.imds = media.imds;
  if (media.io_deadline_ms > 0) {
    media_options.http.deadline = std::chrono::milliseconds(media.io_deadline_ms);
  }
  if (media.io_max_attempts > 0) media_options.http.backoff.max_attempts = media.io_max_attempts;
  io::StoreOptions record_options = media_options;
  record_options.local = {};  // the file the user named, wherever it is
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<io::ObjectStore> rs, io::open_store(record_options));
  STOKER_ASSIGN_OR_RETURN(std::unique_ptr<io::ObjectStore> ms, io::open_store(media_options));
  return Sources{std::move(scope), std::move(rs), std::move(ms), media};
}

Result<std::string> read_record(Sources& src, const std::string& record) {
  STOKER_ASSIGN_OR_RETURN(std::vector<std::uint8_t> bytes,
                          io::read_sync(*src.record_store, record,
                                        {.max_bytes = src.media.max_record_bytes}));
  return std::string(bytes.begin(), bytes.end());
}

// Reads a medium of the record through the trust boundary and the media store.
Result<std::vector<std::uint8_t>> fetch_media(Sources& src, const std::string& ref) {
  Result<std::string> uri = src.scope.resolve(ref);
  if (!uri.ok()) return uri.error();
  return io::read_sync(*src.media_store, *uri, {.max_bytes = src.media.max_object_bytes});
}

// The images' grids from their headers, planned by `proc`.
Result<std::vector<text::VisionGrid>> plan_images(const dataset::Conversation& conv,
                                                  const image::ImageProcessor& proc, Sources& src) {
  std::vector<text::VisionGrid> grids;
  for (const auto& m : conv.messages) {
    for (const auto& p : m.parts) {
      if (p.kind != dataset::Part::Kind::kImage) continue;
      Result<std::vector<std::uint8_t>> bytes = fetch_media(src, p.value);
      if (!bytes.ok()) {
        return std::move(bytes.error().with_context(
            "image " + std::to_string(grids.size()) + " (" + p.value + "; --no-images to skip)"));
      }
      Result<image::ImagePlan> plan = proc.plan(*bytes);
      if (!plan.ok()) return std::move(plan.error().with_context("image " + p.value));
      grids.push_back({plan->grid_t, plan->grid_h, plan->grid_w, {}});
    }
  }
  return grids;
}

// --no-images: every image the --image-grid grid.
Result<std::vector<text::VisionGrid>> fixed_image_grids(const dataset::Conversation& conv,
                                                        const Args& args) {
  STOKER_ASSIGN_OR_RETURN(text::VisionGrid g, parse_grid("--image-grid", args.get("image-grid", "1,8,8")));
  return std::vector<text::VisionGrid>(conv.count(dataset::Part::Kind::kImage), g);
}

Result<std::vector<text::VisionGrid>> image_grids(const dataset::Conversation& conv,
                                                  const model::ModelConfig& model,
                                                  Sources& src, const Args& args) {
  if (args.has("no-images")) return fixed_image_grids(conv, args);
  STOKER_ASSIGN_OR_RETURN(image::ImageProcessor proc, image::ImageProcessor::create(model.image));
  return plan_images(conv, proc, src);
}

void print_tokens(const text::TokenizedSample& s, const text::Tokenizer& tok,
                  const batch::RopeIndex& rope, const std::vector<text::VisionGrid>& images,
                  const std::vector<text::VisionGrid>& videos) {
  std::printf("%6s %7s %7s %5s %5s %5s  %s\n", "pos", "id", "label", "t", "h", "w", "token");
  std::size_t v = 0;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(s.input_ids.size()); ++i) {
    if (v < s.vision.size() && s.vision[v].begin == i) {
      const text::VisionSpan& span = s.vision[v];
      const text::VisionGrid& g = span.video ? videos[span.media_index] : images[span.media_index];
      std::int64_t last = i + span.count - 1;
      std::printf("%6lld %7d %7s  t %lld..%lld  h %lld..%lld  w %lld..%lld  %s x%lld (%s %d, grid "
                  "%dx%dx%d%s)\n",
                  static_cast<long long>(i), s.input_ids[i], "-100",
                  static_cast<long long>(rope.at(0, i)), static_cast<long long>(rope.at(0, last)),
                  static_cast<long long>(rope.at(1, i)), static_cast<long long>(rope.at(1, last)),
                  static_cast<long long>(rope.at(2, i)), static_cast<long long>(rope.at(2, last)),
                  span.video ? "<|video_pad|>" : "<|image_pad|>",
                  static_cast<long long>(span.count), span.video ? "video" : "image",
                  span.media_index, g.grid_t, g.grid_h, g.grid_w,
                  span.video && !g.group_seconds.empty()
                      ? (", group " + std::to_string(span.group)).c_str() : "");
      i = last;
      ++v;
      continue;
    }
    text::TokenId id = s.input_ids[i];
    std::string label = s.labels[i] == text::kIgnoreIndex ? "-100" : std::to_string(s.labels[i]);
    std::printf("%6lld %7d %7s %5lld %5lld %5lld  %s\n", static_cast<long long>(i), id,
                label.c_str(), static_cast<long long>(rope.at(0, i)),
                static_cast<long long>(rope.at(1, i)), static_cast<long long>(rope.at(2, i)),
                quoted(tok.decode({&id, 1})).c_str());
  }
}

// A position value: whole numbers as integers, Qwen3-Omni's fractional float32 ones with 3 decimals.
std::string pos_text(double v) {
  char buf[40];
  if (v == std::floor(v) && std::fabs(v) < 9e15) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  } else {
    std::snprintf(buf, sizeof buf, "%.3f", v);
  }
  return buf;
}

// The media of a sample of an opened model (its planned audio clips and what the template and
// positions take from them).
struct OpenedMedia {
  std::vector<text::VisionGrid> images, videos, audios;
  std::vector<double> video_seconds;        // per video: temporal_patch_size / fps
  std::vector<std::int64_t> audio_frames;   // per clip incl. tracks, in order (TMRoPE lengths)
  std::vector<std::int64_t> clip_frames;    // per audio part (not tracks): its mask sum
};

// Audio parts and video tracks (use_audio_in_video) planned by the engine's media kinds, as
// pipeline::prepare plans them: each clip, then the record's clips in one call (plan_sample).
Status plan_audio(const dataset::Conversation& conv, const pipeline::MediaEnv& env, Sources& src,
                  OpenedMedia* out) {
  std::vector<std::unique_ptr<pipeline::Medium>> clips;
  std::vector<int> video_of;  // per clip: the video whose track it is, or -1
  int video = 0, clip = 0;
  for (const auto& m : conv.messages) {
    for (const auto& p : m.parts) {
      const bool is_video = p.kind == dataset::Part::Kind::kVideo;
      if (is_video) ++video;
      if (p.kind != dataset::Part::Kind::kAudio &&
          !(is_video && p.video.use_audio_in_video && env.audio != nullptr)) {
        continue;
      }
      const std::string name = is_video ? "video " + std::to_string(video - 1) + " (" + p.value +
                                              "; its audio track)"
                                        : "audio " + std::to_string(clip++) + " (" + p.value + ")";
      if (env.audio == nullptr) return failed_precondition(name + ": the model takes no audio");
      if (is_video && !p.frames.empty()) {
        return invalid_argument(name + ": use_audio_in_video: a video given as frames has no "
                                "audio track");
      }
      Result<std::vector<std::uint8_t>> bytes = fetch_media(src, p.value);
      if (!bytes.ok()) return std::move(bytes.error().with_context(name));
      Result<std::unique_ptr<pipeline::Medium>> planned = [&]() -> Result<std::unique_ptr<pipeline::Medium>> {
        if (is_video) return pipeline::plan_video_audio(env, p, std::move(*bytes));
        const pipeline::MediaKind* kind = pipeline::kind_for(p);
        if (kind == nullptr) return internal_error("no media kind reads an audio part");
        std::vector<std::vector<std::uint8_t>> b;
        b.push_back(std::move(*bytes));
        return kind->plan(env, p, std::move(b));
      }();
      if (!planned.ok()) return std::move(planned.error().with_context(name));
      clips.push_back(std::move(*planned));
      video_of.push_back(is_video ? video - 1 : -1);
    }
  }
  if (clips.empty()) return ok_status();
  std::vector<pipeline::Medium*> ptrs;
  for (auto& c : clips) ptrs.push_back(c.get());
  const pipeline::Modality& modality = clips[0]->modality();
  if (modality.plan_sample != nullptr) {
    if (Status st = modality.plan_sample(env, ptrs); !st.ok()) {
      Error e = st.error();
      return e.with_context("the record's audio clips");
    }
  }
  for (std::size_t i = 0; i < clips.size(); ++i) {
    out->audio_frames.push_back(clips[i]->audio_frames());
    if (video_of[i] < 0) {
      out->audios.push_back(clips[i]->grid());
      out->clip_frames.push_back(clips[i]->audio_frames());
    } else {
      text::VisionGrid& v = out->videos[static_cast<std::size_t>(video_of[i])];
      v.tokens = clips[i]->grid().tokens;
      v.second_per_grid = out->video_seconds[static_cast<std::size_t>(video_of[i])];
    }
  }
  return ok_status();
}

// The token table of an opened model: `rows` position rows (3: t h w; 1: one), media runs
// folded into one line each with their medium.
void print_opened_tokens(const text::TokenizedSample& s, const text::Tokenizer& tok,
                         const std::vector<double>& pos, int rows, const OpenedMedia& media) {
  const std::size_t n = s.input_ids.size();
  auto at = [&](int r, std::int64_t i) { return pos[static_cast<std::size_t>(r) * n + static_cast<std::size_t>(i)]; };
  if (rows == 3) {
    std::printf("%6s %7s %7s %5s %5s %5s  %s\n", "pos", "id", "label", "t", "h", "w", "token");
  } else {
    std::printf("%6s %7s %7s %7s  %s\n", "pos", "id", "label", "pos_id", "token");
  }
  std::size_t v = 0;
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(n); ++i) {
    text::TokenId id = s.input_ids[i];
    if (v < s.vision.size() && s.vision[v].begin == i) {
      const text::VisionSpan& span = s.vision[v];
      const std::int64_t last = i + span.count - 1;
      std::string ranges;
      const char* axes[] = {"t", "h", "w"};
      for (int r = 0; r < rows; ++r) {
        ranges += std::string(rows == 3 ? axes[r] : "p") + " " + pos_text(at(r, i)) + ".." +
                  pos_text(at(r, last)) + "  ";
      }
      std::string what = std::string(span.modality) + " " + std::to_string(span.media_index);
      const auto k = static_cast<std::size_t>(span.media_index);
      if (span.modality == "audio" && k < media.audios.size()) {
        what += ", " + std::to_string(media.clip_frames[k]) + " feature frames";
      } else if ((span.modality == "image" || span.modality == "video") &&
                 k < (span.modality == "image" ? media.images : media.videos).size()) {
        const text::VisionGrid& g = (span.modality == "image" ? media.images : media.videos)[k];
        what += ", grid " + std::to_string(g.grid_t) + "x" + std::to_string(g.grid_h) + "x" +
                std::to_string(g.grid_w);
        if (span.modality == "video" && g.tokens > 0) {
          what += ", with its audio track: " + std::to_string(g.tokens) + " audio tokens";
        }
      }
      std::printf("%6lld %7d %7s  %s%s x%lld (%s)\n", static_cast<long long>(i), id, "-100",
                  ranges.c_str(), tok.decode({&id, 1}).c_str(), static_cast<long long>(span.count),
                  what.c_str());
      i = last;
      ++v;
      continue;
    }
    std::string label = s.labels[i] == text::kIgnoreIndex ? "-100" : std::to_string(s.labels[i]);
    std::printf("%6lld %7d %7s", static_cast<long long>(i), id, label.c_str());
    for (int r = 0; r < rows; ++r) std::printf(rows == 3 ? " %5s" : " %7s", pos_text(at(r, i)).c_str());
    std::printf("  %s\n", quoted(tok.decode({&id, 1})).c_str());
  }
}

// `stoker render` for a model opened through its family (the audio families): its template
// (the Jinja engine), media planned as the engine plans them, its own position rule.
int render_opened(const Args& args, const config::Settings& settings, Sources& src,
                  const dataset::Conversation& conv, const std::string& spec) {
  if (args.has("last-turn-only") || args.has("think")) {
    return report("render", invalid_argument("--last-turn-only and --think apply to the Qwen-VL "
                                             "stock templates stoker writes natively; " + spec +
                                             " renders its template with the Jinja engine (its "
                                             "own variables: --chat-template-kwargs)"));
  }
  model::ModelOptions mopt = pipeline::model_options(settings.loader);
  mopt.tokenizer = args.get("tokenizer");
  Result<std::unique_ptr<model::Model>> opened = model::open_model(spec, mopt);
  if (!opened.ok()) return report("render", opened.error());
  const model::Model& m = **opened;
  Result<text::ChatText> chat = m.renderer().render(conv);
  if (!chat.ok()) return report("render", chat.error());
  std::printf("== template %s; model %s ==\n%s\n", m.renderer().describe().c_str(),
              printable(spec).c_str(), chat->text.c_str());
  if (args.has("text-only")) return 0;

  const pipeline::MediaEnv env{m.image_processor(), m.video_processor(), m.audio_processor()};
  OpenedMedia media;
  const int n_images = conv.count(dataset::Part::Kind::kImage);
  const int n_videos = conv.count(dataset::Part::Kind::kVideo);
  if (n_images > 0 && env.image == nullptr) {
    return report("render", failed_precondition("image 0: the model (" + spec + ") takes no images"));
  }
  if (n_videos > 0 && env.video == nullptr) {
    return report("render", failed_precondition("video 0: the model (" + spec + ") takes no videos"));
  }
  Result<std::vector<text::VisionGrid>> images =
      n_images == 0 ? Result<std::vector<text::VisionGrid>>(std::vector<text::VisionGrid>())
      : args.has("no-images") ? fixed_image_grids(conv, args)
                              : plan_images(conv, *env.image, src);
  if (!images.ok()) return report("render", images.error());
  media.images = std::move(*images);
  Result<text::VisionGrid> vgrid = parse_grid("--video-grid", args.get("video-grid", "2,8,8"));
  if (!vgrid.ok()) return report("render", vgrid.error());
  Result<double> fps = args.get_double("video-fps", 2.0, 1e-3, 1e3);  // divides: never 0
  if (!fps.ok()) return report("render", fps.error());
  const int temporal = env.video != nullptr ? env.video->config().temporal_patch_size : 2;
  media.videos.assign(static_cast<std::size_t>(n_videos), *vgrid);
  media.video_seconds.assign(static_cast<std::size_t>(n_videos), temporal / *fps);
  if (Status st = plan_audio(conv, env, src, &media); !st.ok()) return report("render", st.error());

  text::SampleOptions sopt;
  Result<std::int64_t> max_len =
      args.get_int<std::int64_t>("max-length", 0, 0, std::numeric_limits<std::int64_t>::max());
  if (!max_len.ok()) return report("render", max_len.error());
  sopt.max_length = *max_len;
  sopt.overflow = args.has("truncate") ? text::Overflow::kTruncateTurns : text::Overflow::kDrop;
  const text::MediaOfKind kinds[] = {
      {"image", media.images}, {"video", media.videos}, {"audio", media.audios}};
  Result<text::TokenizedSample> s =
      text::build_sample(conv, m.renderer(), m.placeholders(), m.tokenizer(), kinds, sopt);
  if (!s.ok()) return report("render", s.error());
  Result<std::vector<double>> pos = m.positions(
      *s, {media.images, media.videos, media.video_seconds, media.audios, media.audio_frames});
  if (!pos.ok()) return report("render", pos.error());
  const int rows = m.position_rows();
  const std::int64_t n = static_cast<std::int64_t>(s->input_ids.size());
  if (static_cast<std::int64_t>(pos->size()) != rows * n) {
    return report("render", internal_error("the model's positions do not match the sample"));
  }
  const int n_audio = s->media_used.size() > 2 ? s->media_used[2] : 0;
  std::printf("\n== %zu tokens, %lld supervised, %d image(s), %d video(s), %d audio clip(s)%s ==\n",
              s->input_ids.size(), static_cast<long long>(s->supervised_tokens()), s->num_images,
              s->num_videos, n_audio, s->truncated ? ", TRUNCATED to whole turns" : "");
  print_opened_tokens(*s, m.tokenizer(), *pos, rows, media);
  double max_pos = 0;
  for (double p : *pos) max_pos = std::max(max_pos, p);
  if (rows == 1) {
    std::printf("\n== positions: 1 x %lld position ids (the language model's own), max %s ==\n",
                static_cast<long long>(n), pos_text(max_pos).c_str());
  } else {
    std::printf("\n== TMRoPE: %d x %lld position ids (%s), max %s, rope_delta %s ==\n", rows,
                static_cast<long long>(n), m.float_positions() ? "float32" : "int64",
                pos_text(max_pos).c_str(), pos_text(max_pos + 1 - static_cast<double>(n)).c_str());
  }
  return 0;
}

int render(const Args& args) {
  const auto& pos = args.positional();
  if (pos.size() != 1) return report("render", invalid_argument("expected one conversation.json"));
  Result<config::Settings> settings = settings_from_args(args, config::kRender);
  if (!settings.ok()) return report("render", settings.error());
  warn_settings(*settings, "render");
  Result<Sources> sources = open_render_sources(pos[0], settings->loader);
  if (!sources.ok()) return report("render", std::move(sources.error().with_context(pos[0])));
  Result<std::string> json = read_record(*sources, pos[0]);
  if (!json.ok()) return report("render", std::move(json.error().with_context(pos[0])));
  Result<dataset::Conversation> conv = dataset::parse_record(*json);
  if (!conv.ok()) return report("render", std::move(conv.error().with_context(pos[0])));
  if (Status st = pipeline::check_media_count(*conv, sources->media.max_media_per_record);
      !st.ok()) {
    Error e = st.error();
    return report("render", e.with_context(pos[0]));
  }
  if (Status st = dataset::validate_for_sft(*conv); !st.ok()) {
    std::fprintf(stderr, "warning: not a valid SFT sample: %s\n",
                 printable(st.error().to_string()).c_str());
  }
  const std::string spec = args.get("model", std::string(model::kDefaultModel));
  // The spec parsed once by its family: a family without a ModelConfig (the audio families) is
  // opened through its family; load_model only words the error of a spec no family takes.
  Result<std::shared_ptr<const model::ModelConfig>> parsed = model::load_config(spec);
  if (parsed.ok() && *parsed == nullptr) return render_opened(args, *settings, *sources, *conv, spec);
  Result<model::ModelConfig> model =
      parsed.ok() ? Result<model::ModelConfig>(**parsed) : model::load_model(spec);
  if (!model.ok()) return report("render", model.error());
  Result<std::string> tok_dir = tokenizer_dir_from_flags(args, *model);  // run's rule
  if (!tok_dir.ok()) return report("render", tok_dir.error());
  model::ModelOptions mopt;
  mopt.tokenizer = *tok_dir;
  mopt.parsed = std::make_shared<const model::ModelConfig>(*model);
  mopt.chat_template = settings->loader.chat_template;  // the schema's options (command render)
  mopt.chat_template_kwargs = settings->loader.chat_template_kwargs;
  Result<std::unique_ptr<model::Model>> opened = model::open_model(spec, mopt);
  if (!opened.ok()) return report("render", opened.error());
  const model::Model& m = **opened;

  // --last-turn-only / --think: choices of the native stock templates (LLaMA-Factory's and
  // ms-swift's variants), not of a template's own rendering.
  text::ChatTemplateOptions topt;
  topt.last_turn_only = args.has("last-turn-only");
  std::string think = args.get("think", "none");
  if (think == "answer") topt.think = text::ThinkMode::kEmptyThinkInAnswer;
  else if (think == "prompt") topt.think = text::ThinkMode::kEmptyThinkInPrompt;
  else if (think != "none") return report("render", invalid_argument("--think none|answer|prompt"));
  std::optional<text::NativeRenderer> native;
  if (topt.last_turn_only || topt.think != text::ThinkMode::kNone) {
    Result<model::SelectedTemplate> t = model::chat_template(*model, mopt.chat_template);
    if (!t.ok()) return report("render", t.error());
    if (!t->native) {
      return report("render", invalid_argument("--last-turn-only and --think apply to the stock "
                                               "templates stoker writes natively; " + t->origin +
                                               " is another (its own variables: "
                                               "--chat-template-kwargs)"));
    }
    native.emplace(*t->native, topt);
  }
  const text::ChatRenderer& renderer = native ? static_cast<const text::ChatRenderer&>(*native)
                                              : m.renderer();
  Result<text::ChatText> chat = renderer.render(*conv);
  if (!chat.ok()) return report("render", chat.error());
  std::printf("== template %s; model %s ==\n%s\n", renderer.describe().c_str(), model->name.c_str(),
              chat->text.c_str());
  if (args.has("text-only")) return 0;
  const text::Tokenizer* tok = &m.tokenizer();

  Result<std::vector<text::VisionGrid>> images = image_grids(*conv, *model, *sources, args);
  if (!images.ok()) return report("render", images.error());
  Result<text::VisionGrid> vgrid = parse_grid("--video-grid", args.get("video-grid", "2,8,8"));
  if (!vgrid.ok()) return report("render", vgrid.error());
  Result<double> fps = args.get_double("video-fps", 2.0, 1e-3, 1e3);  // divides: never 0
  if (!fps.ok()) return report("render", fps.error());
  // Frames sampled at `fps` from the start: frame i of the sample is source frame i at that
  // rate, so timestamps are i / fps, and one grid step spans temporal_patch_size / fps seconds.
  std::vector<std::int64_t> frames(2 * vgrid->grid_t);
  for (std::size_t i = 0; i < frames.size(); ++i) frames[i] = static_cast<std::int64_t>(i);
  if (model->family == model::ModelFamily::kQwen3VL) {
    vgrid->group_seconds = text::video_group_seconds(frames, *fps, 2);
  }
  std::vector<text::VisionGrid> videos(conv->count(dataset::Part::Kind::kVideo), *vgrid);

  text::SampleOptions sopt;
  sopt.merge_size = model->image.merge_size;
  Result<std::int64_t> max_len =
      args.get_int<std::int64_t>("max-length", 0, 0, std::numeric_limits<std::int64_t>::max());
  if (!max_len.ok()) return report("render", max_len.error());
  sopt.max_length = *max_len;
  sopt.overflow = args.has("truncate") ? text::Overflow::kTruncateTurns : text::Overflow::kDrop;
  const text::MediaOfKind media[] = {{"image", *images}, {"video", videos}};
  Result<text::TokenizedSample> s =
      text::build_sample(*conv, renderer, m.placeholders(), *tok, media, sopt);
  if (!s.ok()) return report("render", s.error());

  std::vector<double> spg(s->num_videos, 2.0 / *fps);  // temporal_patch_size / fps
  Result<batch::RopeIndex> rope =
      batch::get_rope_index(*s, *images, videos, model::rope_config(*model), spg);
  if (!rope.ok()) return report("render", rope.error());

  std::printf("\n== %zu tokens, %lld supervised, %d image(s), %d video(s)%s ==\n",
              s->input_ids.size(), static_cast<long long>(s->supervised_tokens()), s->num_images,
              s->num_videos, s->truncated ? ", TRUNCATED to whole turns" : "");
  print_tokens(*s, *tok, *rope, *images, videos);
  std::int64_t max_pos = 0;
  for (std::int64_t p : rope->positions) max_pos = std::max(max_pos, p);
  std::printf("\n== mRoPE: 3 x %lld position ids, max %lld, rope_delta %lld ==\n",
              static_cast<long long>(rope->length), static_cast<long long>(max_pos),
              static_cast<long long>(rope->rope_delta));
  return 0;
}

}  // namespace

int run_render(int argc, char** argv) {
  SchemaFlagSets flags = schema_flag_sets(config::kRender);  // the media options
  flags.values.insert({"model", "tokenizer", "image-grid", "video-grid", "video-fps", "think",
                       "max-length"});
  flags.switches.insert({"no-images", "last-turn-only", "truncate", "text-only", "help"});
  auto args = Args::parse(argc, argv, flags.values, flags.switches, flags.repeats);
  if (!args.ok()) return report("render", args.error());
  if (args->has("help") || args->positional().empty()) {
    std::fputs(kHelp, args->has("help") ? stdout : stderr);
    if (args->has("help")) std::fputs(options_help(config::kRender).c_str(), stdout);
    return args->has("help") ? 0 : 2;
  }
  return render(*args);
}

}  // namespace stoker::cli
