#include "stoker/pipeline/pack_schedule.h"

#include <algorithm>
#include <atomic>

namespace stoker::pipeline {
namespace {

// Windows measured beyond the one the consumer needs: enough to keep the I/O pool busy while a
// window is consumed, without holding many windows' lengths.
constexpr std::uint64_t kLookahead = 1;

}  // namespace

Measured measure_sample(const Context& ctx, std::uint64_t epoch, std::uint64_t sample,
                        std::stop_token stop) {
  Item item;
  item.epoch = epoch;
  item.sample = sample;
  Prepared p = prepare(ctx, read_and_fetch(ctx, item, stop));
  Measured m;
  m.sample = sample;
  if (p.failure) {
    m.failure = std::move(p.failure);
  } else {
    m.tokens = static_cast<std::int64_t>(p.tokens.input_ids.size());
    m.rows = p.rows();
  }
  return m;
}

struct PackSchedule::Window {
  std::uint64_t gseq = 0;   // global window number (over epochs) from the start of this run
  std::uint64_t epoch = 0;
  std::uint64_t start = 0;  // global position of its first sample
  std::uint64_t skip = 0;   // units consumed before this run began (the resume state's packs)
  std::vector<Measured> m;
  std::size_t submitted = 0, done = 0;  // measure tasks (under Shared::mu)
  // Consumer side, once planned:
  std::vector<batch::Unit> units;
  std::vector<SampleFailure> failures;
  std::optional<SampleFailure> outage;
  std::uint64_t first = 0;  // stream index of units[skip]
  bool attached = false;    // its failures went out with a step (or were reported before)
  std::uint64_t stream_end() const { return first + units.size() - skip; }
};

// The windows being measured, and the generator of the next ones (global order: this run's
// first epoch from the start window, then whole epochs). Measure tasks hold it.
struct PackSchedule::Shared {
  const Context* ctx = nullptr;
  exec::ThreadPool* io = nullptr;
  std::mutex mu;
  std::condition_variable_any cv;
  std::deque<std::shared_ptr<Window>> windows;  // allocated, not yet taken by the consumer
  std::uint64_t wanted = 0;                     // the consumer waits for windows < wanted
  int in_flight = 0, max_in_flight = 1;
  // Generator.
  std::uint64_t n = 0, size = 1, next_gseq = 0, gen_epoch = 0, gen_start = 0, gen_skip = 0;
  std::int64_t epochs = 1;
  dataset::OrderConfig order;
  std::function<std::uint64_t(std::uint64_t, std::uint64_t)> order_at;  // PackPlanOptions::order_at
  bool gen_done = false;

  void allocate() {  // under mu
    if (epochs >= 0 && gen_epoch >= static_cast<std::uint64_t>(epochs)) {
      gen_done = true;
      return;
    }
    auto w = std::make_shared<Window>();
    w->gseq = next_gseq++;
    w->epoch = gen_epoch;
    w->start = gen_start;
    w->skip = gen_skip;
    dataset::EpochPermutation perm(n, order.seed, gen_epoch, order.shuffle);
    const std::uint64_t end = std::min(n, gen_start + size);
    for (std::uint64_t p = gen_start; p < end; ++p) {
      Measured m;
      m.sample = order_at ? order_at(gen_epoch, p) : perm.at(p);
      w->m.push_back(std::move(m));
    }
    windows.push_back(std::move(w));
    gen_skip = 0;
    gen_start = end;
    if (gen_start >= n) {
      ++gen_epoch;
      gen_start = 0;
    }
  }

  // Allocates the windows wanted (+ lookahead) and keeps up to max_in_flight samples measuring.
  void pump(const std::shared_ptr<Shared>& self) {  // under mu
    while (!gen_done && next_gseq < wanted + kLookahead) allocate();
    if (io == nullptr) return;
    for (const std::shared_ptr<Window>& w : windows) {
      while (w->submitted < w->m.size() && in_flight < max_in_flight) {
        const std::size_t i = w->submitted++;
        ++in_flight;
        Status st = io->submit([self, w, i](std::stop_token stop) {
          Measured r = measure_sample(*self->ctx, w->epoch, w->m[i].sample, stop);
          {
            std::lock_guard lock(self->mu);
            w->m[i] = std::move(r);
            ++w->done;
            --self->in_flight;
            self->pump(self);
          }
          self->cv.notify_all();
        });
        if (!st.ok()) return;  // shutting down: the consumer is being stopped too
      }
      if (in_flight >= max_in_flight) return;
    }
  }
};

Result<std::unique_ptr<PackSchedule>> PackSchedule::make(
    const Context& ctx, std::uint64_t n, const dataset::OrderConfig& order,
    const dataset::RankInfo& rank, std::int64_t epochs, const LoaderState& start,
    const PackPlanOptions& options, exec::ThreadPool* io) {
  if (n == 0) return invalid_argument("the dataset has no records");
  if (options.window == 0 || options.capacity < 1) return invalid_argument("pack plan: bad options");
  if (start.position % options.window != 0 && start.position < n) {
    return invalid_argument("resume state: position " + std::to_string(start.position) +
                            " is not the start of a packing window of " +
                            std::to_string(options.window) + " samples");
  }
  std::unique_ptr<PackSchedule> s(new PackSchedule());
  s->ctx_ = &ctx;
  s->options_ = options;
  s->n_ = n;
  s->order_ = order;
  s->rank_ = rank.rank;
  s->world_ = rank.world_size;
  s->epochs_ = epochs;
  s->io_ = io;
  auto sh = std::make_shared<Shared>();
  sh->ctx = &ctx;
  sh->io = io;
  sh->max_in_flight = std::max(1, options.measure_in_flight);
  sh->n = n;
  sh->size = options.window;
  sh->epochs = epochs;
  sh->order = order;
  sh->order_at = options.order_at;
  sh->gen_epoch = start.epoch;
  sh->gen_start = start.position;
  sh->gen_skip = start.packs;
  if (sh->gen_start >= n) {  // a state at the very end of an epoch
    ++sh->gen_epoch;
    sh->gen_start = sh->gen_skip = 0;
  }
  s->epoch_ = sh->gen_epoch;
  s->stream_windows_ = (n - sh->gen_start + options.window - 1) / options.window;
  s->stream_done_ = epochs >= 0 && s->epoch_ >= static_cast<std::uint64_t>(epochs);
  s->shared_ = std::move(sh);
  return s;
}

PackSchedule::~PackSchedule() = default;

// Takes window `gseq` once measured (blocking or not), plans it, appends it to the stream.
PackSchedule::Window* PackSchedule::window(std::uint64_t gseq, bool block, std::stop_token stop,
                                           Next* status, Item* out) {
  Shared& s = *shared_;
  std::shared_ptr<Window> w;
  {
    std::unique_lock lock(s.mu);
    s.wanted = std::max(s.wanted, gseq + 1);
    s.pump(shared_);
    STOKER_CHECK(!s.windows.empty() && s.windows.front()->gseq == gseq,
                 "pack schedule: windows are taken in order");
    w = s.windows.front();
    if (s.io == nullptr && w->done < w->m.size()) {
      if (!block) {
        *status = Next::kNotReady;
        return nullptr;
      }
      lock.unlock();  // serial mode: nothing else touches the window
      for (Measured& m : w->m) m = measure_sample(*ctx_, w->epoch, m.sample, stop);
      lock.lock();
      w->submitted = w->done = w->m.size();
    } else if (w->done < w->m.size()) {
      if (!block || !s.cv.wait(lock, stop, [&] { return w->done == w->m.size(); })) {
        *status = Next::kNotReady;
        return nullptr;
      }
    }
    s.windows.pop_front();
    s.pump(shared_);  // the next window may start measuring
  }
  plan(*w);
  if (w->outage) {
    // Storage is down (not the data broken): deliver the failure as an item, so the engine
    // stops on it in order and the state stays before this window.
    *out = Item();
    out->seq = seq_++;
    out->epoch = w->epoch;
    out->sample = w->outage->sample;
    out->preset = w->outage;
    stalled_ = true;  // nothing after it: the engine stops on this item
    *status = Next::kItem;
    return nullptr;
  }
  w->first = stream_.empty() ? 0 : stream_.back()->stream_end();
  if (w->skip > w->units.size()) {
    error_ = invalid_argument("resume state: packs=" + std::to_string(w->skip) + " but window at " +
                              "position " + std::to_string(w->start) + " has " +
                              std::to_string(w->units.size()) +
                              " units (the data or the packing options changed)");
    *status = Next::kEnd;
    return nullptr;
  }
  w->attached = w->skip > 0;  // its failures were reported with its first unit, before
  stream_.push_back(w);
  ++planned_windows_;
  return w.get();
}

void PackSchedule::plan(Window& w) {
  std::vector<batch::PlanItem> items;
  for (std::size_t i = 0; i < w.m.size(); ++i) {
    const Measured& m = w.m[i];
    if (m.failure) {
      if (is_outage(*m.failure) || m.failure->code == ErrorCode::kCancelled) {
        if (!w.outage) w.outage = m.failure;
      } else {
        w.failures.push_back(*m.failure);
      }
      continue;
    }
    const std::int64_t len = batch::packed_length(options_.format, options_.align, m.tokens);
    if (len > options_.capacity) {  // only alignment can push a sample over (max_length did not)
      w.failures.push_back(measure_failure(m, len));
      continue;
    }
    items.push_back({static_cast<std::uint32_t>(i), len, m.rows});
  }
  if (w.outage) return;
  const bool even = (w.start / options_.window) % 2 == 0;
  w.units = batch::plan_units(items, {.kind = options_.kind,
                                      .capacity = options_.capacity,
                                      .heaviest_first = even});
}

SampleFailure PackSchedule::measure_failure(const Measured& m, std::int64_t aligned) const {
  const dataset::RecordOrigin at = ctx_->records->origin(m.sample);
  return SampleFailure{m.sample, std::string(at.name), at.line, FailureStage::kTokenize,
                       ErrorCode::kResourceExhausted,
                       std::to_string(m.tokens) + " tokens, " + std::to_string(aligned) +
                           " once aligned to a multiple of " + std::to_string(options_.align) +
                           ": over max_tokens " + std::to_string(options_.capacity)};
}

const PackSchedule::Window& PackSchedule::window_of(std::uint64_t i) const {
  for (const std::shared_ptr<Window>& w : stream_) {
    if (i >= w->first && i < w->stream_end()) return *w;
  }
  STOKER_CHECK(false, "pack schedule: a stream index outside the retained windows");
  return *stream_.front();
}

const batch::Unit& PackSchedule::unit_at(std::uint64_t i) const {
  const Window& w = window_of(i);
  return w.units[i - w.first + w.skip];
}

// The job's state once stream units [0, consumed) are consumed (and more follow): inside the
// window of the last consumed unit, or the next window once that unit was its window's last —
// never past an empty window, whose failures are reported with the next step.
LoaderState PackSchedule::state_after(std::uint64_t consumed) const {
  const Window& w = window_of(consumed - 1);
  const std::uint64_t c = consumed - w.first + w.skip;
  LoaderState s;
  s.epoch = epoch_;
  s.plan = options_.plan_id;
  if (c == w.units.size()) {
    s.position = w.start + options_.window;
    s.packs = 0;
  } else {
    s.position = w.start;
    s.packs = c;
  }
  return s;
}

bool PackSchedule::next_stream() {
  for (const std::shared_ptr<Window>& w : stream_) {
    if (w->attached) continue;
    carried_failures_.insert(carried_failures_.end(), w->failures.begin(), w->failures.end());
    carried_measured_ += w->m.size();
    w->attached = true;
  }
  stream_.clear();
  first_gseq_ += stream_windows_;
  planned_windows_ = 0;
  step_ = 0;
  ++epoch_;
  stream_windows_ = (n_ + options_.window - 1) / options_.window;
  stream_done_ = epochs_ >= 0 && epoch_ >= static_cast<std::uint64_t>(epochs_);
  return !stream_done_;
}

// Stream index of the unit at step position g: itself, or for the tail of the last step the
// units before it, going back (as DistributedSampler pads with repeats).
std::uint64_t PackSchedule::resolve(std::uint64_t g, std::uint64_t total) {
  return g < total ? g : total - 1 - (g - total) % total;
}

StepLoad PackSchedule::step_load(std::uint64_t begin, std::uint64_t total) const {
  StepLoad l;
  double sum_tokens = 0, sum_patches = 0;
  for (std::uint64_t i = begin; i < begin + world_; ++i) {
    const batch::Unit& u = unit_at(resolve(i, total));
    l.max_tokens = std::max(l.max_tokens, u.tokens);
    l.max_patches = std::max(l.max_patches, u.patches);
    sum_tokens += static_cast<double>(u.tokens);
    sum_patches += static_cast<double>(u.patches);
  }
  l.mean_tokens = sum_tokens / world_;
  l.mean_patches = sum_patches / world_;
  return l;
}

// Failures of the windows planned before the first unit after this step (all of them at the end
// of the epoch), in window order, plus those carried from an epoch that had no unit left.
void PackSchedule::attach_failures(UnitInfo& info, std::uint64_t end, bool last) {
  info.failures = std::move(carried_failures_);
  info.measured = carried_measured_;
  carried_failures_.clear();
  carried_measured_ = 0;
  for (const std::shared_ptr<Window>& w : stream_) {
    if (w->attached) continue;
    if (!last && w->first >= end) break;
    info.failures.insert(info.failures.end(), w->failures.begin(), w->failures.end());
    info.measured += w->m.size();
    w->attached = true;
  }
}

PackSchedule::Next PackSchedule::start_step(bool block, std::stop_token stop, Item* out) {
  for (;;) {
    if (stream_done_ && !next_stream()) return Next::kEnd;
    const std::uint64_t begin = step_ * world_, end = begin + world_;
    // Plan until a unit follows this step (so it is not the last) or the stream is planned.
    while ((stream_.empty() || stream_.back()->stream_end() <= end) &&
           planned_windows_ < stream_windows_) {
      Next st = Next::kEnd;
      if (window(first_gseq_ + planned_windows_, block, stop, &st, out) == nullptr) return st;
    }
    const std::uint64_t total = stream_.empty() ? 0 : stream_.back()->stream_end();
    const bool complete = planned_windows_ == stream_windows_;
    if (total <= begin) {  // nothing left in this epoch
      stream_done_ = true;
      continue;
    }
    const bool last = complete && total <= end;
    auto info = std::make_shared<UnitInfo>();
    info->epoch = epoch_;
    const std::uint64_t g = begin + rank_;
    const batch::Unit& mine = unit_at(resolve(g, total));
    info->repeat = g >= total;
    info->tokens = mine.tokens;
    info->patches = mine.patches;
    info->computed = mine.computed;
    info->step = step_load(begin, total);
    info->after = last ? LoaderState{.epoch = epoch_ + 1, .plan = options_.plan_id}
                       : state_after(end);
    attach_failures(*info, end, last);
    // Keep what later steps may still need: their units and the world - 1 before them (tail
    // repeats reach back that far).
    const Window& holder = window_of(resolve(g, total));
    for (const std::shared_ptr<Window>& w : stream_) {
      if (w.get() == &holder) cur_window_ = w;  // keeps the members' measurements alive
    }
    cur_members_ = mine.members;
    cur_next_ = 0;
    cur_info_ = std::move(info);
    while (!stream_.empty() && stream_.front()->attached &&
           stream_.front()->stream_end() + world_ <= end) {
      stream_.pop_front();
    }
    ++step_;
    if (last) stream_done_ = true;
    return Next::kItem;
  }
}

PackSchedule::Next PackSchedule::emit_member(Item* out) {
  const std::uint32_t i = cur_members_[cur_next_];
  const Measured& m = cur_window_->m[i];
  *out = Item();
  out->seq = seq_++;
  out->epoch = cur_info_->epoch;
  out->sample = m.sample;
  out->unit = cur_info_;
  out->unit_index = static_cast<std::uint32_t>(cur_next_);
  out->unit_size = static_cast<std::uint32_t>(cur_members_.size());
  out->planned_tokens = m.tokens;
  out->planned_rows = m.rows;
  if (++cur_next_ == cur_members_.size()) {
    cur_info_.reset();
    cur_window_.reset();
    cur_members_.clear();
  }
  return Next::kItem;
}

PackSchedule::Next PackSchedule::next(bool block, std::stop_token stop, Item* out) {
  if (error_ || stalled_) return Next::kEnd;
  if (!cur_info_) {
    out->preset.reset();
    Next st = start_step(block, stop, out);
    if (st != Next::kItem || !cur_info_) return st;  // end, not ready, or an outage item
  }
  return emit_member(out);
}

std::vector<SampleFailure> PackSchedule::trailing_failures(std::uint64_t* measured) {
  std::vector<SampleFailure> out = std::move(carried_failures_);
  *measured = carried_measured_;
  carried_failures_.clear();
  carried_measured_ = 0;
  for (const std::shared_ptr<Window>& w : stream_) {
    if (w->attached) continue;
    out.insert(out.end(), w->failures.begin(), w->failures.end());
    *measured += w->m.size();
    w->attached = true;
  }
  return out;
}

}  // namespace stoker::pipeline
