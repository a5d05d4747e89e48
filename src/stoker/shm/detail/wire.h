// The hand-off protocol's messages (one SOCK_SEQPACKET datagram each; same host, so integers are
// native-endian). Every message opens with {magic "STKR", version, type}.
//   hello   server→client, once, with the arena memfd as SCM_RIGHTS: arena size, server pid
//   batch   server→client: id, send time (CLOCK_MONOTONIC ns), step, epoch, block, tensors
//   end     server→client: the stream is over (the client's next() returns nullopt)
//   release client→server: the client dropped its view of batch `id`
//   attach  client→server, first (ranked servers wait for it before the hello): global rank,
//           world size, optionally the resume state the client saved — the whole state text
//           ("stoker-state v1 epoch=… position=… … mix=…", pipeline/state.h), at most
//           kMaxAttachState bytes; the node server parses it as it parses a state file (version 4;
//           before: fixed numbers without a mixture's per-source cursors)
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
// 2: the attach carries packs and plan; 3: waiting; 4: the attach carries the state as its text
// (a mixture's mix= cursors included).
inline constexpr std::uint16_t kVersion = 4;
inline constexpr std::size_t kMaxMessageBytes = 64 * 1024;
inline constexpr std::size_t kMaxTensors = 256;
inline constexpr std::size_t kMaxRank = 8;
// An attach's state text: the numbers (~130 bytes) + mix= (pipeline::LoaderState::kMaxMix, 4096)
// + fingerprint fields (16 x ~117) fit; a longer one is malformed.
inline constexpr std::size_t kMaxAttachState = 8192;
inline constexpr std::size_t kMaxAttachBytes = 8 + 4 + 4 + 1 + 2 + kMaxAttachState;

enum class MsgType : std::uint16_t {
  kHello = 1, kBatch = 2, kEnd = 3, kRelease = 4, kAttach = 5, kRefuse = 6, kWaiting = 7,
};

struct Attach {
  std::int32_t rank = 0;
  std::int32_t world_size = 1;
  bool has_state = false;  // else the server resumes the rank from what it last saw released
  // has_state: the state text, 1..kMaxAttachState bytes (its content is the receiver's to parse:
  // pipeline::LoaderState::parse); else empty.
  std::string state;
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
// InvalidArgument when the state is empty with has_state, or longer than kMaxAttachState.
Result<std::string> encode_attach(const Attach& a);
std::string encode_refuse(std::string_view reason);  // cut to 1024 bytes
std::string encode_waiting();

// arena_bytes bounds the blocks of batch messages (0 on the server side: release/hello only).
Result<Message> decode(std::span<const std::uint8_t> bytes, std::uint64_t arena_bytes);

// Checks that every tensor lies in the block and the block in [0, arena_bytes).
Status validate_layout(const batch::BatchLayout& layout, std::uint64_t arena_bytes);

// Element size of a dtype; 0 for a value outside the enum.
int element_size(batch::DType t);

}  // namespace stoker::shm::detail
