"""Independent reference for the Hugging Face Qwen2-VL *slow* image processor (numpy + Pillow).

This is the pixel oracle stoker is tested against. It is written from spec/qwen-vl.md §1 and
the transformers v4.5x slow processor's documented behaviour, never from stoker's C++ code:

  Image.open → ImageOps.exif_transpose (transformers' load_image) → convert("RGB")
  → numpy uint8 HWC → smart_resize plan (Python round = half-even; transformers >= 4.53 rules,
  the <= 4.52 refusal of small images as an option)
  → Image.fromarray → resize((W', H'), BICUBIC) → numpy uint8
  → astype(float64) * (1/255) → float32 → (x − mean_f32) / std_f32 → CHW
  → two identical temporal frames → patchify (reshape / transpose (0,3,6,4,7,2,1,5,8) / reshape)

Model values are the hub's preprocessor_config.json values (spec §1.2).
Run with Debian's /usr/bin/python3 (Pillow 9.4 on libjpeg-turbo 2.1.5, numpy 1.24).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Tuple

import numpy as np
from PIL import Image, ImageOps

OPENAI_CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
OPENAI_CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


@dataclass(frozen=True)
class ModelSpec:
    name: str
    patch_size: int
    min_pixels: int
    max_pixels: int
    image_mean: Tuple[float, float, float]
    image_std: Tuple[float, float, float]
    temporal_patch_size: int = 2
    merge_size: int = 2
    rescale_factor: float = 1 / 255

    @property
    def factor(self) -> int:
        return self.patch_size * self.merge_size

    @property
    def columns(self) -> int:
        return 3 * self.temporal_patch_size * self.patch_size * self.patch_size

    def preprocessor_config(self) -> dict:
        """The hub-style preprocessor_config.json for this model (spec §1.2, §6.1)."""
        cfg = {
            "do_convert_rgb": True,
            "do_normalize": True,
            "do_rescale": True,
            "do_resize": True,
            "image_mean": list(self.image_mean),
            "image_std": list(self.image_std),
            "merge_size": self.merge_size,
            "patch_size": self.patch_size,
            "resample": 3,
            "rescale_factor": 0.00392156862745098,
            "size": {"shortest_edge": self.min_pixels, "longest_edge": self.max_pixels},
            "temporal_patch_size": self.temporal_patch_size,
        }
        if self.name == "qwen3-vl":
            cfg["image_processor_type"] = "Qwen2VLImageProcessorFast"
            cfg["processor_class"] = "Qwen3VLProcessor"
        else:
            # Qwen2-VL / Qwen2.5-VL hub files carry the legacy keys too.
            cfg["image_processor_type"] = "Qwen2VLImageProcessor"
            cfg["processor_class"] = ("Qwen2_5_VLProcessor" if self.name == "qwen2.5-vl"
                                      else "Qwen2VLProcessor")
            cfg["min_pixels"] = self.min_pixels
            cfg["max_pixels"] = self.max_pixels
        return cfg


MODELS = {
    "qwen2-vl": ModelSpec("qwen2-vl", 14, 3136, 12845056, OPENAI_CLIP_MEAN, OPENAI_CLIP_STD),
    "qwen2.5-vl": ModelSpec("qwen2.5-vl", 14, 3136, 12845056, OPENAI_CLIP_MEAN, OPENAI_CLIP_STD),
    "qwen3-vl": ModelSpec("qwen3-vl", 16, 65536, 16777216, (0.5, 0.5, 0.5), (0.5, 0.5, 0.5)),
}


def smart_resize(height: int, width: int, factor: int, min_pixels: int, max_pixels: int,
                 rules: str = "current"):
    """transformers smart_resize: returns (h', w'); raises ValueError like HF does.

    rules="current": transformers >= 4.53 (PR #38706 removed the size check; the copy of
    qwen2_vl's smart_resize in transformers' own video_llama_3 image processor, and spec §1.1,
    show the result): aspect check only; step 3 may round a side to 0 (then step 5 runs, since
    0 < min_pixels); step 4 clamps each side to >= factor; step 5 has no clamp.
    rules="legacy": transformers <= 4.52: a side below factor raises; step 4 has no clamp.
    """
    if rules not in ("current", "legacy"):
        raise ValueError(f"unknown smart_resize rules {rules!r}")
    if rules == "legacy" and (height < factor or width < factor):
        raise ValueError(f"height:{height} or width:{width} must be larger than factor:{factor}")
    if max(height, width) / min(height, width) > 200:
        raise ValueError("absolute aspect ratio must be smaller than 200, got "
                         f"{max(height, width) / min(height, width)}")
    h_bar = round(height / factor) * factor  # Python round: half to even
    w_bar = round(width / factor) * factor
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = math.floor(height / beta / factor) * factor
        w_bar = math.floor(width / beta / factor) * factor
        if rules == "current":
            h_bar, w_bar = max(factor, h_bar), max(factor, w_bar)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    if h_bar <= 0 or w_bar <= 0:  # Image.resize then fails ("height and width must be > 0")
        raise ValueError(f"smart_resize gives an empty target {h_bar}x{w_bar}")
    return h_bar, w_bar


def load_rgb(path, exif: bool = True) -> np.ndarray:
    """transformers' load_image for a path: Image.open → ImageOps.exif_transpose (exif=True;
    raises where Pillow raises) → convert("RGB") (only when the mode differs) → uint8 HWC.
    exif=False: the pixels as stored (Image.open alone: qwen-vl-utils, LLaMA-Factory)."""
    with Image.open(path) as img:
        if exif:
            img = ImageOps.exif_transpose(img)
        if img.mode != "RGB":
            img = img.convert("RGB")
        return np.asarray(img, dtype=np.uint8).copy()


def resize(rgb: np.ndarray, height: int, width: int) -> np.ndarray:
    """HF image_transforms.resize on uint8: through PIL, BICUBIC, back to uint8."""
    out = Image.fromarray(rgb).resize((width, height), resample=Image.BICUBIC, reducing_gap=None)
    return np.asarray(out, dtype=np.uint8)


def rescale_normalize(resized: np.ndarray, spec: ModelSpec) -> np.ndarray:
    """float64 rescale cast to float32, then float32 (x − mean) / std. Returns float32 HWC."""
    x = (resized.astype(np.float64) * spec.rescale_factor).astype(np.float32)
    mean = np.array(spec.image_mean, dtype=np.float32)
    std = np.array(spec.image_std, dtype=np.float32)
    return (x - mean) / std


def patchify(chw: np.ndarray, spec: ModelSpec) -> Tuple[np.ndarray, Tuple[int, int, int]]:
    """Spec §1.5 on a single still image (C, H, W) → (rows, C·T·P·P), grid (t, h, w)."""
    tps, p, m = spec.temporal_patch_size, spec.patch_size, spec.merge_size
    patches = chw[np.newaxis]  # (T=1, C, H, W)
    if patches.shape[0] % tps != 0:
        repeats = np.repeat(patches[-1][np.newaxis], tps - 1, axis=0)
        patches = np.concatenate([patches, repeats], axis=0)
    channel = patches.shape[1]
    grid_t = patches.shape[0] // tps
    grid_h, grid_w = chw.shape[1] // p, chw.shape[2] // p
    patches = patches.reshape(grid_t, tps, channel, grid_h // m, m, p, grid_w // m, m, p)
    patches = patches.transpose(0, 3, 6, 4, 7, 2, 1, 5, 8)
    flat = patches.reshape(grid_t * grid_h * grid_w, channel * tps * p * p)
    return flat, (grid_t, grid_h, grid_w)


@dataclass
class Processed:
    width: int
    height: int
    resized_width: int
    resized_height: int
    resized: np.ndarray        # uint8 (H', W', 3)
    pixel_values: np.ndarray   # float32 (rows, columns)
    grid: Tuple[int, int, int]

    @property
    def rows(self) -> int:
        return self.pixel_values.shape[0]

    def tokens(self, merge_size: int) -> int:
        t, h, w = self.grid
        return t * h * w // (merge_size * merge_size)


def process_rgb(rgb: np.ndarray, spec: ModelSpec, rules: str = "current") -> Processed:
    height, width = rgb.shape[:2]
    rh, rw = smart_resize(height, width, spec.factor, spec.min_pixels, spec.max_pixels, rules)
    resized = resize(rgb, rh, rw)
    normalized = rescale_normalize(resized, spec)
    pixel_values, grid = patchify(np.ascontiguousarray(normalized.transpose(2, 0, 1)), spec)
    return Processed(width, height, rw, rh, resized, np.ascontiguousarray(pixel_values), grid)


def process_file(path, spec: ModelSpec, exif: bool = True, rules: str = "current") -> Processed:
    return process_rgb(load_rgb(path, exif), spec, rules)


def to_bf16_bits(x: np.ndarray) -> np.ndarray:
    """float32 → bfloat16 bit patterns (uint16), round to nearest, ties to even (finite inputs)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def bf16_bits_to_f32(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32)


if __name__ == "__main__":
    import argparse
    import json

    ap = argparse.ArgumentParser(description="HF Qwen-VL slow image processor reference")
    ap.add_argument("--model", default="qwen2.5-vl", choices=sorted(MODELS))
    ap.add_argument("--exif", default="apply", choices=["apply", "ignore"])
    ap.add_argument("--small-images", default="resize", choices=["resize", "refuse"])
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    spec = MODELS[args.model]
    for f in args.files:
        try:
            r = process_file(f, spec, args.exif == "apply",
                             "current" if args.small_images == "resize" else "legacy")
            print(json.dumps({"file": f, "ok": True, "width": r.width, "height": r.height,
                              "resized_width": r.resized_width, "resized_height": r.resized_height,
                              "grid": list(r.grid), "tokens": r.tokens(spec.merge_size),
                              "rows": r.rows, "cols": r.pixel_values.shape[1]}))
        except Exception as e:  # noqa: BLE001 — a CLI report, not library code
            print(json.dumps({"file": f, "ok": False, "error": str(e)}))
