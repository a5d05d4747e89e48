// Video rows for finishing on the trainer's device (issue 26): VideoDType::kUInt8 rows hold each
// patch's bytes in the T frames of its temporal group ([T, P, P, 3]), checked against the frames
// through spec §1.5's closed form; value_table()[c][byte] over them gives patchify's float32 and
// bf16 rows bit for bit (the lookup stoker.finish does in torch).
#include <gtest/gtest.h>

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

TEST(VideoProcessorUint8Test, RowsAreTheGroupsBytesAndTheTableGivesTheFloatRows) {
  for (const Case& k : {Case{VideoProcessorConfig{}, 4, 96, 64}, Case{qwen3(), 6, 70, 120}}) {
    auto proc = VideoProcessor::create(k.cfg);
    ASSERT_TRUE(proc.ok());
    auto plan = proc->plan_frame_list(k.frames, k.width, k.height, {});
    ASSERT_TRUE(plan.ok());
    const std::int64_t count = static_cast<std::int64_t>(plan->frames.indices.size());
    const std::vector<std::uint8_t> frames = make_frames(*plan, count);
    const int P = k.cfg.patch_size, T = k.cfg.temporal_patch_size, m = k.cfg.merge_size;
    const int W = plan->frames.width, H = plan->frames.height;
    const std::int64_t rows = plan->rows(), cols = proc->columns();
    ASSERT_EQ(cols, 3 * T * P * P);
    std::vector<std::uint8_t> u8(rows * cols, 0xEE);
    proc->patchify(frames.data(), count, *plan, VideoDType::kUInt8, u8.data());
    // Closed form per temporal group gt: row gt·gh·gw + r, col ((ch·T + tp)·P + py)·P + px is
    // frame gt·T + tp at (y, x); the uint8 row is [tp][py][px][ch].
    const std::int64_t per_group = std::int64_t{plan->grid_h} * plan->grid_w;
    for (int gt = 0; gt < plan->grid_t; ++gt) {
      image::detail::for_each_patch_element(
          P, T, m, plan->grid_h, plan->grid_w,
          [&](std::int64_t r, std::int64_t col, int y, int x, int ch) {
            const std::int64_t px = col % P, py = (col / P) % P, tp = (col / (P * P)) % T;
            const std::int64_t row = gt * per_group + r;
            const std::uint8_t got = u8[row * cols + ((tp * P + py) * P + px) * 3 + ch];
            const std::uint8_t want = frames[(((gt * T + tp) * H + y) * W + x) * 3 + ch];
            EXPECT_EQ(got, want) << "row " << row << " col " << col;
            return got == want;
          });
    }
    for (VideoDType dt : {VideoDType::kFloat32, VideoDType::kBFloat16}) {
      const int size = dt == VideoDType::kFloat32 ? 4 : 2;
      std::vector<std::uint8_t> want(rows * cols * size), table(3 * 256 * size);
      proc->patchify(frames.data(), count, *plan, dt, want.data());
      proc->value_table(dt, table.data());
      std::vector<std::uint8_t> got(want.size(), 0xAB);
      for (std::int64_t r = 0; r < rows; ++r)
        for (int c = 0; c < 3; ++c)
          for (int t = 0; t < T; ++t)
            for (int y = 0; y < P; ++y)
              for (int x = 0; x < P; ++x) {
                const std::uint8_t b = u8[r * cols + ((t * P + y) * P + x) * 3 + c];
                const std::int64_t col = ((std::int64_t(c) * T + t) * P + y) * P + x;
                std::memcpy(&got[(r * cols + col) * size], &table[(c * 256 + b) * size], size);
              }
      EXPECT_TRUE(got == want) << "P " << P << (dt == VideoDType::kFloat32 ? " f32" : " bf16");
    }
  }
}

}  // namespace
}  // namespace stoker::video
