// Template: a Jinja template compiled once (parse_template) and rendered many times, with the
// semantics of Python jinja2 3.1 under Hugging Face's chat-template environment
// (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks, loop controls, HF's tojson,
// raise_exception, strftime_now, {% generation %} spans). What the parser does not support
// fails at load with line:column; a render fails with a reason and the line:column it failed at
// (raise_exception, undefined values used wrongly, type errors, a limit reached).
// Rendering is sandboxed: the template sees only the variables given, cannot mutate them, and is
// bounded in output bytes, loop iterations, call depth and evaluation steps.
// Thread-safety: a Template is immutable; render() may be called from many threads at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "stoker/base/result.h"
#include "stoker/jinja/value.h"

namespace stoker::jinja {

namespace detail {
struct Program;
}

// Byte offsets [begin, end) into the rendered text.
struct Span {
  std::size_t begin = 0, end = 0;
  bool operator==(const Span&) const = default;
};

struct Rendered {
  std::string text;
  // One span per {% generation %} block, as transformers records them (in bytes instead of
  // characters): the block's text position in the output; a block rendered before anything else
  // was output is not recorded (transformers' tracker is inactive until then).
  std::vector<Span> generation;
};

struct RenderLimits {
  std::size_t max_output_bytes = 16u << 20;     // the rendered text (and any string built)
  std::int64_t max_loop_iterations = 1'000'000; // all for-loop iterations of one render
  int max_call_depth = 100;                     // macro/caller calls nested in each other
  std::int64_t max_steps = 20'000'000;          // expression evaluations of one render
  std::size_t max_items = 1'000'000;            // elements of a list built by the template
};

struct RenderOptions {
  RenderLimits limits;
  // strftime_now's clock: returns the local time to format. Empty: the system clock.
  std::function<std::tm()> clock;
};

// Variables for one render, in the order jinja2 would see them (later ones override earlier
// ones with the same name).
using Variables = std::vector<std::pair<std::string, Value>>;

class Template {
 public:
  struct Info {
    bool has_generation = false;        // the template has {% generation %} blocks
    std::vector<std::string> variables;  // every name the template reads (for diagnostics)
  };

  Result<Rendered> render(const Variables& variables, const RenderOptions& options = {}) const;
  const Info& info() const { return info_; }

  Template(Template&&) noexcept = default;
  Template& operator=(Template&&) noexcept = default;
  ~Template();

 private:
  friend Result<Template> parse_template(std::string_view source);
  Template() = default;
  std::shared_ptr<const detail::Program> program_;
  Info info_;
};

// Compiles a template. Errors: InvalidArgument "template error at LINE:COL: reason" for
// syntax errors, unknown filters/tests, and constructs stoker does not implement.
Result<Template> parse_template(std::string_view source);

}  // namespace stoker::jinja
