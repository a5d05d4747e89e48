// Placeholder until its owner lands it.
#include "stoker/cli/commands.h"

namespace stoker::cli {

int run_synth(int argc, char** argv) { return report("synth", unimplemented("not built yet")); }

}  // namespace stoker::cli
