#include "stoker/model/family.h"

namespace stoker::model {

std::vector<const Family*> qwen_vl_families();  // qwen_vl_family.cc

namespace {

std::vector<const Family*>& registry() {
  static std::vector<const Family*> families = qwen_vl_families();
  return families;
}

}  // namespace

void register_family(const Family* family) { registry().push_back(family); }

Result<const Family*> family_for(const std::string& spec) {
  const auto& families = registry();
  for (auto it = families.rbegin(); it != families.rend(); ++it) {
    if ((*it)->claims(spec)) return *it;
  }
  std::string presets;
  for (const Family* f : families) {
    for (const std::string& p : f->presets()) presets += (presets.empty() ? "" : ", ") + p;
  }
  return not_found("'" + spec + "' is neither a model folder nor a preset (" + presets + ")");
}

Result<std::unique_ptr<Model>> open_model(const std::string& spec, const ModelOptions& options) {
  STOKER_ASSIGN_OR_RETURN(const Family* family, family_for(spec));
  return family->open(spec, options);
}

Result<std::shared_ptr<const ModelConfig>> load_config(const std::string& spec) {
  STOKER_ASSIGN_OR_RETURN(const Family* family, family_for(spec));
  return family->load_config(spec);
}

Result<std::string> default_tokenizer_dir(const std::string& spec) {
  STOKER_ASSIGN_OR_RETURN(const Family* family, family_for(spec));
  return family->default_tokenizer_dir(spec);
}

}  // namespace stoker::model
