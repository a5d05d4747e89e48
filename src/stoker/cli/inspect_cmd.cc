// Placeholder until its owner lands it.
#include "stoker/cli/commands.h"

namespace stoker::cli {

int run_inspect(int argc, char** argv) { return report("inspect", unimplemented("not built yet")); }

}  // namespace stoker::cli
