// The non-data objects a template can hold in a Value: namespaces, callables (macros, a call
// block's caller, global functions, bound methods of str/dict/list, loop.cycle, joiner, cycler)
// and the `loop` variable. They live only during one render.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "stoker/jinja/detail/builtins.h"
#include "stoker/jinja/value.h"

namespace stoker::jinja::detail {

struct MacroDef;
struct Scope;

struct NamespaceObj final : Obj {
  std::shared_ptr<DictObj> attrs = std::make_shared<DictObj>();
};

enum class CallKind : std::uint8_t {
  kMacro, kCaller, kGlobal, kMethod, kLoopCycle, kLoopChanged, kJoiner, kCyclerNext,
  kCyclerReset,
};

struct CallableObj final : Obj {
  CallKind kind = CallKind::kGlobal;
  std::string name;                 // for messages: macro name, "str.split", ...
  const MacroDef* macro = nullptr;  // kMacro, kCaller
  Scope* closure = nullptr;         // kCaller: the scope the call block ran in
  std::shared_ptr<bool> alive;      // kCaller: false once the call block has finished
  Global global = Global::kNone;    // kGlobal
  int method = -1;                  // kMethod
  Value self;                       // kMethod: the bound object; kLoopCycle/Changed: the loop
  std::shared_ptr<std::vector<Value>> state;  // joiner/cycler/changed: mutable state
};

struct LoopObj final : Obj {
  std::shared_ptr<ListObj> items;  // the iterated (filtered) items
  std::int64_t index0 = 0;
  int depth0 = 0;
  std::shared_ptr<std::vector<Value>> changed_state = std::make_shared<std::vector<Value>>();
};

}  // namespace stoker::jinja::detail
