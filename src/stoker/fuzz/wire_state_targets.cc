// The shm hand-off's wire decoder (a trainer and a server trust each other's datagrams only as far
// as decode() checks them) and the loader state text (a file the user hands back on resume).
#include <cstring>

#include "stoker/fuzz/scratch.h"
#include "stoker/fuzz/targets.h"
#include "stoker/pipeline/state.h"
#include "stoker/pipeline/state_file.h"
#include "stoker/shm/detail/wire.h"

namespace stoker::fuzz {
namespace {

namespace wire = shm::detail;

bool same_layout(const batch::BatchLayout& a, const batch::BatchLayout& b) {
  if (a.block.offset != b.block.offset || a.block.size != b.block.size || a.step != b.step ||
      a.epoch != b.epoch || a.tensors.size() != b.tensors.size())
    return false;
  for (std::size_t i = 0; i < a.tensors.size(); ++i) {
    const auto &x = a.tensors[i], &y = b.tensors[i];
    if (x.name != y.name || x.dtype != y.dtype || x.shape != y.shape || x.offset != y.offset)
      return false;
  }
  return true;
}

// Arena of 1 MiB for odd sizes, none (the server side: no batch accepted) for even ones. A
// decoded message must re-encode, decode again to the same fields, and its tensors lie in the arena.
void run_wire(const std::uint8_t* data, std::size_t size) {
  const std::uint64_t arena = (size & 1) ? (1u << 20) : 0;
  Result<wire::Message> m = wire::decode(std::span<const std::uint8_t>(data, size), arena);
  if (!m.ok()) {
    check(!m.error().message().empty(), "an error carries a message");
    return;
  }
  std::string again;
  switch (m->type) {
    case wire::MsgType::kHello: again = wire::encode_hello(m->hello); break;
    case wire::MsgType::kEnd: again = wire::encode_end(); break;
    case wire::MsgType::kWaiting: again = wire::encode_waiting(); break;
    case wire::MsgType::kRelease: again = wire::encode_release(m->release_id); break;
    case wire::MsgType::kAttach: {
      Result<std::string> e = wire::encode_attach(m->attach);
      check(e.ok(), "a decoded attach re-encodes");
      again = *e;
      break;
    }
    case wire::MsgType::kRefuse: again = wire::encode_refuse(m->reason); break;
    case wire::MsgType::kBatch: {
      check(wire::validate_layout(m->batch.layout, arena).ok(), "a decoded batch lies in the arena");
      Result<std::string> e = wire::encode_batch(m->batch);
      check(e.ok(), "a decoded batch re-encodes");
      again = *e;
      break;
    }
  }
  Result<wire::Message> m2 = wire::decode(
      std::span<const std::uint8_t>(reinterpret_cast<const std::uint8_t*>(again.data()), again.size()),
      arena);
  check(m2.ok() && m2->type == m->type, "a re-encoded message decodes");
  switch (m->type) {
    case wire::MsgType::kHello:
      check(m2->hello.arena_bytes == m->hello.arena_bytes &&
            m2->hello.server_pid == m->hello.server_pid, "hello round trip");
      break;
    case wire::MsgType::kRelease: check(m2->release_id == m->release_id, "release round trip"); break;
    case wire::MsgType::kAttach: {
      const wire::Attach &a = m->attach, &b = m2->attach;
      check(a.rank == b.rank && a.world_size == b.world_size && a.has_state == b.has_state &&
            a.state == b.state, "attach round trip");
      break;
    }
    case wire::MsgType::kRefuse: check(m2->reason == m->reason, "refuse round trip"); break;
    case wire::MsgType::kBatch:
      check(m2->batch.id == m->batch.id && m2->batch.sent_ns == m->batch.sent_ns &&
            same_layout(m2->batch.layout, m->batch.layout), "batch round trip");
      break;
    case wire::MsgType::kEnd:
    case wire::MsgType::kWaiting: break;
  }
}

// The state file (issue #28: state_file.h): whatever the bytes, parse_state_file answers with a
// file or an error whose message quotes no control or non-ASCII byte; a file that parses
// serialises to text that parses to the same state, fingerprint and batch count; its numbers
// checked against any dataset size never crash; a fingerprint differs from itself nowhere and
// from an empty one in every field.
void run_state(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = as_text(data, size);
  Result<pipeline::SavedRun> r = pipeline::parse_state_file(text);
  // The first line alone through LoaderState::parse (the text of Python's and serve's states).
  Result<pipeline::LoaderState> line = pipeline::LoaderState::parse(text.substr(0, text.find('\n')));
  if (!line.ok()) check(!line.error().message().empty(), "an error carries a message");
  if (!r.ok()) {
    const std::string m = r.error().to_string();
    check(!m.empty(), "an error carries a message");
    for (char c : m) {
      const auto u = static_cast<unsigned char>(c);
      check(u >= 0x20 && u < 0x7f, "an error quotes no control or non-ASCII byte");
    }
    return;
  }
  check(line.ok(), "a state file's first line parses alone");
  Result<pipeline::SavedRun> t = pipeline::parse_state_file(pipeline::state_file_text(*r));
  check(t.ok(), "a serialised state file parses");
  const pipeline::LoaderState &a = r->state, &b = t->state;
  check(a.epoch == b.epoch && a.position == b.position && a.errors == b.errors &&
        a.packs == b.packs && a.plan == b.plan && a.fingerprint == b.fingerprint &&
        r->batches == t->batches, "state file round trip");
  for (std::uint64_t records : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{64},
                                std::uint64_t{1} << 40, ~std::uint64_t{0}}) {
    for (std::int64_t epochs : {std::int64_t{-1}, std::int64_t{1}, std::int64_t{5}}) {
      for (std::int64_t window : {std::int64_t{0}, std::int64_t{16}}) {
        Status st = pipeline::check_state_bounds(a, {.records = records, .epochs = epochs,
                                                     .pack_window = window});
        if (!st.ok()) check(!st.error().message().empty(), "a bounds error carries a message");
      }
    }
  }
  check(pipeline::differences(a.fingerprint, a.fingerprint).empty(), "a fingerprint equals itself");
  check(pipeline::differences(a.fingerprint, {}).size() == a.fingerprint.fields.size(),
        "every field differs from an empty fingerprint");
}

// Seeds from the real encoders: every message type, a batch with the loader's tensors.
void wire_seeds(const std::string& dir) {
  write_seed(dir, "hello", wire::encode_hello({.arena_bytes = 1u << 20, .server_pid = 123}));
  write_seed(dir, "end", wire::encode_end());
  write_seed(dir, "release", wire::encode_release(7));
  write_seed(dir, "attach", *wire::encode_attach({.rank = 1, .world_size = 2, .has_state = false, .state = {}}));
  write_seed(dir, "attach-state",
             *wire::encode_attach({.rank = 0, .world_size = 4, .has_state = true,
                                   .state = "stoker-state v1 epoch=1 position=99 errors=3 packs=2 "
                                            "plan=abcdef01 mix=0123456789abcdef.e.8.40_59"}));
  write_seed(dir, "refuse", wire::encode_refuse("rank 1 is already attached"));
  using batch::DType;
  std::vector<batch::TensorView> t = {
      {.name = "input_ids", .dtype = DType::kInt64, .shape = {2, 16}},
      {.name = "labels", .dtype = DType::kInt64, .shape = {2, 16}},
      {.name = "position_ids", .dtype = DType::kInt64, .shape = {3, 2, 16}},
      {.name = "pixel_values", .dtype = DType::kBFloat16, .shape = {8, 1176}},
      {.name = "image_grid_thw", .dtype = DType::kInt64, .shape = {2, 3}},
      {.name = "sample_ids", .dtype = DType::kUInt64, .shape = {2}}};
  const std::uint64_t bytes = batch::placed_bytes(t);
  wire::BatchMsg m{.id = 5, .sent_ns = 123456789,
                   .layout = batch::place_tensors(t, batch::Block{.offset = 4096, .size = bytes})};
  m.layout.step = 3;
  Result<std::string> e = wire::encode_batch(m);
  check(e.ok(), "the seed batch encodes");
  write_seed(dir, "batch", *e + "x");  // odd size: decoded with a 1 MiB arena
}

void state_seeds(const std::string& dir) {
  write_seed(dir, "plain", pipeline::LoaderState{.epoch = 2, .position = 1000, .errors = 4}.serialize());
  write_seed(dir, "packing", pipeline::LoaderState{.epoch = 0, .position = 64, .errors = 0, .packs = 3,
                                                   .plan = 0x1234abcd}.serialize() + "\n");
  write_seed(dir, "newer", "stoker-state v1 epoch=1 position=2 future=x errors=0");
  // The state file as `stoker run --state-file` writes it: fingerprint and batch count.
  pipeline::SavedRun run;
  run.state = {.epoch = 1, .position = 40, .errors = 2};
  run.state.fingerprint.fields = {{"data", "64:8fd99fd39c9924db"}, {"seed", "0"},
                                  {"batch_size", "4"}, {"max_length", "8192"},
                                  {"model", "qwen2_5_vl:21fcea48"}};
  run.batches = 17;
  write_seed(dir, "file", pipeline::state_file_text(run));
  run.state.packs = 2;
  run.state.plan = 0x9e3779b9;
  run.state.fingerprint.fields = {{"data", "3:0000000000000001"}, {"mixture", "77ab"},
                                  {"seed", "18446744073709551615"},
                                  {"packing", "pack:4096:1000:megatron:2"},
                                  {"max_length", "4096:cut"}, {"model", "qwen3_vl:00000000"}};
  write_seed(dir, "file-packing", pipeline::state_file_text(run));
}

}  // namespace

const Target kWireTarget{"wire", "shm wire decode (hello/batch/end/release/attach/refuse) + re-encode round trip",
                         nullptr, run_wire, wire_seeds};
const Target kStateTarget{"state", "the state file: parse_state_file + round trip, bounds, fingerprints", nullptr,
                          run_state, state_seeds};

}  // namespace stoker::fuzz
