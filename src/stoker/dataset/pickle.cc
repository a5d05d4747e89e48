#include "stoker/dataset/pickle.h"

#include <cstdio>
#include <cstring>
#include <unordered_map>

namespace stoker::dataset {
namespace {

// Names of the opcodes that are refused, for the message (pickletools' names).
const char* refused_name(std::uint8_t op) {
  switch (op) {
    case 'c': return "GLOBAL";
    case 0x93: return "STACK_GLOBAL";
    case 'R': return "REDUCE";
    case 'b': return "BUILD";
    case 'i': return "INST";
    case 'o': return "OBJ";
    case 0x81: return "NEWOBJ";
    case 0x92: return "NEWOBJ_EX";
    case 0x82: case 0x83: case 0x84: return "EXT";
    case 'P': return "PERSID";
    case 'Q': return "BINPERSID";
    case '}': return "EMPTY_DICT";
    case 'd': return "DICT";
    case 's': return "SETITEM";
    case 'u': return "SETITEMS";
    case 0x8f: return "EMPTY_SET";
    case 0x90: return "ADDITEMS";
    case 0x91: return "FROZENSET";
    case 0x97: return "NEXT_BUFFER";
    case 0x98: return "READONLY_BUFFER";
    case '0': return "POP";
    case '1': return "POP_MARK";
    case '2': return "DUP";
    case 'I': return "INT";
    case 'L': return "LONG";
    case 'F': return "FLOAT";
    case 'S': return "STRING";
    case 'T': return "BINSTRING";
    case 'U': return "SHORT_BINSTRING";
    case 'V': return "UNICODE";
    case 'p': return "PUT";
    case 'g': return "GET";
    default: return nullptr;
  }
}

// UTF-8 as Python's 'surrogatepass' decoder accepts it (encoded surrogates allowed).
bool utf8_ok(const std::uint8_t* s, std::size_t n) {
  std::size_t i = 0;
  while (i < n) {
    const std::uint8_t c = s[i];
    const int k = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : -1;
    if (k < 0 || i + static_cast<std::size_t>(k) >= n + (k == 0 ? 1 : 0)) return false;
    std::uint32_t cp = k == 0 ? c : c & (0x3fu >> k);
    for (int j = 1; j <= k; ++j) {
      if ((s[i + j] & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (s[i + j] & 0x3f);
    }
    if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) || (k == 3 && (cp < 0x10000 || cp > 0x10ffff))) return false;
    i += static_cast<std::size_t>(k) + 1;
  }
  return true;
}

struct Node {
  PickleValue::Kind kind = PickleValue::Kind::kNone;
  bool b = false;
  std::int64_t i = 0;
  double f = 0;
  std::size_t offset = 0, length = 0;
  std::vector<std::uint32_t> children;
};

class Machine {
 public:
  Machine(std::span<const std::uint8_t> data, const PickleLimits& limits) : d_(data), limits_(limits) {}

  Result<PickleValue> run() {
    if (d_.size() < 2 || d_[0] != 0x80) return invalid_argument("pickle: not a protocol 2-5 pickle (no PROTO opcode first)");
    if (d_[1] < 2 || d_[1] > 5) return invalid_argument("pickle: protocol " + std::to_string(d_[1]) + " is not accepted (2-5)");
    pos_ = 2;
    while (true) {
      if (pos_ >= d_.size()) return data_loss("pickle: truncated: no STOP opcode");
      const std::size_t at = pos_;
      const std::uint8_t op = d_[pos_++];
      STOKER_ASSIGN_OR_RETURN(bool stop, step(op, at));
      if (stop) break;
    }
    if (stack_.empty()) return data_loss("pickle: STOP with an empty stack");
    std::size_t budget = limits_.max_values;
    return materialize(stack_.back(), 1, &budget);
  }

 private:
  Error bad(std::size_t at, const std::string& why) const {
    return data_loss("pickle: byte " + std::to_string(at) + ": " + why);
  }
  Result<std::uint64_t> uint_le(int n, std::size_t at) {
    if (d_.size() - pos_ < static_cast<std::size_t>(n)) return bad(at, "truncated argument");
    std::uint64_t v = 0;
    for (int k = n - 1; k >= 0; --k) v = (v << 8) | d_[pos_ + k];
    pos_ += n;
    return v;
  }
  Result<std::uint32_t> push(Node n, std::size_t at) {
    if (nodes_.size() >= limits_.max_values) return resource_exhausted("pickle: more than " + std::to_string(limits_.max_values) + " values");
    nodes_.push_back(std::move(n));
    stack_.push_back(static_cast<std::uint32_t>(nodes_.size() - 1));
    (void)at;
    return stack_.back();
  }
  Result<std::uint32_t> pop(std::size_t at) {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) return bad(at, "stack underflow");
    const std::uint32_t v = stack_.back();
    stack_.pop_back();
    return v;
  }
  Result<std::vector<std::uint32_t>> pop_mark(std::size_t at) {
    if (marks_.empty()) return bad(at, "no MARK");
    const std::size_t m = marks_.back();
    marks_.pop_back();
    std::vector<std::uint32_t> items(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return items;
  }
  Status data_op(PickleValue::Kind kind, std::uint64_t len, std::size_t at) {
    if (len > d_.size() - pos_) return bad(at, "truncated: a value of " + std::to_string(len) + " bytes");
    if (kind == PickleValue::Kind::kStr && !utf8_ok(d_.data() + pos_, static_cast<std::size_t>(len)))
      return bad(at, "str is not valid UTF-8");
    Node n;
    n.kind = kind;
    n.offset = pos_;
    n.length = static_cast<std::size_t>(len);
    pos_ += static_cast<std::size_t>(len);
    STOKER_RETURN_IF_ERROR(push(std::move(n), at));
    return ok_status();
  }
  Result<std::uint32_t> top(std::size_t at) {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) return bad(at, "stack underflow");
    return stack_.back();
  }
  Status memo_put(std::uint64_t index, std::size_t at) {
    STOKER_ASSIGN_OR_RETURN(std::uint32_t v, top(at));
    if (memo_.size() >= limits_.max_values && !memo_.count(index)) return resource_exhausted("pickle: memo too large");
    memo_[index] = v;
    return ok_status();
  }
  Status memo_get(std::uint64_t index, std::size_t at) {
    auto it = memo_.find(index);
    if (it == memo_.end()) return bad(at, "memo entry " + std::to_string(index) + " was never stored");
    stack_.push_back(it->second);
    return ok_status();
  }

  Result<bool> step(std::uint8_t op, std::size_t at) {
    using K = PickleValue::Kind;
    switch (op) {
      case '.': return true;
      case 0x95: {  // FRAME: a length prefix only
        STOKER_ASSIGN_OR_RETURN(std::uint64_t n, uint_le(8, at));
        if (n > d_.size() - pos_) return bad(at, "FRAME longer than the pickle");
        return false;
      }
      case '(': marks_.push_back(stack_.size()); return false;
      case 'N': STOKER_RETURN_IF_ERROR(push(Node{}, at)); return false;
      case 0x88: case 0x89: {
        Node n;
        n.kind = K::kBool;
        n.b = op == 0x88;
        STOKER_RETURN_IF_ERROR(push(std::move(n), at));
        return false;
      }
      case 'J': case 'K': case 'M': {
        const int width = op == 'J' ? 4 : op == 'K' ? 1 : 2;
        STOKER_ASSIGN_OR_RETURN(std::uint64_t raw, uint_le(width, at));
        Node n;
        n.kind = K::kInt;
        n.i = op == 'J' ? static_cast<std::int32_t>(static_cast<std::uint32_t>(raw)) : static_cast<std::int64_t>(raw);
        STOKER_RETURN_IF_ERROR(push(std::move(n), at));
        return false;
      }
      case 0x8a: case 0x8b: {  // LONG1 / LONG4: two's complement, little-endian
        STOKER_ASSIGN_OR_RETURN(std::uint64_t len, uint_le(op == 0x8a ? 1 : 4, at));
        if (op == 0x8b && len > 0x7fffffff) return bad(at, "negative LONG4 length");
        if (len > 8) return invalid_argument("pickle: byte " + std::to_string(at) + ": an integer wider than 64 bits");
        if (len > d_.size() - pos_) return bad(at, "truncated integer");
        std::uint64_t v = 0;
        for (std::size_t k = len; k-- > 0;) v = (v << 8) | d_[pos_ + k];
        if (len > 0 && len < 8 && (d_[pos_ + len - 1] & 0x80)) v |= ~std::uint64_t{0} << (8 * len);  // sign-extend
        pos_ += static_cast<std::size_t>(len);
        Node n;
        n.kind = K::kInt;
        n.i = static_cast<std::int64_t>(v);
        STOKER_RETURN_IF_ERROR(push(std::move(n), at));
        return false;
      }
      case 'G': {
        STOKER_ASSIGN_OR_RETURN(std::uint64_t raw, uint_le(8, at));
        std::uint64_t be = 0;
        for (int k = 0; k < 8; ++k) be = (be << 8) | ((raw >> (8 * k)) & 0xff);  // big-endian on the wire
        Node n;
        n.kind = K::kFloat;
        std::memcpy(&n.f, &be, 8);
        STOKER_RETURN_IF_ERROR(push(std::move(n), at));
        return false;
      }
      case 'C': case 'B': case 0x8e: case 0x96: case 0x8c: case 'X': case 0x8d: {
        const int width = (op == 'C' || op == 0x8c) ? 1 : (op == 'B' || op == 'X') ? 4 : 8;
        STOKER_ASSIGN_OR_RETURN(std::uint64_t len, uint_le(width, at));
        const bool str = op == 0x8c || op == 'X' || op == 0x8d;
        STOKER_RETURN_IF_ERROR(data_op(str ? K::kStr : K::kBytes, len, at));
        return false;
      }
      case ']': case ')': {
        Node n;
        n.kind = op == ']' ? K::kList : K::kTuple;
        STOKER_RETURN_IF_ERROR(push(std::move(n), at));
        return false;
      }
      case 'l': case 't': {
        STOKER_ASSIGN_OR_RETURN(auto items, pop_mark(at));
        Node n;
        n.kind = op == 'l' ? K::kList : K::kTuple;
        n.children = std::move(items);
        STOKER_RETURN_IF_ERROR(push(std::move(n), at));
        return false;
      }
      case 0x85: case 0x86: case 0x87: {
        const int k = op - 0x84;
        std::vector<std::uint32_t> items(static_cast<std::size_t>(k));
        for (int j = k - 1; j >= 0; --j) {
          STOKER_ASSIGN_OR_RETURN(items[static_cast<std::size_t>(j)], pop(at));
        }
        Node n;
        n.kind = K::kTuple;
        n.children = std::move(items);
        STOKER_RETURN_IF_ERROR(push(std::move(n), at));
        return false;
      }
      case 'a': case 'e': {
        std::vector<std::uint32_t> items;
        if (op == 'a') {
          STOKER_ASSIGN_OR_RETURN(std::uint32_t v, pop(at));
          items.push_back(v);
        } else {
          STOKER_ASSIGN_OR_RETURN(items, pop_mark(at));
        }
        STOKER_ASSIGN_OR_RETURN(std::uint32_t list, top(at));
        if (nodes_[list].kind != K::kList) return invalid_argument("pickle: byte " + std::to_string(at) + ": APPEND to something that is not a list");
        for (std::uint32_t v : items) nodes_[list].children.push_back(v);
        return false;
      }
      case 0x94: STOKER_RETURN_IF_ERROR(memo_put(memo_.size(), at)); return false;
      case 'q': case 'r': {
        STOKER_ASSIGN_OR_RETURN(std::uint64_t idx, uint_le(op == 'q' ? 1 : 4, at));
        STOKER_RETURN_IF_ERROR(memo_put(idx, at));
        return false;
      }
      case 'h': case 'j': {
        STOKER_ASSIGN_OR_RETURN(std::uint64_t idx, uint_le(op == 'h' ? 1 : 4, at));
        STOKER_RETURN_IF_ERROR(memo_get(idx, at));
        return false;
      }
      case 0x80: return bad(at, "a second PROTO opcode");
      default: {
        char code[8];
        std::snprintf(code, sizeof code, op >= 0x20 && op < 0x7f ? "'%c'" : "0x%02x", op);
        const char* name = refused_name(op);
        return invalid_argument(std::string("pickle: opcode ") + (name ? name : "unknown") + " (" + code + ") at byte " +
                                std::to_string(at) + " is not allowed: only lists, tuples, bytes, str, numbers, " +
                                "bool and None are read (a pickle that imports, calls or builds objects is never run)");
      }
    }
  }

  Result<PickleValue> materialize(std::uint32_t id, int depth, std::size_t* budget) const {
    if (depth > limits_.max_depth)
      return resource_exhausted("pickle: nested deeper than " + std::to_string(limits_.max_depth) + " (or a cycle)");
    if (*budget == 0) return resource_exhausted("pickle: more than " + std::to_string(limits_.max_values) + " values once shared references are expanded");
    --*budget;
    const Node& n = nodes_[id];
    PickleValue v;
    v.kind = n.kind;
    v.b = n.b;
    v.i = n.i;
    v.f = n.f;
    v.offset = n.offset;
    v.length = n.length;
    v.items.reserve(n.children.size());
    for (std::uint32_t c : n.children) {
      STOKER_ASSIGN_OR_RETURN(PickleValue item, materialize(c, depth + 1, budget));
      v.items.push_back(std::move(item));
    }
    return v;
  }

  std::span<const std::uint8_t> d_;
  PickleLimits limits_;
  std::size_t pos_ = 0;
  std::vector<Node> nodes_;
  std::vector<std::uint32_t> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::uint64_t, std::uint32_t> memo_;
};

}  // namespace

Result<PickleValue> read_pickle(std::span<const std::uint8_t> data, const PickleLimits& limits) {
  Machine m(data, limits);
  return m.run();
}

std::string pickle_repr(const PickleValue& v, std::span<const std::uint8_t> data) {
  static const char* hex = "0123456789abcdef";
  auto bytes = [&](char tag) {
    std::string s(1, tag);
    for (std::size_t k = 0; k < v.length; ++k) {
      s += hex[data[v.offset + k] >> 4];
      s += hex[data[v.offset + k] & 15];
    }
    return s;
  };
  switch (v.kind) {
    case PickleValue::Kind::kNone: return "N";
    case PickleValue::Kind::kBool: return v.b ? "T" : "F";
    case PickleValue::Kind::kInt: return "i" + std::to_string(v.i);
    case PickleValue::Kind::kFloat: {
      char buf[40];
      std::snprintf(buf, sizeof buf, "f%.17g", v.f);
      return buf;
    }
    case PickleValue::Kind::kBytes: return bytes('b');
    case PickleValue::Kind::kStr: return bytes('s');
    case PickleValue::Kind::kList:
    case PickleValue::Kind::kTuple: {
      std::string s(1, v.kind == PickleValue::Kind::kList ? '[' : '(');
      for (std::size_t k = 0; k < v.items.size(); ++k) s += (k ? "," : "") + pickle_repr(v.items[k], data);
      return s + (v.kind == PickleValue::Kind::kList ? ']' : ')');
    }
  }
  return "?";
}

}  // namespace stoker::dataset
