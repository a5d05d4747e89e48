#include "stoker/pipeline/engine.h"

#include <algorithm>
#include <limits>
#include <map>

#include "stoker/base/clock.h"
#include "stoker/base/option_name.h"
#include "stoker/batch/collate.h"
#include "stoker/pipeline/store_fetcher.h"

namespace stoker::pipeline {

// ---- Schedule ----

Result<std::unique_ptr<Schedule>> Schedule::make(std::uint64_t num_samples,
                                                 const dataset::OrderConfig& order,
                                                 const dataset::RankInfo& rank,
                                                 std::int64_t epochs, const LoaderState& start) {
  if (num_samples == 0) return invalid_argument("the dataset has no records");
  std::unique_ptr<Schedule> s(new Schedule());
  s->n_ = num_samples;
  s->order_ = order;
  s->rank_ = rank.rank;
  s->world_ = rank.world_size;
  s->epochs_ = epochs;
  STOKER_RETURN_IF_ERROR(s->open_epoch(start.epoch, start.position));
  return s;
}

Status Schedule::open_epoch(std::uint64_t epoch, std::uint64_t start) {
  // Skip epochs with nothing left for this rank (a resume at the very end, a tiny dataset).
  for (;;) {
    if (epochs_ >= 0 && epoch >= static_cast<std::uint64_t>(epochs_)) {
      done_ = true;
      shard_.reset();
      return ok_status();
    }
    STOKER_ASSIGN_OR_RETURN(dataset::RankShard shard,
                            dataset::RankShard::make(n_, order_, epoch, start, rank_, world_));
    epoch_ = epoch;
    k_ = 0;
    if (shard.size() > 0) {
      shard_ = shard;
      return ok_status();
    }
    ++epoch;
    start = 0;
  }
}

std::optional<Item> Schedule::next() {
  if (done_) return std::nullopt;
  Item item;
  item.seq = seq_++;
  item.epoch = epoch_;
  item.k = k_;
  item.sample = shard_->sample(k_);
  item.last_of_epoch = k_ + 1 == shard_->size();
  if (item.last_of_epoch) {
    item.next_epoch = epoch_ + 1;
    item.next_position = 0;
    Status st = open_epoch(epoch_ + 1, 0);
    STOKER_CHECK(st.ok(), "schedule: a later epoch cannot fail once the first was valid");
  } else {
    item.next_epoch = epoch_;
    item.next_position = shard_->resume_position(k_ + 1);
    ++k_;
  }
  return item;
}

// ---- Engine ----

Engine::Engine(const Context& ctx, std::unique_ptr<ItemSource> source,
               std::shared_ptr<batch::Arena> arena, exec::ThreadPool* cpu, exec::ThreadPool* io,
               exec::ThreadPool* emit, const EngineOptions& options)
    : ctx_(ctx),
      source_(std::move(source)),
      arena_(std::move(arena)),
      cpu_(cpu),
      io_(io),
      emit_(emit),
      options_(options),
      failed_(options.errors_before) {}

Engine::~Engine() {
  {
    std::lock_guard lock(gate_->mu);
    gate_->engine = nullptr;  // reads still in flight on the store's I/O thread find no engine
  }
  if (options_.remote != nullptr) options_.remote->abandon(this);
}

double Engine::arena_wait_s() const { return arena_wait_ns_.load() * 1e-9; }
double Engine::sample_wait_s() const { return sample_wait_ns_.load() * 1e-9; }
double Engine::emit_s() const { return (emit_ns_.load() - arena_wait_ns_.load()) * 1e-9; }

void Engine::deliver(Prepared&& p) {
  {
    std::lock_guard lock(mu_);
    done_.emplace(p.item.seq, std::move(p));
    if (ctx_.tracer != nullptr) {
      ctx_.tracer->counter(ctx_.trace_ids.reorder, static_cast<std::int64_t>(done_.size()));
    }
  }
  ready_cv_.notify_all();
}

QueueDepths Engine::depths() const {
  std::lock_guard lock(mu_);
  return {static_cast<std::int64_t>(submitted_ - next_take_),
          static_cast<std::int64_t>(done_.size())};
}

void Engine::submit(const Item& item) {
  if (item.preset) {
    Prepared p;
    p.item = item;
    p.failure = item.preset;
    deliver(std::move(p));
    return;
  }
  if (options_.remote != nullptr) {
    submit_remote(item);
    return;
  }
  if (cpu_ != nullptr && io_ != nullptr && ctx_.fetcher->asynchronous()) {
    submit_async(item);
    return;
  }
  if (cpu_ == nullptr || io_ == nullptr) {
    deliver(prepare(ctx_, read_and_fetch(ctx_, item, {})));
    return;
  }
  // A refused submit only happens at shutdown; take() is then woken by its stop token.
  (void)io_->submit([this, item](std::stop_token stop) {
    auto fetched = std::make_unique<Fetched>(read_and_fetch(ctx_, item, stop));
    if (stop.stop_requested()) return;
    {
      std::lock_guard lock(fetched_mu_);
      fetched_.push(std::move(fetched));
    }
    // One CPU task per fetched sample; each takes the lowest-numbered one waiting.
    (void)cpu_->submit([this] {
      std::unique_ptr<Fetched> f;
      {
        std::lock_guard lock(fetched_mu_);
        if (fetched_.empty()) return;  // cannot happen: one task per push
        f = std::move(const_cast<std::unique_ptr<Fetched>&>(fetched_.top()));
        fetched_.pop();
      }
      deliver(prepare(ctx_, std::move(*f)));
    });
  });
}

// Remote media: the I/O pool thread reads the record and takes budget, then leaves; the reads
// complete on the store's I/O thread and the last one hands the sample to the CPU pool. So the
// requests in flight are bounded by the window and the byte budget, not by the pool's threads.
void Engine::submit_async(const Item& item) {
  (void)io_->submit([this, item, gate = gate_](std::stop_token stop) {
    read_and_fetch_async(ctx_, item, stop, [gate](Fetched&& fetched) {
      std::lock_guard lock(gate->mu);
      Engine* e = gate->engine;
      if (e == nullptr) return;
      {
        std::lock_guard heap_lock(e->fetched_mu_);
        e->fetched_.push(std::make_unique<Fetched>(std::move(fetched)));
      }
      (void)e->cpu_->submit([e] {  // as submit(): the lowest-numbered fetched sample first
        std::unique_ptr<Fetched> f;
        {
          std::lock_guard heap_lock(e->fetched_mu_);
          if (e->fetched_.empty()) return;
          f = std::move(const_cast<std::unique_ptr<Fetched>&>(e->fetched_.top()));
          e->fetched_.pop();
        }
        e->deliver(prepare(e->ctx_, std::move(*f)));
      });
    });
  });
}

// Scale-out: the sample is read, fetched and prepared by a remote worker; it comes back through
// the gate (the engine may be gone by then).
void Engine::submit_remote(const Item& item) {
  options_.remote->submit(this, item, [gate = gate_](Prepared&& p) {
    std::lock_guard lock(gate->mu);
    Engine* e = gate->engine;
    if (e == nullptr) return;
    // Positions of the model's rule (the worker ran the same model: the flags agree; a message
    // that says otherwise fails its sample rather than the collation).
    const std::size_t want = static_cast<std::size_t>(e->options_.sample_rows) * p.tokens.input_ids.size();
    if (!p.failure && p.positions.size() != want) {
      p.failure = sample_failure(e->ctx_, p.item, FailureStage::kRope,
                                 data_loss("cluster: " + std::to_string(p.positions.size()) +
                                           " positions for " + std::to_string(want)));
    }
    // Values the batch's position dtype holds exactly: whole numbers for int64 positions, float32
    // values for float ones (Qwen3-Omni's fractional TMRoPE); the wire carries doubles.
    const batch::DType dtype = e->options_.float_positions ? batch::DType::kFloat32 : batch::DType::kInt64;
    if (const std::int64_t bad = batch::first_unrepresentable_position(p.positions, dtype);
        !p.failure && bad >= 0) {
      p.failure = sample_failure(e->ctx_, p.item, FailureStage::kRope,
                                 data_loss("cluster: position " + std::to_string(bad) + " (" +
                                           std::to_string(p.positions[static_cast<std::size_t>(bad)]) +
                                           ") is no " + (e->options_.float_positions ? "float32" : "int64") +
                                           " position"));
    }
    e->deliver(std::move(p));
  });
}

void Engine::top_up(std::size_t need) {
  // Samples in flight = submitted but not yet taken (running, queued or waiting in the reorder
  // buffer); bounded by the window, which bounds the memory of prepared samples.
  const std::size_t limit = options_.on_demand ? std::min(need, options_.window) : options_.window;
  // The items of this round are taken first and handed to the records as a prefetch hint
  // (remote shards: their reads start now, several in flight, adjacent samples as one request),
  // then submitted. Scale-out workers read their own records: no hint there.
  std::vector<Item> items;
  while (!schedule_done_ && submitted_ - next_take_ + items.size() < limit) {
    // The source may have to wait for its plan: only when nothing is in flight (otherwise the
    // producer would sit on finished samples while the plan of a later window is measured).
    Item item;
    const ItemSource::Next r = source_->next(submitted_ == next_take_ && items.empty(), stop_, &item);
    if (r == ItemSource::Next::kNotReady) break;
    if (r == ItemSource::Next::kEnd) {
      std::lock_guard lock(mu_);
      schedule_done_ = true;
      break;
    }
    items.push_back(std::move(item));
  }
  if (items.empty()) return;
  if (options_.remote == nullptr && ctx_.records != nullptr) {
    std::vector<std::uint64_t> ids;
    ids.reserve(items.size());
    for (const Item& it : items)
      if (!it.preset) ids.push_back(it.sample);
    if (!ids.empty()) ctx_.records->prefetch(ids);
  }
  for (Item& item : items) {
    {
      std::lock_guard lock(mu_);
      ++submitted_;
      if (ctx_.tracer != nullptr) {
        ctx_.tracer->counter(ctx_.trace_ids.in_flight,
                             static_cast<std::int64_t>(submitted_ - next_take_));
      }
    }
    submit(item);
  }
}

bool Engine::nothing_after() const {
  if (carried_) return false;
  std::lock_guard lock(mu_);
  return schedule_done_ && next_take_ == submitted_;
}

std::optional<Prepared> Engine::take(std::stop_token stop) {
  std::unique_lock lock(mu_);
  if (next_take_ == submitted_ && schedule_done_) return std::nullopt;
  const std::int64_t t0 = now_ns();
  bool ok = ready_cv_.wait(lock, stop, [&] { return done_.count(next_take_) > 0; });
  sample_wait_ns_.fetch_add(now_ns() - t0, std::memory_order_relaxed);
  if (!ok) return std::nullopt;
  auto it = done_.find(next_take_);
  Prepared p = std::move(it->second);
  done_.erase(it);
  ++next_take_;
  if (ctx_.tracer != nullptr) {
    const std::int64_t ts = now_ns();
    ctx_.tracer->counter(ctx_.trace_ids.reorder, static_cast<std::int64_t>(done_.size()), ts);
    ctx_.tracer->counter(ctx_.trace_ids.in_flight,
                         static_cast<std::int64_t>(submitted_ - next_take_), ts);
  }
  return p;
}

std::optional<Error> Engine::count_failure(const SampleFailure& f) {
  if (failed_ != std::numeric_limits<std::uint64_t>::max()) ++failed_;  // saturates
  ++failed_here_;
  const ErrorPolicy& policy = options_.errors;
  const std::string last = "last: " + describe_failure(f);
  // Strict: the sample's own error, so a missing file stays NotFound (FileNotFoundError in
  // Python, README's table), not a generic DataLoss.
  if (policy.strict) {
    return Error(f.code, "strict mode: stopping at the first failed sample; " + last);
  }
  if (policy.max_errors >= 0 && failed_ > static_cast<std::uint64_t>(policy.max_errors)) {
    return data_loss("failure budget exceeded: " + std::to_string(failed_) +
                     " failed samples > " + option_name("max_errors", "--max-errors") + " " +
                     std::to_string(policy.max_errors) + "; " +
                     last);
  }
  const std::uint64_t failed_here = failed_here_;
  if (seen_ >= static_cast<std::uint64_t>(std::max<std::int64_t>(policy.min_seen, 1)) &&
      static_cast<double>(failed_here) > policy.max_error_rate * static_cast<double>(seen_)) {
    return data_loss("failure budget exceeded: " + std::to_string(failed_here) + " of " +
                     std::to_string(seen_) + " samples failed (rate above " +
                     std::to_string(policy.max_error_rate) + "); " + last);
  }
  return std::nullopt;
}

// Makes sure carried_ holds the next prepared sample (waiting for it); false at the end of the
// schedule (kDone), on a stop (kStop, out.fatal set) or when the source failed.
bool Engine::next_prepared(std::size_t need, ReadyBatch& out, std::stop_token stop,
                           Collect* result) {
  if (carried_) return true;
  stop_ = stop;
  top_up(need);
  std::optional<Prepared> p = take(stop);
  if (!p) {
    if (stop.stop_requested()) {
      out.fatal = cancelled("loader stopped");
      *result = Collect::kStop;
    } else if (std::optional<Error> e = source_->error()) {
      out.fatal = std::move(e);
      *result = Collect::kStop;
    } else {
      *result = Collect::kDone;  // the schedule is exhausted: flush what we have
    }
    return false;
  }
  carried_ = std::move(p);
  top_up(need > 0 ? need - 1 : 0);  // keep the pools busy while this batch is assembled
  return true;
}

// Takes samples in order until `goods` holds a batch (or the epoch / the data ends): failed
// samples are counted and kept for the report, an outage or a spent failure budget stops.
Engine::Collect Engine::collect(std::vector<Prepared>& goods, std::uint64_t& epoch,
                                ReadyBatch& out, std::vector<SeqFailure>& failures,
                                std::uint64_t& taken, bool& whole, std::stop_token stop) {
  // A step of the global plan is one batch on every rank, even when all of this rank's samples
  // of it failed: an empty batch, so that the ranks' batch counts agree (DDP would hang).
  const bool steps = source_->steps();
  for (;;) {
    const std::size_t need = options_.batch_size - goods.size();
    Collect result = Collect::kDone;
    if (!next_prepared(need, out, stop, &result)) {
      if (result == Collect::kDone && steps && taken > 0 && goods.empty()) whole = true;
      return result;
    }
    // Batches never span epochs: the last one of an epoch may be short.
    if ((!goods.empty() || (steps && taken > 0)) &&
        (carried_->item.epoch != epoch || carried_->item.group != group_)) {
      if (goods.empty()) whole = true;
      return Collect::kDone;
    }
    Prepared cur = std::move(*carried_);
    carried_.reset();
    ++taken;
    epoch = cur.item.epoch;
    group_ = cur.item.group;
    ++seen_;
    out.state_after = LoaderState{cur.item.next_epoch, cur.item.next_position, 0};
    if (cur.item.mix_after) out.state_after->mix = *cur.item.mix_after;
    if (cur.failure && is_outage(*cur.failure)) {
      // The store is down (retries spent), not the data broken: stop without consuming this
      // sample, so that a resume from the state delivers it once the store is back.
      out.state_after.reset();
      out.fatal = outage_error(*cur.failure, "storage unavailable; resume from the last saved state");
      return Collect::kStop;
    }
    if (cur.failure) {
      failures.push_back({cur.item.seq, *cur.failure});
      if (std::optional<Error> fatal = count_failure(*cur.failure)) {
        out.fatal = std::move(fatal);
        return Collect::kStop;
      }
      continue;
    }
    goods.push_back(std::move(cur));
    if (goods.size() == static_cast<std::size_t>(options_.batch_size)) return Collect::kDone;
  }
}

// Packing / token budgets: the items of one unit, in order. A failed sample is reported and
// left out (the plan is global: nothing replaces it); the measured failures the unit carries
// are reported with its first item.
Engine::Collect Engine::collect_unit(std::vector<Prepared>& goods, std::uint64_t& epoch,
                                     ReadyBatch& out, std::vector<SeqFailure>& failures,
                                     bool& whole, std::stop_token stop) {
  std::size_t left = 1;  // items of the unit not yet taken (known from its first)
  for (;;) {
    Collect result = Collect::kDone;
    if (!next_prepared(left, out, stop, &result)) return result;
    Prepared cur = std::move(*carried_);
    carried_.reset();
    if (!cur.item.unit) {
      // Storage went down while the plan was measured (or the run is stopping): stop without
      // consuming anything, so a resume measures that window again.
      const SampleFailure& f = *cur.failure;
      out.state_after.reset();
      out.fatal = f.code == ErrorCode::kCancelled
                      ? cancelled("loader stopped")
                      : outage_error(f, "storage unavailable while planning packs; resume from "
                                        "the last saved state");
      return Collect::kStop;
    }
    const Item& item = cur.item;
    if (item.unit_index == 0) {
      epoch = item.epoch;
      out.unit = item.unit;
      out.state_after = item.unit->after;
      seen_ += item.unit->measured;
      for (const SampleFailure& f : item.unit->failures) {
        failures.push_back({item.seq, f});
        if (std::optional<Error> fatal = count_failure(f)) {
          out.fatal = std::move(fatal);
          return Collect::kStop;
        }
      }
    }
    left = item.unit_size - item.unit_index - 1;
    if (cur.failure && is_outage(*cur.failure)) {
      out.state_after.reset();
      out.fatal = outage_error(*cur.failure, "storage unavailable; resume from the last saved state");
      return Collect::kStop;
    }
    if (!cur.failure &&
        (static_cast<std::int64_t>(cur.tokens.input_ids.size()) != item.planned_tokens ||
         cur.rows() != item.planned_rows)) {
      // The record or its media changed between measuring and reading it again.
      cur.failure = sample_failure(
          ctx_, item, FailureStage::kPlan,
          data_loss(std::to_string(cur.tokens.input_ids.size()) + " tokens and " +
                    std::to_string(cur.rows()) + " pixel rows, planned with " +
                    std::to_string(item.planned_tokens) + " and " +
                    std::to_string(item.planned_rows) + ": it changed since it was measured"));
    }
    if (cur.failure) {
      failures.push_back({item.seq, *cur.failure});
      if (std::optional<Error> fatal = count_failure(*cur.failure)) {
        out.fatal = std::move(fatal);
        return Collect::kStop;
      }
    } else {
      goods.push_back(std::move(cur));
    }
    if (left == 0) {
      whole = true;
      return Collect::kDone;
    }
  }
}

ReadyBatch Engine::produce(std::stop_token stop) {
  ReadyBatch out;
  std::vector<Prepared> goods;
  std::vector<SeqFailure> failures;
  std::uint64_t epoch = 0;
  // Failures reach the report in sample order, whichever step found them (a unit's measured
  // failures first, in window order: a stable sort).
  auto finish = [&]() -> ReadyBatch {
    std::stable_sort(failures.begin(), failures.end(),
                     [](const SeqFailure& a, const SeqFailure& b) { return a.seq < b.seq; });
    for (SeqFailure& f : failures) out.failures.push_back(std::move(f.failure));
    if (out.state_after) out.state_after->errors = failed_;
    return std::move(out);
  };
  const bool units = options_.packing.batching != Batching::kFixed;
  // Units, or a step of the plan: every item of it was taken (it may have no good sample).
  bool whole = false;
  std::uint64_t taken = 0;
  for (;;) {
    if (!whole) {
      const Collect c = units ? collect_unit(goods, epoch, out, failures, whole, stop)
                              : collect(goods, epoch, out, failures, taken, whole, stop);
      if (c == Collect::kStop) return finish();
    }
    if (goods.empty() && !whole) {
      std::uint64_t measured = 0;
      for (SampleFailure& f : source_->trailing_failures(&measured)) {
        seen_ += measured;
        measured = 0;
        failures.push_back({~std::uint64_t{0}, f});
        if (std::optional<Error> fatal = count_failure(f)) {
          out.fatal = std::move(fatal);
          return finish();
        }
      }
      out.end = true;
      out.fatal = end_of_data_check();
      return finish();
    }
    // The last batch: no block will follow it, so warming ahead of it would only add memory (a
    // 4-record run held a second, never used, batch-sized block).
    if (nothing_after()) arena_->stop_prefault();
    std::vector<BrokenMedium> broken;
    const std::int64_t t0 = now_ns();
    Result<Batch> batch = options_.packing.batching == Batching::kPack
                              ? emit_pack(goods, epoch, stop, &broken, out)
                              : emit(goods, epoch, stop, &broken, out);
    const std::int64_t t1 = now_ns();
    emit_ns_.fetch_add(t1 - t0, std::memory_order_relaxed);  // arena waits included
    if (ctx_.tracer != nullptr) {
      ctx_.tracer->span("batch", t0, t1, "step", static_cast<std::int64_t>(step_));
    }
    if (!batch.ok()) {
      // Nothing was delivered: the state stays where it was (the failures taken on the way are
      // still reported; a resume cuts the report back to the state's cursor and redoes them).
      out.state_after.reset();
      out.fatal = std::move(batch).error();
      return finish();
    }
    if (broken.empty()) {
      ++step_;
      out.batch = std::move(batch).value();
      return finish();
    }
    // A medium that passed its header check failed to decode: its sample fails, the batch block
    // goes back, and the batch is assembled again through the same path — refilled from the
    // next samples (fixed batches) or without the sample (a unit of the global plan).
    for (auto it = broken.rbegin(); it != broken.rend(); ++it) {
      const Prepared& p = goods[it->sample];
      SampleFailure f = decode_failure(ctx_, p.item, *it->modality, it->index, it->error);
      failures.push_back({p.item.seq, f});
      goods.erase(goods.begin() + static_cast<std::ptrdiff_t>(it->sample));
      if (std::optional<Error> fatal = count_failure(f)) {
        out.fatal = std::move(fatal);
        return finish();
      }
    }
  }
}

// The rate check waits for min_seen samples so that early noise does not stop a run; at the end
// the rate is exact, whatever the count: a run whose samples mostly failed (a manifest whose
// every image is refused, say) must not end as a success.
std::optional<Error> Engine::end_of_data_check() const {
  const std::uint64_t failed_here = failed_here_;
  const ErrorPolicy& policy = options_.errors;
  if (seen_ == 0 || failed_here == 0 ||
      static_cast<double>(failed_here) <= policy.max_error_rate * static_cast<double>(seen_)) {
    return std::nullopt;
  }
  return data_loss("failure budget exceeded at the end of the data: " +
                   std::to_string(failed_here) + " of " + std::to_string(seen_) +
                   " samples failed (rate above " + option_name("max_error_rate", "--max-error-rate") + " " +
                   std::to_string(policy.max_error_rate) + "; the error report lists them)");
}

}  // namespace stoker::pipeline
