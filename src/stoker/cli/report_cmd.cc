// `stoker report RUN_DIR`: renders a run folder written by `stoker run --report RUN_DIR`
// (steps.csv, timeline.csv, metrics.prom, summary.json) into PNG plots and index.html beside
// them, again — e.g. after copying the folder off a training node. The plotting is the report
// script installed in share/stoker/report (matplotlib, Debian's python3).
#include <cstdio>
#include <string>

#include "stoker/cli/args.h"
#include "stoker/cli/commands.h"
#include "stoker/cli/observe.h"

namespace stoker::cli {

namespace {
constexpr char kHelp[] = R"(usage: stoker report RUN_DIR

Renders the run folder of `stoker run --report RUN_DIR` into PNG plots (wait per step, stage
utilisation over time, queue depths, latency histograms) and RUN_DIR/index.html, a one-page
summary beside them. Uses the report script of share/stoker/report with /usr/bin/python3 and
matplotlib ($STOKER_REPORT_PYTHON names another interpreter).
)";
}  // namespace

int run_report(int argc, char** argv) {
  Result<Args> args = Args::parse(argc, argv, {}, {"help"}, {});
  if (!args.ok()) return report("report", args.error());
  if (args->has("help") || args->positional().size() != 1) {
    std::fputs(kHelp, args->has("help") ? stdout : stderr);
    return args->has("help") ? 0 : 2;
  }
  if (Status st = render_report(args->positional()[0]); !st.ok()) return report("report", st.error());
  return 0;
}

}  // namespace stoker::cli
