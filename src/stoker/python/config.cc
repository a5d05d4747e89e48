// Keyword options → Settings through the option schema (config/): each keyword is looked up by its
// Python name among the options of Loader(...) or serve(...), its value checked by the option's
// type and range before any narrowing cast, then config::Builder adds the model folder's
// stoker.json, the environment and the defaults and checks the options against each other. The
// package checks each option first too (stoker/_options.py, built from option_schema()), because
// _stoker can be called directly and a wrapped int is a silently wrong config. Errors are
// InvalidArgument naming the Python argument and the value.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "stoker/config/build.h"
#include "stoker/python/bindings.h"

namespace stoker::python {
namespace {

using config::Kind;
using config::OptionSpec;

[[noreturn]] void bad(const std::string& key, const std::string& want, py::handle v) {
  std::string shown = py::repr(v).cast<std::string>();
  if (shown.size() > 80) shown = shown.substr(0, 77) + "...";
  raise(invalid_argument(key + " must be " + want + ", got " + shown + " (" +
                         Py_TYPE(v.ptr())->tp_name + ")"));
}

std::string int_range(const OptionSpec& o, const config::Machine& m) {
  std::string r = "an int in " + config::range_text(o, m);
  if (o.also != config::kNoAlso) {
    r = std::to_string(o.also) + " (" + std::string(o.also_means) + ") or " + r;
  }
  return r;
}

// The option's unit keyword (OptionSpec::unit_name: arena_mb) as the option's Value: an int in
// the option's range counted in its units, as the CLI flag counts them.
config::Value convert_units(const OptionSpec& o, py::handle v, const config::Machine& m) {
  const std::string key(o.unit_name);
  const std::string want = "an int in " + config::range_text(o, m, o.cli_unit);
  if (!PyLong_Check(v.ptr()) || PyBool_Check(v.ptr())) bad(key, want, v);
  int overflow = 0;
  const long long x = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
  const std::int64_t lo = (o.lo + o.cli_unit - 1) / o.cli_unit;
  if (overflow != 0 || x < lo || x > o.upper(m).value / o.cli_unit) bad(key, want, v);
  config::Value out;
  out.i = x * o.cli_unit;
  return out;
}

// One keyword's value as the option's Value: its type first, then its range or choices.
config::Value convert(const OptionSpec& o, py::handle v, const config::Machine& m) {
  const std::string key(o.name);
  config::Value out;
  switch (o.kind) {
    case Kind::kBool:
      if (!PyBool_Check(v.ptr())) bad(key, "a bool", v);
      out.b = v.ptr() == Py_True;
      return out;
    case Kind::kInt:
    case Kind::kBytes: {
      const std::string want = int_range(o, m);
      if (!PyLong_Check(v.ptr()) || PyBool_Check(v.ptr())) bad(key, want, v);
      int overflow = 0;
      const long long x = PyLong_AsLongLongAndOverflow(v.ptr(), &overflow);
      const bool also = o.also != config::kNoAlso && x == o.also;
      if (overflow != 0 || (!also && (x < o.lo || x > o.upper(m).value))) bad(key, want, v);
      out.i = x;
      return out;
    }
    case Kind::kUInt: {
      const std::string want = "an int in [0, 18446744073709551615]";
      if (!PyLong_Check(v.ptr()) || PyBool_Check(v.ptr())) bad(key, want, v);
      const unsigned long long x = PyLong_AsUnsignedLongLong(v.ptr());
      if (PyErr_Occurred()) {  // negative or too large
        PyErr_Clear();
        bad(key, want, v);
      }
      out.u = x;
      return out;
    }
    case Kind::kNumber: {
      char want[96];
      std::snprintf(want, sizeof want, "a number in [%g, %g]", o.dlo, o.dhi);
      if (PyBool_Check(v.ptr()) || !(PyFloat_Check(v.ptr()) || PyLong_Check(v.ptr()))) {
        bad(key, want, v);
      }
      const double x = PyFloat_AsDouble(v.ptr());
      if (PyErr_Occurred()) {  // an int too large for a double
        PyErr_Clear();
        bad(key, want, v);
      }
      if (!std::isfinite(x) || x < o.dlo || x > o.dhi) bad(key, want, v);
      out.d = x;
      return out;
    }
    case Kind::kText:
    case Kind::kPath:
      if (!PyUnicode_Check(v.ptr())) bad(key, "a str", v);
      out.s = v.cast<std::string>();
      if (out.s.empty()) bad(key, "a non-empty str", v);
      return out;
    case Kind::kList: {
      const char* want = "a str or a list of non-empty strs";
      if (PyUnicode_Check(v.ptr())) {
        out.list = {v.cast<std::string>()};
      } else {
        if (!PyList_Check(v.ptr()) && !PyTuple_Check(v.ptr())) bad(key, want, v);
        for (py::handle item : v) {
          if (!PyUnicode_Check(item.ptr())) bad(key, want, v);
          out.list.push_back(item.cast<std::string>());
        }
      }
      for (const std::string& s : out.list) {
        if (s.empty()) bad(key, want, v);
      }
      return out;
    }
    case Kind::kChoice: {
      std::string want = "one of";
      for (std::string_view c : o.choices) want += std::string(want == "one of" ? " " : ", ") + "'" + std::string(c) + "'";
      if (!PyUnicode_Check(v.ptr())) bad(key, want, v);
      out.s = v.cast<std::string>();
      for (std::string_view c : o.choices) {
        if (c == out.s) return out;
      }
      bad(key, want, v);
    }
    case Kind::kState:
      break;
  }
  raise(invalid_argument(key + " is read by the stoker package, not by _stoker"));
}

// A parsed value as Python has it.
py::object to_python(const OptionSpec& o, const config::Value& v) {
  switch (o.kind) {
    case Kind::kBool: return py::bool_(v.b);
    case Kind::kInt:
    case Kind::kBytes: return py::int_(v.i);
    case Kind::kUInt: return py::int_(v.u);
    case Kind::kNumber: return py::float_(v.d);
    case Kind::kList: return py::cast(v.list);
    default: return py::str(v.s);
  }
}

py::object default_value(const OptionSpec& o, std::string_view def) {
  if (def.empty()) return py::none();
  Result<config::Value> v = config::parse_text(o, def, o.name, config::Machine::current());
  if (!v.ok()) return py::none();
  return to_python(o, *v);
}

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kUInt: return "uint";
    case Kind::kBytes: return "bytes";
    case Kind::kNumber: return "number";
    case Kind::kText: return "text";
    case Kind::kPath: return "path";
    case Kind::kList: return "list";
    case Kind::kChoice: return "choice";
    case Kind::kState: return "state";
  }
  return "?";
}

}  // namespace

config::Settings settings_from_keywords(const py::dict& kw, config::Command command) {
  const char* who = command == config::kPyServe ? "serve" : "Loader";
  config::Builder b(command, config::Frontend::kPython);
  for (auto item : kw) {
    if (!PyUnicode_Check(item.first.ptr())) bad("an option name", "a str", item.first);
    const std::string key = item.first.cast<std::string>();
    const OptionSpec* o = config::find_option(key, command);
    if (const OptionSpec* u = o == nullptr ? config::find_unit_option(key, command) : nullptr) {
      // The option in its units (arena_mb): one option with two spellings, so not both.
      if (kw.contains(std::string(u->name))) {
        raise(invalid_argument(std::string(who) + ": " + key + " and " + std::string(u->name) +
                               " are the same option (MiB / bytes): give one"));
      }
      if (item.second.is_none()) continue;
      check(b.set(*u, convert_units(*u, item.second, b.machine())));
      continue;
    }
    if (o == nullptr || o->set == nullptr) {
      raise(invalid_argument(std::string(who) + ": unknown option '" + key + "'"));
    }
    if (item.second.is_none()) {
      if (!o->nullable) bad(key, "not None", item.second);
      continue;  // unset: the model folder's, the environment's or the default
    }
    check(b.set(*o, convert(*o, item.second, b.machine())));
  }
  return unwrap(b.finish());
}

pipeline::LoaderConfig loader_config(const py::dict& kw) {
  return settings_from_keywords(kw, config::kPyLoader).loader;
}

py::object option_env(const std::string& name) {
  const OptionSpec* o = config::find_option(name, config::kPyLoader);
  if (o == nullptr) o = config::find_option(name, config::kPyServe);
  if (o == nullptr) raise(invalid_argument("no option '" + name + "'"));
  std::optional<config::Value> v = unwrap(config::env_value(*o));
  return v ? to_python(*o, *v) : py::none();
}

py::list option_schema() {
  const config::Machine& m = config::Machine::current();
  py::list out;
  for (const OptionSpec& o : config::options()) {
    if ((o.commands & config::kPythonCommands) == 0) continue;
    py::dict d;
    d["name"] = std::string(o.name);
    d["flag"] = std::string(o.flag);
    d["kind"] = kind_name(o.kind);
    py::list commands;
    if (o.takes(config::kPyLoader)) commands.append("Loader");
    if (o.takes(config::kPyServe)) commands.append("serve");
    d["commands"] = commands;
    d["group"] = std::string(o.group);
    d["help"] = std::string(o.help);
    d["default"] = default_value(o, o.def);
    d["default_serve"] = default_value(o, o.def_serve.empty() ? o.def : o.def_serve);
    const config::Bound hi = o.upper(m);
    d["lo"] = o.kind == Kind::kUInt ? py::int_(0) : py::int_(o.lo);
    d["hi"] = o.kind == Kind::kUInt ? py::int_(std::numeric_limits<std::uint64_t>::max())
                                    : py::int_(hi.value);
    d["why"] = hi.why;
    d["dlo"] = o.dlo;
    d["dhi"] = o.dhi;
    py::list choices;
    for (std::string_view c : o.choices) choices.append(std::string(c));
    d["choices"] = choices;
    d["nullable"] = o.nullable;
    d["also"] = o.also == config::kNoAlso ? py::none() : py::object(py::int_(o.also));
    d["also_means"] = std::string(o.also_means);
    d["env"] = std::string(o.env);
    d["model_folder"] = o.model_folder;
    out.append(d);
    if (!o.unit_name.empty()) {  // the same option in its units (arena_mb), its range in them
      py::dict u = d.attr("copy")();
      u["name"] = std::string(o.unit_name);
      u["kind"] = "int";
      u["help"] = "the same option as " + std::string(o.name) + ", in MiB (as --" +
                  std::string(o.flag) + "); give one of the two";
      u["default"] = py::none();
      u["default_serve"] = py::none();
      u["lo"] = py::int_((o.lo + o.cli_unit - 1) / o.cli_unit);
      u["hi"] = py::int_(hi.value / o.cli_unit);
      u["nullable"] = true;
      out.append(u);
    }
  }
  return out;
}

}  // namespace stoker::python
