#include "stoker/bench/loader_bench.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <atomic>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "stoker/base/clock.h"
#include "stoker/base/file.h"
#include "stoker/exec/bounded_queue.h"
#include "stoker/image/processor.h"
#include "stoker/model/model_config.h"
#include "stoker/pipeline/loader.h"
#include "stoker/synth/synth.h"

namespace stoker::bench {
namespace {

constexpr int kFirst = 100;     // "the first 100 samples"
constexpr int kRowStride = 4;   // digest every 4th pixel_values row (~4 ms per 1080p image)

struct Image {
  std::vector<std::uint8_t> bytes;
  image::ImagePlan plan;
};

// CRC-32 of rows 0, s, 2s, ... of a (rows × cols) float32 block.
std::uint32_t rows_digest(const float* rows, std::int64_t n, std::int64_t cols) {
  std::uint32_t crc = 0;
  for (std::int64_t r = 0; r < n; r += kRowStride)
    crc = crc32(rows + r * cols, static_cast<std::size_t>(cols) * sizeof(float), crc);
  return crc;
}

struct LoaderRun {
  int samples = 0;
  double wall_s = 0, cpu_s = 0;     // cpu: the process but the consumer's digests
  double consumer_cpu_s = 0;
  double rss_base_mb = 0, rss_peak_mb = 0;
  std::map<std::string, double> pool_cpu_s;  // by thread pool name
  std::map<std::string, int> pool_threads;
  double run_delay_s = 0;  // the Loader's threads: runnable but without a core
  // Loader CPU when the consumer had received `first_at` samples and `steady_end` samples.
  int first_at = 0, steady_end = 0;
  double cpu_at_first = 0, cpu_at_steady_end = 0;
  double first_per_image() const { return cpu_at_first / first_at; }
  double steady_per_image() const {
    return (cpu_at_steady_end - cpu_at_first) / (steady_end - first_at);
  }
  pipeline::LoaderStats stats;
};

// One Loader over `config.data`: create, take every batch, drop it; digests every sample. The
// Loader's CPU (the process's minus the consumer's digests) is read when the consumer has `first`
// samples and when it has `steady_end`: between the two the pipeline is full (first ≥ the
// window) and not yet draining (steady_end ≤ N − 2·window), so the work running ahead of
// delivery is the same at both reads and cancels.
Result<LoaderRun> run_loader(const pipeline::LoaderConfig& config, int first, int steady_end,
                             const std::vector<std::uint32_t>& expected, Comparison* cmp) {
  LoaderRun r;
  r.first_at = first;
  r.steady_end = steady_end;
  r.rss_base_mb = current_rss_mb();
  reset_peak_rss();
  const double cpu0 = process_cpu_s();
  double digests = 0;  // the consumer's CPU in its digests: the only CPU not the Loader's
  std::map<int, double> before;  // threads alive before the Loader (none of its own)
  for (const ThreadCpu& t : live_threads()) before[t.tid] = t.cpu_s;
  const Stopwatch wall;
  // Loader::create and next() run on this thread: their CPU (tokenizer load, pools, the arena)
  // is the Loader's and counts in its cold start.
  STOKER_ASSIGN_OR_RETURN(auto loader, pipeline::Loader::create(config));
  for (;;) {
    STOKER_ASSIGN_OR_RETURN(auto b, loader->next());
    if (!b) break;
    const double d0 = thread_cpu_s();
    const auto* pv = b->as<float>("pixel_values");
    const auto* grid = b->as<std::int64_t>("image_grid_thw");
    const auto* ids = b->as<std::uint64_t>("sample_ids");
    const batch::TensorView* pv_view = b->layout().find("pixel_values");
    if (pv == nullptr || grid == nullptr || ids == nullptr)
      return internal_error("a batch without pixel_values / image_grid_thw / sample_ids");
    const std::int64_t cols = pv_view->shape[1];
    std::int64_t row = 0;
    for (std::int64_t s = 0; s < b->size(); ++s, ++r.samples) {  // one image per record
      const std::int64_t n = grid[3 * s] * grid[3 * s + 1] * grid[3 * s + 2];
      cmp->compared();
      const std::uint64_t id = ids[s];
      if (id >= expected.size() || rows_digest(pv + row * cols, n, cols) != expected[id])
        cmp->differ("Loader sample " + std::to_string(id) + ": pixel_values differ from process()");
      row += n;
    }
    digests += thread_cpu_s() - d0;
    const double loader_cpu = process_cpu_s() - cpu0 - digests;
    // What that CPU made: the samples received plus those already finished in the prefetch ring
    // (one image per record, none failed). Dividing by the received alone charged the first 100
    // with up to `prefetch` batches made ahead of them (~1.3x of a cost-free start at B = 8,
    // prefetch 4); the batch being assembled is the only work ahead not counted.
    auto made = [&] {
      return r.samples + loader->stats().ready_batches * static_cast<std::int64_t>(config.batch_size);
    };
    if (r.cpu_at_first == 0 && r.samples >= first) r.first_at = made(), r.cpu_at_first = loader_cpu;
    if (r.cpu_at_steady_end == 0 && r.samples >= steady_end)
      r.steady_end = made(), r.cpu_at_steady_end = loader_cpu;
  }
  r.wall_s = wall.elapsed_s();
  r.stats = loader->stats();
  for (const ThreadCpu& t : live_threads()) {  // before the pools are joined
    if (before.count(t.tid)) continue;  // not the Loader's
    r.pool_cpu_s[pool_of(t.name)] += t.cpu_s;
    r.run_delay_s += t.run_delay_s;
    ++r.pool_threads[pool_of(t.name)];
  }
  loader.reset();
  r.consumer_cpu_s = digests;
  r.cpu_s = process_cpu_s() - cpu0 - digests;
  r.rss_peak_mb = peak_rss_mb();
  return r;
}

// One pass of process() alone over every image on the calling thread (pin it first): per image,
// the thread's CPU in plan() + process() into one reused buffer; `cold` gets the first
// `kFirst` images' mean, the return value the mean of the rest (the steady state).
Result<double> time_process(const std::vector<Image>& images, const image::ImageProcessor& processor,
                            const std::vector<std::uint32_t>& expected, Comparison* cmp,
                            double* cold) {
  std::int64_t max_rows = 0;
  for (const Image& im : images) max_rows = std::max(max_rows, im.plan.rows());
  std::vector<float> out(static_cast<std::size_t>(max_rows * processor.columns()));
  image::ImageScratch scratch;
  double first = 0, rest = 0;
  for (std::size_t i = 0; i < images.size(); ++i) {
    const double c0 = thread_cpu_s();
    STOKER_ASSIGN_OR_RETURN(image::ImagePlan plan,
                            processor.plan(std::span<const std::uint8_t>(images[i].bytes)));
    STOKER_RETURN_IF_ERROR(processor.process(images[i].bytes, plan, image::PixelDType::kFloat32,
                                             out.data(), &scratch));
    (static_cast<int>(i) < kFirst ? first : rest) += thread_cpu_s() - c0;
    cmp->compared();
    if (rows_digest(out.data(), plan.rows(), processor.columns()) != expected[i])
      cmp->differ("process() differs on image " + std::to_string(i) + " between passes");
  }
  *cold = first / kFirst;
  return rest / static_cast<double>(images.size() - kFirst);
}

// process() alone with the Loader's parallelism and the Loader's consumer: `threads` unpinned
// threads each take the next image, plan and process it into one of their own warm buffers and
// hand it over; the calling thread digests it exactly as it digests the Loader's batches, then
// gives the buffer back. Same cores, same memory traffic, same check, none of the Loader's
// machinery. Returns the workers' CPU in plan() + process() per image after the first kFirst.
Result<double> time_process_parallel(const std::vector<Image>& images,
                                     const image::ImageProcessor& processor, int threads,
                                     const std::vector<std::uint32_t>& expected, Comparison* cmp) {
  std::int64_t max_rows = 0;
  for (const Image& im : images) max_rows = std::max(max_rows, im.plan.rows());
  const std::size_t cols = static_cast<std::size_t>(processor.columns());
  const int buffers = 2 * threads;
  std::vector<std::vector<float>> bufs(static_cast<std::size_t>(buffers),
                                       std::vector<float>(static_cast<std::size_t>(max_rows) * cols));
  struct Done {
    std::size_t image;
    int buf;
    Status status;
  };
  exec::BoundedQueue<int> free_bufs(static_cast<std::size_t>(buffers));
  exec::BoundedQueue<Done> done(static_cast<std::size_t>(buffers));
  for (int b = 0; b < buffers; ++b) free_bufs.push(b);
  std::atomic<std::size_t> next{0};
  std::mutex mu;
  double steady_cpu = 0;
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      image::ImageScratch scratch;
      double mine = 0;
      for (std::size_t i; (i = next.fetch_add(1)) < images.size();) {
        std::optional<int> b = free_bufs.pop();
        if (!b) break;
        const double c0 = thread_cpu_s();
        Status st = [&]() -> Status {
          STOKER_ASSIGN_OR_RETURN(image::ImagePlan plan,
                                  processor.plan(std::span<const std::uint8_t>(images[i].bytes)));
          return processor.process(images[i].bytes, plan, image::PixelDType::kFloat32,
                                   bufs[static_cast<std::size_t>(*b)].data(), &scratch);
        }();
        if (static_cast<int>(i) >= kFirst) mine += thread_cpu_s() - c0;
        if (!done.push(Done{i, *b, std::move(st)})) break;
      }
      std::lock_guard lock(mu);
      steady_cpu += mine;
    });
  }
  Status failed = ok_status();
  for (std::size_t n = 0; n < images.size() && failed.ok(); ++n) {
    std::optional<Done> d = done.pop();
    if (!d) break;
    if (!d->status.ok()) {
      failed = d->status;
      break;
    }
    cmp->compared();
    if (rows_digest(bufs[static_cast<std::size_t>(d->buf)].data(), images[d->image].plan.rows(),
                    processor.columns()) != expected[d->image])
      cmp->differ("process() on " + std::to_string(threads) + " threads differs on image " +
                  std::to_string(d->image));
    free_bufs.push(d->buf);
  }
  free_bufs.close();
  done.close();
  for (std::thread& w : workers) w.join();
  STOKER_RETURN_IF_ERROR(failed);
  return steady_cpu / static_cast<double>(images.size() - kFirst);
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

Result<std::pair<int, int>> parse_size(const std::string& s) {
  int w = 0, h = 0;
  if (std::sscanf(s.c_str(), "%dx%d", &w, &h) != 2 || w < 1 || h < 1 || w > 16383 || h > 16383)
    return invalid_argument("--size expects WxH (1..16383), got '" + s + "'");
  return std::pair{w, h};
}

std::string ms(double s) { return format("%.2f", 1e3 * s); }

struct Context {
  int cores = 0, window = 0, prefetch = 0;
  double rows_mb = 0;  // one image's float32 pixel_values
};

// The limiter: the cores (the Loader's threads on a core or waiting for one most of the time;
// then where its CPU goes), else the busiest stage, else nothing (latency).
void print_limiter(const LoaderRun& all, int cores) {
  const double on_core = all.cpu_s / (cores * all.wall_s);
  const double waiting = all.run_delay_s / (cores * all.wall_s);
  std::string top;
  double top_cpu = 0;
  for (const auto& [pool, cpu] : all.pool_cpu_s)
    if (cpu > top_cpu) top_cpu = cpu, top = pool;
  std::string stage;
  double stage_u = -1;
  for (const pipeline::StageStats& s : all.stats.stages) {
    const double u = all.stats.elapsed_s > 0 ? s.busy_s / std::max(1, s.threads) / all.stats.elapsed_s : 0;
    if (u > stage_u) stage_u = u, stage = s.name;
  }
  if (on_core + waiting >= 0.85) {
    std::printf("limiter: CPU — the Loader's threads ran %.0f%% and waited runnable for a core "
                "%.0f%% of the %d cores' time%s; %s took %.0f%% of the Loader's CPU (busiest "
                "stage: %s, %.0f%% of its threads' wall time)\n",
                100 * on_core, 100 * waiting, cores,
                waiting > 0.25 ? format(" (other processes held the cores: load average %.1f)",
                                        load_average()).c_str() : "",
                top.c_str(), 100 * top_cpu / all.cpu_s, stage.c_str(), 100 * stage_u);
  } else if (stage_u >= 0.85) {
    std::printf("limiter: the %s stage (%.0f%% of its threads' wall time; the Loader used %.0f%% "
                "of the cores)\n", stage.c_str(), 100 * stage_u, 100 * on_core);
  } else {
    std::printf("limiter: nothing saturated (the Loader used %.0f%% of the cores, busiest stage "
                "%s %.0f%%): it waits on I/O latency, its window, or the consumer\n",
                100 * on_core, stage.c_str(), 100 * stage_u);
  }
}

struct Figures {
  int rounds = 0, threads = 0;
  double loader_first = 0, loader_steady = 0;  // round 1's first kFirst; median of the rounds
  double one_first = 0, one_steady = 0;        // process() alone, one pinned core
  double par_steady = 0;                       // process() alone, `threads` threads + consumer
};

void print_report(const LoaderRun& all, const Figures& f, const Context& ctx) {
  std::printf("\nper image, CPU ms (Loader: the process's CPU but the consumer's digests — create() and next() included; %d rounds, "
              "each a Loader run then the two process() passes; medians):\n", f.rounds);
  Table t({{"", 46, true}, {"Loader", 9}, {"process()", 9}, {"ratio", 7}});
  t.header(stdout);
  t.row(stdout, {format("first %d samples, round 1 (cold) vs one core", kFirst),
                 ms(f.loader_first), ms(f.one_first), format("%.2fx", f.loader_first / f.one_first)});
  t.row(stdout, {"steady state vs process() on one core", ms(f.loader_steady), ms(f.one_steady),
                 format("%.2fx", f.loader_steady / f.one_steady)});
  t.row(stdout, {format("steady state vs process() on %d threads", f.threads), ms(f.loader_steady),
                 ms(f.par_steady), format("%.2fx", f.loader_steady / f.par_steady)});
  std::printf("  Loader: CPU until the consumer had received %d samples, per sample made by then "
              "(received + finished in the prefetch ring: %d); steady = between that and %d made\n",
              kFirst, all.first_at, all.steady_end);
  std::printf("  Loader cold start: first %d samples cost %.2fx its steady state\n", all.first_at,
              f.loader_first / f.loader_steady);
  std::printf("  process() on one core: pinned, nothing else running, one reused buffer\n");
  std::printf("  process() on %d threads: the Loader's thread count and the Loader's consumer (the "
              "same digest of every image on the calling thread), warm buffers, no Loader\n",
              f.threads);
  std::printf("\nLoader threads over the whole set (%d samples, %.2f s wall, %.1f samples/s):\n",
              all.samples, all.wall_s, all.samples / all.wall_s);
  for (const auto& [pool, cpu] : all.pool_cpu_s)
    std::printf("  %-16s %2d thread(s)  %7.2f ms/image  %5.1f%% of its threads' wall time\n",
                pool.c_str(), all.pool_threads.at(pool), 1e3 * cpu / all.samples,
                100 * cpu / (all.pool_threads.at(pool) * all.wall_s));
  double pools = 0;
  for (const auto& [pool, cpu] : all.pool_cpu_s) pools += cpu;
  std::printf("  threads that ended before the last batch (the producer, ...): %.2f ms/image\n",
              1e3 * std::max(0.0, all.cpu_s - pools) / all.samples);
  std::printf("  (consumer: %.2f ms/image of digests, not counted)\n",
              1e3 * all.consumer_cpu_s / all.samples);
  std::printf("stages (LoaderStats busy / (threads x elapsed)):");
  for (const pipeline::StageStats& s : all.stats.stages)
    std::printf("  %s %.0f%%", s.name.c_str(),
                all.stats.elapsed_s > 0
                    ? 100 * s.busy_s / std::max(1, s.threads) / all.stats.elapsed_s
                    : 0.0);
  std::printf("\n");
  std::printf("peak RSS %.0f MB, %.0f MB before the Loader: %.1f MB per sample in flight (window "
              "%d samples, the %d-batch ring included; one image is %.1f MB of float32 rows); "
              "arena peak %.0f MB; encoded bytes in flight peak %.1f MB\n",
              all.rss_peak_mb, all.rss_base_mb, (all.rss_peak_mb - all.rss_base_mb) / ctx.window,
              ctx.window, ctx.prefetch, ctx.rows_mb, all.stats.arena_peak_bytes / 1e6,
              all.stats.fetch_peak_bytes / 1e6);
  print_limiter(all, ctx.cores);
}

}  // namespace

Result<Outcome> run_loader_bench(const LoaderBenchOptions& opt_in) {
  LoaderBenchOptions o = opt_in;
  if (o.images <= 0) o.images = o.quick ? 400 : 800;
  // The steady segment runs from sample 100 to N − 2·window: at least 100 samples of it.
  const int window = 2 * o.batch_size * (o.prefetch + 1);
  if (o.images < 2 * kFirst + 2 * window)
    return invalid_argument("--images must be at least " + std::to_string(2 * kFirst + 2 * window) +
                            " (100 first samples, 100 steady, then twice the window of " +
                            std::to_string(window) + ")");
  if (o.threads <= 0) o.threads = usable_cores();
  const int cores = usable_cores();
  const Stopwatch total;
  STOKER_ASSIGN_OR_RETURN(auto size, parse_size(o.size));
  STOKER_ASSIGN_OR_RETURN(model::ModelConfig model, model::load_model(o.model));
  if (o.tokenizer.empty()) {
    STOKER_ASSIGN_OR_RETURN(o.tokenizer, model::default_tokenizer_dir(model));
  }
  STOKER_ASSIGN_OR_RETURN(image::ImageProcessor processor, image::ImageProcessor::create(model.image));
  std::optional<TempDir> temp;
  std::string dir = o.dir;
  if (dir.empty()) {
    STOKER_ASSIGN_OR_RETURN(TempDir t, TempDir::make("stoker-bench-loader"));
    dir = t.path();
    temp.emplace(std::move(t));
  }
  const Stopwatch gen;
  STOKER_ASSIGN_OR_RETURN(
      synth::SynthResult set,
      synth::generate_images_only({.out_dir = dir, .count = o.images, .seed = 3,
                                   .width = size.first, .height = size.second,
                                   .variant = synth::Variant::kJpeg420,
                                   .content = synth::Content::kPhoto}));
  std::vector<Image> images;
  for (const synth::ImageEntry& e : set.images) {
    STOKER_ASSIGN_OR_RETURN(auto bytes, read_file(dir + "/" + e.path));
    STOKER_ASSIGN_OR_RETURN(image::ImagePlan plan, processor.plan(std::span<const std::uint8_t>(bytes)));
    images.push_back({std::move(bytes), plan});
  }
  std::printf("stoker bench loader: %d photo-like %s JPEGs (one per record), generated in %.1f s; "
              "model %s, %s; Loader: prefetch mode, %d CPU threads, batch %d, prefetch %d, no "
              "trainer; process(): one core\n",
              o.images, o.size.c_str(), gen.elapsed_s(), o.model.c_str(), build_kind(), o.threads,
              o.batch_size, o.prefetch);
  std::fflush(stdout);

  // The Loader runs first, on every allowed CPU (a pinned caller would pin the Loader's threads
  // too); process() after it, pinned.
  std::vector<std::uint32_t> expected;
  pipeline::LoaderConfig c;
  c.model = o.model;
  c.tokenizer = o.tokenizer;
  c.batch_size = o.batch_size;
  c.threads = o.threads;
  c.prefetch = o.prefetch;
  c.window = window;  // the documented auto value (2·B·(prefetch + 1)), made explicit
  // The digests need process()'s outputs first: compute them unpinned (untimed), then time.
  {
    image::ImageScratch scratch;
    std::vector<float> out;
    for (const Image& im : images) {
      out.resize(static_cast<std::size_t>(im.plan.rows() * processor.columns()));
      STOKER_RETURN_IF_ERROR(processor.process(im.bytes, im.plan, image::PixelDType::kFloat32,
                                               out.data(), &scratch));
      expected.push_back(rows_digest(out.data(), im.plan.rows(), processor.columns()));
    }
  }
  Comparison cmp;
  c.data = {set.data_path};
  const int core = o.core >= 0 ? o.core : last_allowed_cpu();
  // Rounds: a Loader run (the first is the process's cold start), then process() on one pinned
  // core (a thread of its own: the Loader's threads must not inherit the pin), then process() on
  // the Loader's thread count. Every output of every round is compared; medians are reported.
  const int rounds = o.rounds > 0 ? o.rounds : (o.quick ? 3 : 5);
  Figures f{.rounds = rounds, .threads = o.threads};
  std::vector<LoaderRun> runs;
  std::vector<double> one, par;
  for (int r = 0; r < rounds; ++r) {
    STOKER_ASSIGN_OR_RETURN(LoaderRun run,
                            run_loader(c, kFirst, o.images - 2 * c.window, expected, &cmp));
    runs.push_back(std::move(run));
    double cold = 0;
    Result<double> single = internal_error("not run");
    std::thread pinned([&] {
      if (Status st = pin_to_core(core); !st.ok()) {
        single = std::move(st).error();
        return;
      }
      single = time_process(images, processor, expected, &cmp, &cold);
    });
    pinned.join();
    if (!single.ok()) return std::move(single).error();
    one.push_back(*single);
    if (r == 0) f.one_first = cold;
    STOKER_ASSIGN_OR_RETURN(double p, time_process_parallel(images, processor, o.threads, expected, &cmp));
    par.push_back(p);
  }
  std::vector<double> steady;
  for (const LoaderRun& run : runs) steady.push_back(run.steady_per_image());
  f.loader_first = runs[0].first_per_image();
  f.loader_steady = median(steady);
  f.one_steady = median(one);
  f.par_steady = median(par);
  // The breakdown below is of the round with the median steady state; peak RSS of the first.
  const LoaderRun* shown = &runs[0];
  for (const LoaderRun& run : runs)
    if (run.steady_per_image() == f.loader_steady) shown = &run;
  LoaderRun report = *shown;
  report.rss_base_mb = runs[0].rss_base_mb;
  report.rss_peak_mb = runs[0].rss_peak_mb;
  print_report(report, f,
               {.cores = cores, .window = c.window, .prefetch = o.prefetch,
                .rows_mb = 4e-6 * static_cast<double>(images[0].plan.rows() * processor.columns())});
  std::printf("steady state per round, ms/image: Loader");
  for (double v : steady) std::printf(" %.2f", 1e3 * v);
  std::printf("; process() one core");
  for (double v : one) std::printf(" %.2f", 1e3 * v);
  std::printf("; process() %d threads", o.threads);
  for (double v : par) std::printf(" %.2f", 1e3 * v);
  std::printf("\ntotal %.1f s\n", total.elapsed_s());
  return finish(cmp, "samples (Loader runs and process() passes)",
                format("process() on %d threads with the same consumer", o.threads),
                f.loader_steady / f.par_steady, "loader/process");
}

}  // namespace stoker::bench
