#include "stoker/cli/loader_flags.h"

#include <string_view>
#include <vector>

#include "stoker/exec/sched.h"
#include "stoker/model/model_config.h"

namespace stoker::cli {
namespace {

// "a.jsonl,b.jsonl" and several positional arguments alike.
std::vector<std::string> split_paths(const std::vector<std::string>& positional) {
  std::vector<std::string> out;
  for (const std::string& p : positional) {
    std::string_view rest = p;
    while (!rest.empty()) {
      const std::size_t comma = rest.find(',');
      std::string_view one = rest.substr(0, comma);
      if (!one.empty()) out.emplace_back(one);
      rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    }
  }
  return out;
}

}  // namespace

std::set<std::string> loader_value_flags() {
  return {"model",  "tokenizer", "batch-size", "max-length", "io-threads",
          "prefetch", "seed",    "epochs",     "arena-mb",   "worker-sched"};
}

std::set<std::string> loader_switch_flags() { return {"bf16"}; }

Result<pipeline::LoaderConfig> loader_config_from_flags(const Args& args,
                                                        const LoaderFlagDefaults& defaults) {
  pipeline::LoaderConfig c;
  c.data = split_paths(args.positional());
  if (c.data.empty()) return invalid_argument("expected DATA.jsonl[,MORE.jsonl]");
  c.model = args.get("model", "qwen2.5-vl");
  c.tokenizer = args.get("tokenizer");
  if (c.tokenizer.empty()) {
    STOKER_ASSIGN_OR_RETURN(model::ModelConfig m, model::load_model(c.model));
    STOKER_ASSIGN_OR_RETURN(c.tokenizer, model::default_tokenizer_dir(m));
  }
  STOKER_ASSIGN_OR_RETURN(long long bs, args.get_int("batch-size", 8));
  STOKER_ASSIGN_OR_RETURN(long long ml, args.get_int("max-length", 8192));
  STOKER_ASSIGN_OR_RETURN(long long io, args.get_int("io-threads", defaults.io_threads));
  STOKER_ASSIGN_OR_RETURN(long long pf, args.get_int("prefetch", 4));
  STOKER_ASSIGN_OR_RETURN(long long seed, args.get_int("seed", 0));
  STOKER_ASSIGN_OR_RETURN(long long ep, args.get_int("epochs", 1));
  STOKER_ASSIGN_OR_RETURN(long long arena_mb, args.get_int("arena-mb", defaults.arena_mb));
  if (arena_mb < 1) return invalid_argument("--arena-mb must be >= 1");
  c.batch_size = static_cast<int>(bs);
  c.max_length = ml;
  c.io_threads = static_cast<int>(io);
  c.prefetch = static_cast<int>(pf);
  c.seed = static_cast<std::uint64_t>(seed);
  c.epochs = ep;
  c.arena.bytes = static_cast<std::size_t>(arena_mb) << 20;
  if (args.has("bf16")) c.pixel_dtype = image::PixelDType::kBFloat16;
  auto sched = exec::parse_sched_class(args.get("worker-sched", "batch"));
  if (!sched.ok()) return std::move(sched).error().with_context("--worker-sched");
  c.worker_sched = *sched;
  return c;
}

}  // namespace stoker::cli
