// The engine's last stage: one arena block per batch, every medium (image, video, ...) produced
// straight into its rows (decode, resize, normalise, patchify: Medium::produce, pipeline/media.h),
// then the token tensors — padded rows (fixed batches, token budgets) or one pack row (HF varlen
// / Megatron THD) — and each medium's metadata (grids, seconds). Nothing here can fail but the
// allocation and a medium that passed its header check and does not decode (its sample fails;
// the caller assembles again).
#include <algorithm>
#include <map>

#include "stoker/base/clock.h"
#include "stoker/batch/collate.h"
#include "stoker/batch/pack_collate.h"
#include "stoker/pipeline/engine.h"

namespace stoker::pipeline {

namespace {

// The one job loop of emit: every medium of the batch produced straight into its rows. Work is
// claimed by index, costliest first (videos, then the biggest images) so no thread is left with a
// large one at the end; helpers that start late find nothing and leave; the caller does whatever
// is left and waits only for media already claimed.
struct MediaJob {
  const MediaEnv* env = nullptr;
  image::PixelDType dtype = image::PixelDType::kFloat32;  // the batch's rows (kUInt8: device finish)
  struct Entry {
    const Medium* medium;
    std::uint8_t* dst;
    std::size_t sample, index;  // in goods; among the sample's media of its modality
    std::uint64_t seq, id;      // the sample's sequence number and record id (tracing)
  };
  std::vector<Entry> entries;                // costliest first
  std::vector<std::optional<Error>> errors;  // per entry
  StageCounters* counters = nullptr;
  obs::Tracer* tracer = nullptr;
  std::atomic<std::size_t> next{0};
  std::atomic<std::size_t> done{0};
  std::mutex mu;
  std::condition_variable cv;

  void work() {
    for (;;) {
      const std::size_t i = next.fetch_add(1);
      if (i >= entries.size()) return;
      const Entry& e = entries[i];
      const EmitTrace trace{tracer != nullptr && tracer->keeps(e.seq) ? tracer : nullptr,
                            static_cast<std::int64_t>(e.id)};
      const std::int64_t t0 = now_ns();
      Status st = e.medium->produce(*env, rows_dtype(e.medium->modality(), dtype), e.dst, trace);
      counters->add(kEmit, now_ns() - t0);
      if (!st.ok()) errors[i] = std::move(st).error();
      if (done.fetch_add(1) + 1 == entries.size()) {
        std::lock_guard lock(mu);
        cv.notify_all();
      }
    }
  }
};

std::vector<const std::vector<std::unique_ptr<Medium>>*> media_of(const std::vector<Prepared>& goods) {
  std::vector<const std::vector<std::unique_ptr<Medium>>*> out;
  out.reserve(goods.size());
  for (const Prepared& p : goods) out.push_back(&p.media);
  return out;
}

// Every medium's metadata rows, and the modalities' value tables when the device finishes.
void write_meta_and_tables(std::uint8_t* base, const batch::BatchLayout& layout,
                           const std::vector<Prepared>& goods, const MediaEnv& env,
                           image::PixelDType pixel) {
  write_media_meta(base, layout, place_media(base, layout, media_of(goods)));
  write_media_tables(base, layout, env, pixel);
}

// Sample ids and every medium's metadata rows (and tables).
void write_ids_and_meta(std::uint8_t* base, const batch::BatchLayout& layout,
                        const std::vector<Prepared>& goods, const MediaEnv& env,
                        image::PixelDType pixel) {
  std::vector<std::uint64_t> ids;
  for (const Prepared& p : goods) ids.push_back(p.item.sample);
  batch::write_sample_ids(base, layout, ids);
  write_meta_and_tables(base, layout, goods, env, pixel);
}

}  // namespace

Result<Batch> Engine::start_batch(const std::vector<Prepared>& goods, std::uint64_t bytes,
                                  const std::function<batch::BatchLayout(batch::Block)>& place,
                                  std::uint64_t epoch, std::stop_token stop,
                                  std::vector<BrokenMedium>* broken) {
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
  process_media(goods, layout, broken);
  return batch;
}

void Engine::process_media(const std::vector<Prepared>& goods, const batch::BatchLayout& layout,
                           std::vector<BrokenMedium>* broken) {
  auto job = std::make_shared<MediaJob>();
  job->env = &ctx_.media;
  job->dtype = options_.rows_dtype();
  job->counters = &ctx_.counters;
  job->tracer = ctx_.tracer.get();
  // The first failing medium of each failing sample (images before videos, then by index: the
  // order they were always checked in).
  std::map<std::size_t, BrokenMedium> failed;
  auto fail = [&](std::size_t sample, const Modality& m, std::size_t index, Error e) {
    auto it = failed.find(sample);
    const auto key = [](const Modality& mod, std::size_t i) { return std::pair(modality_rank(mod), i); };
    if (it == failed.end() || key(m, index) < key(*it->second.modality, it->second.index)) {
      failed.insert_or_assign(sample, BrokenMedium{sample, &m, index, std::move(e)});
    }
  };
  // Samples prepared elsewhere: their rows arrive from the network straight into the block.
  std::vector<RemoteLanding> remote;
  std::vector<std::size_t> remote_sample;
  const std::vector<MediumSlot> slots = place_media(arena_->base(), layout, media_of(goods));
  for (const MediumSlot& slot : slots) {
    const Prepared& p = goods[slot.sample];
    if (p.remote) {
      if (remote_sample.empty() || remote_sample.back() != slot.sample) {
        remote.push_back({&p, {}});
        remote_sample.push_back(slot.sample);
      }
      remote.back().rows.push_back(slot.rows);
      continue;
    }
    job->entries.push_back({slot.medium, slot.rows, slot.sample, slot.index, p.item.seq, p.item.sample});
  }
  // A remote sample without media still has its (empty) payload accounted for.
  for (std::size_t s = 0; s < goods.size(); ++s) {
    if (goods[s].remote && goods[s].media.empty()) {
      remote.push_back({&goods[s], {}});
      remote_sample.push_back(s);
    }
  }
  if (!remote.empty()) {
    std::vector<std::optional<MediumError>> errors(remote.size());
    const std::int64_t t0 = now_ns();
    options_.remote->pixels(remote, ctx_.media, options_.rows_dtype(), emit_, &errors);
    ctx_.counters.add(kEmit, now_ns() - t0, static_cast<std::int64_t>(remote.size()));
    for (std::size_t k = 0; k < remote.size(); ++k) {
      if (!errors[k]) continue;
      const Prepared& p = *remote[k].sample;
      const std::size_t m = std::min(errors[k]->medium, p.media.empty() ? 0 : p.media.size() - 1);
      if (p.media.empty()) {
        fail(remote_sample[k], *modalities()[0], 0, errors[k]->error);
        continue;
      }
      // Its index among the sample's media of its modality.
      std::size_t index = 0;
      for (std::size_t j = 0; j < m; ++j) index += &p.media[j]->modality() == &p.media[m]->modality();
      fail(remote_sample[k], p.media[m]->modality(), index, errors[k]->error);
    }
  }
  std::stable_sort(job->entries.begin(), job->entries.end(),
                   [](const MediaJob::Entry& a, const MediaJob::Entry& b) {
                     return a.medium->cost() > b.medium->cost();
                   });
  job->errors.resize(job->entries.size());
  if (!job->entries.empty()) {
    if (emit_ != nullptr) {
      int helpers = std::min<int>(static_cast<int>(job->entries.size()) - 1, emit_->num_threads());
      for (int h = 0; h < helpers; ++h) (void)emit_->submit([job] { job->work(); });
    }
    job->work();
    std::unique_lock lock(job->mu);
    job->cv.wait(lock, [&] { return job->done.load() == job->entries.size(); });
  }
  for (std::size_t k = 0; k < job->entries.size(); ++k) {
    if (!job->errors[k]) continue;
    const MediaJob::Entry& e = job->entries[k];
    fail(e.sample, e.medium->modality(), e.index, *job->errors[k]);
  }
  // Media narrower than the batch's rows tensor (audio of Qwen3-Omni) spread to its width.
  if (failed.empty()) spread_rows(ctx_.media, arena_->base(), layout, slots);
  for (auto& [s, b] : failed) broken->push_back(std::move(b));
}

Result<Batch> Engine::emit(std::vector<Prepared>& goods, std::uint64_t epoch,
                           std::stop_token stop, std::vector<BrokenMedium>* broken,
                           ReadyBatch& out) {
  batch::BatchShape shape;
  shape.batch_size = static_cast<std::int64_t>(goods.size());
  shape.position_rows = options_.sample_rows;
  if (options_.float_positions) shape.position_dtype = batch::DType::kFloat32;
  std::int64_t real = 0;
  for (const Prepared& p : goods) {
    const std::int64_t n = static_cast<std::int64_t>(p.tokens.input_ids.size());
    shape.length = std::max(shape.length, n);
    real += n;
  }
  if (options_.padding == Padding::kFixed && options_.max_length > 0) {
    shape.length = options_.max_length;
  }
  media_tensors(ctx_.media, options_.rows_dtype(), options_.pixel_dtype, media_of(goods),
                &shape.media_front, &shape.media_back);
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
  write_ids_and_meta(base, layout, goods, ctx_.media, options_.pixel_dtype);
  const std::int64_t t2 = now_ns();
  ctx_.counters.add(kAssemble, t2 - t1);
  if (ctx_.tracer != nullptr) ctx_.tracer->span("assemble", t1, t2);
  out.real_tokens = real;
  out.computed_tokens = shape.batch_size * shape.length;
  return batch;
}

Result<Batch> Engine::emit_pack(std::vector<Prepared>& goods, std::uint64_t epoch,
                                std::stop_token stop, std::vector<BrokenMedium>* broken,
                                ReadyBatch& out) {
  batch::PackShape shape;
  shape.format = options_.packing.format;
  shape.sample_rows = options_.sample_rows;
  shape.position_rows = options_.packing.position_rows;
  if (options_.float_positions) shape.position_dtype = batch::DType::kFloat32;
  shape.align = options_.pack_align();
  shape.sequences = static_cast<std::int64_t>(goods.size());
  std::int64_t real = 0;
  for (const Prepared& p : goods) {
    const std::int64_t n = static_cast<std::int64_t>(p.tokens.input_ids.size());
    shape.tokens += batch::packed_length(shape.format, shape.align, n);
    real += n;
  }
  media_tensors(ctx_.media, options_.rows_dtype(), options_.pixel_dtype, media_of(goods),
                &shape.media_front, &shape.media_back);
  STOKER_ASSIGN_OR_RETURN(
      Batch batch, start_batch(goods, batch::pack_layout_bytes(shape),
                               [&](batch::Block b) { return batch::make_pack_layout(shape, b); },
                               epoch, stop, broken));
  if (!broken->empty()) return batch;

  const std::int64_t t1 = now_ns();
  std::vector<batch::SampleRow> rows;
  for (const Prepared& p : goods) rows.push_back({p.tokens.input_ids, p.tokens.labels, p.positions});
  std::vector<std::uint64_t> ids;
  for (const Prepared& p : goods) ids.push_back(p.item.sample);
  batch::collate_pack(arena_->base(), batch.layout(), shape, rows, ids, options_.pad_id);
  write_meta_and_tables(arena_->base(), batch.layout(), goods, ctx_.media, options_.pixel_dtype);
  const std::int64_t t2 = now_ns();
  ctx_.counters.add(kAssemble, t2 - t1);
  if (ctx_.tracer != nullptr) ctx_.tracer->span("assemble", t1, t2);
  out.real_tokens = real;
  out.computed_tokens = out.unit ? out.unit->computed : shape.tokens;
  return batch;
}

}  // namespace stoker::pipeline
