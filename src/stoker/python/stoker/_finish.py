"""stoker.finish: pixel_values built on the trainer's device from a finish="device" batch.

A `Loader(..., finish="device")` (or `stoker serve --finish device`) batch carries, instead of
`pixel_values` (and `pixel_values_videos`):

  pixel_values_uint8         uint8 [rows, P, P, 3]     each patch's resized RGB bytes (rows in
                                                       pixel_values' order: merge blocks)
  pixel_values_lut           float32|bfloat16 [3, 256] the value the CPU kernel makes of byte x in
                                                       channel c (rescale + normalise, its dtype
                                                       the Loader's pixel_dtype)
  pixel_values_repeat        int64 [1]                 temporal copies of each stored frame (an
                                                       image: temporal_patch_size, 2)
  pixel_values_videos_uint8  uint8 [rows, T, P, P, 3]  (with videos) the T frames of the group
  pixel_values_videos_lut    [3, 256]                  the video processor's values
  pixel_values_videos_repeat int64 [1]                 1

`finish` turns each `X_uint8` into `X` [rows, 3·T·P·P] (column ((c·T + t)·P + y)·P + x, as the
HF processor lays it out) with one table lookup per byte: out = lut[c, byte]. The table is the
CPU kernel's own output for all 256 bytes of each channel, so the result equals the CPU path's
pixel_values bit for bit on any device — no float arithmetic runs on the device, so neither its
rounding modes nor fused multiply-adds can differ. The CPU rules the table holds (image/README.md,
video/processor.h): images v = float32(float64(x) · rescale_factor), then (v − mean) / std in
float32 (the running CPU's Highway kernel, FMA forms used only where verified equal on all 256
bytes); videos (float32(x) − float32(mean·255)) / float32(std·255); bfloat16 = round-to-nearest-
even of that float32 (asking finish for bfloat16 from a float32 table rounds it the same way:
torch's conversion is round-to-nearest-even).
"""
from __future__ import annotations

from typing import Any, Dict, Optional

_SUFFIXES = ("_uint8", "_lut", "_repeat")


def _rows(x: Any, lut: Any, repeat: int, device: Any, dtype: Any, non_blocking: bool) -> Any:
    import torch

    if x.dtype != torch.uint8 or x.dim() not in (4, 5) or x.shape[-1] != 3 or \
            x.shape[-2] != x.shape[-3]:
        raise ValueError(f"stoker.finish: uint8 rows of shape [rows, (T,) P, P, 3] expected, got "
                         f"{x.dtype} {tuple(x.shape)}")
    if tuple(lut.shape) != (3, 256):
        raise ValueError(f"stoker.finish: a [3, 256] table expected, got {tuple(lut.shape)}")
    if x.dim() == 4:
        x = x.unsqueeze(1)  # one stored frame
    rows, frames, p = x.shape[0], x.shape[1], x.shape[2]
    x = x.to(device, non_blocking=non_blocking)
    table = lut.to(device, non_blocking=non_blocking)
    if dtype is None:
        dtype = table.dtype
    if dtype != table.dtype:
        if table.dtype == torch.float32 and dtype == torch.bfloat16:
            table = table.to(torch.bfloat16)  # round-to-nearest-even, as the CPU kernel rounds
        else:
            raise ValueError(f"stoker.finish: dtype {dtype} from a {table.dtype} table (the "
                             "Loader's pixel_dtype); use pixel_dtype='float32' for both")
    t_out = frames * repeat
    out = torch.empty((rows, 3, t_out, p, p), dtype=dtype, device=x.device)
    planes = x.permute(4, 0, 1, 2, 3)  # [3, rows, frames, P, P], a view
    for c in range(3):
        # index_select takes int32 indices (half the bytes of int64); one gather per channel.
        index = planes[c].reshape(-1).to(torch.int32)
        values = table[c].index_select(0, index).view(rows, frames, 1, p, p)
        out[:, c].view(rows, frames, repeat, p, p).copy_(values.expand(rows, frames, repeat, p, p))
    return out.view(rows, 3 * t_out * p * p)


def finish(batch: Dict[str, Any], device: Any = None, dtype: Any = None,
           non_blocking: bool = False) -> Dict[str, Any]:
    """Builds `pixel_values` (and `pixel_values_videos`) of a finish="device" batch on `device`.

    Returns a new dict: every `X_uint8` / `X_lut` / `X_repeat` triple replaced by `X` at the
    place of `X_uint8`, on `device` (a torch.device or string: "cuda", "cuda:1", "cpu"; None: the
    uint8 tensor's own), in `dtype` (torch.float32 or torch.bfloat16; None: the table's, i.e.
    the Loader's pixel_dtype). Bit-identical to the batch a finish="cpu" Loader delivers. The
    other entries are passed through as they are (move them with .to(device) as usual). A batch
    without uint8 rows (finish="cpu") is returned unchanged. `non_blocking` is handed to the
    copies to the device. Costs one upload of the uint8 bytes (1/8 of float32 pixel_values for
    an image, 1/4 for a video) and one table lookup per output value on the device.

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
      on the device        no float arithmetic at all: out = table[c, x] (index_select), then
                           copies — so neither the device's rounding mode, flush-to-zero, nor a
                           fused multiply-add (which the CPU path has nowhere that would change a
                           bit) can make a difference.
      bfloat16             round-to-nearest-even of that float32 (the CPU kernel's rule); a
                           bfloat16 table (pixel_dtype="bfloat16") is used as it is, a float32
                           table asked for dtype=torch.bfloat16 is rounded by torch's
                           float32 -> bfloat16 conversion, also round-to-nearest-even. float32
                           from a bfloat16 table is refused (the bits are gone).
      layout               row r, column ((c*T + t)*P + y)*P + x, as the HF processor; an
                           image's one stored frame is repeated temporal_patch_size times
                           (X_repeat), a video row holds its group's T frames.
    """
    import torch

    if dtype is not None and dtype not in (torch.float32, torch.bfloat16):
        raise ValueError(f"stoker.finish: dtype must be torch.float32 or torch.bfloat16, got {dtype}")
    out: Dict[str, Any] = {}
    for name, value in batch.items():
        if name.endswith("_uint8"):
            base = name[: -len("_uint8")]
            try:
                lut, repeat = batch[base + "_lut"], batch[base + "_repeat"]
            except KeyError as e:
                raise ValueError(f"stoker.finish: {name} without {e.args[0]}") from None
            out[base] = _rows(value, lut, int(repeat.reshape(-1)[0]), device or value.device,
                              dtype, non_blocking)
        elif name.endswith(("_lut", "_repeat")) and \
                (name.rsplit("_", 1)[0] + "_uint8") in batch:
            continue
        else:
            out[name] = value
    return out
