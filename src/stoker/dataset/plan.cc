#include "stoker/dataset/plan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "stoker/base/mix.h"

namespace stoker::dataset {
namespace {

// Streams of the counter-based RNG: one tag per use, so no two draws share a key.
enum Tag : std::uint64_t { kBlocks = 1, kWindow, kRotate, kPartRotate, kPartBlocks, kMix, kCycle };

std::uint64_t hash(std::uint64_t seed, std::uint64_t tag, std::uint64_t a = 0, std::uint64_t b = 0,
                   std::uint64_t c = 0) {
  std::uint64_t h = mix64(seed ^ 0x243f6a8885a308d3ULL);
  for (std::uint64_t v : {tag, a, b, c}) h = mix64(h + 0x9e3779b97f4a7c15ULL + v);
  return h;
}

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return a / b + (a % b != 0); }

std::uint64_t double_bits(double d) {
  std::uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
}

}  // namespace

Status PlanConfig::validate() const {
  if (sources.empty()) return invalid_argument("plan: no sources");
  if (sources.size() > (1u << 16)) return invalid_argument("plan: more than 65536 sources");
  if (global_batch == 0) return invalid_argument("plan: global batch must be >= 1");
  if (block == 0 || window_blocks == 0) return invalid_argument("plan: block and window must be >= 1");
  double weights = 0;
  for (std::size_t s = 0; s < sources.size(); ++s) {
    const PlanSource& src = sources[s];
    const double share = mode == PlanMode::kWeighted ? src.weight : src.repetitions;
    if (!std::isfinite(share) || share < 0)
      return invalid_argument("plan: source " + std::to_string(s) + ": share must be a finite number >= 0");
    if (mode == PlanMode::kWeighted) {
      if (share > 0 && src.samples == 0) {
        char w[32];
        std::snprintf(w, sizeof w, "%g", share);
        return invalid_argument("plan: source " + std::to_string(s) + " has weight " + w + " but no samples");
      }
      weights += share;
    } else if (share * static_cast<double>(src.samples) >= 9.0e18) {
      return invalid_argument("plan: source " + std::to_string(s) + ": repetitions × samples beyond 2^63");
    }
  }
  if (mode == PlanMode::kWeighted && !(weights > 0)) return invalid_argument("plan: the weights sum to 0");
  return ok_status();
}

Result<Plan> Plan::create(PlanConfig config) {
  STOKER_RETURN_IF_ERROR(config.validate());
  Plan p;
  p.c_ = std::move(config);
  const std::size_t S = p.c_.sources.size();
  std::uint64_t spec = hash(p.c_.mixture_hash, 0x53504543, static_cast<std::uint64_t>(p.c_.mode), p.c_.block, p.c_.window_blocks);
  spec = mix64(spec ^ p.c_.seed);
  for (const PlanSource& s : p.c_.sources)
    spec = hash(spec, s.samples, double_bits(p.c_.mode == PlanMode::kWeighted ? s.weight : s.repetitions));
  p.spec_ = spec;
  if (p.c_.mode == PlanMode::kEpochized) {
    p.block_base_.push_back(0);
    for (const PlanSource& s : p.c_.sources) {
      // floor(r·N) exactly for the common cases: integral r multiplies exactly in integers.
      const double r = s.repetitions;
      const std::uint64_t n = std::floor(r) == r ? s.samples * static_cast<std::uint64_t>(r)
                                                 : static_cast<std::uint64_t>(std::floor(r * static_cast<double>(s.samples)));
      p.n_.push_back(n);
      p.total_ += n;
      p.block_base_.push_back(p.block_base_.back() + ceil_div(n, p.c_.block));
    }
    p.blocks_ = p.block_base_.back();
    if (p.total_ == 0) return invalid_argument("plan: the mixture plans no samples per epoch (every floor(r·N) is 0)");
  } else {
    double sum = 0;
    for (const PlanSource& s : p.c_.sources) sum += s.weight;
    double acc = 0;
    for (std::size_t i = 0; i < S; ++i) {
      acc += p.c_.sources[i].weight / sum;
      p.cdf_.push_back(acc);
    }
    for (std::size_t i = S; i-- > 0;) {  // the last source with a weight ends at exactly 1
      if (p.c_.sources[i].weight > 0) {
        for (std::size_t j = i; j < S; ++j) p.cdf_[j] = 1.0;
        break;
      }
    }
    for (const PlanSource& s : p.c_.sources) p.total_ += s.samples;
  }
  return p;
}

std::uint64_t Plan::steps_for_epochs(std::uint64_t epochs) const {
  return ceil_div(epochs * total_, c_.global_batch);
}

// --- epochized ---

Plan::Layout Plan::layout(std::uint64_t epoch) const {
  Layout l;
  l.epoch = epoch;
  l.blocks = EpochPermutation(blocks_, hash(c_.seed, kBlocks), epoch);
  struct Hole {
    std::uint64_t slot, len;
  };
  std::vector<Hole> holes;
  const std::uint64_t L = c_.block;
  for (std::size_t s = 0; s < n_.size(); ++s) {
    const std::uint64_t rem = n_[s] % L;
    if (rem == 0) continue;  // no short block (or no block at all)
    const std::uint64_t q = l.blocks.position_of(block_base_[s + 1] - 1);
    holes.push_back({q * L + rem, L - rem});
  }
  std::sort(holes.begin(), holes.end(), [](const Hole& a, const Hole& b) { return a.slot < b.slot; });
  std::uint64_t before = 0;
  for (const Hole& h : holes) {
    l.hole_slot.push_back(h.slot);
    l.hole_len.push_back(h.len);
    l.hole_real.push_back(h.slot - before);  // real positions before the hole
    before += h.len;
  }
  return l;
}

std::uint64_t Plan::slot_of(const Layout& l, std::uint64_t t) const {
  // holes whose real start is <= t lie before t's slot
  std::uint64_t u = t;
  const auto it = std::upper_bound(l.hole_real.begin(), l.hole_real.end(), t);
  for (auto k = l.hole_real.begin(); k != it; ++k) u += l.hole_len[static_cast<std::size_t>(k - l.hole_real.begin())];
  return u;
}

std::uint64_t Plan::window_start(const Layout& l, std::uint64_t w) const {
  const std::uint64_t slot = w * c_.window_blocks * c_.block;
  std::uint64_t holes = 0;
  for (std::size_t k = 0; k < l.hole_slot.size() && l.hole_slot[k] < slot; ++k) holes += l.hole_len[k];
  return std::min(slot - holes, total_);
}

std::pair<std::uint32_t, std::uint64_t> Plan::draw_at(const Layout& l, std::uint64_t t) const {
  const std::uint64_t L = c_.block;
  const std::uint64_t WL = static_cast<std::uint64_t>(c_.window_blocks) * L;
  const std::uint64_t w = slot_of(l, t) / WL;
  const std::uint64_t begin = window_start(l, w);
  const std::uint64_t end = window_start(l, w + 1);
  const EpochPermutation within(end - begin, hash(c_.seed, kWindow, l.epoch), w);
  const std::uint64_t u = slot_of(l, begin + within.at(t - begin));
  const std::uint64_t g = l.blocks.at(u / L);
  const auto src = std::upper_bound(block_base_.begin(), block_base_.end(), g) - block_base_.begin() - 1;
  return {static_cast<std::uint32_t>(src), (g - block_base_[static_cast<std::size_t>(src)]) * L + u % L};
}

std::uint64_t Plan::draw_sample(std::uint32_t s, std::uint64_t e, std::uint64_t d) const {
  const std::uint64_t N = c_.sources[s].samples;
  const std::uint64_t L = c_.block;
  const std::uint64_t full = n_[s] / N;  // whole passes
  if (d < full * N) {
    const std::uint64_t pass = d / N;
    return (d % N + hash(c_.seed, kRotate, s, e, pass) % N) % N;
  }
  // The partial pass: m samples as whole blocks of a rotated order (the hash picks which), the
  // last one cut short; the rotation moves block boundaries every epoch.
  const std::uint64_t j = d - full * N;
  const std::uint64_t m = n_[s] % N;
  const std::uint64_t rot = hash(c_.seed, kPartRotate, s, e) % N;
  const std::uint64_t F = N / L;  // full blocks of the rotated order
  std::uint64_t idx = j;
  if (F > 0) {
    const std::uint64_t blk = j / L, off = j % L, q = m / L;
    if (blk < q || q < F) {
      idx = EpochPermutation(F, hash(c_.seed, kPartBlocks, s), e).at(blk) * L + off;
    } else {  // q == F: all full blocks taken, the rest comes from the tail
      idx = F * L + off;
    }
  }
  return (idx + rot) % N;
}

PlanItem Plan::at(std::uint64_t position) const {
  const std::uint64_t e = position / total_;
  const Layout l = layout(e);
  const auto [s, d] = draw_at(l, position % total_);
  return {position, s, draw_sample(s, e, d), e};
}

// --- weighted ---

std::uint32_t Plan::source_at(std::uint64_t position) const {
  const double u = static_cast<double>(hash(c_.seed, kMix, position) >> 11) * 0x1.0p-53;
  return static_cast<std::uint32_t>(std::upper_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin());
}

std::uint64_t Plan::weighted_sample(std::uint32_t s, std::uint64_t draw) const {
  const std::uint64_t N = c_.sources[s].samples;
  return EpochPermutation(N, hash(c_.seed, kCycle, s), draw / N).at(draw % N);
}

// --- state ---

namespace {

std::string hex16(std::uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

std::string join(const std::vector<std::uint64_t>& v) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);
  }
  return s;
}

std::uint64_t text_check(std::string_view body) {
  std::uint64_t h = 0x706c616e73746174ULL;  // "planstat"
  for (unsigned char c : body) h = mix64(h ^ c);
  return mix64(h ^ body.size());
}

bool parse_u64(std::string_view s, int base, std::uint64_t* out) {
  if (s.empty() || s.size() > (base == 16 ? 16u : 20u)) return false;
  std::uint64_t v = 0;
  for (char c : s) {
    int d = c >= '0' && c <= '9' ? c - '0' : base == 16 && c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return false;
    if (base == 10 && v > (~std::uint64_t{0} - static_cast<std::uint64_t>(d)) / 10) return false;
    v = v * static_cast<std::uint64_t>(base) + static_cast<std::uint64_t>(d);
  }
  *out = v;
  return true;
}

bool parse_list(std::string_view s, std::vector<std::uint64_t>* out) {
  out->clear();
  if (s.empty()) return true;
  std::size_t from = 0;
  while (true) {
    const std::size_t comma = s.find(',', from);
    std::uint64_t v;
    if (!parse_u64(s.substr(from, comma == std::string_view::npos ? std::string_view::npos : comma - from), 10, &v)) return false;
    out->push_back(v);
    if (out->size() > 65536) return false;
    if (comma == std::string_view::npos) return true;
    from = comma + 1;
  }
}

}  // namespace

std::string PlanState::serialize() const {
  std::string body = "stoker-plan v1 spec=" + hex16(spec) + " seed=" + std::to_string(seed) +
                     " mode=" + (mode == PlanMode::kWeighted ? "weighted" : "epochized") +
                     " batch=" + std::to_string(global_batch) + " position=" + std::to_string(position) +
                     " epoch=" + std::to_string(epoch) + " cursors=" + join(cursors) + " carry=" + join(carry);
  return body + " check=" + hex16(text_check(body));
}

Result<PlanState> PlanState::parse(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.remove_suffix(1);
  auto bad = [](const std::string& why) { return invalid_argument("plan state: " + why); };
  if (text.size() > (std::size_t{1} << 20)) return bad("longer than 1 MiB");
  const std::size_t at = text.rfind(" check=");
  if (at == std::string_view::npos) return bad("no check field (not a stoker plan state)");
  std::uint64_t check = 0;
  if (!parse_u64(text.substr(at + 7), 16, &check) || check != text_check(text.substr(0, at)))
    return bad("the check does not match: the state was edited or damaged");
  static constexpr const char* kFields[] = {"spec", "seed", "mode", "batch", "position", "epoch", "cursors", "carry"};
  std::string_view body = text.substr(0, at);
  if (body.rfind("stoker-plan v1 ", 0) != 0) return bad("not a 'stoker-plan v1' state");
  body.remove_prefix(15);
  PlanState s;
  for (const char* field : kFields) {
    const std::size_t sp = body.find(' ');
    const std::string_view token = body.substr(0, sp);
    body = sp == std::string_view::npos ? std::string_view() : body.substr(sp + 1);
    const std::string key = std::string(field) + "=";
    if (token.rfind(key, 0) != 0) return bad(std::string("expected ") + field + "=");
    const std::string_view v = token.substr(key.size());
    bool ok = true;
    if (key == "spec=") ok = parse_u64(v, 16, &s.spec);
    else if (key == "seed=") ok = parse_u64(v, 10, &s.seed);
    else if (key == "mode=") {
      ok = v == "epochized" || v == "weighted";
      s.mode = v == "weighted" ? PlanMode::kWeighted : PlanMode::kEpochized;
    } else if (key == "batch=") ok = parse_u64(v, 10, &s.global_batch) && s.global_batch > 0;
    else if (key == "position=") ok = parse_u64(v, 10, &s.position);
    else if (key == "epoch=") ok = parse_u64(v, 10, &s.epoch);
    else if (key == "cursors=") ok = parse_list(v, &s.cursors);
    else ok = parse_list(v, &s.carry);
    if (!ok) return bad(std::string("bad value for ") + field);
  }
  if (!body.empty()) return bad("unexpected trailing fields");
  if (s.position % s.global_batch != 0) return bad("position is not at a global step boundary");
  return s;
}

// --- cursor ---

Result<PlanCursor> PlanCursor::start(const Plan& plan, int rank, int world) {
  if (world < 1 || rank < 0 || rank >= world) return invalid_argument("plan: rank " + std::to_string(rank) + " of " + std::to_string(world));
  if (plan.config().global_batch % static_cast<std::uint64_t>(world) != 0)
    return invalid_argument("plan: the global batch " + std::to_string(plan.config().global_batch) +
                            " does not split over " + std::to_string(world) + " ranks");
  PlanCursor c(plan, rank, world);
  c.cursors_.assign(plan.config().sources.size(), 0);
  return c;
}

Result<PlanCursor> PlanCursor::resume(const Plan& plan, const PlanState& state, int rank, int world,
                                      bool allow_spec_change, std::vector<std::string>* warnings) {
  STOKER_ASSIGN_OR_RETURN(PlanCursor c, start(plan, rank, world));
  const PlanConfig& cfg = plan.config();
  if (state.global_batch != cfg.global_batch)
    return invalid_argument("plan state: saved with a global batch of " + std::to_string(state.global_batch) + ", now " +
                            std::to_string(cfg.global_batch) + ": an exact resume needs the same global batch");
  const bool same = state.spec == plan.spec_hash() && state.seed == cfg.seed && state.mode == cfg.mode &&
                    state.cursors.size() == cfg.sources.size();
  if (!same && !allow_spec_change)
    return invalid_argument("plan state: the mixture changed since it was saved (spec " + hex16(state.spec) + ", now " +
                            hex16(plan.spec_hash()) + "; seed " + std::to_string(state.seed) + ", now " +
                            std::to_string(cfg.seed) + "): refused; --allow-spec-change starts the new plan at position " +
                            std::to_string(state.position));
  c.position_ = state.position;
  c.carry_ = state.carry;
  if (same) {
    c.cursors_ = state.cursors;
  } else if (warnings) {
    warnings->push_back("plan: the mixture changed; the new plan starts at position " + std::to_string(state.position) +
                        (state.cursors.size() == cfg.sources.size() ? " with the saved per-source cursors"
                                                                    : " with per-source cursors at 0 (the source count changed)"));
  }
  if (!same && state.cursors.size() == cfg.sources.size()) c.cursors_ = state.cursors;
  return c;
}

std::uint64_t PlanCursor::step() const { return position_ / plan_->config().global_batch; }

std::vector<PlanItem> PlanCursor::next_step() {
  const Plan& p = *plan_;
  const std::uint64_t G = p.config().global_batch;
  const std::uint64_t per = G / static_cast<std::uint64_t>(world_);
  const std::uint64_t mine_begin = position_ + per * static_cast<std::uint64_t>(rank_);
  std::vector<PlanItem> items;
  items.reserve(per);
  for (std::uint64_t k = position_; k < position_ + G; ++k) {
    const bool mine = k >= mine_begin && k < mine_begin + per;
    if (p.config().mode == PlanMode::kEpochized) {
      const std::uint64_t e = k / p.epoch_length();
      if (!layout_ || layout_->epoch != e) layout_ = p.layout(e);
      const auto [s, d] = p.draw_at(*layout_, k % p.epoch_length());
      ++cursors_[s];
      if (mine) items.push_back({k, s, p.draw_sample(s, e, d), e});
    } else {
      const std::uint32_t s = p.source_at(k);
      const std::uint64_t c = cursors_[s]++;
      if (mine) items.push_back({k, s, p.weighted_sample(s, c), c / p.config().sources[s].samples});
    }
  }
  position_ += G;
  return items;
}

PlanState PlanCursor::state() const {
  PlanState s;
  s.spec = plan_->spec_hash();
  s.seed = plan_->config().seed;
  s.mode = plan_->config().mode;
  s.global_batch = plan_->config().global_batch;
  s.position = position_;
  s.epoch = plan_->epoch_length() ? position_ / plan_->epoch_length() : 0;
  s.cursors = cursors_;
  s.carry = carry_;
  return s;
}

}  // namespace stoker::dataset
