#include "stoker/bench/tokenizer_bench.h"

#include <cstdio>
#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "stoker/base/clock.h"
#include "stoker/base/file.h"
#include "stoker/base/hash.h"
#include "stoker/bench/corpus.h"
#include "stoker/bench/paths.h"
#include "stoker/bench/peer.h"
#include "stoker/model/model_config.h"
#include "stoker/text/tokenizer.h"

namespace stoker::bench {
namespace {

namespace fs = std::filesystem;

using Digest = std::pair<std::int64_t, std::uint32_t>;  // (ids, FNV-1a 32 of the ids)

struct Pass {
  double seconds = 0;
  std::vector<Digest> digests;
};

std::uint32_t fnv1a(const std::vector<text::TokenId>& ids) {
  // Over whole ids, not their bytes: what the JS peer computes (hf_tokenizers_peer.js).
  std::uint32_t h = kFnv32Offset;
  for (text::TokenId id : ids) h = fnv1a32_step(h, static_cast<std::uint32_t>(id));
  return h;
}

// stoker's side: the same policy as the peer's (fresh tokenizer per pass, the first 8 documents
// untimed, then every document timed; digests untimed).
Result<std::vector<Pass>> stoker_passes(const std::string& dir, const Corpus& corpus,
                                        const Repeat& repeat) {
  std::vector<Pass> passes;
  std::vector<text::TokenId> ids;
  for (int p = 0; p < repeat.warmup + repeat.passes; ++p) {
    STOKER_ASSIGN_OR_RETURN(auto tok, text::Tokenizer::load(dir));
    for (std::size_t i = 0; i < 8 && i < corpus.docs.size(); ++i) tok->encode(corpus.docs[i]);
    Pass pass;
    for (const std::string& d : corpus.docs) {
      ids.clear();
      const Stopwatch w;
      tok->encode(d, &ids);
      pass.seconds += w.elapsed_s();
      pass.digests.push_back({static_cast<std::int64_t>(ids.size()), fnv1a(ids)});
    }
    if (p >= repeat.warmup) passes.push_back(std::move(pass));
  }
  return passes;
}

Result<std::vector<Pass>> peer_passes(const TokenizerBenchOptions& o, const std::string& dir,
                                      const fs::path& docs, const fs::path& node_modules) {
  STOKER_ASSIGN_OR_RETURN(fs::path script, find_bench_file("hf_tokenizers_peer.js"));
  std::vector<std::string> env = single_thread_env();
  env.push_back("NODE_PATH=" + node_modules.string());
  STOKER_ASSIGN_OR_RETURN(
      std::string out,
      run_capture({o.node, script.string(), dir + "/tokenizer.json", docs.string(),
                   std::to_string(o.repeat.warmup), std::to_string(o.repeat.passes)},
                  env));
  const auto j = nlohmann::json::parse(last_json_line(out), nullptr, false);
  if (j.is_discarded() || !j.contains("passes"))
    return internal_error("bad peer output: " + out.substr(0, 300));
  std::vector<Pass> passes;
  for (const auto& p : j["passes"]) {
    Pass pass;
    pass.seconds = p.at("seconds").get<double>();
    for (const auto& d : p.at("digests"))
      pass.digests.push_back({d.at(0).get<std::int64_t>(), d.at(1).get<std::uint32_t>()});
    passes.push_back(std::move(pass));
  }
  return passes;
}

std::int64_t tokens(const Pass& p) {
  std::int64_t n = 0;
  for (const Digest& d : p.digests) n += d.first;
  return n;
}

const Pass& best(const std::vector<Pass>& passes) {
  const Pass* b = &passes.front();
  for (const Pass& p : passes)
    if (p.seconds < b->seconds) b = &p;
  return *b;
}

}  // namespace

Result<Outcome> run_tokenizer_bench(const TokenizerBenchOptions& opt_in) {
  TokenizerBenchOptions o = opt_in;
  if (o.megabytes == 0) o.megabytes = o.quick ? 3 : 12;
  std::string dir = o.tokenizer;
  if (dir.empty()) {
    STOKER_ASSIGN_OR_RETURN(model::ModelConfig m, model::load_model(o.model));
    STOKER_ASSIGN_OR_RETURN(dir, model::default_tokenizer_dir(m));
  }
  auto node_modules = find_bench_file("node_modules/tokenizers");
  if (!have_program(o.node) || !node_modules.ok()) {
    std::fprintf(stderr, "stoker bench tokenizer: skipped: %s\n",
                 node_modules.ok() ? "node is not installed"
                                   : node_modules.error().to_string().c_str());
    return Outcome::kSkipped;
  }
  STOKER_ASSIGN_OR_RETURN(Corpus corpus,
                          o.corpus.empty() ? machine_corpus(o.megabytes << 20, 20261130)
                                           : file_corpus(o.corpus, o.megabytes << 20));
  STOKER_ASSIGN_OR_RETURN(TempDir tmp, TempDir::make("stoker-bench-tok"));
  const fs::path docs = fs::path(tmp.path()) / "docs.json";
  STOKER_RETURN_IF_ERROR(write_text_file(docs.string(), nlohmann::json(corpus.docs).dump()));
  const int core = o.core >= 0 ? o.core : last_allowed_cpu();
  STOKER_RETURN_IF_ERROR(pin_to_core(core));
  const double mb = static_cast<double>(corpus.bytes) / 1048576.0;
  std::printf("corpus: %zu documents, %.1f MB %s\n", corpus.docs.size(), mb,
              corpus.description.c_str());
  std::printf("tokenizer: %s/tokenizer.json; both sides on CPU %d, %s, each pass with a freshly "
              "loaded tokenizer (the first 8 documents untimed), every document of every timed "
              "pass compared\n",
              dir.c_str(), core, o.repeat.text().c_str());
  std::printf("peer: Hugging Face tokenizers (Rust) 0.23.2 via node (%s), encodeBatch of 64 "
              "documents, TOKENIZERS_PARALLELISM=false; stoker: text::Tokenizer::encode per "
              "document; both without special tokens added, wall time of the encode calls only\n",
              node_modules->parent_path().c_str());
  std::fflush(stdout);

  STOKER_ASSIGN_OR_RETURN(std::vector<Pass> ours, stoker_passes(dir, corpus, o.repeat));
  STOKER_ASSIGN_OR_RETURN(std::vector<Pass> theirs,
                          peer_passes(o, dir, docs, node_modules->parent_path()));
  Comparison cmp;
  if (ours.size() != theirs.size()) cmp.differ("the peer ran " + std::to_string(theirs.size()) + " passes");
  for (std::size_t p = 0; p < std::min(ours.size(), theirs.size()); ++p) {
    std::printf("  pass %zu  stoker %.3f s   Rust %.3f s\n", p + 1, ours[p].seconds, theirs[p].seconds);
    for (std::size_t i = 0; i < corpus.docs.size(); ++i) {
      cmp.compared();
      const Digest a = ours[p].digests[i];
      const Digest b = i < theirs[p].digests.size() ? theirs[p].digests[i] : Digest{-1, 0};
      if (a != b)
        cmp.differ(format("pass %zu document %zu (%.40s...): stoker %lld ids (hash %08x), Rust "
                          "%lld ids (hash %08x)", p + 1, i, corpus.docs[i].c_str(),
                          static_cast<long long>(a.first), a.second,
                          static_cast<long long>(b.first), b.second));
    }
  }
  const Pass& s = best(ours);
  const Pass& r = best(theirs);
  std::printf("stoker:         %lld tokens in %.3f s = %.0f tokens/s (%.1f MB/s)\n",
              static_cast<long long>(tokens(s)), s.seconds, tokens(s) / s.seconds, mb / s.seconds);
  std::printf("HF tokenizers:  %lld tokens in %.3f s = %.0f tokens/s (%.1f MB/s)\n",
              static_cast<long long>(tokens(r)), r.seconds, tokens(r) / r.seconds, mb / r.seconds);
  return finish(cmp, "documents x timed passes (token count + id hash)",
                "HF tokenizers (Rust)", r.seconds / s.seconds);
}

}  // namespace stoker::bench
