// The audio families' stock chat templates (qwen_omni_family.cc), for tests that check them
// byte for byte against the copies in tests/jinja/templates/ (PROVENANCE.md there).
#pragma once

#include <string_view>

namespace stoker::model {

std::string_view qwen25_omni_template();  // Qwen/Qwen2.5-Omni-7B
std::string_view qwen2_audio_template();  // Qwen/Qwen2-Audio-7B-Instruct (processor default)

}  // namespace stoker::model
