#include "stoker/shm/detail/wire.h"

#include <gtest/gtest.h>

#include <cstring>

namespace stoker::shm::detail {
namespace {

batch::BatchLayout sample_layout() {
  batch::BatchLayout l;
  l.block = {8192, 65536};
  l.step = 7;
  l.epoch = 2;
  l.tensors = {{"input_ids", batch::DType::kInt64, {2, 100}, 8192},
               {"pixel_values", batch::DType::kBFloat16, {16, 1176}, 8192 + 1600},
               {"sample_ids", batch::DType::kUInt64, {2}, 8192 + 1600 + 16 * 1176 * 2}};
  return l;
}

std::span<const std::uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}

TEST(WireTest, BatchRoundTrips) {
  BatchMsg in{.id = 42, .sent_ns = 123456789, .layout = sample_layout()};
  auto enc = encode_batch(in);
  ASSERT_TRUE(enc.ok());
  EXPECT_LT(enc->size(), 256u) << "a descriptor is a few hundred bytes at most";
  auto m = decode(bytes_of(*enc), 1 << 20);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  ASSERT_EQ(m->type, MsgType::kBatch);
  EXPECT_EQ(m->batch.id, 42u);
  EXPECT_EQ(m->batch.sent_ns, 123456789);
  const batch::BatchLayout& out = m->batch.layout;
  EXPECT_EQ(out.step, 7u);
  EXPECT_EQ(out.epoch, 2u);
  EXPECT_EQ(out.block.offset, 8192u);
  EXPECT_EQ(out.block.size, 65536u);
  ASSERT_EQ(out.tensors.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(out.tensors[i].name, in.layout.tensors[i].name);
    EXPECT_EQ(out.tensors[i].dtype, in.layout.tensors[i].dtype);
    EXPECT_EQ(out.tensors[i].shape, in.layout.tensors[i].shape);
    EXPECT_EQ(out.tensors[i].offset, in.layout.tensors[i].offset);
  }
}

TEST(WireTest, SmallMessagesRoundTrip) {
  auto h = decode(bytes_of(encode_hello({.arena_bytes = 1 << 30, .server_pid = 99})), 0);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->hello.arena_bytes, 1u << 30);
  EXPECT_EQ(h->hello.server_pid, 99);
  auto r = decode(bytes_of(encode_release(77)), 0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->release_id, 77u);
  auto e = decode(bytes_of(encode_end()), 0);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->type, MsgType::kEnd);
  auto w = decode(bytes_of(encode_waiting()), 0);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->type, MsgType::kWaiting);
  EXPECT_FALSE(decode(bytes_of(encode_waiting() + "x"), 0).ok()) << "trailing bytes";
}

TEST(WireTest, EveryTruncationIsDataLoss) {
  auto enc = encode_batch({.id = 1, .sent_ns = 0, .layout = sample_layout()});
  ASSERT_TRUE(enc.ok());
  for (std::size_t n = 0; n < enc->size(); ++n) {
    auto m = decode(bytes_of(enc->substr(0, n)), 1 << 20);
    ASSERT_FALSE(m.ok()) << n;
    EXPECT_EQ(m.error().code(), ErrorCode::kDataLoss);
  }
  auto m = decode(bytes_of(*enc + "x"), 1 << 20);
  EXPECT_FALSE(m.ok()) << "trailing bytes";
}

TEST(WireTest, RejectsBlocksAndTensorsOutsideBounds) {
  auto enc = encode_batch({.id = 1, .sent_ns = 0, .layout = sample_layout()});
  ASSERT_TRUE(enc.ok());
  EXPECT_FALSE(decode(bytes_of(*enc), 65536).ok()) << "block ends past a 64 KiB arena";

  batch::BatchLayout l = sample_layout();
  l.tensors[1].shape = {1 << 20, 1176};  // runs past the block
  EXPECT_FALSE(validate_layout(l, 1 << 30).ok());
  l = sample_layout();
  l.tensors[0].offset = 4096;  // before the block
  EXPECT_FALSE(validate_layout(l, 1 << 30).ok());
  l = sample_layout();
  l.tensors[0].shape = {std::int64_t{1} << 40, std::int64_t{1} << 40};  // overflows 64 bits
  EXPECT_FALSE(validate_layout(l, 1 << 30).ok());
  l = sample_layout();
  l.tensors[0].shape = {-1, 2};
  EXPECT_FALSE(validate_layout(l, 1 << 30).ok());
  l = sample_layout();
  l.block.offset = ~std::uint64_t{0} - 10;  // offset + size wraps
  EXPECT_FALSE(validate_layout(l, 1 << 30).ok());
}

TEST(WireTest, RejectsForeignBytes) {
  std::string junk = "GET / HTTP/1.1\r\n\r\n";
  EXPECT_EQ(decode(bytes_of(junk), 0).error().code(), ErrorCode::kDataLoss);
  std::string bad_type = encode_end();
  bad_type[6] = 99;
  EXPECT_FALSE(decode(bytes_of(bad_type), 0).ok());
  // An unknown dtype code inside a batch message.
  auto enc = encode_batch({.id = 1, .sent_ns = 0, .layout = sample_layout()});
  std::string s = *enc;
  std::size_t first_tensor = 8 + 8 * 6 + 4;
  s[first_tensor] = 77;
  EXPECT_FALSE(decode(bytes_of(s), 1 << 20).ok());
}

TEST(WireTest, AttachAndRefuseRoundTrip) {
  const std::string state = "stoker-state v1 epoch=3 position=40 errors=2 mix=0123456789abcdef.w.8.5_3";
  Attach a{.rank = 1, .world_size = 2, .has_state = true, .state = state};
  auto enc = encode_attach(a);
  ASSERT_TRUE(enc.ok()) << enc.error().to_string();
  auto m = decode(bytes_of(*enc), 0);
  ASSERT_TRUE(m.ok()) << m.error().to_string();
  ASSERT_EQ(m->type, MsgType::kAttach);
  EXPECT_EQ(m->attach.rank, 1);
  EXPECT_EQ(m->attach.world_size, 2);
  EXPECT_TRUE(m->attach.has_state);
  EXPECT_EQ(m->attach.state, state);  // the text as sent: the node server parses it
  auto r = decode(bytes_of(encode_refuse("rank 1 is attached")), 0);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->reason, "rank 1 is attached");
  // Without a state: no text.
  auto bare =
      decode(bytes_of(*encode_attach({.rank = 0, .world_size = 1, .has_state = false, .state = {}})), 0);
  ASSERT_TRUE(bare.ok());
  EXPECT_FALSE(bare->attach.has_state);
  EXPECT_TRUE(bare->attach.state.empty());
  // A rank outside the world is malformed, not a request.
  a.rank = 2;
  EXPECT_FALSE(decode(bytes_of(*encode_attach(a)), 0).ok());
}

// Version 4: the attach's state text is bounded and consistent with its flag, on both sides.
TEST(WireTest, AttachStateIsBounded) {
  Attach a{.rank = 0, .world_size = 1, .has_state = true, .state = std::string(kMaxAttachState, 'a')};
  ASSERT_TRUE(encode_attach(a).ok());
  a.state.push_back('a');
  EXPECT_EQ(encode_attach(a).error().code(), ErrorCode::kInvalidArgument);
  EXPECT_FALSE(encode_attach({.rank = 0, .world_size = 1, .has_state = true, .state = {}}).ok());
  EXPECT_FALSE(encode_attach({.rank = 0, .world_size = 1, .state = "x"}).ok());
  // Hand-made hostile attaches: a length over the bound, a length past the end, a state with
  // has_state 0, has_state 1 without one, a version-3 attach.
  std::string ok = *encode_attach({.rank = 0, .world_size = 1, .has_state = true, .state = "abc"});
  const std::size_t len_at = 8 + 4 + 4 + 1;
  auto with_len = [&](std::uint16_t len) {
    std::string s = ok;
    std::memcpy(s.data() + len_at, &len, 2);
    return s;
  };
  auto over = decode(bytes_of(with_len(kMaxAttachState + 1) + std::string(kMaxAttachState + 1, 'a')), 0);
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.error().message().find("8192"), std::string::npos) << over.error().message();
  EXPECT_FALSE(decode(bytes_of(with_len(4)), 0).ok());       // past the end
  EXPECT_FALSE(decode(bytes_of(with_len(2)), 0).ok());       // trailing bytes
  std::string flag0 = ok;
  flag0[len_at - 1] = 0;
  EXPECT_FALSE(decode(bytes_of(flag0), 0).ok());
  std::string empty = *encode_attach({.rank = 0, .world_size = 1, .has_state = false, .state = {}});
  empty[len_at - 1] = 1;
  EXPECT_FALSE(decode(bytes_of(empty), 0).ok());
  std::string v3 = ok;
  v3[4] = 3;
  auto old = decode(bytes_of(v3), 0);
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.error().message().find("protocol version 3, expected 4"), std::string::npos);
}

}  // namespace
}  // namespace stoker::shm::detail
