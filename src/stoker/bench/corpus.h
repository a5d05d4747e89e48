// The text `stoker bench tokenizer` encodes: a user's file (--corpus) or, by default, a corpus
// made at run time from what this machine has installed — English prose (package documentation
// under /usr/share/doc), source code (C/C++ headers under /usr/include, Python modules under
// /usr/lib/python3), real translations in ~18 languages (gettext catalogues under
// /usr/share/locale: Chinese, Japanese, Korean, Russian, Arabic, Hindi, Thai, ...), and SFT chat
// turns (special tokens, emoji) wrapped around such text. Those files carry their packages'
// licences: they are read, never copied into the repository. Same machine + seed → same corpus.
// Thread-compatible. Errors: NotFound (no file / no source on this machine), InvalidArgument
// (a --corpus that is not UTF-8 or has no text).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::bench {

struct Corpus {
  std::vector<std::string> docs;
  std::size_t bytes = 0;
  std::string description;  // what it is made of, for the header line
};

// Documents of 800–6800 bytes (cut at line ends) until `target_bytes`.
Result<Corpus> machine_corpus(std::size_t target_bytes, std::uint64_t seed);

// A user's corpus: a .jsonl file (one JSON string, or an object with "text", per line) is one
// document per line; any other file is UTF-8 text split into ~4 KB documents at blank lines.
// Stops after `max_bytes` (0: the whole file).
Result<Corpus> file_corpus(const std::string& path, std::size_t max_bytes);

bool valid_utf8(std::string_view s);

}  // namespace stoker::bench
