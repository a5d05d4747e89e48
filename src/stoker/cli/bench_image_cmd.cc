// Placeholder until its owner lands it.
#include "stoker/cli/commands.h"

namespace stoker::cli {

int run_bench_image(int argc, char** argv) { return report("bench_image", unimplemented("not built yet")); }

}  // namespace stoker::cli
