#include "stoker/jinja/template.h"

#include "stoker/jinja/detail/interp.h"
#include "stoker/jinja/detail/parser.h"
#include "stoker/jinja/detail/pytext.h"

namespace stoker::jinja {
namespace {

// jinja2 reads a template as a Python str: bytes that are not UTF-8 never reach it.
Status check_utf8(std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    std::size_t len = 1;
    const std::uint32_t cp = detail::decode_utf8(s, i, &len);
    if ((len == 1 && cp >= 0x80) || (cp >= 0xD800 && cp <= 0xDFFF) || (len == 3 && cp < 0x800) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (len == 2 && cp < 0x80))
      return invalid_argument("template is not valid UTF-8 (byte " + std::to_string(i) + ")");
    i += len;
  }
  return ok_status();
}

}  // namespace

Template::~Template() = default;

Result<Template> parse_template(std::string_view source) {
  STOKER_RETURN_IF_ERROR(check_utf8(source));
  detail::ParseLimits limits;
  STOKER_ASSIGN_OR_RETURN(auto program, detail::parse_program(source, limits));
  Template t;
  t.info_.has_generation = program->has_generation;
  t.info_.variables = program->names;
  t.program_ = std::move(program);
  return t;
}

Result<Rendered> Template::render(const Variables& variables, const RenderOptions& options) const {
  detail::Interp interp(*program_, variables, options);
  return interp.run();
}

}  // namespace stoker::jinja
