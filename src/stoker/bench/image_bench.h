// `stoker bench image`: stoker's image path (image::ImageProcessor::process — header → plan →
// decode → exact bicubic → rescale/normalise → patchify) against the Hugging Face Qwen2-VL slow
// processor's Pillow + numpy path (bench/image_reference.py), and stoker's resampler alone
// against Pillow's Image.resize(BICUBIC), on the same images, on the same pinned core, with the
// same warm-up and repetitions. Every image of every timed pass is compared (rows + CRC-32 of
// pixel_values; size + CRC-32 of the resized pixels). Blocking; runs the Python peer as a child.
// Errors: those of synth, the decoders and the peer; a mismatch is Outcome::kMismatch.
#pragma once

#include <string>

#include "stoker/base/result.h"
#include "stoker/bench/harness.h"
#include "stoker/image/processor.h"
#include "stoker/model/family.h"

namespace stoker::bench {

struct ImageBenchOptions {
  bool quick = false;
  std::string model{model::kDefaultModel};
  image::PixelDType dtype = image::PixelDType::kFloat32;
  int core = -1;                       // -1: the last CPU this process may use
  std::string python = "/usr/bin/python3";
  std::string dir;                     // keep the generated sets here (default: temp, removed)
  std::string images;                  // a third set: every .jpg/.jpeg/.png/.webp in this folder
  int photos = 0, records = 0;         // 0: the mode's default (16/40 quick, 120/240)
  Repeat repeat;                       // both sides
};

Result<Outcome> run_image_bench(const ImageBenchOptions& options);

}  // namespace stoker::bench
