#include "stoker/bench/packing_bench.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <vector>

#include "stoker/base/clock.h"
#include "stoker/batch/pack_plan.h"
#include "stoker/model/model_config.h"
#include "stoker/pipeline/loader.h"
#include "stoker/synth/synth.h"

namespace stoker::bench {
namespace {

constexpr std::int64_t kLengths[] = {4096, 8192, 16384};
constexpr std::int64_t kHeadline = 8192;

struct Len {
  std::int64_t tokens = -1;  // −1: the record failed
  std::int64_t patches = 0;
};

// One scheme at one L over one epoch.
struct Outcome1 {
  std::int64_t kept = 0, rows = 0, real = 0, computed = 0, steps = 0, repeats = 0;
  double max_p = 0, mean_p = 0, max_t = 0, mean_t = 0;
  std::vector<double> step_ratio;  // max/mean patches per step (steps with vision only)
  double efficiency() const { return computed > 0 ? static_cast<double>(real) / computed : 0; }
};

std::uint64_t splitmix(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Steps of `world` consecutive units; the last one filled with the units before it (what the
// engine does so that every rank has a batch in every step).
void balance(const std::vector<batch::Unit>& units, int world, Outcome1* r) {
  const std::size_t n = units.size();
  for (std::size_t begin = 0; begin < n; begin += world) {
    std::int64_t max_p = 0, max_t = 0;
    double sum_p = 0, sum_t = 0;
    for (std::size_t g = begin; g < begin + world; ++g) {
      const std::size_t i = g < n ? g : n - 1 - (g - n) % n;
      r->repeats += g >= n;
      max_p = std::max(max_p, units[i].patches);
      max_t = std::max(max_t, units[i].tokens);
      sum_p += static_cast<double>(units[i].patches);
      sum_t += static_cast<double>(units[i].tokens);
    }
    ++r->steps;
    r->max_p += static_cast<double>(max_p);
    r->mean_p += sum_p / world;
    r->max_t += static_cast<double>(max_t);
    r->mean_t += sum_t / world;
    if (sum_p > 0) r->step_ratio.push_back(max_p / (sum_p / world));
  }
}

void count(const std::vector<batch::Unit>& units, Outcome1* r) {
  r->rows = static_cast<std::int64_t>(units.size());
  for (const batch::Unit& u : units) {
    r->real += u.tokens;
    r->computed += u.computed;
  }
}

// Checks that `units` (members = epoch positions) hold every kept position exactly once.
void check_cover(const std::vector<batch::Unit>& units, const std::vector<std::uint32_t>& kept,
                 const std::string& what, Comparison* cmp) {
  std::vector<std::uint32_t> got;
  for (const batch::Unit& u : units) got.insert(got.end(), u.members.begin(), u.members.end());
  std::sort(got.begin(), got.end());
  cmp->compared(static_cast<std::int64_t>(kept.size()));
  if (got != kept) cmp->differ(what + ": the batches do not hold every kept sample exactly once");
}

// Padded batches of B consecutive kept samples in epoch order, each padded to its longest.
std::vector<batch::Unit> padded(const std::vector<Len>& epoch, std::int64_t L, int B) {
  std::vector<batch::Unit> out;
  for (std::uint32_t p = 0; p < epoch.size(); ++p) {
    if (epoch[p].tokens < 1 || epoch[p].tokens > L) continue;
    if (out.empty() || static_cast<int>(out.back().members.size()) == B) out.emplace_back();
    batch::Unit& u = out.back();
    u.members.push_back(p);
    u.tokens += epoch[p].tokens;
    u.patches += epoch[p].patches;
    u.longest = std::max(u.longest, epoch[p].tokens);
    u.computed = static_cast<std::int64_t>(u.members.size()) * u.longest;
  }
  return out;
}

// The engine's plan: windows of W epoch positions, each planned by batch::plan_units in
// canonical order (heaviest first in even windows); `balanced` false keeps the units in epoch
// order instead (what packing without the load order gives). Members become epoch positions.
std::vector<batch::Unit> planned(const std::vector<Len>& epoch, std::int64_t L, int W,
                                 batch::UnitKind kind, bool balanced, double* plan_s) {
  std::vector<batch::Unit> out;
  for (std::size_t start = 0, w = 0; start < epoch.size(); start += W, ++w) {
    std::vector<batch::PlanItem> items;
    for (std::size_t i = start; i < std::min(epoch.size(), start + W); ++i) {
      if (epoch[i].tokens < 1 || epoch[i].tokens > L) continue;
      items.push_back({static_cast<std::uint32_t>(i - start), epoch[i].tokens, epoch[i].patches});
    }
    const std::int64_t t0 = now_ns();
    std::vector<batch::Unit> units =
        batch::plan_units(items, {.kind = kind, .capacity = L, .heaviest_first = w % 2 == 0});
    if (plan_s != nullptr) *plan_s += (now_ns() - t0) * 1e-9;
    if (!balanced) {
      std::sort(units.begin(), units.end(), [](const batch::Unit& a, const batch::Unit& b) {
        return a.members.front() < b.members.front();
      });
    }
    for (batch::Unit& u : units) {
      for (std::uint32_t& m : u.members) m += static_cast<std::uint32_t>(start);
      out.push_back(std::move(u));
    }
  }
  return out;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 1;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * (v.size() - 1) + 0.5))];
}

Result<std::vector<Len>> measure(const PackingBenchOptions& o, std::string* what,
                                 double* rate) {
  std::optional<TempDir> tmp;
  std::string data = o.data;
  if (data.empty()) {
    std::string dir = o.dir;
    if (dir.empty()) {
      STOKER_ASSIGN_OR_RETURN(TempDir t, TempDir::make("stoker-bench-packing"));
      dir = t.path() + "/synth";
      tmp.emplace(std::move(t));
    }
    synth::SynthConfig sc;
    sc.out_dir = dir;
    sc.records = o.records > 0 ? o.records : (o.quick ? 1000 : 4000);
    sc.seed = o.seed;
    sc.flat_pixels = true;  // same records, sizes and formats; lengths never look at pixels
    sc.long_records = true;  // the mix as drawn (images up to 3840 px, some records > 8192)
    std::fprintf(stderr, "generating %d synth records (the default mix, images up to 3840 px, "
                 "flat pixels)...\n", sc.records);
    STOKER_ASSIGN_OR_RETURN(synth::SynthResult s, synth::generate_dataset(sc));
    data = s.data_path;
    *what = "synth mix, " + std::to_string(s.records) + " records (seed " +
            std::to_string(o.seed) + ", flat pixels)";
  } else {
    *what = data;
  }
  pipeline::LoaderConfig c;
  c.data = {data};
  c.model = o.model;
  c.tokenizer = o.tokenizer;
  c.max_length = 0;  // measure everything; each L drops what is over it
  c.threads = o.threads;
  if (c.tokenizer.empty()) {
    STOKER_ASSIGN_OR_RETURN(model::ModelConfig m, model::load_model(c.model));
    if (m.folder.empty()) {
      STOKER_ASSIGN_OR_RETURN(c.tokenizer, model::default_tokenizer_dir(m));
    }
  }
  const std::int64_t t0 = now_ns();
  STOKER_ASSIGN_OR_RETURN(std::vector<pipeline::MeasuredRecord> recs, pipeline::measure_records(c));
  *rate = recs.size() / std::max(1e-9, (now_ns() - t0) * 1e-9);
  std::vector<Len> out;
  for (const pipeline::MeasuredRecord& r : recs) out.push_back({r.tokens, r.patches});
  return out;
}

}  // namespace

Result<Outcome> run_packing_bench(const PackingBenchOptions& o) {
  std::string what;
  double rate = 0;
  STOKER_ASSIGN_OR_RETURN(std::vector<Len> recs, measure(o, &what, &rate));
  std::int64_t failed = 0, tokens = 0, patches = 0;
  for (const Len& l : recs) {
    failed += l.tokens < 0;
    tokens += std::max<std::int64_t>(0, l.tokens);
    patches += l.patches;
  }
  if (recs.size() == static_cast<std::size_t>(failed)) return invalid_argument("no record measured");
  // The epoch: the records in a seeded order — or, with --samples, drawn with replacement
  // (repeated lengths flatter the schemes that sort by length, so the default does not).
  std::vector<Len> epoch;
  std::uint64_t rng = o.seed ^ 0x5eedull;
  if (o.samples > 0) {
    for (int i = 0; i < o.samples; ++i) epoch.push_back(recs[splitmix(rng) % recs.size()]);
  } else {
    epoch = recs;
    for (std::size_t i = epoch.size(); i > 1; --i) std::swap(epoch[i - 1], epoch[splitmix(rng) % i]);
  }
  const int samples = static_cast<int>(epoch.size());
  const std::int64_t good = static_cast<std::int64_t>(recs.size()) - failed;
  std::printf("stoker bench packing: %s; lengths measured from image headers + tokenizer (%s, "
              "%.0f records/s on %d threads: the per-rank cost of the global plan); mean %.0f "
              "tokens, %.0f vision patches per record; %lld failed\n",
              what.c_str(), o.model.c_str(), rate, o.threads > 0 ? o.threads : usable_cores(),
              static_cast<double>(tokens) / good, static_cast<double>(patches) / good,
              static_cast<long long>(failed));
  std::printf("epoch: %d samples (%s); window %d; %d DP ranks; padded baseline B = %d; %s\n\n",
              samples, o.samples > 0 ? "drawn from the records with replacement, seeded"
                                     : "the records in a seeded order",
              o.window, o.world, o.batch_size, build_kind());
  Table table({{"L", 6}, {"scheme", 22, true}, {"kept", 6}, {"rows/epoch", 10},
               {"efficiency", 10}, {"padding", 8}, {"vision max/mean", 15}, {"p95 step", 8},
               {"worst", 6}, {"tokens max/mean", 15}});
  table.header(stdout);
  Comparison cmp;
  double headline = 0, baseline = 0, headline_balance = 0, plan_s = 0;
  std::int64_t windows = 0;
  for (std::int64_t L : kLengths) {
    std::vector<std::uint32_t> kept;
    for (std::uint32_t p = 0; p < epoch.size(); ++p) {
      if (epoch[p].tokens >= 1 && epoch[p].tokens <= L) kept.push_back(p);
    }
    struct Row {
      const char* name;
      std::vector<batch::Unit> units;
    };
    double* timing = L == kHeadline ? &plan_s : nullptr;
    std::vector<Row> rows;
    rows.push_back({"padded B", padded(epoch, L, o.batch_size)});
    rows.push_back({"token budget", planned(epoch, L, o.window, batch::UnitKind::kPaddedBudget, true, nullptr)});
    rows.push_back({"packing, epoch order", planned(epoch, L, o.window, batch::UnitKind::kPack, false, nullptr)});
    rows.push_back({"packing (stoker)", planned(epoch, L, o.window, batch::UnitKind::kPack, true, timing)});
    if (L == kHeadline) windows = (samples + o.window - 1) / o.window;
    for (Row& row : rows) {
      check_cover(row.units, kept, std::string(row.name) + " at " + std::to_string(L), &cmp);
      Outcome1 r;
      r.kept = static_cast<std::int64_t>(kept.size());
      count(row.units, &r);
      balance(row.units, o.world, &r);
      const std::string name = std::string(row.name) == "padded B"
                                   ? "padded B=" + std::to_string(o.batch_size) : row.name;
      table.row(stdout, {std::to_string(L), name, std::to_string(r.kept), std::to_string(r.rows),
                         format("%.2f%%", 100 * r.efficiency()),
                         format("%.2f%%", 100 * (1 - r.efficiency())),
                         format("%.3f", r.max_p / std::max(1e-9, r.mean_p)),
                         format("%.2f", quantile(r.step_ratio, 0.95)),
                         format("%.2f", quantile(r.step_ratio, 1.0)),
                         format("%.3f", r.max_t / std::max(1e-9, r.mean_t))});
      if (L == kHeadline && row.name == rows.back().name) {
        headline = r.efficiency();
        headline_balance = r.max_p / std::max(1e-9, r.mean_p);
      }
      if (L == kHeadline && row.name == rows.front().name) baseline = r.efficiency();
    }
  }
  std::printf("\nvision max/mean = Σ over steps of the busiest rank's patches ÷ Σ of the mean "
              "(what a synchronous step waits for, relative to a perfect split); p95 step / worst "
              "= per-step max/mean. A pack costs L tokens (its row); a padded batch B x longest.\n");
  std::printf("planning: %.1f us per window of %d (best-fit decreasing + load order, L = %lld)\n",
              1e6 * plan_s / std::max<std::int64_t>(1, windows), o.window,
              static_cast<long long>(kHeadline));
  cmp.print(stdout, "kept samples x schemes x lengths: each delivered once");
  if (!cmp.ok()) {
    std::printf("MISMATCH: no efficiency\n");
    return Outcome::kMismatch;
  }
  std::printf("packing vs padded B=%d at L = %lld: %.2fx the real tokens per computed token "
              "(%.1f%% vs %.1f%%); vision max/mean over %d ranks %.3f\n", o.batch_size,
              static_cast<long long>(kHeadline), headline / std::max(1e-9, baseline),
              100 * headline, 100 * baseline, o.world, headline_balance);
  std::printf("efficiency: %.1f%%\n", 100 * headline);
  return Outcome::kOk;
}

}  // namespace stoker::bench
