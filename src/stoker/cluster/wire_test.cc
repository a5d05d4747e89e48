// The messages between ranks: a result survives encode → decode field by field, and a damaged
// one — every truncation, trailing bytes, a lying count, sizes that disagree — is DataLoss, never
// a read past the end or a huge allocation.
#include "stoker/cluster/wire.h"

#include <gtest/gtest.h>

namespace stoker::cluster {
namespace {

SampleResult sample() {
  SampleResult r;
  r.ticket = 77;
  pipeline::Prepared& p = r.prepared;
  p.item.seq = 5;
  p.item.sample = 42;
  p.tokens.input_ids = {1, 2, 3, 151655, 151655, 4};
  p.tokens.labels = {-100, -100, -100, -100, -100, 4};
  p.tokens.vision.push_back({.video = false, .media_index = 0, .group = 0, .begin = 3, .count = 2});
  p.tokens.num_images = 1;
  p.tokens.num_messages = 2;
  p.positions.assign(18, 7);
  image::ImagePlan plan;
  plan.src_width = 100;
  plan.src_height = 60;
  plan.width = 112;
  plan.height = 56;
  plan.grid_h = 4;
  plan.grid_w = 8;
  plan.orientation = 6;
  p.plans.push_back(plan);
  p.pixel_rows = plan.rows();
  p.encoded.push_back({0xFF, 0xD8, 0x00, 0x11});
  r.payload_bytes = 12345;
  return r;
}

TEST(ClusterWire, ResultRoundTrips) {
  const SampleResult in = sample();
  Result<SampleResult> out = decode_result(encode(in));
  ASSERT_TRUE(out.ok()) << out.error().to_string();
  const pipeline::Prepared& a = in.prepared;
  const pipeline::Prepared& b = out->prepared;
  EXPECT_EQ(out->ticket, 77u);
  EXPECT_EQ(out->payload_bytes, 12345u);
  EXPECT_EQ(b.item.sample, 42u);
  EXPECT_EQ(b.tokens.input_ids, a.tokens.input_ids);
  EXPECT_EQ(b.tokens.labels, a.tokens.labels);
  ASSERT_EQ(b.tokens.vision.size(), 1u);
  EXPECT_EQ(b.tokens.vision[0].begin, 3);
  EXPECT_EQ(b.tokens.vision[0].count, 2);
  EXPECT_EQ(b.tokens.num_messages, 2);
  EXPECT_EQ(b.positions, a.positions);
  ASSERT_EQ(b.plans.size(), 1u);
  EXPECT_EQ(b.plans[0].width, 112);
  EXPECT_EQ(b.plans[0].orientation, 6);
  EXPECT_EQ(b.pixel_rows, 32);
  EXPECT_EQ(b.encoded, a.encoded);
  EXPECT_FALSE(b.failure.has_value());
}

TEST(ClusterWire, FailureRoundTrips) {
  SampleResult in;
  in.ticket = 3;
  in.prepared.failure = pipeline::SampleFailure{9, "data.jsonl", 10, pipeline::FailureStage::kDecode,
                                                 ErrorCode::kDataLoss, "bad"};
  Result<SampleResult> out = decode_result(encode(in));
  ASSERT_TRUE(out.ok());
  ASSERT_TRUE(out->prepared.failure.has_value());
  EXPECT_EQ(out->prepared.failure->file, "data.jsonl");
  EXPECT_EQ(out->prepared.failure->reason, "bad");
}

TEST(ClusterWire, DamagedMessagesAreDataLoss) {
  const std::vector<std::uint8_t> good = encode(sample());
  for (std::size_t n = 0; n < good.size(); ++n) {
    std::vector<std::uint8_t> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    Result<SampleResult> r = decode_result(cut);
    ASSERT_FALSE(r.ok()) << "truncated to " << n;
    EXPECT_EQ(r.error().code(), ErrorCode::kDataLoss);
  }
  std::vector<std::uint8_t> longer = good;
  longer.push_back(0);
  EXPECT_FALSE(decode_result(longer).ok());
  // A lying element count (the input_ids length, right after the header) asks for more than the
  // message holds: refused before any allocation.
  std::vector<std::uint8_t> lying = good;
  const std::size_t ids_count = 8 + 8 + 8 + 1;
  for (int i = 0; i < 8; ++i) lying[ids_count + i] = 0xFF;
  EXPECT_FALSE(decode_result(lying).ok());
  // Rows that disagree with the plans.
  SampleResult bad = sample();
  bad.prepared.pixel_rows += 1;
  EXPECT_FALSE(decode_result(encode(bad)).ok());
  EXPECT_FALSE(decode_request({1, 2, 3}).ok());
}

TEST(ClusterWire, PayloadSizes) {
  const SampleResult r = sample();
  EXPECT_EQ(payload_bytes(r.prepared, Wire::kUint8, 1176, image::PixelDType::kFloat32), 112u * 56 * 3);
  EXPECT_EQ(payload_bytes(r.prepared, Wire::kFloat, 1176, image::PixelDType::kFloat32), 32u * 1176 * 4);
  EXPECT_EQ(payload_bytes(r.prepared, Wire::kFloat, 1176, image::PixelDType::kBFloat16), 32u * 1176 * 2);
  EXPECT_EQ(payload_bytes(r.prepared, Wire::kEncoded, 1176, image::PixelDType::kFloat32), 0u);
  EXPECT_FALSE(parse_wire("fp16").ok());
}

}  // namespace
}  // namespace stoker::cluster
