// Placeholder until its owner lands it.
#include "stoker/cli/commands.h"

namespace stoker::cli {

int run_bench_tokenizer(int argc, char** argv) { return report("bench_tokenizer", unimplemented("not built yet")); }

}  // namespace stoker::cli
