#include "stoker/bench/image_bench.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "stoker/base/clock.h"
#include "stoker/base/file.h"
#include "stoker/bench/paths.h"
#include "stoker/bench/peer.h"
#include "stoker/image/decode.h"
#include "stoker/image/resample.h"
#include "stoker/model/model_config.h"
#include "stoker/synth/synth.h"

namespace stoker::bench {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct ImageSet {
  std::string name;
  std::vector<std::string> paths;
  std::vector<std::vector<std::uint8_t>> blobs;
  std::vector<image::ImagePlan> plans;
  int skipped = 0;        // rejected by smart_resize / the decoder before timing (both sides)
  double megapixels = 0;  // mean source size
};

// What one image became, as both sides report it: (rows or height, width or 0, CRC-32).
using Digest = std::vector<std::int64_t>;

// One side of one measurement: the best pass and every timed pass's digests.
struct Side {
  BestOf time;
  std::vector<std::vector<Digest>> passes;
};

struct SetResult {
  Side decode, stoker, stoker_resize, python, pillow_resize;
  std::string python_stages;
};

// The shared timing policy, stoker's side: `warmup` untimed passes, then `passes` timed ones;
// only work(i) is timed (thread CPU + wall, summed per image); digest(i) runs untimed after it.
Result<Side> run_passes(std::size_t n, const Repeat& repeat,
                        const std::function<Status(std::size_t)>& work,
                        const std::function<Digest(std::size_t)>& digest) {
  Side side;
  for (int w = 0; w < repeat.warmup; ++w)
    for (std::size_t i = 0; i < n; ++i) STOKER_RETURN_IF_ERROR(work(i));
  for (int p = 0; p < repeat.passes; ++p) {
    PassTime t;
    std::vector<Digest> digests;
    for (std::size_t i = 0; i < n; ++i) {
      const std::int64_t w0 = now_ns();
      const double c0 = thread_cpu_s();
      STOKER_RETURN_IF_ERROR(work(i));
      t.cpu_s += thread_cpu_s() - c0;
      t.wall_s += static_cast<double>(now_ns() - w0) * 1e-9;
      if (digest) digests.push_back(digest(i));
    }
    side.time.add(t);
    side.passes.push_back(std::move(digests));
  }
  return side;
}

Result<ImageSet> load_set(std::string name, const std::vector<std::string>& paths,
                          const image::ImageProcessor& processor) {
  ImageSet set;
  set.name = std::move(name);
  image::RgbImage scratch;
  for (const std::string& path : paths) {
    STOKER_ASSIGN_OR_RETURN(auto bytes, read_file(path));
    // Skip what stoker (and HF) reject — a side under the patch factor, a corrupt file — so
    // both sides time the same images.
    auto plan = processor.plan(std::span<const std::uint8_t>(bytes));
    if (!plan.ok() || !processor.decode(bytes, *plan, &scratch).ok()) {
      ++set.skipped;
      continue;
    }
    set.megapixels += 1e-6 * plan->src_width * plan->src_height;
    set.paths.push_back(path);
    set.blobs.push_back(std::move(bytes));
    set.plans.push_back(*plan);
  }
  if (set.blobs.empty()) return internal_error("set " + set.name + " has no usable image");
  set.megapixels /= static_cast<double>(set.blobs.size());
  return set;
}

// The three sets: synth's photo-like 1080p JPEGs, the mixed synthetic dataset, and --images.
Result<std::vector<ImageSet>> make_sets(const ImageBenchOptions& o, const std::string& work,
                                        const image::ImageProcessor& processor) {
  synth::ImagesOnlyConfig photo_cfg{.out_dir = work + "/photo-1080p", .count = o.photos,
                                    .seed = 1, .width = 1920, .height = 1080,
                                    .variant = synth::Variant::kJpeg420,
                                    .content = synth::Content::kPhoto};
  STOKER_ASSIGN_OR_RETURN(auto photo, synth::generate_images_only(photo_cfg));
  synth::SynthConfig mixed_cfg{.out_dir = work + "/mixed", .records = o.records, .seed = 2,
                               .max_side = o.quick ? 1920 : 3840,
                               .long_records = true};  // sizes as drawn: images, not records
  STOKER_ASSIGN_OR_RETURN(auto mixed, synth::generate_dataset(mixed_cfg));
  std::vector<std::pair<std::string, std::vector<std::string>>> lists;
  for (auto [name, result, root] : {std::tuple{"photo-1080p", &photo, photo_cfg.out_dir},
                                    std::tuple{"mixed", &mixed, mixed_cfg.out_dir}}) {
    std::vector<std::string> paths;
    for (const synth::ImageEntry& e : result->images) paths.push_back(root + "/" + e.path);
    lists.emplace_back(name, std::move(paths));
  }
  if (!o.images.empty()) {
    std::vector<std::string> paths;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(o.images, ec)) {
      std::string ext = entry.path().extension().string();
      std::transform(ext.begin(), ext.end(), ext.begin(),
                     [](unsigned char c) { return std::tolower(c); });
      if (entry.is_regular_file() &&
          (ext == ".jpg" || ext == ".jpeg" || ext == ".png" || ext == ".webp"))
        paths.push_back(entry.path().string());
    }
    if (ec) return not_found("--images " + o.images + ": " + ec.message());
    std::sort(paths.begin(), paths.end());
    lists.emplace_back("your-images", std::move(paths));
  }
  std::vector<ImageSet> sets;
  for (const auto& [name, paths] : lists) {
    STOKER_ASSIGN_OR_RETURN(ImageSet s, load_set(name, paths, processor));
    sets.push_back(std::move(s));
  }
  return sets;
}

Result<Side> time_decode(const ImageSet& set, const Repeat& repeat) {
  image::RgbImage rgb;
  return run_passes(set.blobs.size(), repeat,
                    [&](std::size_t i) { return image::decode_rgb(set.blobs[i], {}, &rgb); },
                    nullptr);
}

Result<Side> time_stoker(const ImageSet& set, const image::ImageProcessor& processor,
                         const ImageBenchOptions& o) {
  const std::size_t elem = o.dtype == image::PixelDType::kBFloat16 ? 2 : 4;
  std::int64_t max_rows = 0;
  for (const auto& p : set.plans) max_rows = std::max(max_rows, p.rows());
  std::vector<std::uint8_t> out(static_cast<std::size_t>(max_rows * processor.columns()) * elem);
  image::ImageScratch scratch;
  std::int64_t rows = 0;
  auto work = [&](std::size_t i) -> Status {
    // The production path: header → plan → decode/resize/normalise/patchify into the buffer.
    STOKER_ASSIGN_OR_RETURN(image::ImagePlan plan,
                            processor.plan(std::span<const std::uint8_t>(set.blobs[i])));
    rows = plan.rows();
    return processor.process(set.blobs[i], plan, o.dtype, out.data(), &scratch);
  };
  auto digest = [&](std::size_t) -> Digest {
    const std::size_t bytes = static_cast<std::size_t>(rows * processor.columns()) * elem;
    return {rows, crc32(out.data(), bytes)};
  };
  return run_passes(set.blobs.size(), o.repeat, work, digest);
}

// The resampler alone on the images decoded before timing (as the Python side does).
Result<Side> time_stoker_resize(const ImageSet& set, const image::ImageProcessor& processor,
                                const Repeat& repeat) {
  std::vector<image::RgbImage> decoded(set.blobs.size());
  for (std::size_t i = 0; i < set.blobs.size(); ++i)
    STOKER_RETURN_IF_ERROR(processor.decode(set.blobs[i], set.plans[i], &decoded[i]));
  image::RgbImage dst;
  auto work = [&](std::size_t i) -> Status {
    image::resize_bicubic_exact(decoded[i], set.plans[i].width, set.plans[i].height, &dst);
    return ok_status();
  };
  auto digest = [&](std::size_t) -> Digest {
    return {dst.height, dst.width, crc32(dst.pixels.data(), std::size_t{3} * dst.width * dst.height)};
  };
  return run_passes(set.blobs.size(), repeat, work, digest);
}

Result<Side> peer_side(const json& j) {
  Side s;
  s.time.add({j.at("cpu_s").get<double>(), j.at("wall_s").get<double>()});
  s.passes = j.at("digests").get<std::vector<std::vector<Digest>>>();
  return s;
}

// Runs bench/image_reference.py on the set, pinned to `core`, with the same Repeat.
Status time_python(const ImageSet& set, const ImageBenchOptions& o, const std::string& work,
                   int core, SetResult* r) {
  STOKER_ASSIGN_OR_RETURN(fs::path script, find_bench_file("image_reference.py"));
  const std::string list = work + "/" + set.name + ".files.txt";
  {
    std::ofstream f(list);
    for (const auto& p : set.paths) f << p << '\n';
    if (!f) return data_loss("writing " + list);
  }
  STOKER_ASSIGN_OR_RETURN(
      std::string out,
      run_capture({o.python, script.string(), "--model", o.model, "--core", std::to_string(core),
                   "--warmup", std::to_string(o.repeat.warmup), "--passes",
                   std::to_string(o.repeat.passes), "--dtype",
                   o.dtype == image::PixelDType::kBFloat16 ? "bf16" : "f32", "--list", list},
                  single_thread_env()));
  const json j = json::parse(last_json_line(out), nullptr, false);
  if (j.is_discarded() || !j.contains("full")) return internal_error("bad peer output: " + out);
  try {
    STOKER_ASSIGN_OR_RETURN(r->python, peer_side(j.at("full")));
    STOKER_ASSIGN_OR_RETURN(r->pillow_resize, peer_side(j.at("resize")));
    for (const char* stage : {"decode", "resize", "normalize", "patchify"})
      r->python_stages += format("%s%s %.1f", r->python_stages.empty() ? "" : "  ", stage,
                                 j.at("full").at("stages_ms").at(stage).get<double>());
  } catch (const json::exception& e) {
    return internal_error(std::string("bad peer output: ") + e.what());
  }
  return ok_status();
}

// Every image of every timed pass: stoker's pass p against the peer's pass p.
void compare(const ImageSet& set, const Side& stoker, const Side& peer, const char* what,
             Comparison* cmp) {
  if (stoker.passes.size() != peer.passes.size()) {
    cmp->differ(set.name + " " + what + ": pass counts differ");
    return;
  }
  for (std::size_t p = 0; p < stoker.passes.size(); ++p) {
    for (std::size_t i = 0; i < set.paths.size(); ++i) {
      cmp->compared();
      const Digest none;
      const Digest& a = i < stoker.passes[p].size() ? stoker.passes[p][i] : none;
      const Digest& b = i < peer.passes[p].size() ? peer.passes[p][i] : none;
      if (a != b) {
        auto text = [](const Digest& d) {
          std::string s = "(";
          for (std::size_t k = 0; k < d.size(); ++k) {
            if (k > 0) s += ',';
            s += std::to_string(d[k]);
          }
          s += ')';
          return s;
        };
        cmp->differ(set.name + " " + what + " pass " + std::to_string(p + 1) + " " +
                    set.paths[i] + ": stoker " + text(a) + ", peer " + text(b));
      }
    }
  }
}

double per_s(const ImageSet& s, double seconds) { return s.blobs.size() / seconds; }
double ms(const ImageSet& s, double seconds) { return 1e3 * seconds / s.blobs.size(); }

void print_results(const std::vector<ImageSet>& sets, const std::vector<SetResult>& results) {
  std::printf("\nfull path, CPU time of the best pass (images/s, ms per image):\n");
  Table t({{"set", 12, true}, {"images", 6}, {"src MP", 6}, {"stoker/s", 9}, {"python/s", 9},
           {"ratio", 7}, {"stoker ms", 9}, {"decode ms", 9}, {"vs dec", 7}});
  t.header(stdout);
  for (std::size_t i = 0; i < sets.size(); ++i) {
    const ImageSet& s = sets[i];
    const SetResult& r = results[i];
    t.row(stdout, {s.name, format("%zu", s.blobs.size()), format("%.2f", s.megapixels),
                   format("%.1f", per_s(s, r.stoker.time.cpu_s())),
                   format("%.1f", per_s(s, r.python.time.cpu_s())),
                   format("%.2fx", r.python.time.cpu_s() / r.stoker.time.cpu_s()),
                   format("%.2f", ms(s, r.stoker.time.cpu_s())),
                   format("%.2f", ms(s, r.decode.time.cpu_s())),
                   format("%.2fx", r.stoker.time.cpu_s() / r.decode.time.cpu_s())});
  }
  std::printf("\nresize step alone (decoded RGB in, resized RGB out), CPU ms per image:\n");
  Table rt({{"set", 12, true}, {"stoker ms", 9}, {"Pillow ms", 9}, {"ratio", 7}});
  rt.header(stdout);
  for (std::size_t i = 0; i < sets.size(); ++i)
    rt.row(stdout, {sets[i].name, format("%.2f", ms(sets[i], results[i].stoker_resize.time.cpu_s())),
                    format("%.2f", ms(sets[i], results[i].pillow_resize.time.cpu_s())),
                    format("%.2fx", results[i].pillow_resize.time.cpu_s() /
                                        results[i].stoker_resize.time.cpu_s())});
  std::printf("\npython stages (ms/image, CPU):\n");
  for (std::size_t i = 0; i < sets.size(); ++i)
    std::printf("  %-12s %s\n", sets[i].name.c_str(), results[i].python_stages.c_str());
  std::printf("wall clock (includes time other processes took from the core):\n");
  for (std::size_t i = 0; i < sets.size(); ++i)
    std::printf("  %-12s stoker %.1f im/s, python %.1f im/s, ratio %.2f\n", sets[i].name.c_str(),
                per_s(sets[i], results[i].stoker.time.wall_s()),
                per_s(sets[i], results[i].python.time.wall_s()),
                results[i].python.time.wall_s() / results[i].stoker.time.wall_s());
  std::printf("targets: stoker >= 5x python; stoker total <= 2x decode-only\n");
}

}  // namespace

Result<Outcome> run_image_bench(const ImageBenchOptions& opt_in) {
  ImageBenchOptions o = opt_in;
  if (o.photos <= 0) o.photos = o.quick ? 16 : 120;
  if (o.records <= 0) o.records = o.quick ? 40 : 240;
  const Stopwatch total;
  STOKER_ASSIGN_OR_RETURN(model::ModelConfig model, model::preset(o.model));
  STOKER_ASSIGN_OR_RETURN(image::ImageProcessor processor,
                          image::ImageProcessor::create(model.image));
  STOKER_ASSIGN_OR_RETURN(fs::path script, find_bench_file("image_reference.py"));
  std::optional<TempDir> temp;
  std::string work = o.dir;
  if (work.empty()) {
    STOKER_ASSIGN_OR_RETURN(TempDir t, TempDir::make("stoker-bench-image"));
    work = t.path();
    temp.emplace(std::move(t));
  }
  const Stopwatch gen;
  STOKER_ASSIGN_OR_RETURN(std::vector<ImageSet> sets, make_sets(o, work, processor));  // all cores
  std::printf("stoker bench image: model %s, stoker output %s, %s; generated %zu + %zu images in "
              "%.1f s (%d mixed images rejected by smart_resize, skipped on both sides)\n",
              o.model.c_str(), o.dtype == image::PixelDType::kBFloat16 ? "bf16" : "float32",
              build_kind(), sets[0].blobs.size(), sets[1].blobs.size(), gen.elapsed_s(),
              sets[1].skipped);
  if (sets.size() > 2)
    std::printf("your images (%s): %zu usable, %d rejected by smart_resize or the decoder\n",
                o.images.c_str(), sets[2].blobs.size(), sets[2].skipped);
  const int core = o.core >= 0 ? o.core : last_allowed_cpu();
  STOKER_RETURN_IF_ERROR(pin_to_core(core));
  std::printf("peer: the HF Qwen2-VL slow image processor path in %s %s (Image.open + "
              "exif_transpose + convert(RGB) -> Image.resize(BICUBIC) -> float64 rescale -> float32 "
              "normalise -> patchify); resize step: Pillow Image.resize(BICUBIC) vs "
              "image::resize_bicubic_exact on the same decoded images\n",
              o.python.c_str(), script.c_str());
  std::printf("both sides: CPU %d, images in memory, %s, only the per-image work timed (thread "
              "CPU), every image of every timed pass compared\n",
              core, o.repeat.text().c_str());
  std::fflush(stdout);

  Comparison cmp;
  std::vector<SetResult> results;
  for (const ImageSet& set : sets) {
    SetResult r;
    STOKER_ASSIGN_OR_RETURN(r.decode, time_decode(set, o.repeat));
    STOKER_ASSIGN_OR_RETURN(r.stoker, time_stoker(set, processor, o));
    STOKER_ASSIGN_OR_RETURN(r.stoker_resize, time_stoker_resize(set, processor, o.repeat));
    STOKER_RETURN_IF_ERROR(time_python(set, o, work, core, &r));
    compare(set, r.stoker, r.python, "pixel_values", &cmp);
    compare(set, r.stoker_resize, r.pillow_resize, "resized", &cmp);
    std::printf("  %-12s stoker %.1f im/s, python %.1f im/s; resize: stoker %.2f ms, Pillow %.2f ms\n",
                set.name.c_str(), per_s(set, r.stoker.time.cpu_s()), per_s(set, r.python.time.cpu_s()),
                ms(set, r.stoker_resize.time.cpu_s()), ms(set, r.pillow_resize.time.cpu_s()));
    std::fflush(stdout);
    results.push_back(std::move(r));
  }
  print_results(sets, results);
  std::printf("total bench time %.1f s\n", total.elapsed_s());
  const SetResult& head = results[0];
  if (cmp.ok())
    std::printf("resize ratio (photo-1080p, stoker resampler vs Pillow BICUBIC): %.2f\n",
                head.pillow_resize.time.cpu_s() / head.stoker_resize.time.cpu_s());
  return finish(cmp, "images x timed passes (pixel_values and resized pixels)",
                "the HF slow processor path (Pillow + numpy)",
                head.python.time.cpu_s() / head.stoker.time.cpu_s());
}

}  // namespace stoker::bench
