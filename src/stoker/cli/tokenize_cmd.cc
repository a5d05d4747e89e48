// `stoker tokenize --model DIR [--json] [--decode]`: reads text on stdin (all of it, as one
// string), prints its token ids space-separated (`--json`: a JSON array), or with `--decode` one
// decoded piece per token (JSON strings, so spaces, newlines and broken UTF-8 stay visible).
// DIR is a folder with tokenizer.json (+ tokenizer_config.json); model presets carry none.
#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>

#include "stoker/base/json_text.h"
#include "stoker/cli/args.h"
#include "stoker/cli/commands.h"
#include "stoker/text/tokenizer.h"

namespace stoker::cli {

int run_tokenize(int argc, char** argv) {
  auto args = Args::parse(argc, argv, {"model"}, {"json", "decode", "help"});
  if (!args.ok()) return report("tokenize", args.error());
  if (args->has("help") || !args->has("model")) {
    std::fprintf(stderr,
                 "usage: stoker tokenize --model DIR [--json] [--decode] < text\n"
                 "  DIR: folder with tokenizer.json (e.g. a Hugging Face model snapshot)\n"
                 "  --json    print a JSON array of ids\n"
                 "  --decode  print each token decoded, as a JSON string per line\n");
    return args->has("help") ? 0 : 2;
  }
  auto tok = text::Tokenizer::load(args->get("model"));
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
