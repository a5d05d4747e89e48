// The option table as text: each command's --help sections and the README's table.
#include <cstdio>
#include <string>
#include <vector>

#include "stoker/config/build.h"
#include "stoker/config/schema.h"

namespace stoker::config {
namespace {

constexpr std::size_t kWidth = 98;   // help lines
constexpr std::size_t kIndent = 25;  // where the help text starts

std::string meta(const OptionSpec& o) {
  switch (o.kind) {
    case Kind::kBool: return "";
    case Kind::kInt:
    case Kind::kUInt: return "N";
    case Kind::kBytes: return o.cli_unit == (std::int64_t{1} << 20) ? "MB" : "SIZE";
    case Kind::kNumber: return "X";
    case Kind::kText: return "TEXT";
    case Kind::kPath: return "PATH";
    case Kind::kList: return "PATH";
    case Kind::kChoice: {
      if (!o.switch_sets.empty()) return "";
      std::string out;
      for (std::string_view c : o.choices) {  // piece by piece: GCC 12's -Wrestrict false positive
        if (!out.empty()) out += '|';
        out.append(c);
      }
      return out;
    }
    case Kind::kState: return "STATE";
  }
  return "";
}

// "(default 8; 1..65536)"-style details after the help sentence.
std::string details(const OptionSpec& o, Command c, const Machine* m) {
  std::vector<std::string> parts;
  const bool serving = c == kServe || c == kPyServe;
  std::string def = o.default_for(c, serving);
  if (!def.empty() && o.kind != Kind::kBool) {
    if (o.cli_unit != 1 && m != nullptr) {  // shown in the flag's unit
      Result<Value> v = parse_text(o, def, o.name, *m);
      if (v.ok()) def = std::to_string(v->i / o.cli_unit);
    }
    if (o.switch_sets.empty()) parts.push_back("default " + def);
  }
  if (o.kind == Kind::kInt || o.kind == Kind::kBytes || o.kind == Kind::kNumber) {
    if (m != nullptr) {
      std::string r = range_text(o, *m, o.cli_unit);
      if (o.also != kNoAlso) r = std::to_string(o.also) + " (" + std::string(o.also_means) + ") or " + r;
      parts.push_back(r);
    }
  }
  if (!o.env.empty()) parts.push_back("else $" + std::string(o.env));
  if (o.model_folder) parts.push_back("model folder's stoker.json may set it");
  if (o.kind == Kind::kList && !o.positional) parts.push_back("repeatable");
  std::string out;
  for (const std::string& p : parts) {
    if (!out.empty()) out += "; ";
    out += p;
  }
  return out.empty() ? out : " (" + out + ")";
}

void wrap(std::string& out, std::string head, const std::string& text) {
  std::string line = head;
  if (line.size() + 1 > kIndent) {
    out += line + "\n";
    line.clear();
  }
  line.resize(kIndent, ' ');
  std::size_t start = 0;
  bool first = true;
  while (start < text.size()) {
    std::size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (!first && line.size() + 1 + word.size() > kWidth) {
      out += line + "\n";
      line.assign(kIndent, ' ');
      first = true;
    }
    if (!first) line += ' ';
    line += word;
    first = false;
    start = end + 1;
  }
  out += line + "\n";
}

std::string commands_text(Commands cs) {
  std::string out;
  for (Command c : kAllCommands) {
    if ((cs & c) == 0) continue;
    if (!out.empty()) out += ", ";
    out.append(command_name(c));
  }
  return out;
}

std::string cell(std::string text) {
  std::string out;
  for (char c : text) out += c == '|' ? std::string("\\|") : std::string(1, c);
  return out;
}

}  // namespace

std::string help_text(Command command) {
  const Machine& m = Machine::current();
  std::string out;
  std::string group;
  for (const OptionSpec& o : options()) {
    if (!o.takes(command) || o.flag.empty() || o.positional) continue;
    if (o.group != group) {
      group = std::string(o.group);
      out += "\n" + group + ":\n";
    }
    std::string head = "  --" + std::string(o.flag);
    const std::string mt = meta(o);
    if (!mt.empty()) head += " " + mt;
    wrap(out, head, std::string(o.help) + details(o, command, &m));
  }
  return out;
}

std::string markdown_table() {
  std::string out =
      "| option (Python) | flag | type | range / choices | default | commands | also from | "
      "meaning |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n";
  for (const OptionSpec& o : options()) {
    std::string type, range;
    switch (o.kind) {
      case Kind::kBool: type = "bool"; break;
      case Kind::kInt: type = "int"; break;
      case Kind::kUInt: type = "uint64"; break;
      case Kind::kBytes: type = "bytes"; break;
      case Kind::kNumber: type = "number"; break;
      case Kind::kText: type = "str"; break;
      case Kind::kPath: type = "path"; break;
      case Kind::kList: type = "paths"; break;
      case Kind::kChoice: type = "choice"; break;
      case Kind::kState: type = "state dict"; break;
    }
    if (o.kind == Kind::kInt || o.kind == Kind::kBytes) {
      range = std::to_string(o.lo) + " .. " + std::to_string(o.hi);
      if (!o.hi_rule.empty()) range += " (at most " + std::string(o.hi_rule) + ")";
      if (o.also != kNoAlso) range = std::to_string(o.also) + " (" + std::string(o.also_means) + ") or " + range;
    } else if (o.kind == Kind::kNumber) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%g .. %g", o.dlo, o.dhi);
      range = buf;
    } else if (o.kind == Kind::kChoice) {
      for (std::string_view c : o.choices) {
        if (!range.empty()) range += ", ";
        range.append(c);
      }
    }
    if (o.nullable) type += " or None";
    std::string flag;
    if (o.positional) flag = "DATA ...";
    else if (!o.flag.empty()) flag = "`--" + std::string(o.flag) + "`";
    if (!o.switch_sets.empty()) flag += " (sets " + std::string(o.switch_sets) + ")";
    if (o.cli_unit == (std::int64_t{1} << 20)) flag += " (MiB)";
    std::string def(o.def);
    if (!o.def_serve.empty()) def += (def.empty() ? "" : "; ") + std::string("serve: ") + std::string(o.def_serve);
    std::string also;
    if (!o.env.empty()) also = "`$" + std::string(o.env) + "`";
    if (o.model_folder) also += (also.empty() ? "" : ", ") + std::string("stoker.json");
    if (!o.unit_name.empty()) flag += "; Python also `" + std::string(o.unit_name) + "` (MiB)";
    out += "| `" + std::string(o.name) + "` | " + cell(flag) + " | " + type + " | " +
           cell(range) + " | " + cell(def) + " | " + commands_text(o.commands) + " | " + also +
           " | " + cell(std::string(o.help)) + " |\n";
  }
  return out;
}

}  // namespace stoker::config
