#include "stoker/pipeline/plan_schedule.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <limits>

#include "stoker/pipeline/context.h"

namespace stoker::pipeline {

std::string encode_mix(const dataset::PlanState& s) {
  char spec[17];
  std::snprintf(spec, sizeof spec, "%016llx", static_cast<unsigned long long>(s.spec));
  std::string out = std::string(spec) + "." + (s.mode == dataset::PlanMode::kWeighted ? "w" : "e") + "." +
                    std::to_string(s.global_batch) + ".";
  for (std::size_t i = 0; i < s.cursors.size(); ++i) out += (i ? "_" : "") + std::to_string(s.cursors[i]);
  return out;
}

Result<dataset::PlanState> decode_mix(std::string_view mix, std::uint64_t position, std::uint64_t seed) {
  auto bad = [&](const std::string& why) {
    return invalid_argument("loader state: field 'mix' " + why + " (expected SPEC.MODE.G.C0_C1_...)");
  };
  dataset::PlanState s;
  s.position = position;
  s.seed = seed;
  std::string_view parts[4];
  for (int i = 0; i < 4; ++i) {
    const std::size_t dot = i < 3 ? mix.find('.') : mix.npos;
    if (i < 3 && dot == mix.npos) return bad("has fewer than 4 parts");
    parts[i] = mix.substr(0, dot);
    mix.remove_prefix(dot == mix.npos ? mix.size() : dot + 1);
  }
  auto number = [](std::string_view t, int base, std::uint64_t* v) {
    auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), *v, base);
    return !t.empty() && ec == std::errc() && p == t.data() + t.size();
  };
  if (parts[0].size() != 16 || !number(parts[0], 16, &s.spec)) return bad("has a bad spec hash");
  if (parts[1] != "e" && parts[1] != "w") return bad("has a bad mode");
  s.mode = parts[1] == "w" ? dataset::PlanMode::kWeighted : dataset::PlanMode::kEpochized;
  if (!number(parts[2], 10, &s.global_batch) || s.global_batch == 0) return bad("has a bad global batch");
  std::string_view c = parts[3];
  while (!c.empty()) {
    const std::size_t u = c.find('_');
    std::uint64_t v = 0;
    if (!number(c.substr(0, u), 10, &v)) return bad("has a bad cursor");
    s.cursors.push_back(v);
    c.remove_prefix(u == c.npos ? c.size() : u + 1);
  }
  if (s.cursors.empty()) return bad("has no cursors");
  return s;
}

Result<std::unique_ptr<PlanSchedule>> PlanSchedule::make(std::shared_ptr<const dataset::Plan> plan,
                                                         std::vector<std::uint64_t> first_id,
                                                         const dataset::RankInfo& rank, std::int64_t epochs,
                                                         const LoaderState& start, bool allow_spec_change,
                                                         std::vector<std::string>* warnings) {
  std::optional<dataset::PlanCursor> cursor;
  if (!start.mix.empty()) {
    STOKER_ASSIGN_OR_RETURN(dataset::PlanState ps, decode_mix(start.mix, start.position, plan->config().seed));
    if (ps.position % plan->config().global_batch != 0 || ps.global_batch != plan->config().global_batch) {
      return invalid_argument("resume: the state was saved with a global batch of " + std::to_string(ps.global_batch) +
                              " (position " + std::to_string(ps.position) + "), this run's is " +
                              std::to_string(plan->config().global_batch) +
                              " (batch size x world size): an exact resume needs the same global batch");
    }
    STOKER_ASSIGN_OR_RETURN(dataset::PlanCursor c, dataset::PlanCursor::resume(*plan, ps, rank.rank, rank.world_size,
                                                                              allow_spec_change, warnings));
    cursor.emplace(std::move(c));
  } else {
    if (start.position != 0 || start.epoch != 0) {
      return invalid_argument("resume: the state (epoch " + std::to_string(start.epoch) + " position " +
                              std::to_string(start.position) +
                              ") was not written by a mixture run (no mix= field): resume it with its own data");
    }
    STOKER_ASSIGN_OR_RETURN(dataset::PlanCursor c, dataset::PlanCursor::start(*plan, rank.rank, rank.world_size));
    cursor.emplace(std::move(c));
  }
  std::unique_ptr<PlanSchedule> s(new PlanSchedule(std::move(plan), std::move(*cursor)));
  s->first_id_ = std::move(first_id);
  s->world_ = static_cast<std::uint64_t>(rank.world_size);
  s->end_step_ = epochs < 0 ? std::numeric_limits<std::uint64_t>::max()
                            : s->plan_->steps_for_epochs(static_cast<std::uint64_t>(epochs));
  s->step_ = s->cursor_.step();
  s->epoch_ = s->epoch_of_step(s->step_);
  s->next_ = 0;
  return s;
}

std::uint64_t PlanSchedule::epoch_of_step(std::uint64_t t) const {
  const std::uint64_t T = plan_->epoch_length();
  return T == 0 ? 0 : t * plan_->config().global_batch / T;
}

std::uint32_t PlanSchedule::source_of(std::uint64_t sample) const {
  return static_cast<std::uint32_t>(std::upper_bound(first_id_.begin(), first_id_.end(), sample) - first_id_.begin()) - 1;
}

ItemSource::Next PlanSchedule::next(bool, std::stop_token, Item* out) {
  if (next_ >= items_.size()) {
    if (step_ >= end_step_) return Next::kEnd;
    before_ = std::make_shared<const std::string>(encode_mix(cursor_.state()));
    items_ = cursor_.next_step();
    after_ = std::make_shared<const std::string>(encode_mix(cursor_.state()));
    next_ = 0;
    const std::uint64_t e = epoch_of_step(step_);
    if (e != epoch_) k_ = 0;
    epoch_ = e;
    after_epoch_ = epoch_of_step(step_ + 1);
    ++step_;
    if (items_.empty()) return Next::kEnd;  // unreachable: G/W >= 1
  }
  const dataset::PlanItem& p = items_[next_];
  const bool last = next_ + 1 == items_.size();
  Item item;
  item.seq = seq_++;
  item.epoch = epoch_;
  item.k = k_++;
  item.sample = first_id_[p.source] + p.sample;
  item.group = step_ - 1;
  const std::uint64_t G = plan_->config().global_batch;
  item.last_of_epoch = last && (after_epoch_ != epoch_ || step_ >= end_step_);
  if (last) {
    item.next_epoch = after_epoch_;
    item.next_position = step_ * G;
    item.mix_after = after_;
  } else {
    item.next_epoch = epoch_;
    item.next_position = (step_ - 1) * G;
    item.mix_after = before_;
  }
  ++next_;
  *out = std::move(item);
  return Next::kItem;
}

}  // namespace stoker::pipeline
