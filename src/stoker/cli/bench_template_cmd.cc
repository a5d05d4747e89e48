// `stoker bench template [--quick]`: flags → bench::run_template_bench (bench/template_bench.h).
#include <sched.h>

#include "stoker/bench/template_bench.h"
#include "stoker/cli/args.h"
#include "stoker/cli/commands.h"

namespace stoker::cli {
namespace {

constexpr char kUsage[] =
    "usage: stoker bench template [--quick] [--records N] [--corpus DIR] [--python PATH]\n"
    "         [--warmup 1] [--passes 3] [--core N]\n"
    "--records: renders per pass, cycling the corpus's template x context records (600 with\n"
    "--quick, 3000). --corpus: a folder with corpus.json, contexts.json and templates/ (default:\n"
    "the parity corpus installed with the bench files). Exit 77 (skipped) when --python cannot\n"
    "import jinja2.";

Result<bench::TemplateBenchOptions> parse(int argc, char** argv) {
  STOKER_ASSIGN_OR_RETURN(
      Args args, Args::parse(argc, argv, {"records", "corpus", "python", "core", "warmup", "passes"},
                             {"quick", "help"}));
  if (args.has("help") || !args.positional().empty()) return invalid_argument(kUsage);
  bench::TemplateBenchOptions o;
  o.quick = args.has("quick");
  o.corpus_dir = args.get("corpus");
  o.python = args.get("python", o.python);
  STOKER_ASSIGN_OR_RETURN(o.records, args.get_int<std::size_t>("records", 0, 1, 10'000'000));
  STOKER_ASSIGN_OR_RETURN(o.core, args.get_int<int>("core", -1, 0, CPU_SETSIZE - 1));
  STOKER_ASSIGN_OR_RETURN(o.repeat.warmup, args.get_int<int>("warmup", 1, 0, 100));
  STOKER_ASSIGN_OR_RETURN(o.repeat.passes, args.get_int<int>("passes", 3, 1, 100));
  return o;
}

}  // namespace

int run_bench_template(int argc, char** argv) {
  auto o = parse(argc, argv);
  if (!o.ok()) return report("bench template", o.error());
  auto r = bench::run_template_bench(*o);
  return r.ok() ? static_cast<int>(*r) : report("bench template", r.error());
}

}  // namespace stoker::cli
