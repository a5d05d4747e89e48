// A restricted pickle reader for the data-only pickles WebDataset/Energon shards carry
// (Megatron-Bridge's `jpgs`: a list of encoded images; `videos`/`mp4s`: a list of lists of JPEG
// frames). A pickle is a program; this reader never runs one: it interprets only the opcodes
// that build lists, tuples, bytes, bytearray, str, int, float, bool and None (with MARK and the
// memo), protocols 2–5, and refuses every other opcode — GLOBAL, STACK_GLOBAL, REDUCE, BUILD,
// INST, OBJ, NEWOBJ, PERSID, EXT*, dicts, sets, out-of-band buffers, text-protocol opcodes —
// naming it and its byte offset. (Protocols 0–2 write bytes as a call to `_codecs.encode`, a
// GLOBAL + REDUCE: refused too, although Megatron-Bridge's safe_pickle special-cases it.)
// Bytes and str values are not copied: they are (offset, length) views of the input, so an image
// inside a pickled list inside a tar member is a byte range of the shard.
// Bounded: nesting depth, total values (memo sharing counted as expanded, so a small pickle
// cannot describe a huge tree), ints within 64 bits. Pure, thread-safe.
// Errors: InvalidArgument ("pickle: opcode GLOBAL ('c') at byte 2 is not allowed: …"),
// DataLoss (truncated, malformed), ResourceExhausted (over the bounds).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "stoker/base/result.h"

namespace stoker::dataset {

struct PickleValue {
  enum class Kind { kNone, kBool, kInt, kFloat, kBytes, kStr, kList, kTuple };
  Kind kind = Kind::kNone;
  bool b = false;
  std::int64_t i = 0;
  double f = 0;
  std::size_t offset = 0, length = 0;  // kBytes / kStr: the value is input[offset, offset + length)
  std::vector<PickleValue> items;      // kList / kTuple

  bool is_sequence() const { return kind == Kind::kList || kind == Kind::kTuple; }
};

struct PickleLimits {
  int max_depth = 16;
  std::size_t max_values = std::size_t{1} << 20;  // after expanding memo references
};

Result<PickleValue> read_pickle(std::span<const std::uint8_t> data, const PickleLimits& limits = {});

// One line for messages and tests: [b'3:0..3', 'str', 5, None, (1.5,)] with bytes as
// b'<offset>:<length>' — the same form a Python script prints for the original object.
std::string pickle_repr(const PickleValue& v, std::span<const std::uint8_t> data);

}  // namespace stoker::dataset
