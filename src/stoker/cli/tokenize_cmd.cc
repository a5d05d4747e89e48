// `stoker tokenize --model DIR [--json] [--decode]`: reads text on stdin (all of it, as one
// string), prints its token ids space-separated (`--json`: a JSON array), or with `--decode` one
// decoded piece per token (JSON strings, so spaces, newlines and broken UTF-8 stay visible).
// The tokenizer is found by every command's rule (options_cli.h): --tokenizer DIR, else the
// model's own (a folder's files; for a preset, the Qwen tokenizer installed with stoker). A
// --model folder with tokenizer.json but no model config (a bare tokenizer folder) works too.
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <string>

#include "stoker/base/json_text.h"
#include "stoker/cli/args.h"
#include "stoker/cli/commands.h"
#include "stoker/cli/options_cli.h"
#include "stoker/model/family.h"
#include "stoker/model/model_config.h"
#include "stoker/text/tokenizer.h"

namespace stoker::cli {

int run_tokenize(int argc, char** argv) {
  auto args = Args::parse(argc, argv, {"model", "tokenizer"}, {"json", "decode", "help"});
  if (!args.ok()) return report("tokenize", args.error());
  if (args->has("help") || !args->positional().empty()) {
    std::fprintf(args->has("help") ? stdout : stderr,
                 "usage: stoker tokenize [--model M] [--tokenizer DIR] [--json] [--decode] < text\n"
                 "  --model M        qwen2-vl | qwen2.5-vl (default) | qwen3-vl | a Hugging Face\n"
                 "                   model folder (or any folder with tokenizer.json)\n"
                 "  --tokenizer DIR  folder with tokenizer.json (default: the model folder; for\n"
                 "                   a preset, the Qwen tokenizer installed with stoker)\n"
                 "  --json    print a JSON array of ids\n"
                 "  --decode  print each token decoded, as a JSON string per line\n");
    return args->has("help") ? 0 : 2;
  }
  std::string dir = args->get("tokenizer");
  const std::string model = args->get("model", std::string(model::kDefaultModel));
  std::error_code ec;
  if (dir.empty() && std::filesystem::is_regular_file(std::filesystem::path(model) / "tokenizer.json", ec)) {
    dir = model;  // a folder with the files: no need to read a model config
  }
  if (dir.empty()) {
    auto m = model::load_model(model);
    if (!m.ok()) return report("tokenize", m.error());
    auto d = tokenizer_dir_from_flags(*args, *m);
    if (!d.ok()) return report("tokenize", d.error());
    dir = *d;
  }
  auto tok = text::Tokenizer::load(dir);
  if (!tok.ok()) return report("tokenize", tok.error());
  std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  const std::vector<text::TokenId> ids = (*tok)->encode(input);
  std::string out;
  if (args->has("decode")) {
    for (text::TokenId id : ids)
      out += std::to_string(id) + "\t" + json_string((*tok)->decode({&id, 1})) + "\n";
  } else if (args->has("json")) {
    out = "[";
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (i) out += ',';
      out += std::to_string(ids[i]);
    }
    out += "]\n";
  } else {
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (i) out += ' ';
      out += std::to_string(ids[i]);
    }
    out += "\n";
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace stoker::cli
