// Video pixels for finishing on the trainer's device (issue 26): a VideoDType::kUInt8 output is
// the resized frames themselves ([grid_t·T, H, W, 3], the last frame repeated for temporal
// padding, as the float rows repeat it); cutting them into patches by spec §1.5's closed form and
// looking each byte up in value_table() gives patchify's float32 and bf16 rows bit for bit (the
// patching + lookup stoker.finish does in torch).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "stoker/image/detail/patch_order_testing.h"
#include "stoker/video/processor.h"

namespace stoker::video {
namespace {

struct Case {
  VideoProcessorConfig cfg;
  int frames, width, height;
};

VideoProcessorConfig qwen3() {
  VideoProcessorConfig c;
  c.patch_size = 16;
  c.mean = {0.5f, 0.5f, 0.5f};
  c.std = {0.5f, 0.5f, 0.5f};
  return c;
}

// `count` frames of the plan's size, every byte value in every channel.
std::vector<std::uint8_t> make_frames(const VideoPlan& plan, std::int64_t count) {
  const int W = plan.frames.width, H = plan.frames.height;
  std::vector<std::uint8_t> px(static_cast<std::size_t>(count) * W * H * 3);
  for (std::int64_t t = 0; t < count; ++t)
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x)
        for (int c = 0; c < 3; ++c)
          px[((t * H + y) * W + x) * 3 + c] = std::uint8_t(x * 7 + y * 13 + c * 101 + t * 37);
  return px;
}

TEST(VideoProcessorUint8Test, OutputIsTheFramesAndTheirPatchesLookedUpGiveTheFloatRows) {
  for (const Case& k : {Case{VideoProcessorConfig{}, 4, 96, 64}, Case{qwen3(), 6, 70, 120}}) {
    auto proc = VideoProcessor::create(k.cfg);
    ASSERT_TRUE(proc.ok());
    auto plan = proc->plan_frame_list(k.frames, k.width, k.height, {});
    ASSERT_TRUE(plan.ok());
    const std::int64_t planned = static_cast<std::int64_t>(plan->frames.indices.size());
    const int P = k.cfg.patch_size, T = k.cfg.temporal_patch_size, m = k.cfg.merge_size;
    const int W = plan->frames.width, H = plan->frames.height;
    const std::int64_t rows = plan->rows(), cols = proc->columns();
    const std::size_t frame_bytes = std::size_t(W) * H * 3;
    ASSERT_EQ(cols, 3 * T * P * P);
    ASSERT_EQ(std::int64_t{plan->grid_t} * T, planned);
    // All the planned frames, and one short (its last frame repeated as the temporal padding).
    for (const std::int64_t count : {planned, planned - 1}) {
      const std::vector<std::uint8_t> frames = make_frames(*plan, count);
      std::vector<std::uint8_t> u8(rows * cols + 64, 0xEE);  // 64 guard bytes
      proc->patchify(frames.data(), count, *plan, VideoDType::kUInt8, u8.data());
      std::vector<std::uint8_t> want_u8(frames);
      for (std::int64_t t = count; t < planned; ++t) {
        want_u8.insert(want_u8.end(), frames.end() - frame_bytes, frames.end());
      }
      ASSERT_EQ(static_cast<std::int64_t>(want_u8.size()), rows * cols);
      EXPECT_TRUE(std::equal(want_u8.begin(), want_u8.end(), u8.begin())) << "count " << count;
      for (std::size_t i = want_u8.size(); i < u8.size(); ++i) ASSERT_EQ(u8[i], 0xEE);
      for (VideoDType dt : {VideoDType::kFloat32, VideoDType::kBFloat16}) {
        const int size = dt == VideoDType::kFloat32 ? 4 : 2;
        std::vector<std::uint8_t> want(rows * cols * size), table(3 * 256 * size);
        proc->patchify(frames.data(), count, *plan, dt, want.data());
        proc->value_table(dt, table.data());
        std::vector<std::uint8_t> got(want.size(), 0xAB);
        // Closed form per temporal group gt: row gt·gh·gw + r, col ((ch·T + tp)·P + py)·P + px
        // is frame gt·T + tp at (y, x).
        const std::int64_t per_group = std::int64_t{plan->grid_h} * plan->grid_w;
        for (int gt = 0; gt < plan->grid_t; ++gt) {
          image::detail::for_each_patch_element(
              P, T, m, plan->grid_h, plan->grid_w,
              [&](std::int64_t r, std::int64_t col, int y, int x, int ch) {
                const std::int64_t tp = (col / (P * P)) % T;
                const std::uint8_t b = u8[(((gt * T + tp) * H + y) * W + x) * 3 + ch];
                std::memcpy(&got[((gt * per_group + r) * cols + col) * size],
                            &table[(ch * 256 + b) * size], size);
                return true;
              });
        }
        EXPECT_TRUE(got == want) << "P " << P << " count " << count
                                 << (dt == VideoDType::kFloat32 ? " f32" : " bf16");
      }
    }
  }
}

}  // namespace
}  // namespace stoker::video
