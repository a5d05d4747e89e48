#include "stoker/pipeline/fingerprint.h"

#include <cstdio>

#include "stoker/base/hash.h"
#include "stoker/pipeline/loader_config.h"

namespace stoker::pipeline {
namespace {

// FNV-1a, 64 bits (base/hash.h): a consistency check between a state and a run, not a security
// boundary (whoever can write the state file can write any fingerprint into it).
std::string hash_hex(std::string_view text, int digits) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(fnv1a64(text)));
  return std::string(buf + 16 - digits);
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

Fingerprint order_fingerprint(const LoaderConfig& c, const DataIdentity& data,
                              const ModelIdentity& model) {
  Fingerprint fp;
  // data: the records as their source identifies them (where, which version, how many).
  fp.fields.emplace_back("data", std::to_string(data.records) + ":" + hash_hex(data.identity, 16));
  fp.fields.emplace_back("seed", std::to_string(c.seed));
  if (c.packing.batching == Batching::kFixed) {
    fp.fields.emplace_back("batch_size", std::to_string(c.batch_size));
  } else {
    std::string p = c.packing.batching == Batching::kPack ? "pack" : "budget";
    p += ":" + std::to_string(c.pack_capacity()) + ":" + std::to_string(c.packing.window);
    if (c.packing.batching == Batching::kPack) {
      const bool megatron = c.packing.format == batch::PackFormat::kMegatron;
      p += std::string(megatron ? ":megatron:" : ":hf:") + std::to_string(c.pack_align());
    }
    fp.fields.emplace_back("packing", p);
  }
  fp.fields.emplace_back("max_length", std::to_string(c.max_length) + (c.truncate ? ":cut" : ""));
  // model: what decides token counts (the sample lengths that max_length and packing see), as
  // the model's family says. A family name outside the value alphabet is hashed whole.
  std::string family = model.family;
  if (!Fingerprint::valid_value(family + ":00000000")) family = "family-" + hash_hex(family, 8);
  fp.fields.emplace_back("model", family + ":" + hash_hex(model.key, 8));
  return fp;
}

}  // namespace stoker::pipeline
