// The engine's last stage: one arena block per batch, every image decoded straight into its
// pixel rows, then the token tensors — padded rows (fixed batches, token budgets) or one pack
// row (HF varlen / Megatron THD). Nothing here can fail but the allocation and an image that
// passed its header check and does not decode (its sample fails; the caller assembles again).
#include <algorithm>
#include <map>

#include "stoker/base/clock.h"
#include "stoker/batch/collate.h"
#include "stoker/batch/pack_collate.h"
#include "stoker/pipeline/engine.h"

namespace stoker::pipeline {

namespace {

// One image's emit span, and inside it the decode, resize and normalise phases. The fused path
// interleaves them band by band: the children are their summed times laid end to end (so they
// nest and add up), not the moments each ran.
void trace_image(obs::Tracer* trace, std::int64_t t0, std::int64_t t1,
                 const image::PhaseTimes& p, std::int64_t sample) {
  trace->span("emit", t0, t1, "sample", sample);
  std::int64_t at = t0;
  const std::pair<const char*, std::int64_t> phases[] = {
      {"decode", p.decode_ns}, {"resize", p.resize_ns}, {"normalise", p.normalise_ns}};
  for (const auto& [name, ns] : phases) {
    const std::int64_t end = std::min(t1, at + ns);
    trace->span(name, at, end);
    at = end;
  }
}

// Decode + resize + normalise + patchify every image of the batch straight into its pixel rows
// (ImageProcessor::process, the fused streaming path). Work is claimed by index, biggest images
// first so no thread is left with a large one at the end; helpers that start late find nothing
// and leave; the caller does whatever is left and waits only for images already claimed.
struct EmitJob {
  const image::ImageProcessor* proc = nullptr;
  image::PixelDType dtype = image::PixelDType::kFloat32;
  struct Image {
    const std::vector<std::uint8_t>* bytes;
    const image::ImagePlan* plan;
    std::uint8_t* dst;
    std::size_t sample, index;  // in goods, in the sample
    std::uint64_t seq, id;      // the sample's sequence number and record id (tracing)
  };
  std::vector<Image> images;  // biggest first
  std::vector<std::optional<Error>> errors;  // per entry of `images`
  StageCounters* counters = nullptr;
  obs::Tracer* tracer = nullptr;
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> done{0};
  std::mutex mu;
  std::condition_variable cv;

  void work() {
    thread_local image::ImageScratch scratch;  // per thread: steady state allocates nothing
    for (;;) {
      const std::size_t i = next.fetch_add(1);
      if (i >= images.size()) return;
      const Image& img = images[i];
      obs::Tracer* trace = tracer != nullptr && tracer->keeps(img.seq) ? tracer : nullptr;
      image::PhaseTimes phases;
      scratch.phases = trace != nullptr ? &phases : nullptr;
      const std::int64_t t0 = now_ns();
      Status st = proc->process(*img.bytes, *img.plan, dtype, img.dst, &scratch);
      const std::int64_t t1 = now_ns();
      scratch.phases = nullptr;
      if (!st.ok()) errors[i] = std::move(st).error();
      counters->add(kEmit, t1 - t0);
      if (trace != nullptr) trace_image(trace, t0, t1, phases, static_cast<std::int64_t>(img.id));
      if (done.fetch_add(1) + 1 == images.size()) {
        std::lock_guard lock(mu);
        cv.notify_all();
      }
    }
  }
};

batch::DType pixel_dtype(image::PixelDType d) {
  return d == image::PixelDType::kFloat32 ? batch::DType::kFloat32 : batch::DType::kBFloat16;
}

// The batch's image grids (samples in order, then images in order) and its sample ids.
void grids_and_ids(const std::vector<Prepared>& goods, std::vector<batch::GridTHW>* grids,
                   std::vector<std::uint64_t>* ids) {
  for (const Prepared& p : goods) {
    for (const image::ImagePlan& plan : p.plans) grids->push_back({plan.grid_t, plan.grid_h, plan.grid_w});
    ids->push_back(p.item.sample);
  }
}

// The batch's video grids and second_per_grid_ts, samples in order, then videos in order.
void write_videos(std::uint8_t* base, const batch::BatchLayout& layout,
                  const std::vector<Prepared>& goods) {
  std::vector<batch::GridTHW> grids;
  std::vector<double> seconds;
  for (const Prepared& p : goods) {
    for (const Prepared::Video& v : p.videos) {
      grids.push_back({v.plan.grid_t, v.plan.grid_h, v.plan.grid_w});
      seconds.push_back(v.plan.second_per_grid_t);
    }
  }
  batch::write_video_grids(base, layout, grids, seconds);
}

}  // namespace

Result<Batch> Engine::start_batch(const std::vector<Prepared>& goods, std::uint64_t bytes,
                                  const std::function<batch::BatchLayout(batch::Block)>& place,
                                  std::uint64_t epoch, std::stop_token stop,
                                  std::vector<BrokenImage>* broken) {
  const std::int64_t t0 = now_ns();
  Result<batch::Block> block = arena_->allocate(bytes, stop);
  const std::int64_t t1 = now_ns();
  arena_wait_ns_.fetch_add(t1 - t0);
  if (ctx_.tracer != nullptr) {
    ctx_.tracer->span("arena wait", t0, t1, "bytes", static_cast<std::int64_t>(bytes));
    ctx_.tracer->counter(ctx_.trace_ids.arena_bytes, static_cast<std::int64_t>(arena_->in_use()));
  }
  if (!block.ok()) return std::move(block.error().with_context("allocating a batch block"));
  batch::BatchLayout layout = place(*block);
  layout.step = step_;
  layout.epoch = epoch;
  // Handed over as a Batch right away, so that every return gives the block back.
  Batch batch = BatchAccess::make(layout, arena_, ctx_.tracer, ctx_.trace_ids.arena_bytes);
  process_images(goods, layout, broken);
  if (broken->empty()) process_videos(goods, layout, broken);
  return batch;
}

// Every video of the batch: decoded (only the frames kept), resized, normalised and patchified
// into pixel_values_videos. Claimed by index, longest first, by this thread and the emit pool's
// helpers (as images are); a video that fails breaks its sample (the first failing one named).
struct VideoJob {
  const Context* ctx = nullptr;
  video::VideoDType dtype = video::VideoDType::kFloat32;
  struct Item {
    const Prepared::Video* video;
    std::uint8_t* dst;
    std::size_t sample, index;
  };
  std::vector<Item> items;
  std::vector<std::optional<Error>> errors;
  StageCounters* counters = nullptr;
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> done{0};
  std::mutex mu;
  std::condition_variable cv;

  void work() {
    for (;;) {
      const std::size_t i = next.fetch_add(1);
      if (i >= items.size()) return;
      const Item& it = items[i];
      const std::int64_t t0 = now_ns();
      Status st = process_video(*ctx, *it.video, dtype, it.dst);
      if (!st.ok()) errors[i] = std::move(st).error();
      counters->add(kEmit, now_ns() - t0);
      if (done.fetch_add(1) + 1 == items.size()) {
        std::lock_guard lock(mu);
        cv.notify_all();
      }
    }
  }
};

void Engine::process_videos(const std::vector<Prepared>& goods, const batch::BatchLayout& layout,
                            std::vector<BrokenImage>* broken) {
  auto job = std::make_shared<VideoJob>();
  job->ctx = &ctx_;
  job->dtype = options_.pixel_dtype == image::PixelDType::kFloat32 ? video::VideoDType::kFloat32
                                                                   : video::VideoDType::kBFloat16;
  job->counters = &ctx_.counters;
  std::uint8_t* base = arena_->base();
  std::int64_t row = 0;
  for (std::size_t s = 0; s < goods.size(); ++s) {
    const Prepared& p = goods[s];
    for (std::size_t v = 0; v < p.videos.size(); ++v) {
      job->items.push_back({&p.videos[v], batch::video_row_address(base, layout, row), s, v});
      row += p.videos[v].plan.rows();
    }
  }
  if (job->items.empty()) return;
  std::stable_sort(job->items.begin(), job->items.end(),
                   [](const VideoJob::Item& a, const VideoJob::Item& b) {
                     return a.video->plan.frames.indices.size() > b.video->plan.frames.indices.size();
                   });
  job->errors.resize(job->items.size());
  if (emit_ != nullptr) {
    int helpers = std::min<int>(static_cast<int>(job->items.size()) - 1, emit_->num_threads());
    for (int h = 0; h < helpers; ++h) (void)emit_->submit([job] { job->work(); });
  }
  job->work();
  {
    std::unique_lock lock(job->mu);
    job->cv.wait(lock, [&] { return job->done.load() == job->items.size(); });
  }
  std::map<std::size_t, BrokenImage> failed;
  for (std::size_t k = 0; k < job->items.size(); ++k) {
    if (!job->errors[k]) continue;
    const VideoJob::Item& it = job->items[k];
    const std::size_t index = goods[it.sample].plans.size() + it.index;
    auto f = failed.find(it.sample);
    if (f == failed.end() || index < f->second.image) {
      failed.insert_or_assign(
          it.sample, BrokenImage{it.sample, index,
                                 Error(*job->errors[k]).with_context("video " + std::to_string(it.index))});
    }
  }
  for (auto& [s, b] : failed) broken->push_back(std::move(b));
}

void Engine::process_images(const std::vector<Prepared>& goods, const batch::BatchLayout& layout,
                            std::vector<BrokenImage>* broken) {
  auto job = std::make_shared<EmitJob>();
  job->proc = &*ctx_.processor;
  job->dtype = options_.pixel_dtype;
  job->counters = &ctx_.counters;
  job->tracer = ctx_.tracer.get();
  std::uint8_t* base = arena_->base();
  std::int64_t row = 0;
  // Samples prepared elsewhere: their rows arrive from the network straight into the block.
  std::vector<const Prepared*> remote;
  std::vector<std::uint8_t*> remote_dst;
  std::vector<std::size_t> remote_sample;
  for (std::size_t s = 0; s < goods.size(); ++s) {
    const Prepared& p = goods[s];
    if (p.remote) {
      remote.push_back(&p);
      remote_dst.push_back(batch::pixel_row_address(base, layout, row));
      remote_sample.push_back(s);
      row += p.pixel_rows;
      continue;
    }
    for (std::size_t i = 0; i < p.plans.size(); ++i) {
      job->images.push_back({&p.encoded[i], &p.plans[i],
                             batch::pixel_row_address(base, layout, row), s, i, p.item.seq,
                             p.item.sample});
      row += p.plans[i].rows();
    }
  }
  std::map<std::size_t, BrokenImage> failed;  // the first failing image of each failing sample
  if (!remote.empty()) {
    std::vector<std::optional<Error>> errors(remote.size());
    const std::int64_t t0 = now_ns();
    options_.remote->pixels(remote, remote_dst, options_.pixel_dtype, emit_, &errors);
    ctx_.counters.add(kEmit, now_ns() - t0, static_cast<std::int64_t>(remote.size()));
    for (std::size_t k = 0; k < remote.size(); ++k) {
      if (errors[k]) failed.insert_or_assign(remote_sample[k], BrokenImage{remote_sample[k], 0, *errors[k]});
    }
  }
  std::stable_sort(job->images.begin(), job->images.end(),
                   [](const EmitJob::Image& a, const EmitJob::Image& b) {
                     return a.plan->rows() > b.plan->rows();
                   });
  job->errors.resize(job->images.size());
  if (!job->images.empty()) {
    if (emit_ != nullptr) {
      int helpers = std::min<int>(static_cast<int>(job->images.size()) - 1, emit_->num_threads());
      for (int h = 0; h < helpers; ++h) (void)emit_->submit([job] { job->work(); });
    }
    job->work();
    std::unique_lock lock(job->mu);
    job->cv.wait(lock, [&] { return job->done.load() == job->images.size(); });
  }
  // The first failing image of each failing sample, samples in order.
  for (std::size_t k = 0; k < job->images.size(); ++k) {
    if (!job->errors[k]) continue;
    const EmitJob::Image& img = job->images[k];
    auto it = failed.find(img.sample);
    if (it == failed.end() || img.index < it->second.image) {
      failed.insert_or_assign(img.sample, BrokenImage{img.sample, img.index, *job->errors[k]});
    }
  }
  for (auto& [s, b] : failed) broken->push_back(std::move(b));
}

Result<Batch> Engine::emit(std::vector<Prepared>& goods, std::uint64_t epoch,
                           std::stop_token stop, std::vector<BrokenImage>* broken,
                           ReadyBatch& out) {
  const image::ImageProcessor& proc = *ctx_.processor;
  batch::BatchShape shape;
  shape.batch_size = static_cast<std::int64_t>(goods.size());
  std::int64_t real = 0;
  for (const Prepared& p : goods) {
    const std::int64_t n = static_cast<std::int64_t>(p.tokens.input_ids.size());
    shape.length = std::max(shape.length, n);
    shape.images += static_cast<std::int64_t>(p.plans.size());
    shape.pixel_rows += p.pixel_rows;
    shape.videos += static_cast<std::int64_t>(p.videos.size());
    shape.video_rows += p.video_rows;
    real += n;
  }
  if (options_.padding == Padding::kFixed && options_.max_length > 0) {
    shape.length = options_.max_length;
  }
  shape.pixel_cols = proc.columns();
  shape.pixel_dtype = pixel_dtype(options_.pixel_dtype);
  STOKER_ASSIGN_OR_RETURN(
      Batch batch, start_batch(goods, batch::layout_bytes(shape),
                               [&](batch::Block b) { return batch::make_layout(shape, b); },
                               epoch, stop, broken));
  if (!broken->empty()) return batch;

  const std::int64_t t1 = now_ns();
  std::uint8_t* base = arena_->base();
  const batch::BatchLayout& layout = batch.layout();
  for (std::size_t r = 0; r < goods.size(); ++r) {
    const Prepared& p = goods[r];
    batch::collate_row(base, layout, static_cast<std::int64_t>(r),
                       {p.tokens.input_ids, p.tokens.labels, p.positions}, options_.pad_id);
  }
  std::vector<batch::GridTHW> grids;
  std::vector<std::uint64_t> ids;
  grids_and_ids(goods, &grids, &ids);
  batch::write_grids(base, layout, grids);
  batch::write_sample_ids(base, layout, ids);
  write_videos(base, layout, goods);
  const std::int64_t t2 = now_ns();
  ctx_.counters.add(kAssemble, t2 - t1);
  if (ctx_.tracer != nullptr) ctx_.tracer->span("assemble", t1, t2);
  out.real_tokens = real;
  out.computed_tokens = shape.batch_size * shape.length;
  return batch;
}

Result<Batch> Engine::emit_pack(std::vector<Prepared>& goods, std::uint64_t epoch,
                                std::stop_token stop, std::vector<BrokenImage>* broken,
                                ReadyBatch& out) {
  batch::PackShape shape;
  shape.format = options_.pack_format;
  shape.position_rows = options_.position_rows;
  shape.align = options_.pack_align;
  shape.sequences = static_cast<std::int64_t>(goods.size());
  std::int64_t real = 0;
  for (const Prepared& p : goods) {
    const std::int64_t n = static_cast<std::int64_t>(p.tokens.input_ids.size());
    shape.tokens += batch::packed_length(shape.format, shape.align, n);
    shape.images += static_cast<std::int64_t>(p.plans.size());
    shape.pixel_rows += p.pixel_rows;
    shape.videos += static_cast<std::int64_t>(p.videos.size());
    shape.video_rows += p.video_rows;
    real += n;
  }
  shape.pixel_cols = ctx_.processor->columns();
  shape.pixel_dtype = pixel_dtype(options_.pixel_dtype);
  STOKER_ASSIGN_OR_RETURN(
      Batch batch, start_batch(goods, batch::pack_layout_bytes(shape),
                               [&](batch::Block b) { return batch::make_pack_layout(shape, b); },
                               epoch, stop, broken));
  if (!broken->empty()) return batch;

  const std::int64_t t1 = now_ns();
  std::vector<batch::SampleRow> rows;
  for (const Prepared& p : goods) rows.push_back({p.tokens.input_ids, p.tokens.labels, p.positions});
  std::vector<batch::GridTHW> grids;
  std::vector<std::uint64_t> ids;
  grids_and_ids(goods, &grids, &ids);
  batch::collate_pack(arena_->base(), batch.layout(), shape, rows, grids, ids, options_.pad_id);
  write_videos(arena_->base(), batch.layout(), goods);
  const std::int64_t t2 = now_ns();
  ctx_.counters.add(kAssemble, t2 - t1);
  if (ctx_.tracer != nullptr) ctx_.tracer->span("assemble", t1, t2);
  out.real_tokens = real;
  out.computed_tokens = out.unit ? out.unit->computed : shape.tokens;
  return batch;
}

}  // namespace stoker::pipeline
