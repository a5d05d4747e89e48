#include "stoker/pipeline/fingerprint.h"

#include <climits>
#include <cstdio>
#include <cstdlib>

#include "stoker/model/model_config.h"
#include "stoker/pipeline/loader_config.h"

namespace stoker::pipeline {
namespace {

// FNV-1a, 64 bits: a consistency check between a state and a run, not a security boundary
// (whoever can write the state file can write any fingerprint into it).
class Hash {
 public:
  Hash& add(std::string_view s) {
    for (unsigned char c : s) h_ = (h_ ^ c) * 1099511628211ull;
    h_ = (h_ ^ 0xff) * 1099511628211ull;  // field separator: ("ab","c") != ("a","bc")
    return *this;
  }
  Hash& add(std::uint64_t v) { return add(std::to_string(v)); }
  std::string hex(int digits) const {
    char buf[24];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h_));
    return std::string(buf + 16 - digits);
  }

 private:
  std::uint64_t h_ = 14695981039346656037ull;
};

std::string canonical(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) != nullptr ? std::string(buf) : path;
}

std::string base_name(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

const std::string* Fingerprint::find(std::string_view name) const {
  for (const auto& [k, v] : fields) {
    if (k == name) return &v;
  }
  return nullptr;
}

bool Fingerprint::valid_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxName) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || c == '_')) return false;
  }
  return true;
}

bool Fingerprint::valid_value(std::string_view value) {
  if (value.empty() || value.size() > kMaxValue) return false;
  for (char c : value) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == ':' || c == '/' || c == '+' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::vector<FieldDiff> differences(const Fingerprint& saved, const Fingerprint& now) {
  std::vector<FieldDiff> out;
  for (const auto& [k, v] : now.fields) {
    const std::string* s = saved.find(k);
    if (s == nullptr) out.push_back({k, "", v});
    else if (*s != v) out.push_back({k, *s, v});
  }
  for (const auto& [k, v] : saved.fields) {
    if (now.find(k) == nullptr) out.push_back({k, v, ""});
  }
  return out;
}

std::string describe(const std::vector<FieldDiff>& diffs) {
  std::string out;
  for (const FieldDiff& d : diffs) {
    if (!out.empty()) out += "; ";
    out += d.name + ": the state's " + (d.saved.empty() ? "(none)" : d.saved) + ", this run's " +
           (d.now.empty() ? "(none)" : d.now);
  }
  return out;
}

Fingerprint order_fingerprint(const LoaderConfig& c, const model::ModelConfig& model,
                              std::size_t vocab_size, const std::vector<DataFile>& files,
                              std::string_view mixture_hash) {
  Fingerprint fp;
  // data: every manifest, in order — where it is and which version (size, records; a remote
  // one's cached copy is named by the hash of URI + ETag + size).
  Hash data;
  std::uint64_t records = 0;
  for (const DataFile& f : files) {
    data.add(f.remote ? f.name : canonical(f.local_path));
    data.add(f.remote ? base_name(f.local_path) : std::string());
    data.add(f.size_bytes).add(f.records);
    records += f.records;
  }
  fp.fields.emplace_back("data", std::to_string(records) + ":" + data.hex(16));
  if (!mixture_hash.empty()) {
    fp.fields.emplace_back("mixture", Hash().add(mixture_hash).hex(16));
  }
  fp.fields.emplace_back("seed", std::to_string(c.seed));
  if (c.packing.batching == Batching::kFixed) {
    fp.fields.emplace_back("batch_size", std::to_string(c.batch_size));
  } else {
    std::string p = c.packing.batching == Batching::kPack ? "pack" : "budget";
    p += ":" + std::to_string(c.pack_capacity()) + ":" + std::to_string(c.packing.window);
    if (c.packing.batching == Batching::kPack) {
      const bool megatron = c.packing.format == batch::PackFormat::kMegatron;
      p += std::string(megatron ? ":megatron:" : ":hf:") +
           std::to_string(megatron ? c.packing.align : 1);
    }
    fp.fields.emplace_back("packing", p);
  }
  fp.fields.emplace_back("max_length", std::to_string(c.max_length) + (c.truncate ? ":cut" : ""));
  // model: what decides token counts (the sample lengths that max_length and packing see).
  const image::ImageProcessorConfig& im = model.image;
  Hash m;
  m.add(std::string(model::family_name(model.family)))
      .add(static_cast<std::uint64_t>(im.patch_size))
      .add(static_cast<std::uint64_t>(im.temporal_patch_size))
      .add(static_cast<std::uint64_t>(im.merge_size))
      .add(static_cast<std::uint64_t>(im.min_pixels))
      .add(static_cast<std::uint64_t>(im.max_pixels))
      .add(std::string(im.do_resize ? "resize" : "keep"))
      .add(std::string(im.apply_exif_orientation ? "exif" : "raw"))
      .add(static_cast<std::uint64_t>(im.resize_rules))
      .add(static_cast<std::uint64_t>(model.image_token_id))
      .add(static_cast<std::uint64_t>(model.video_token_id))
      .add(static_cast<std::uint64_t>(model.vision_start_token_id))
      .add(static_cast<std::uint64_t>(model.vision_end_token_id))
      .add(static_cast<std::uint64_t>(model.tokens_per_second))
      .add(static_cast<std::uint64_t>(vocab_size));
  Result<text::TemplateKind> kind = model::chat_template_kind(model);
  m.add(kind.ok() ? static_cast<std::uint64_t>(*kind) : ~std::uint64_t{0});
  fp.fields.emplace_back("model", std::string(model::family_name(model.family)) + ":" + m.hex(8));
  return fp;
}

}  // namespace stoker::pipeline
