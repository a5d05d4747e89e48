#include "stoker/shm/detail/wire.h"

#include <cstring>
#include <limits>

#include "stoker/base/byte_reader.h"

namespace stoker::shm::detail {
namespace {

// Wire codes for dtypes: fixed forever, whatever batch::DType's order becomes.
struct DTypeCode {
  batch::DType dtype;
  std::uint8_t code;
  int size;
};
constexpr DTypeCode kDTypes[] = {
    {batch::DType::kInt64, 1, 8},   {batch::DType::kUInt64, 2, 8}, {batch::DType::kFloat32, 3, 4},
    {batch::DType::kBFloat16, 4, 2}, {batch::DType::kInt32, 5, 4}, {batch::DType::kUInt8, 6, 1},
};

std::uint8_t dtype_code(batch::DType t) {
  for (const DTypeCode& d : kDTypes)
    if (d.dtype == t) return d.code;
  return 0;
}

const DTypeCode* from_code(std::uint8_t code) {
  for (const DTypeCode& d : kDTypes)
    if (d.code == code) return &d;
  return nullptr;
}

class Writer {
 public:
  explicit Writer(MsgType type) {
    put(kMagic);
    put(kVersion);
    put(static_cast<std::uint16_t>(type));
  }
  template <typename T>
  void put(T v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof(v));
  }
  void put_bytes(std::string_view s) { out_.append(s); }
  std::string take() { return std::move(out_); }
  std::size_t size() const { return out_.size(); }

 private:
  std::string out_;
};

Error malformed(const std::string& what) {
  return data_loss("malformed hand-off message: " + what);
}

// Byte size of a tensor, or nullopt-like false on overflow / negative dims.
bool tensor_bytes(const batch::TensorView& t, std::uint64_t& bytes) {
  std::uint64_t n = static_cast<std::uint64_t>(element_size(t.dtype));
  if (n == 0) return false;
  for (std::int64_t d : t.shape) {
    if (d < 0) return false;
    std::uint64_t u = static_cast<std::uint64_t>(d);
    if (u != 0 && n > std::numeric_limits<std::uint64_t>::max() / u) return false;
    n *= u;
  }
  bytes = n;
  return true;
}

}  // namespace

int element_size(batch::DType t) {
  for (const DTypeCode& d : kDTypes)
    if (d.dtype == t) return d.size;
  return 0;
}

Status validate_layout(const batch::BatchLayout& layout, std::uint64_t arena_bytes) {
  const batch::Block& b = layout.block;
  if (b.offset > arena_bytes || b.size > arena_bytes - b.offset)
    return malformed("block [" + std::to_string(b.offset) + ", +" + std::to_string(b.size) +
                     ") outside the arena of " + std::to_string(arena_bytes) + " bytes");
  for (const batch::TensorView& t : layout.tensors) {
    std::uint64_t bytes = 0;
    if (!tensor_bytes(t, bytes)) return malformed("tensor '" + t.name + "': bad dtype or shape");
    if (t.offset < b.offset || t.offset - b.offset > b.size ||
        bytes > b.size - (t.offset - b.offset))
      return malformed("tensor '" + t.name + "' (offset " + std::to_string(t.offset) + ", " +
                       std::to_string(bytes) + " bytes) outside its block");
  }
  return ok_status();
}

std::string encode_hello(const Hello& hello) {
  Writer w(MsgType::kHello);
  w.put(hello.arena_bytes);
  w.put(hello.server_pid);
  return w.take();
}

Result<std::string> encode_batch(const BatchMsg& msg) {
  const batch::BatchLayout& l = msg.layout;
  if (l.tensors.size() > kMaxTensors)
    return invalid_argument("batch has " + std::to_string(l.tensors.size()) + " tensors (max " +
                            std::to_string(kMaxTensors) + ")");
  Writer w(MsgType::kBatch);
  w.put(msg.id);
  w.put(msg.sent_ns);
  w.put(l.step);
  w.put(l.epoch);
  w.put(l.block.offset);
  w.put(l.block.size);
  w.put(static_cast<std::uint32_t>(l.tensors.size()));
  for (const batch::TensorView& t : l.tensors) {
    std::uint8_t code = dtype_code(t.dtype);
    if (code == 0) return invalid_argument("tensor '" + t.name + "': unknown dtype");
    if (t.shape.size() > kMaxRank) return invalid_argument("tensor '" + t.name + "': rank > 8");
    if (t.name.size() > 255) return invalid_argument("tensor name longer than 255 bytes");
    w.put(code);
    w.put(static_cast<std::uint8_t>(t.shape.size()));
    w.put(static_cast<std::uint16_t>(t.name.size()));
    w.put(t.offset);
    for (std::int64_t d : t.shape) w.put(d);
    w.put_bytes(t.name);
  }
  if (w.size() > kMaxMessageBytes) return invalid_argument("batch descriptor too large");
  return w.take();
}

std::string encode_end() { return Writer(MsgType::kEnd).take(); }

std::string encode_release(std::uint64_t id) {
  Writer w(MsgType::kRelease);
  w.put(id);
  return w.take();
}

Result<std::string> encode_attach(const Attach& a) {
  if (a.has_state ? a.state.empty() || a.state.size() > kMaxAttachState : !a.state.empty())
    return invalid_argument("attach: a resume state of " + std::to_string(a.state.size()) +
                            " bytes (1 to " + std::to_string(kMaxAttachState) + " with a state)");
  Writer w(MsgType::kAttach);
  w.put(a.rank);
  w.put(a.world_size);
  w.put(static_cast<std::uint8_t>(a.has_state ? 1 : 0));
  w.put(static_cast<std::uint16_t>(a.state.size()));
  w.put_bytes(a.state);
  return w.take();
}

std::string encode_waiting() { return Writer(MsgType::kWaiting).take(); }

std::string encode_refuse(std::string_view reason) {
  Writer w(MsgType::kRefuse);
  reason = reason.substr(0, 1024);
  w.put(static_cast<std::uint16_t>(reason.size()));
  w.put_bytes(reason);
  return w.take();
}

Result<Message> decode(std::span<const std::uint8_t> bytes, std::uint64_t arena_bytes) {
  ByteReader r(bytes);
  std::uint32_t magic = 0;
  std::uint16_t version = 0, type = 0;
  if (!r.get(&magic) || !r.get(&version) || !r.get(&type)) return malformed("short header");
  if (magic != kMagic) return malformed("bad magic (not a stoker hand-off socket?)");
  if (version != kVersion)
    return malformed("protocol version " + std::to_string(version) + ", expected " +
                     std::to_string(kVersion));
  Message m;
  m.type = static_cast<MsgType>(type);
  switch (m.type) {
    case MsgType::kHello:
      if (!r.get(&m.hello.arena_bytes) || !r.get(&m.hello.server_pid)) return malformed("short hello");
      break;
    case MsgType::kEnd:
    case MsgType::kWaiting:
      break;
    case MsgType::kRelease:
      if (!r.get(&m.release_id)) return malformed("short release");
      break;
    case MsgType::kAttach: {
      std::uint8_t has = 0;
      std::uint16_t len = 0;
      Attach& a = m.attach;
      if (!r.get(&a.rank) || !r.get(&a.world_size) || !r.get(&has) || !r.get(&len))
        return malformed("short attach");
      if (has > 1 || a.world_size < 1 || a.rank < 0 || a.rank >= a.world_size)
        return malformed("attach: rank " + std::to_string(a.rank) + " of " +
                         std::to_string(a.world_size));
      if (len > kMaxAttachState || (has == 1) != (len > 0))
        return malformed("attach: a resume state of " + std::to_string(len) + " bytes (1 to " +
                         std::to_string(kMaxAttachState) + " with a state, else 0)");
      if (!r.bytes(len, &a.state)) return malformed("short attach state");
      a.has_state = has == 1;
      break;
    }
    case MsgType::kRefuse: {
      std::uint16_t len = 0;
      if (!r.get(&len) || len > 1024 || !r.bytes(len, &m.reason)) return malformed("short refuse");
      break;
    }
    case MsgType::kBatch: {
      BatchMsg& b = m.batch;
      batch::BatchLayout& l = b.layout;
      std::uint32_t n = 0;
      if (!r.get(&b.id) || !r.get(&b.sent_ns) || !r.get(&l.step) || !r.get(&l.epoch) ||
          !r.get(&l.block.offset) || !r.get(&l.block.size) || !r.get(&n))
        return malformed("short batch header");
      if (n > kMaxTensors) return malformed(std::to_string(n) + " tensors");
      l.tensors.resize(n);
      for (batch::TensorView& t : l.tensors) {
        std::uint8_t code = 0, rank = 0;
        std::uint16_t name_len = 0;
        if (!r.get(&code) || !r.get(&rank) || !r.get(&name_len) || !r.get(&t.offset))
          return malformed("short tensor");
        const DTypeCode* d = from_code(code);
        if (d == nullptr) return malformed("dtype code " + std::to_string(code));
        t.dtype = d->dtype;
        if (rank > kMaxRank) return malformed("rank " + std::to_string(rank));
        t.shape.resize(rank);
        for (std::int64_t& dim : t.shape)
          if (!r.get(&dim)) return malformed("short shape");
        if (!r.bytes(name_len, &t.name)) return malformed("short name");
      }
      STOKER_RETURN_IF_ERROR(validate_layout(l, arena_bytes));
      break;
    }
    default:
      return malformed("message type " + std::to_string(type));
  }
  if (!r.done()) return malformed("trailing bytes");
  return m;
}

}  // namespace stoker::shm::detail
