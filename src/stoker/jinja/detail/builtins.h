// The names a template can use besides its variables: filters, tests, global functions, and the
// methods of str/dict/list values. The parser resolves filter and test names to ids at load
// (jinja2 too refuses an unknown filter when it compiles a template), so a missing one fails at
// load with its line:column; the interpreter dispatches on the ids.
#pragma once

#include <string_view>
#include <vector>

#include "stoker/jinja/value.h"

namespace stoker::jinja::detail {

enum class Filter : int {
  kAbs, kAttr, kCapitalize, kCenter, kCount, kDefault, kDictsort, kEscape, kFirst, kFloat,
  kForceescape, kFormat, kIndent, kInt, kItems, kJoin, kLast, kLength, kList, kLower, kMap,
  kMax, kMin, kReject, kRejectattr, kReplace, kReverse, kRound, kSafe, kSelect, kSelectattr,
  kSort, kString, kSum, kTitle, kTojson, kTrim, kUnique, kUpper, kWordcount, kBatch, kSlice,
  kTruncate, kStriptags, kGroupby,
};

enum class Test : int {
  kBoolean, kCallable, kDefined, kDivisibleby, kEq, kEscaped, kEven, kFalse, kFilter, kFloat,
  kGe, kGt, kIn, kInteger, kIterable, kLe, kLower, kLt, kMapping, kNe, kNone, kNumber, kOdd,
  kSameas, kSequence, kString, kTest, kTrue, kUndefined, kUpper,
};

enum class Global : int {
  kNone = -1, kRange, kNamespace, kDict, kRaiseException, kStrftimeNow, kCycler, kJoiner,
};

// What an attribute name means as a method of str / dict / list / tuple values.
constexpr int kMethodUnsafe = -2;  // a mutating method the sandbox refuses, or a __dunder__
struct MethodIds {
  int str = -1, dict = -1, list = -1, tuple = -1;
};
MethodIds method_ids(std::string_view name);

// -1 when jinja2 has no such filter/test; -2 when jinja2 has it but stoker does not (the parser
// says so: a load error rather than a silent mis-render).
int find_filter(std::string_view name);
int find_test(std::string_view name);
Global find_global(std::string_view name);

}  // namespace stoker::jinja::detail
