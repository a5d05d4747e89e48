"""The Python reference path for video, as a user runs it today without stoker.

qwen-vl-utils 0.0.14 (QwenLM/Qwen3-VL @ 96588727e44c78b25ba03ea03b8e12f7e64fd0da,
qwen-vl-utils/src/qwen_vl_utils/vision_process.py) is not packaged in Debian; its rules are
re-written here from that source (smart_nframes, smart_resize, fetch_video's per-frame budget and
resize) on its torchvision backend (`torchvision.io.read_video` on PyAV: Debian python3-av 10,
python3-torchvision 0.14.1, torch 1.13). Then the transformers video processor as Qwen's examples
call it (do_resize=False): fused rescale+normalise with float32 mean/std × 255, and the patch
permutation of spec/qwen-vl.md §1.5; Qwen2.5-VL second_per_grid_ts = 2 / sample_fps; Qwen3-VL
timestamps from the original fps. Nothing here imports stoker.
"""
import math

import numpy as np
import torch
import torchvision
from torchvision import io
from torchvision.transforms import InterpolationMode
from torchvision.transforms import functional as TF

FRAME_FACTOR = 2
FPS = 2.0
FPS_MIN_FRAMES = 4
FPS_MAX_FRAMES = 768
VIDEO_MIN_TOKEN_NUM = 128
VIDEO_MAX_TOKEN_NUM = 768
MODEL_SEQ_LEN = 128000
MAX_RATIO = 200

MODELS = {
    # patch, mean, std
    "qwen2vl": (14, [0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711]),
    "qwen25vl": (14, [0.48145466, 0.4578275, 0.40821073], [0.26862954, 0.26130258, 0.27577711]),
    "qwen3vl": (16, [0.5, 0.5, 0.5], [0.5, 0.5, 0.5]),
}


def round_by_factor(number, factor):
    return round(number / factor) * factor


def ceil_by_factor(number, factor):
    return math.ceil(number / factor) * factor


def floor_by_factor(number, factor):
    return math.floor(number / factor) * factor


def smart_resize(height, width, factor, min_pixels, max_pixels):
    assert max_pixels >= min_pixels
    if max(height, width) / min(height, width) > MAX_RATIO:
        raise ValueError("aspect ratio")
    h_bar = max(factor, round_by_factor(height, factor))
    w_bar = max(factor, round_by_factor(width, factor))
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = floor_by_factor(height / beta, factor)
        w_bar = floor_by_factor(width / beta, factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = ceil_by_factor(height * beta, factor)
        w_bar = ceil_by_factor(width * beta, factor)
    return h_bar, w_bar


def smart_nframes(ele, total_frames, video_fps):
    assert not ("fps" in ele and "nframes" in ele)
    if "nframes" in ele:
        nframes = round_by_factor(ele["nframes"], FRAME_FACTOR)
    else:
        fps = ele.get("fps", FPS)
        min_frames = ceil_by_factor(ele.get("min_frames", FPS_MIN_FRAMES), FRAME_FACTOR)
        max_frames = floor_by_factor(ele.get("max_frames", min(FPS_MAX_FRAMES, total_frames)), FRAME_FACTOR)
        nframes = total_frames / video_fps * fps
        nframes = min(min(max(nframes, min_frames), max_frames), total_frames)
        nframes = floor_by_factor(nframes, FRAME_FACTOR)
    if not (FRAME_FACTOR <= nframes and nframes <= total_frames):
        raise ValueError(f"nframes should in interval [{FRAME_FACTOR}, {total_frames}], but got {nframes}.")
    return nframes


def read_video_torchvision(ele):
    """qwen-vl-utils `_read_video_torchvision`: (uint8 TCHW frames at idx, metadata, sample_fps)."""
    video, _audio, info = io.read_video(ele["video"], start_pts=ele.get("video_start", 0.0),
                                        end_pts=ele.get("video_end", None), pts_unit="sec",
                                        output_format="TCHW")
    total_frames, video_fps = video.size(0), info["video_fps"]
    nframes = smart_nframes(ele, total_frames=total_frames, video_fps=video_fps)
    idx = torch.linspace(0, total_frames - 1, nframes).round().long()
    sample_fps = nframes / max(total_frames, 1e-6) * video_fps
    video = video[idx]
    meta = dict(fps=video_fps, frames_indices=idx.tolist(), total_num_frames=total_frames)
    return video, meta, sample_fps


def fetch_video(ele, image_patch_size=14):
    """qwen-vl-utils `fetch_video` for a path: (resized uint8 TCHW, raw uint8 TCHW, meta, sample_fps).

    qwen-vl-utils returns the resized tensor `.float()`; the uint8 tensor before that is kept
    here so frames can be compared exactly."""
    image_factor = image_patch_size * 2
    frame_min = VIDEO_MIN_TOKEN_NUM * image_factor * image_factor
    frame_max = VIDEO_MAX_TOKEN_NUM * image_factor * image_factor
    video, meta, sample_fps = read_video_torchvision(ele)
    nframes, _, height, width = video.shape
    min_pixels = ele.get("min_pixels", frame_min)
    total_pixels = ele.get("total_pixels", MODEL_SEQ_LEN * image_factor * image_factor * 0.9)
    max_pixels = max(min(frame_max, total_pixels / nframes * FRAME_FACTOR), int(min_pixels * 1.05))
    max_pixels = min(ele.get("max_pixels", max_pixels), max_pixels)
    rh, rw = smart_resize(height, width, factor=image_factor, min_pixels=min_pixels, max_pixels=max_pixels)
    resized = TF.resize(video, [rh, rw], interpolation=InterpolationMode.BICUBIC, antialias=True)
    return resized, video, meta, sample_fps


def video_processor(frames_u8, model):
    """transformers Qwen2VL/Qwen3VL video processor on qwen-vl-utils' output (do_resize=False):
    pixel_values_videos (rows × 3·2·P·P float32) and [grid_t, grid_h, grid_w]."""
    patch, mean, std = MODELS[model]
    tps, merge = 2, 2
    x = frames_u8.float()  # qwen-vl-utils `.float()`
    # _fuse_mean_std_and_rescale_factor: float32 tensors × (1 / rescale_factor); F.normalize.
    rescale = 1 / 255
    m = torch.tensor(mean) * (1.0 / rescale)
    s = torch.tensor(std) * (1.0 / rescale)
    x = TF.normalize(x, m.tolist(), s.tolist())
    T, C, H, W = x.shape
    if T % tps:
        x = torch.cat([x, x[-1:].repeat(tps - T % tps, 1, 1, 1)])
        T = x.shape[0]
    gt, gh, gw = T // tps, H // patch, W // patch
    x = x.reshape(gt, tps, C, gh // merge, merge, patch, gw // merge, merge, patch)
    x = x.permute(0, 3, 6, 4, 7, 2, 1, 5, 8)
    return x.reshape(gt * gh * gw, C * tps * patch * patch).contiguous(), [gt, gh, gw]


def timestamps(indices, fps, merge=2):
    """transformers Qwen3VLProcessor._calculate_timestamps."""
    indices = list(indices)
    if len(indices) % merge:
        indices.extend(indices[-1] for _ in range(merge - len(indices) % merge))
    ts = [i / fps for i in indices]
    return [(ts[i] + ts[i + merge - 1]) / 2 for i in range(0, len(ts), merge)]


def reference(path, model="qwen25vl", **options):
    """Everything the parity test compares, for one video file."""
    patch = MODELS[model][0]
    ele = dict(video=path, **options)
    resized, raw, meta, sample_fps = fetch_video(ele, image_patch_size=patch)
    pixels, grid = video_processor(resized, model)
    return dict(indices=meta["frames_indices"], total_frames=meta["total_num_frames"],
                video_fps=meta["fps"], sample_fps=sample_fps, grid=grid,
                height=resized.shape[2], width=resized.shape[3],
                second_per_grid_t=2 / sample_fps,
                group_seconds=timestamps(meta["frames_indices"], meta["fps"]),
                frames=resized.permute(0, 2, 3, 1).contiguous().numpy(),
                raw=raw.permute(0, 2, 3, 1).contiguous().numpy(),
                pixels=pixels.numpy())


VERSIONS = dict(torch=torch.__version__, torchvision=torchvision.__version__)
