// Placeholder until its owner lands it.
#include "stoker/cli/commands.h"

namespace stoker::cli {

int run_preprocess(int argc, char** argv) { return report("preprocess", unimplemented("not built yet")); }

}  // namespace stoker::cli
