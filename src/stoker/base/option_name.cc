#include "stoker/base/option_name.h"

#include <atomic>

namespace stoker {
namespace {

std::atomic<OptionStyle> g_style{OptionStyle::kCli};

}  // namespace

void set_option_style(OptionStyle style) { g_style.store(style, std::memory_order_relaxed); }

OptionStyle option_style() { return g_style.load(std::memory_order_relaxed); }

std::string option_name(std::string_view python, std::string_view flag) {
  return std::string(option_style() == OptionStyle::kPython ? python : flag);
}

}  // namespace stoker
