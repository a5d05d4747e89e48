// `stoker bench tokenizer`: tokens/s of stoker's BPE tokenizer (text::Tokenizer::encode) against
// Hugging Face's Rust tokenizers (npm tokenizers@0.23.2 through node: bench/hf_tokenizers_peer.js)
// on the same documents, each side on the same pinned core, one after the other, with the same
// passes (each with a freshly loaded tokenizer: cold caches). Every document of every timed pass
// is compared (token count + FNV-1a of the ids). Corpus: --corpus FILE or one made from this
// machine's files (bench/corpus.h). Errors: the tokenizer's, the peer's; kSkipped without node
// or the npm module.
#pragma once

#include <cstddef>
#include <string>

#include "stoker/base/result.h"
#include "stoker/bench/harness.h"
#include "stoker/model/family.h"

namespace stoker::bench {

struct TokenizerBenchOptions {
  bool quick = false;
  std::string model{model::kDefaultModel};  // preset or folder; the tokenizer files come from it
  std::string tokenizer;             // a folder with tokenizer.json (overrides --model)
  std::string corpus;                // a file (bench/corpus.h); empty: this machine's files
  std::size_t megabytes = 0;         // corpus size; 0: 3 quick, 12
  int core = -1;
  std::string node = "node";
  Repeat repeat{.warmup = 1, .passes = 3};
};

Result<Outcome> run_tokenizer_bench(const TokenizerBenchOptions& options);

}  // namespace stoker::bench
