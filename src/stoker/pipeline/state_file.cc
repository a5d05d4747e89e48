#include "stoker/pipeline/state_file.h"

#include <algorithm>
#include <charconv>
#include <limits>

namespace stoker::pipeline {
namespace {

constexpr auto shown = detail::shown_state_text;

// a * b + c, saturated at the largest uint64.
std::uint64_t mul_add_sat(std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  if (a != 0 && b > kMax / a) return kMax;
  const std::uint64_t p = a * b;
  return c > kMax - p ? kMax : p + c;
}

}  // namespace

std::string state_file_text(const SavedRun& run) {
  return run.state.serialize() + "\nbatches=" + std::to_string(run.batches) + "\n";
}

Result<SavedRun> parse_state_file(std::string_view text) {
  if (text.empty()) return invalid_argument("empty (no state was ever written to it?)");
  if (text.find('\0') != std::string_view::npos) {
    return invalid_argument("not a state file: it contains NUL bytes");
  }
  const std::size_t nl = text.find('\n');
  std::string_view line1 = text.substr(0, nl);
  std::string_view rest = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
  SavedRun run;
  Result<LoaderState> s = LoaderState::parse(line1);
  if (!s.ok()) return std::move(s).error().with_context("line 1");
  run.state = std::move(*s);
  // Line 2: "batches=N"; then nothing but blank lines.
  const std::size_t nl2 = rest.find('\n');
  std::string_view line2 = rest.substr(0, nl2);
  std::string_view tail = nl2 == std::string_view::npos ? std::string_view() : rest.substr(nl2 + 1);
  while (!line2.empty() && (line2.back() == ' ' || line2.back() == '\r')) line2.remove_suffix(1);
  if (!line2.empty()) {
    constexpr std::string_view kKey = "batches=";
    if (line2.substr(0, kKey.size()) != kKey) {
      return invalid_argument("line 2: expected 'batches=N', got " + shown(line2));
    }
    const std::string_view v = line2.substr(kKey.size());
    auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), run.batches);
    if (v.empty() || ec != std::errc() || ptr != v.data() + v.size() ||
        run.batches > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
      return invalid_argument("line 2: field 'batches' must be a number in [0, " +
                              std::to_string(std::numeric_limits<std::int64_t>::max()) +
                              "], got " + shown(v));
    }
  }
  for (char c : tail) {
    if (c != '\n' && c != ' ' && c != '\r') {
      return invalid_argument("unexpected text after line 2: " + shown(tail));
    }
  }
  return run;
}

Result<SavedRun> read_state_file(const std::string& path) {
  Result<std::string> text = read_small_file(path, kMaxStateFileBytes);
  if (!text.ok()) return std::move(text).error().with_context("state file");
  Result<SavedRun> run = parse_state_file(*text);
  if (!run.ok()) return std::move(run).error().with_context("state file " + path);
  return run;
}

Status write_state_file(const std::string& path, const SavedRun& run,
                        const AtomicWriteOptions& options) {
  Status s = write_file_atomic(path, state_file_text(run), options);
  if (!s.ok()) return std::move(s).error().with_context("saving the state");
  return ok_status();
}

Status check_state_bounds(const LoaderState& s, const StateBounds& b) {
  // Epochs: a state of a finished run is (epochs, 0); epoch + 1 must not overflow.
  const std::uint64_t max_epoch =
      b.epochs >= 0 ? static_cast<std::uint64_t>(b.epochs)
                    : static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) - 1;
  if (s.epoch > max_epoch) {
    return invalid_argument("state: epoch " + std::to_string(s.epoch) + " is past this run's " +
                            (b.epochs >= 0 ? std::to_string(b.epochs) + " epochs"
                                           : std::string("epoch limit")) +
                            " (epoch must be in [0, " + std::to_string(max_epoch) + "])");
  }
  // Packing: a position is the start of a planning window (the last one may end past the data).
  const std::uint64_t window = s.plan != 0 && b.pack_window > 0
                                   ? static_cast<std::uint64_t>(b.pack_window) : 0;
  const std::uint64_t max_position =
      window > 0 ? mul_add_sat(b.records / window + (b.records % window != 0 ? 1 : 0), window, 0)
                 : b.records;
  if (s.position > max_position) {
    return invalid_argument("state: position " + std::to_string(s.position) +
                            " is past the end of an epoch of this data (" +
                            std::to_string(b.records) + " records; position must be in [0, " +
                            std::to_string(max_position) + "])");
  }
  if (b.epochs >= 0 && s.epoch == max_epoch && s.position > 0) {
    return invalid_argument("state: epoch " + std::to_string(s.epoch) + " position " +
                            std::to_string(s.position) + " is past this run's " +
                            std::to_string(b.epochs) + " epochs");
  }
  // Failed samples count as consumed: at most every sample before this position failed.
  // (with packing, also those of the window's consumed packs, after `position`).
  const std::uint64_t consumed = mul_add_sat(
      s.epoch, b.records,
      s.position > std::numeric_limits<std::uint64_t>::max() - window ? s.position
                                                                       : s.position + window);
  const std::uint64_t max_errors = std::min<std::uint64_t>(
      consumed, static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()));
  if (s.errors > max_errors) {
    return invalid_argument("state: errors " + std::to_string(s.errors) +
                            " is more than the samples consumed by epoch " +
                            std::to_string(s.epoch) + " position " + std::to_string(s.position) +
                            " (errors must be in [0, " + std::to_string(max_errors) + "])");
  }
  if (s.plan != 0 && b.pack_window > 0 && s.packs > static_cast<std::uint64_t>(b.pack_window)) {
    return invalid_argument("state: packs " + std::to_string(s.packs) +
                            " is more than a planning window holds (packs must be in [0, " +
                            std::to_string(b.pack_window) + "])");
  }
  return ok_status();
}

}  // namespace stoker::pipeline
