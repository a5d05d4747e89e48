#include "stoker/cli/options_cli.h"

#include <sys/stat.h>

#include <cstdio>
#include <map>
#include <string_view>
#include <vector>

#include "stoker/io/uri.h"

namespace stoker::cli {
namespace {

std::string shown(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 80)) out += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
  if (text.size() > 80) out += "...";
  return "'" + out + "'";
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

// Several data files are several arguments. `a.jsonl,b.jsonl` used to mean two files; now it is
// a file name. When no such file exists but every comma-separated piece does, say so — never
// guess (a manifest whose name has a comma must open).
Status check_comma_list(const std::string& data) {
  if (data.find(',') == std::string::npos || io::is_remote_uri(data) || exists(data)) {
    return ok_status();
  }
  std::vector<std::string> pieces;
  std::string_view rest = data;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(',');
    pieces.emplace_back(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  for (const std::string& p : pieces) {
    if (p.empty() || !exists(p)) return ok_status();  // the engine reports the missing file
  }
  std::string joined;
  for (const std::string& p : pieces) joined += " " + p;
  return invalid_argument("no file " + shown(data) + "; several data files are separate "
                          "arguments (DATA.jsonl MORE.jsonl ...):" + joined);
}

// The values given for option `o` (in command-line order; a switch: one empty value) into the
// builder: parsed by the option's type and range, naming the flag.
Status set_given(config::Builder& b, const config::OptionSpec& o,
                 const std::vector<std::string>& values, bool is_data) {
  if (o.kind == config::Kind::kBool) {
    config::Value v;
    v.b = true;
    return b.set(o, v);
  }
  if (!o.switch_sets.empty()) {
    config::Value v;
    v.s = std::string(o.switch_sets);
    return b.set(o, v);
  }
  if (o.kind == config::Kind::kList) {
    config::Value all;
    for (const std::string& text : values) {
      if (is_data) STOKER_RETURN_IF_ERROR(check_comma_list(text));
      STOKER_ASSIGN_OR_RETURN(config::Value one,
                              config::parse_text(o, text, config::display_name(o, config::Frontend::kCli),
                                                 b.machine()));
      all.list.push_back(std::move(one.list.front()));
    }
    return b.set(o, all);
  }
  return b.set_text(o, values.front());
}

}  // namespace

Result<config::Settings> parse_command_line(int argc, char** argv, config::Command command,
                                            bool* help) {
  *help = false;
  const std::string cmd(config::command_name(command));
  const config::OptionSpec* data = config::find_option("data", command);
  std::map<const config::OptionSpec*, std::vector<std::string>> given;  // in order
  std::vector<const config::OptionSpec*> order;
  for (int i = 0; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--help" || s == "-h") {
      *help = true;
      return config::Settings{};
    }
  }
  for (int i = 0; i < argc; ++i) {
    std::string s = argv[i];
    if (s.size() <= 2 || s.rfind("--", 0) != 0) {  // a data file
      if (data == nullptr) return invalid_argument("stoker " + cmd + " takes no argument " + shown(s));
      if (!given.count(data)) order.push_back(data);
      given[data].push_back(s);
      continue;
    }
    std::string name = s.substr(2), value;
    bool has_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    const config::OptionSpec* o = config::find_flag(name, command);
    if (o == nullptr) {
      return invalid_argument("unknown flag --" + name + " (stoker " + cmd + " --help lists them)");
    }
    const bool is_switch = o->kind == config::Kind::kBool || !o->switch_sets.empty();
    if (is_switch) {
      if (has_value) return invalid_argument("--" + name + " takes no value");
    } else if (!has_value) {
      if (i + 1 >= argc) return invalid_argument("--" + name + " needs a value");
      value = argv[++i];
      // "--model --batch-size 8": the value was forgotten; taking the next flag as it would
      // shift every later argument.
      if (value.size() > 2 && value.rfind("--", 0) == 0) {
        return invalid_argument("--" + name + " needs a value, got the flag " + value +
                                " (write --" + name + "=VALUE for a value that starts with --)");
      }
    }
    std::vector<std::string>& slot = given[o];
    if (!slot.empty() && o->kind != config::Kind::kList) {
      if (is_switch) return invalid_argument("--" + name + " given twice");
      return invalid_argument("--" + name + " given twice (" + shown(slot.front()) + ", then " +
                              shown(value) + "); it takes one value");
    }
    if (slot.empty()) order.push_back(o);
    slot.push_back(value);
  }
  config::Builder b(command, config::Frontend::kCli);
  for (const config::OptionSpec* o : order) {
    STOKER_RETURN_IF_ERROR(set_given(b, *o, given[o], o == data));
  }
  return b.finish();
}

SchemaFlagSets schema_flag_sets(config::Command command) {
  SchemaFlagSets out;
  for (const config::OptionSpec& o : config::options()) {
    if (!o.takes(command) || o.flag.empty() || o.positional) continue;
    const std::string flag(o.flag);
    if (o.kind == config::Kind::kBool || !o.switch_sets.empty()) out.switches.insert(flag);
    else if (o.kind == config::Kind::kList) out.repeats.insert(flag);
    else out.values.insert(flag);
  }
  return out;
}

Result<config::Settings> settings_from_args(const Args& args, config::Command command) {
  config::Builder b(command, config::Frontend::kCli);
  for (const config::OptionSpec& o : config::options()) {
    if (!o.takes(command) || o.flag.empty() || o.positional) continue;
    const std::string flag(o.flag);
    if (!args.has(flag)) continue;
    const std::vector<std::string> values =
        o.kind == config::Kind::kList ? args.get_all(flag) : std::vector<std::string>{args.get(flag)};
    STOKER_RETURN_IF_ERROR(set_given(b, o, values, /*is_data=*/false));
  }
  return b.finish();
}

std::string options_help(config::Command command) { return config::help_text(command); }

void warn_settings(const config::Settings& settings, const char* command) {
  if (settings.loader.trust_media_paths) {
    std::fprintf(stderr,
                 "stoker %s: WARNING: --trust-media-paths: local manifests may read ANY file this "
                 "user can read (media paths are not confined to the manifest's folder or "
                 "--media-root)\n",
                 command);
  }
}

Result<std::string> tokenizer_dir_from_flags(const Args& args, const model::ModelConfig& model) {
  std::string dir = args.get("tokenizer");
  if (!dir.empty()) return dir;
  return model::default_tokenizer_dir(model);
}

}  // namespace stoker::cli
