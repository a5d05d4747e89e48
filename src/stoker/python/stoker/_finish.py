"""stoker.finish: pixel_values built on the trainer's device from a finish="device" batch.

A `Loader(..., finish="device")` (or `stoker serve --finish device`) batch carries, instead of
`pixel_values` (and `pixel_values_videos`):

  pixel_values_uint8           uint8 [rows, 3·P·P]   the images' resized RGB as the resize wrote
                                                     it: image i is [H, W, 3] (H = grid_h·P, W =
                                                     grid_w·P, raster order) over its
                                                     grid_h·grid_w rows' bytes, images in order
  pixel_values_lut             float32|bfloat16 [3, 256]  the value the CPU kernel makes of byte x
                                                     in channel c (rescale + normalise, its dtype
                                                     the Loader's pixel_dtype)
  pixel_values_patching        int64 [4]             P, merge_size, temporal_patch_size T, frames
                                                     stored per temporal group (an image: 1)
  pixel_values_videos_uint8    uint8 [rows, 3·T·P·P]  (with videos) each video's resized frames,
                                                     [grid_t·T, H, W, 3]
  pixel_values_videos_lut      [3, 256]              the video processor's values
  pixel_values_videos_patching int64 [4]             P, merge_size, T, T

with the grids (`image_grid_thw`, `video_grid_thw`) as in every batch. `finish` cuts each
medium's pixels into patch rows on the device — the HF processor's order: merge blocks, then
column ((c·T + t)·P + y)·P + x — as a view (reshape + permute, one copy on the device), and turns
each byte into its value with one table lookup: out = lut[c, byte]. The table is the CPU kernel's
own output for all 256 bytes of each channel, so the result equals the CPU path's pixel_values
bit for bit on any device — no float arithmetic runs on the device, so neither its rounding
modes nor fused multiply-adds can differ. The CPU rules the table holds (image/README.md,
video/processor.h): images v = float32(float64(x) · rescale_factor), then (v − mean) / std in
float32 (the running CPU's Highway kernel, FMA forms used only where verified equal on all 256
bytes); videos (float32(x) − float32(mean·255)) / float32(std·255); bfloat16 = round-to-nearest-
even of that float32 (asking finish for bfloat16 from a float32 table rounds it the same way:
torch's conversion is round-to-nearest-even).
"""
from __future__ import annotations

from typing import Any, Dict

# The grid tensor of each uint8 tensor's modality (its rows are those grids' products, in order).
_GRIDS = {"pixel_values": "image_grid_thw", "pixel_values_videos": "video_grid_thw"}


def _patches(name: str, x: Any, patching: Any, grids: Any, device: Any,
             non_blocking: bool) -> Any:
    """uint8 [rows, 3, S, P, P] on `device`: each medium's pixels cut into patch rows."""
    import torch

    if x.dtype != torch.uint8 or x.dim() != 2:
        raise ValueError(f"stoker.finish: {name} must be uint8 [rows, bytes], got {x.dtype} "
                         f"{tuple(x.shape)}")
    if tuple(patching.shape) != (4,):
        raise ValueError(f"stoker.finish: {name[:-6]}_patching must be [4], got "
                         f"{tuple(patching.shape)}")
    p, m, t, s = (int(v) for v in patching.tolist())
    rows = x.shape[0]
    if min(p, m, t, s) < 1 or x.shape[1] != 3 * s * p * p:
        raise ValueError(f"stoker.finish: {name} rows of {x.shape[1]} bytes do not fit patch "
                         f"{p}, merge {m}, {s} stored frame(s)")
    g = [tuple(int(v) for v in row) for row in grids.tolist()] if grids.numel() else []
    if any(len(r) != 3 or min(r) < 1 or r[1] % m or r[2] % m for r in g) or \
            sum(a * b * c for a, b, c in g) != rows:
        raise ValueError(f"stoker.finish: the grids {g} do not tile {name}'s {rows} rows (merge "
                         f"{m})")
    flat = x.to(device, non_blocking=non_blocking).reshape(-1)  # one upload of the bytes
    out = torch.empty((rows, 3, s, p, p), dtype=torch.uint8, device=flat.device)
    row = 0
    for gt, gh, gw in g:
        n = gt * gh * gw
        # [gt, S, gh/m, m, P, gw/m, m, P, 3]: frame, then the raster rows and pixels split into
        # merge blocks and patches.
        pixels = flat[row * x.shape[1]:(row + n) * x.shape[1]].view(
            gt, s, gh // m, m, p, gw // m, m, p, 3)
        # → rows (gt, hb, wb, mh, mw) × (c, S, py, px): pixel_values' order.
        out[row:row + n].view(gt, gh // m, gw // m, m, m, 3, s, p, p).copy_(
            pixels.permute(0, 2, 5, 3, 6, 8, 1, 4, 7))
        row += n
    return out


def _values(u8: Any, lut: Any, frames: int, device: Any, dtype: Any, non_blocking: bool) -> Any:
    """[rows, 3·T·P·P] of `dtype`: lut[c, byte], each stored frame repeated to `frames`."""
    import torch

    if tuple(lut.shape) != (3, 256):
        raise ValueError(f"stoker.finish: a [3, 256] table expected, got {tuple(lut.shape)}")
    table = lut.to(u8.device, non_blocking=non_blocking)
    if dtype is None:
        dtype = table.dtype
    if dtype != table.dtype:
        if table.dtype == torch.float32 and dtype == torch.bfloat16:
            table = table.to(torch.bfloat16)  # round-to-nearest-even, as the CPU kernel rounds
        else:
            raise ValueError(f"stoker.finish: dtype {dtype} from a {table.dtype} table (the "
                             "Loader's pixel_dtype); use pixel_dtype='float32' for both")
    rows, s, p = u8.shape[0], u8.shape[2], u8.shape[3]
    if frames % s:
        raise ValueError(f"stoker.finish: {s} stored frames do not make {frames}")
    repeat = frames // s
    out = torch.empty((rows, 3, frames, p, p), dtype=dtype, device=u8.device)
    for c in range(3):
        # index_select takes int32 indices (half the bytes of int64); one gather per channel.
        index = u8[:, c].reshape(-1).to(torch.int32)
        values = table[c].index_select(0, index).view(rows, s, 1, p, p)
        out[:, c].view(rows, s, repeat, p, p).copy_(values.expand(rows, s, repeat, p, p))
    return out.view(rows, 3 * frames * p * p)


def finish(batch: Dict[str, Any], device: Any = None, dtype: Any = None,
           non_blocking: bool = False) -> Dict[str, Any]:
    """Builds `pixel_values` (and `pixel_values_videos`) of a finish="device" batch on `device`.

    Returns a new dict: every `X_uint8` / `X_lut` / `X_patching` triple replaced by `X` at the
    place of `X_uint8`, on `device` (a torch.device or string: "cuda", "cuda:1", "cpu"; None: the
    uint8 tensor's own), in `dtype` (torch.float32 or torch.bfloat16; None: the table's, i.e.
    the Loader's pixel_dtype). Bit-identical to the batch a finish="cpu" Loader delivers. The
    other entries (the grids included) are passed through as they are (move them with
    .to(device) as usual). A batch without uint8 pixels (finish="cpu") is returned unchanged.
    `non_blocking` is handed to the copies to the device. Costs one upload of the uint8 bytes
    (1/8 of float32 pixel_values for an image, 1/4 for a video), one reordering copy of them and
    one table lookup per output value, on the device.

    The rules (why the result is the CPU path's, bit for bit, on any device):
      rescale + normalise  the table holds, for each channel c and byte x, the value the CPU
                           kernel that writes pixel_values makes of x — images:
                           v = float32(float64(x) * rescale_factor) (round to nearest even),
                           then (v - mean[c]) / std[c] in float32, each step one correctly
                           rounded IEEE operation (the Highway kernel's FMA form is used on the
                           CPU only where it was verified equal to this on all 256 bytes of each
                           channel); videos: (float32(x) - float32(255*mean[c])) /
                           float32(255*std[c]) in float32, compiled without contraction. The
                           table is that kernel's own output, computed in the engine.
      on the device        no float arithmetic at all: the bytes are reordered (a permute), then
                           out = table[c, x] (index_select) and copies — so neither the device's
                           rounding mode, flush-to-zero, nor a fused multiply-add (which the CPU
                           path has nowhere that would change a bit) can make a difference.
      bfloat16             round-to-nearest-even of that float32 (the CPU kernel's rule); a
                           bfloat16 table (pixel_dtype="bfloat16") is used as it is, a float32
                           table asked for dtype=torch.bfloat16 is rounded by torch's
                           float32 -> bfloat16 conversion, also round-to-nearest-even. float32
                           from a bfloat16 table is refused (the bits are gone).
      layout               medium by medium (the grids' order), row (t, hb, wb, mh, mw) = merge
                           blocks, column ((c*T + t)*P + y)*P + x, as the HF processor; an
                           image's one stored frame is repeated temporal_patch_size times, a
                           video row holds its group's T frames.
    """
    import torch

    if dtype is not None and dtype not in (torch.float32, torch.bfloat16):
        raise ValueError(f"stoker.finish: dtype must be torch.float32 or torch.bfloat16, got {dtype}")
    out: Dict[str, Any] = {}
    for name, value in batch.items():
        if name.endswith("_uint8"):
            base = name[: -len("_uint8")]
            grid_name = _GRIDS.get(base)
            if grid_name is None:
                raise ValueError(f"stoker.finish: {name}: no grid tensor known for {base}")
            try:
                lut, patching = batch[base + "_lut"], batch[base + "_patching"]
                grids = batch[grid_name]
            except KeyError as e:
                raise ValueError(f"stoker.finish: {name} without {e.args[0]}") from None
            u8 = _patches(name, value, patching, grids, device or value.device, non_blocking)
            out[base] = _values(u8, lut, int(patching[2]), u8.device, dtype, non_blocking)
        elif name.endswith(("_lut", "_patching")) and \
                (name.rsplit("_", 1)[0] + "_uint8") in batch:
            continue
        else:
            out[name] = value
    return out
