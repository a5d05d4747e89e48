// Test helper: spec §1.5's closed form of the pixel_values layout, element by element, so tests
// check the patchify output against the formula rather than against a second implementation.
#pragma once

#include <cstdint>

namespace stoker::image::detail {

// Calls f(row, col, y, x, channel) for every element of a grid_h × grid_w (× T copies) image:
// row = ((hb·(gw/m) + wb)·m + mh)·m + mw, col = ((c·T + tp)·P + py)·P + px, source pixel (y, x).
// Stops at the first call that returns false (tests return false after a failed ASSERT).
template <typename F>
void for_each_patch_element(int P, int T, int m, int grid_h, int grid_w, F f) {
  for (int hb = 0; hb < grid_h / m; ++hb)
    for (int wb = 0; wb < grid_w / m; ++wb)
      for (int mh = 0; mh < m; ++mh)
        for (int mw = 0; mw < m; ++mw) {
          const std::int64_t r = ((std::int64_t(hb) * (grid_w / m) + wb) * m + mh) * m + mw;
          for (int ch = 0; ch < 3; ++ch)
            for (int tp = 0; tp < T; ++tp)
              for (int py = 0; py < P; ++py)
                for (int px = 0; px < P; ++px) {
                  const std::int64_t k = ((std::int64_t(ch) * T + tp) * P + py) * P + px;
                  const int y = (hb * m + mh) * P + py, x = (wb * m + mw) * P + px;
                  if (!f(r, k, y, x, ch)) return;
                }
        }
}

}  // namespace stoker::image::detail
