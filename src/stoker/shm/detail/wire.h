// The hand-off protocol's messages (one SOCK_SEQPACKET datagram each; same host, so integers are
// native-endian). Every message opens with {magic "STKR", version, type}.
//   hello   server→client, once, with the arena memfd as SCM_RIGHTS: arena size, server pid
//   batch   server→client: id, send time (CLOCK_MONOTONIC ns), step, epoch, block, tensors
//   end     server→client: the stream is over (the client's next() returns nullopt)
//   release client→server: the client dropped its view of batch `id`
//   attach  client→server, first (ranked servers wait for it before the hello): global rank,
//           world size, optionally the resume state the client saved (epoch, position, errors,
//           packs, plan)
//   refuse  server→client instead of the hello: why the attach was refused (text)
//   waiting client→server: next() found nothing queued and blocks. The window then counts the
//           batch the consumer is replacing (its loop variable still holds it): the server may
//           send one more (issue 30 §8: `for b in Loader(connect=…)` with --window 1 hung)
// Dtypes travel as explicit wire codes (not batch::DType's enum order), so the protocol does not
// change when the enum does. decode() checks everything a hostile or corrupt peer could get
// wrong: sizes, counts, dtype codes, shape overflow, and that each tensor lies inside its block
// and the block inside the arena. Pure functions; thread-safe. Errors: DataLoss.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "stoker/base/result.h"
#include "stoker/batch/batch.h"

namespace stoker::shm::detail {

inline constexpr std::uint32_t kMagic = 0x524b5453;  // "STKR" little-endian
inline constexpr std::uint16_t kVersion = 3;  // 2: the attach carries packs and plan; 3: waiting
inline constexpr std::size_t kMaxMessageBytes = 64 * 1024;
inline constexpr std::size_t kMaxTensors = 256;
inline constexpr std::size_t kMaxRank = 8;

enum class MsgType : std::uint16_t {
  kHello = 1, kBatch = 2, kEnd = 3, kRelease = 4, kAttach = 5, kRefuse = 6, kWaiting = 7,
};

struct Attach {
  std::int32_t rank = 0;
  std::int32_t world_size = 1;
  bool has_state = false;  // else the server resumes the rank from what it last saw released
  std::uint64_t epoch = 0, position = 0, errors = 0;
  std::uint64_t packs = 0;  // packing states (version 2)
  std::uint32_t plan = 0;
};

struct Hello {
  std::uint64_t arena_bytes = 0;
  std::int32_t server_pid = 0;
};

struct BatchMsg {
  std::uint64_t id = 0;
  std::int64_t sent_ns = 0;  // steady clock (CLOCK_MONOTONIC: one clock for every process)
  batch::BatchLayout layout;
};

struct Message {
  MsgType type = MsgType::kEnd;
  Hello hello;
  BatchMsg batch;
  std::uint64_t release_id = 0;
  Attach attach;
  std::string reason;  // kRefuse
};

std::string encode_hello(const Hello& hello);
// InvalidArgument when the layout cannot be encoded (too many tensors, rank, name length, size).
Result<std::string> encode_batch(const BatchMsg& msg);
std::string encode_end();
std::string encode_release(std::uint64_t id);
std::string encode_attach(const Attach& a);
std::string encode_refuse(std::string_view reason);  // cut to 1024 bytes
std::string encode_waiting();

// arena_bytes bounds the blocks of batch messages (0 on the server side: release/hello only).
Result<Message> decode(std::span<const std::uint8_t> bytes, std::uint64_t arena_bytes);

// Checks that every tensor lies in the block and the block in [0, arena_bytes).
Status validate_layout(const batch::BatchLayout& layout, std::uint64_t arena_bytes);

// Element size of a dtype; 0 for a value outside the enum.
int element_size(batch::DType t);

}  // namespace stoker::shm::detail
