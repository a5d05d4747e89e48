// `stoker bench template`: records/s of stoker's Jinja engine (jinja::Template::render) against
// Python jinja2 3.1 under Hugging Face's chat-template environment (bench/template_peer.py, the
// environment of the parity test) on the parity corpus: every real template x every context of
// tests/jinja (copied next to the bench files by CMake), cycled to --records renders per pass.
// Templates are compiled once before timing on both sides (a loader compiles once per model);
// each side renders the same records in the same order, on the same pinned core, with the same
// warm-up + best-of passes, timing only the render calls. Every record of every timed pass is
// compared (CRC-32 of the text + generation spans, or "refused"). Errors: the peer's, missing
// files; kSkipped when /usr/bin/python3 cannot import jinja2.
#pragma once

#include <cstddef>
#include <string>

#include "stoker/base/result.h"
#include "stoker/bench/harness.h"

namespace stoker::bench {

struct TemplateBenchOptions {
  bool quick = false;
  std::size_t records = 0;   // renders per pass; 0: 600 quick, 3000
  std::string corpus_dir;    // holds corpus.json, contexts.json, templates/; empty: the bench files
  std::string python = "/usr/bin/python3";
  int core = -1;
  Repeat repeat{.warmup = 1, .passes = 3};
};

Result<Outcome> run_template_bench(const TemplateBenchOptions& options);

}  // namespace stoker::bench
