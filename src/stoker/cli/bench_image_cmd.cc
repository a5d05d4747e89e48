// `stoker bench image [--quick]`: the image path (decode → smart_resize → exact bicubic →
// rescale/normalise → patchify) of stoker against the Hugging Face slow processor's Pillow+numpy
// path (bench/image_reference.py), on the same images, each on the same single pinned core, one
// after the other. Two sets, generated in a temp dir by the synth library: photo-like 1920×1080
// JPEGs (the headline) and the mixed synthetic dataset (every format and mode, many sizes).
// TurboJPEG/libpng/libwebp decode alone (image::decode_rgb) is the floor stoker cannot beat.
// Each side reports its best pass, timed by the thread's CPU clock (a shared machine's other
// processes slice the core's wall time, not our CPU time); wall-clock numbers are printed too.
// The last line is `ratio: N` = stoker images/s ÷ Python images/s on the 1920×1080 set.
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "stoker/base/clock.h"
#include "stoker/base/file.h"
#include "stoker/cli/args.h"
#include "stoker/cli/commands.h"
#include "stoker/image/decode.h"
#include "stoker/image/processor.h"
#include "stoker/model/model_config.h"
#include "stoker/synth/synth.h"

namespace stoker::cli {
namespace {

namespace fs = std::filesystem;

struct BenchOptions {
  bool quick = false;
  std::string model = "qwen2.5-vl";
  // The Python reference always makes float32; bf16 output halves the bytes stoker writes.
  image::PixelDType dtype = image::PixelDType::kFloat32;
  int core = -1;  // -1: the last CPU this process may run on
  std::string python = "/usr/bin/python3";
  std::string script;  // bench/image_reference.py
  std::string dir;     // keep the generated sets here (default: a temp dir, removed)
  std::string images;  // optional third set: your own images (e.g. real photos), one folder
  int photos = 0;      // 0: the mode's default
  int records = 0;
  int stoker_passes = 0;
  int python_passes = 0;
};

struct ImageSet {
  std::string name;
  std::vector<std::string> paths;
  std::vector<std::vector<std::uint8_t>> blobs;
  std::vector<image::ImagePlan> plans;
  int skipped = 0;  // rejected by smart_resize / the decoder before timing (same for Python)
  double megapixels = 0;  // mean source size
};

// Throughput from the thread's CPU time (user + system) — what the work costs on one core, and
// robust to other processes time-slicing the shared core — and from wall time.
struct Timing {
  double images_per_s = 0;  // CPU time
  double ms_per_image = 0;  // CPU time
  double wall_images_per_s = 0;
};

struct SetResult {
  Timing stoker, decode, python;
  std::string python_stages;
};

int last_allowed_cpu() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  int last = 0;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) last = c;
  return last;
}

Status pin_to_core(int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  if (sched_setaffinity(0, sizeof(set), &set) != 0)
    return invalid_argument("cannot pin to CPU " + std::to_string(core));
  return ok_status();
}

// bench/image_reference.py: --python-script, $STOKER_SOURCE_DIR, the build's source dir, or
// next to the executable's parent (build trees live in the repository root).
std::string find_script(const std::string& flag) {
  if (!flag.empty()) return flag;
  std::vector<fs::path> roots;
  if (const char* env = std::getenv("STOKER_SOURCE_DIR")) roots.emplace_back(env);
#ifdef STOKER_SOURCE_DIR
  roots.emplace_back(STOKER_SOURCE_DIR);
#endif
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) roots.push_back(exe.parent_path().parent_path());
  for (const fs::path& r : roots)
    if (fs::is_regular_file(r / "bench" / "image_reference.py", ec))
      return (r / "bench" / "image_reference.py").string();
  return "bench/image_reference.py";
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
    if (!plan.ok() || !image::decode_rgb(bytes, processor.config().limits, &scratch).ok()) {
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

double thread_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

Timing best_of(int passes, size_t n, const auto& one_pass) {
  double best_cpu = 1e300, best_wall = 1e300;
  for (int p = 0; p < passes; ++p) {
    Stopwatch sw;
    double cpu0 = thread_cpu_s();
    one_pass();
    best_cpu = std::min(best_cpu, thread_cpu_s() - cpu0);
    best_wall = std::min(best_wall, sw.elapsed_s());
  }
  double count = static_cast<double>(n);
  return {count / best_cpu, 1000.0 * best_cpu / count, count / best_wall};
}

Result<Timing> time_decode(const ImageSet& set, int passes) {
  image::RgbImage rgb;
  image::DecodeLimits limits;
  Status failed;
  auto pass = [&] {
    for (const auto& blob : set.blobs) {
      Status s = image::decode_rgb(blob, limits, &rgb);
      if (!s.ok()) failed = s;
    }
  };
  pass();  // warm-up: page in the blobs, size the buffer
  Timing t = best_of(passes, set.blobs.size(), pass);
  if (!failed.ok()) return Error(failed.error()).with_context("decode-only pass");
  return t;
}

Result<Timing> time_stoker(const ImageSet& set, const image::ImageProcessor& processor,
                           int passes, image::PixelDType dtype) {
  std::int64_t max_elems = 0;
  for (const auto& p : set.plans) max_elems = std::max(max_elems, p.rows() * processor.columns());
  std::vector<float> out(static_cast<size_t>(max_elems));
  image::ImageScratch scratch;
  Status failed;
  auto pass = [&] {
    for (const auto& blob : set.blobs) {
      // The real path: header → plan → decode/resize/normalise/patchify into the batch buffer.
      auto plan = processor.plan(std::span<const std::uint8_t>(blob));
      if (!plan.ok()) {
        failed = plan.error();
        continue;
      }
      Status s = processor.process(blob, *plan, dtype, out.data(), &scratch);
      if (!s.ok()) failed = s;
    }
  };
  pass();
  Timing t = best_of(passes, set.blobs.size(), pass);
  if (!failed.ok()) return Error(failed.error()).with_context("stoker pass");
  return t;
}

// Pulls `"key": number` out of the reference script's one-line JSON.
double json_number(const std::string& json, const std::string& key) {
  auto pos = json.find("\"" + key + "\":");
  if (pos == std::string::npos) return 0;
  return std::strtod(json.c_str() + pos + key.size() + 3, nullptr);
}

// The per-stage split as "decode 9.1  resize 31.2  ..." (ms/image).
std::string stage_text(const std::string& json) {
  std::string text;
  for (const char* stage : {"decode", "resize", "normalize", "patchify"}) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%s %.1f", text.empty() ? "" : "  ", stage,
                  json_number(json, stage));
    text += buf;
  }
  return text;
}

Result<Timing> time_python(const ImageSet& set, const BenchOptions& opt, const std::string& work,
                           int core, std::string* stages) {
  std::string list = (fs::path(work) / (set.name + ".files.txt")).string();
  {
    std::ofstream f(list);
    for (const auto& p : set.paths) f << p << '\n';
    if (!f) return data_loss("writing " + list);
  }
  std::string cmd = "OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 '" + opt.python +
                    "' '" + opt.script + "' --model '" + opt.model + "' --core " +
                    std::to_string(core) + " --repeat " + std::to_string(opt.python_passes) +
                    " --list '" + list + "'";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) return internal_error("cannot run " + cmd);
  std::string out;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof(buf), pipe.get())) out.append(buf, n);
  int rc = pclose(pipe.release());
  if (rc != 0 || out.find("images_per_s") == std::string::npos)
    return internal_error("python reference failed (exit " + std::to_string(rc) + "): " + cmd);
  *stages = stage_text(out.substr(out.find("stages_ms_per_image")));
  return Timing{json_number(out, "images_per_s"), json_number(out, "ms_per_image"),
                json_number(out, "wall_images_per_s")};
}

Result<BenchOptions> parse_options(int argc, char** argv) {
  STOKER_ASSIGN_OR_RETURN(
      Args args, Args::parse(argc, argv,
                             {"model", "core", "python", "python-script", "dir", "images", "photos",
                              "records", "passes", "python-passes", "dtype"},
                             {"quick", "help"}));
  if (args.has("help") || !args.positional().empty())
    return invalid_argument(
        "usage: stoker bench image [--quick] [--model M] [--dtype f32|bf16] [--core N] [--photos N]\n"
        "         [--records N] [--passes N] [--python-passes N] [--python PY] [--python-script PATH] "
        "[--dir DIR]\n         [--images DIR (a third set: every .jpg/.jpeg/.png/.webp in DIR)]");
  BenchOptions o;
  o.quick = args.has("quick");
  o.model = args.get("model", o.model);
  if (std::string d = args.get("dtype", "f32"); d == "bf16") {
    o.dtype = image::PixelDType::kBFloat16;
  } else if (d != "f32") {
    return invalid_argument("--dtype: f32 or bf16, not '" + d + "'");
  }
  o.python = args.get("python", o.python);
  o.script = find_script(args.get("python-script"));
  o.dir = args.get("dir");
  o.images = args.get("images");
  constexpr int kIntMax = std::numeric_limits<int>::max();
  STOKER_ASSIGN_OR_RETURN(o.core, args.get_int<int>("core", -1, 0, CPU_SETSIZE - 1));
  STOKER_ASSIGN_OR_RETURN(o.photos, args.get_int<int>("photos", o.quick ? 24 : 120, 1, kIntMax));
  STOKER_ASSIGN_OR_RETURN(o.records, args.get_int<int>("records", o.quick ? 48 : 240, 1, kIntMax));
  STOKER_ASSIGN_OR_RETURN(o.stoker_passes, args.get_int<int>("passes", o.quick ? 3 : 5, 1, kIntMax));
  STOKER_ASSIGN_OR_RETURN(o.python_passes,
                          args.get_int<int>("python-passes", o.quick ? 1 : 2, 1, kIntMax));
  return o;
}

void print_table(const std::vector<ImageSet>& sets, const std::vector<SetResult>& results) {
  std::printf("\n%-14s %6s %7s | %11s %11s %7s | %9s %9s %8s\n", "set", "images", "src MP",
              "stoker im/s", "python im/s", "ratio", "stoker ms", "decode ms", "vs dec");
  std::printf("%s\n", std::string(95, '-').c_str());
  for (size_t i = 0; i < sets.size(); ++i) {
    const SetResult& r = results[i];
    std::printf("%-14s %6zu %7.2f | %11.1f %11.1f %6.2fx | %9.2f %9.2f %7.2fx\n",
                sets[i].name.c_str(), sets[i].blobs.size(), sets[i].megapixels,
                r.stoker.images_per_s, r.python.images_per_s,
                r.stoker.images_per_s / r.python.images_per_s, r.stoker.ms_per_image,
                r.decode.ms_per_image, r.stoker.ms_per_image / r.decode.ms_per_image);
  }
  std::printf("\npython stages (ms/image):\n");
  for (size_t i = 0; i < sets.size(); ++i)
    std::printf("  %-14s %s\n", sets[i].name.c_str(), results[i].python_stages.c_str());
  std::printf("wall clock (includes time other processes took from the core):\n");
  for (size_t i = 0; i < sets.size(); ++i)
    std::printf("  %-14s stoker %.1f im/s, python %.1f im/s, ratio %.2f\n", sets[i].name.c_str(),
                results[i].stoker.wall_images_per_s, results[i].python.wall_images_per_s,
                results[i].stoker.wall_images_per_s / results[i].python.wall_images_per_s);
  std::printf("targets: stoker ≥ 5× python; stoker total ≤ 2× decode-only\n");
}

}  // namespace

int run_bench_image(int argc, char** argv) {
  auto opt_r = parse_options(argc, argv);
  if (!opt_r.ok()) return report("bench image", opt_r.error());
  BenchOptions opt = std::move(opt_r).value();
  Stopwatch total;

  auto model = model::preset(opt.model);
  if (!model.ok()) return report("bench image", model.error());
  auto processor = image::ImageProcessor::create(model->image);
  if (!processor.ok()) return report("bench image", processor.error());

  bool temp = opt.dir.empty();
  std::string work = opt.dir;
  if (temp) {
    char tmpl[] = "/tmp/stoker-bench-image-XXXXXX";
    if (!mkdtemp(tmpl)) return report("bench image", internal_error("mkdtemp failed"));
    work = tmpl;
  }
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ec;
      if (!dir.empty()) fs::remove_all(dir, ec);
    }
  } cleanup{temp ? work : ""};

  // Generate both sets (all cores), before pinning.
  Stopwatch gen;
  synth::ImagesOnlyConfig photo_cfg{.out_dir = work + "/photo-1080p", .count = opt.photos,
                                    .seed = 1, .width = 1920, .height = 1080,
                                    .variant = synth::Variant::kJpeg420,
                                    .content = synth::Content::kPhoto};
  auto photo = synth::generate_images_only(photo_cfg);
  if (!photo.ok()) return report("bench image", photo.error());
  synth::SynthConfig mixed_cfg{.out_dir = work + "/mixed", .records = opt.records, .seed = 2,
                               .max_side = opt.quick ? 1920 : 3840};
  auto mixed = synth::generate_dataset(mixed_cfg);
  if (!mixed.ok()) return report("bench image", mixed.error());
  std::vector<std::pair<std::string, std::vector<std::string>>> lists;
  for (auto [name, result, root] : {std::tuple{"photo-1080p", &*photo, photo_cfg.out_dir},
                                    std::tuple{"mixed", &*mixed, mixed_cfg.out_dir}}) {
    std::vector<std::string> paths;
    for (const synth::ImageEntry& e : result->images) paths.push_back(root + "/" + e.path);
    lists.emplace_back(name, std::move(paths));
  }
  if (!opt.images.empty()) {
    std::vector<std::string> paths;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(opt.images, ec)) {
      std::string ext = entry.path().extension().string();
      std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
      if (entry.is_regular_file() && (ext == ".jpg" || ext == ".jpeg" || ext == ".png" || ext == ".webp"))
        paths.push_back(entry.path().string());
    }
    if (ec) return report("bench image", not_found("--images " + opt.images + ": " + ec.message()));
    std::sort(paths.begin(), paths.end());
    lists.emplace_back("your-images", std::move(paths));
  }
  std::vector<ImageSet> sets;
  for (const auto& [name, paths] : lists) {
    auto set = load_set(name, paths, *processor);
    if (!set.ok()) return report("bench image", set.error());
    sets.push_back(std::move(set).value());
  }
  std::printf("stoker bench image: model %s, stoker output %s, %s build, generated %zu + %zu images in %.1f s "
              "(%d mixed images rejected by smart_resize, skipped on both sides)\n",
              opt.model.c_str(),
              opt.dtype == image::PixelDType::kBFloat16 ? "bf16" : "float32",
#if defined(__SANITIZE_ADDRESS__)
              "SANITIZER (numbers meaningless)",
#elif defined(NDEBUG)
              "release",
#else
              "debug (numbers meaningless)",
#endif
              sets[0].blobs.size(), sets[1].blobs.size(), gen.elapsed_s(), sets[1].skipped);
  if (sets.size() > 2)
    std::printf("your images (%s): %zu usable, %d rejected by smart_resize or the decoder\n",
                opt.images.c_str(), sets[2].blobs.size(), sets[2].skipped);

  int core = opt.core >= 0 ? opt.core : last_allowed_cpu();
  if (Status s = pin_to_core(core); !s.ok()) return report("bench image", s.error());
  std::printf("pinned to CPU %d; stoker best of %d passes, python best of %d\n", core,
              opt.stoker_passes, opt.python_passes);
  std::fflush(stdout);

  std::vector<SetResult> results;
  for (const ImageSet& set : sets) {
    SetResult r;
    auto d = time_decode(set, opt.stoker_passes);
    if (!d.ok()) return report("bench image", d.error());
    auto s = time_stoker(set, *processor, opt.stoker_passes, opt.dtype);
    if (!s.ok()) return report("bench image", s.error());
    auto p = time_python(set, opt, work, core, &r.python_stages);
    if (!p.ok()) return report("bench image", p.error());
    r.decode = *d;
    r.stoker = *s;
    r.python = *p;
    std::printf("  %-12s stoker %.1f im/s, decode-only %.1f im/s, python %.1f im/s\n",
                set.name.c_str(), r.stoker.images_per_s, r.decode.images_per_s,
                r.python.images_per_s);
    std::fflush(stdout);
    results.push_back(std::move(r));
  }
  print_table(sets, results);
  std::printf("total bench time %.1f s\n", total.elapsed_s());
  std::printf("ratio: %.2f\n", results[0].stoker.images_per_s / results[0].python.images_per_s);
  return 0;
}

}  // namespace stoker::cli
