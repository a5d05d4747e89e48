// stoker_omni_rope_tool: batch/omni_rope.h for the Python parity test
// (tests/python/test_omni_rope_parity.py). Reads one JSON request per stdin line, writes one JSON
// answer per line:
//   {"family": "qwen2.5-omni"|"qwen3-omni", "ids": [...], "images": [[t,h,w]...], "videos": [...],
//    "spg": [...], "audio_frames": [...], "aiv": bool, "mask": [0/1...]?, "pps": x?, "ids_cfg": {...}?}
//     → {"positions": [[row0], [row1], [row2]], "delta": d} or {"error": "..."}
//   {"layout": true, "family": ..., "grid": [t,h,w], "spg": s, "audio_tokens": n, "pps": x?}
//     → {"runs": [[is_audio, count], ...]}
#include <cstdio>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "stoker/batch/omni_rope.h"

using nlohmann::json;
using namespace stoker::batch;

int main() {
  std::string line;
  while (std::getline(std::cin, line)) {
    if (line.empty()) continue;
    const json q = json::parse(line);
    OmniRopeConfig c = q.value("family", "qwen2.5-omni") == "qwen3-omni" ? OmniRopeConfig::qwen3_omni()
                                                                            : OmniRopeConfig::qwen25_omni();
    if (q.contains("pps")) c.position_id_per_seconds = q["pps"].get<double>();
    if (q.contains("ids_cfg")) {
      const json& t = q["ids_cfg"];
      c.image_token_id = t.value("image", c.image_token_id);
      c.video_token_id = t.value("video", c.video_token_id);
      c.audio_token_id = t.value("audio", c.audio_token_id);
      c.vision_start_token_id = t.value("vision_start", c.vision_start_token_id);
      c.audio_start_token_id = t.value("audio_start", c.audio_start_token_id);
    }
    json a;
    if (q.value("layout", false)) {
      const auto g = q["grid"].get<std::vector<std::int64_t>>();
      const auto runs = audio_in_video_layout(c, GridTHW{g[0], g[1], g[2]}, q["spg"].get<double>(),
                                              q["audio_tokens"].get<std::int64_t>());
      a["runs"] = json::array();
      for (const TokenRun& r : runs) a["runs"].push_back({r.audio ? 1 : 0, r.count});
    } else {
      auto grids = [&](const char* key) {
        std::vector<GridTHW> out;
        for (const auto& g : q.value(key, json::array())) out.push_back({g[0].get<std::int64_t>(), g[1].get<std::int64_t>(), g[2].get<std::int64_t>()});
        return out;
      };
      const auto ids = q["ids"].get<std::vector<std::int32_t>>();
      const auto images = grids("images"), videos = grids("videos");
      const auto spg = q.value("spg", std::vector<double>{});
      const auto frames = q.value("audio_frames", std::vector<std::int64_t>{});
      const auto mask = q.value("mask", std::vector<std::uint8_t>{});
      auto r = get_omni_rope_index(ids, images, videos, spg, frames, q.value("aiv", false), c, mask);
      if (!r.ok()) {
        a["error"] = r.error().to_string();
      } else {
        a["positions"] = json::array();
        for (int row = 0; row < 3; ++row) {
          json v = json::array();
          for (std::int64_t i = 0; i < r->length; ++i) v.push_back(r->at(row, i));
          a["positions"].push_back(v);
        }
        a["delta"] = r->rope_delta;
      }
    }
    std::cout << a.dump() << "\n" << std::flush;
  }
  return 0;
}
