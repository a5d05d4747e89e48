"""Finishing on the trainer's device (issue 26): a Loader(finish="device") batch carries each
image's resized uint8 pixels as the resize wrote them ([H, W, 3]; a video's frames), the value
tables and the patch geometry; stoker.finish(batch, device=...) must give the
CPU path's pixel_values / pixel_values_videos bit for bit — float32 and bfloat16, the three Qwen
models, images, video files and frame-list videos, padded and packed (HF and Megatron forms), in
process and served (`stoker serve --finish device`, zero-copy uint8 views). The parity tests are
parametrized by device: "cpu", and "cuda" too where torch.cuda.is_available() (the same code: a
table lookup), so carried to a GPU machine the same file checks the GPU.

The tables are also checked against an independent numpy transcription of the processors'
arithmetic (HF's slow image processor: float64 rescale → float32, (v − mean) / std in float32;
the transformers video processor: (x − 255·mean) / (255·std) in float32; bfloat16 by
round-to-nearest-even), so a wrong kernel cannot pass by agreeing with itself."""
import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from conftest import _stoker_bin

MODELS = ["qwen2-vl", "qwen2.5-vl", "qwen3-vl"]
DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
LAYOUTS = {
    "padded": {},
    "hf": {"packing": True, "max_tokens": 16384},
    "megatron": {"packing": True, "max_tokens": 16384, "pack_format": "megatron", "pack_align": 8},
}
# preprocessor_config.json of the three models (Qwen2-VL / Qwen2.5-VL: CLIP's; Qwen3-VL: 0.5).
CLIP = ((0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711))
NORM = {"qwen2-vl": CLIP, "qwen2.5-vl": CLIP, "qwen3-vl": ((0.5,) * 3, (0.5,) * 3)}
PATCH = {"qwen2-vl": 14, "qwen2.5-vl": 14, "qwen3-vl": 16}


def frame_list_records(d):
    """A frame-list video (4 PNG frames drawn with Pillow) and a record with an image and it."""
    from PIL import Image
    (d / "frames").mkdir()
    names = []
    for k in range(4):
        img = Image.new("RGB", (96, 64), (40 * k, 90, 200 - 20 * k))
        for x in range(0, 96, 7):
            for y in range(64):
                if (x // 7 + k) % 3 == 0:
                    img.putpixel((x, y), (250, 250 - 40 * k, 10))
        name = f"frames/f{k}.png"
        img.save(d / name)
        names.append(name)
    image = sorted((d / "images").glob("*.jpg"))[0].relative_to(d)
    records = [
        {"id": "frames", "messages": [
            {"role": "user", "content": [{"type": "video", "video": names},
                                         {"type": "text", "text": "What moves?"}]},
            {"role": "assistant", "content": "A bar."}]},
        {"id": "image-and-video", "messages": [
            {"role": "user", "content": [{"type": "image", "image": str(image)},
                                         {"type": "video", "video": names, "sample_fps": 1},
                                         {"type": "text", "text": "Same?"}]},
            {"role": "assistant", "content": "No."}]}]
    with open(d / "data.jsonl", "a") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")


@pytest.fixture(scope="module")
def media_data(tmp_path_factory):
    d = tmp_path_factory.mktemp("finish")
    subprocess.run([_stoker_bin(), "synth", "--out", str(d), "--n", "12", "--seed", "11",
                    "--max-side", "256", "--videos", "3", "--threads", "1"],
                   check=True, capture_output=True)
    frame_list_records(d)
    return str(d / "data.jsonl")


_CACHE = {}  # the last few runs' batches: the device parameter reuses them (cuda after cpu)


def batches(stoker, data, **kw):
    key = (data, tuple(sorted(kw.items())))
    if key not in _CACHE:
        while len(_CACHE) >= 4:  # each run holds its arena: keep a few
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = list(stoker.Loader(data, batch_size=4, threads=2, max_length=16384, **kw))
    return _CACHE[key]


def same_bits(a, b):
    if not isinstance(a, torch.Tensor):  # max_length_q/_k of the HF pack form: Python ints
        return a == b
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype in (torch.float32, torch.bfloat16):  # bits, not values (NaN, -0.0)
        width = torch.int32 if a.dtype == torch.float32 else torch.int16
        return torch.equal(a.contiguous().view(width), b.contiguous().view(width))
    return torch.equal(a, b)


def assert_finished_equal(cpu_batches, device_batches, device, dtype=None):
    assert len(cpu_batches) == len(device_batches) > 0
    kinds = set()
    for ref, raw in zip(cpu_batches, device_batches):
        got = stoker_finish(raw, device, dtype)
        assert list(got) == list(ref), (list(got), list(ref))  # same keys, same order
        for name, want in ref.items():
            have = got[name]
            if name.startswith("pixel_values"):
                assert have.device.type == torch.device(device).type, name
                have = have.cpu()
                kinds.add(name)
            assert same_bits(want, have), name
    return kinds


def stoker_finish(batch, device, dtype):
    import stoker
    return stoker.finish(batch, device=device, dtype=dtype)


def np_bf16(v):
    """float32 → bfloat16 bits, round-to-nearest-even (no NaN here)."""
    u = v.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def reference_tables(model):
    mean, std = (np.array(x, dtype=np.float32) for x in NORM[model])
    x = np.arange(256)
    image = np.stack([((x.astype(np.float64) * (1 / 255)).astype(np.float32) - mean[c]) / std[c]
                      for c in range(3)]).astype(np.float32)
    m255, s255 = mean * np.float32(255), std * np.float32(255)
    video = np.stack([(x.astype(np.float32) - m255[c]) / s255[c] for c in range(3)]).astype(np.float32)
    return image, video


# "cuda" too where torch.cuda.is_available(); listed first, so it varies fastest and the cuda
# case reuses the cpu case's batches (_CACHE).
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("pixel_dtype", list(DTYPES))
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_finish_equals_the_cpu_path(stoker, media_data, model, pixel_dtype, layout, device):
    kw = dict(model=model, pixel_dtype=pixel_dtype, **LAYOUTS[layout])
    cpu = batches(stoker, media_data, **kw)
    dev = batches(stoker, media_data, finish="device", **kw)
    p = PATCH[model]
    for b in dev:
        assert "pixel_values" not in b and b["pixel_values_uint8"].dtype == torch.uint8
        assert tuple(b["pixel_values_uint8"].shape[1:]) == (3 * p * p,)
        assert b["pixel_values_patching"].tolist() == [p, 2, 2, 1]
        if "pixel_values_videos_uint8" in b:
            assert tuple(b["pixel_values_videos_uint8"].shape[1:]) == (2 * 3 * p * p,)
            assert b["pixel_values_videos_patching"].tolist() == [p, 2, 2, 2]
    kinds = assert_finished_equal(cpu, dev, device)
    assert kinds == {"pixel_values", "pixel_values_videos"}  # both modalities were checked
    if pixel_dtype == "float32":  # bfloat16 made on the device from the float32 table
        ref16 = batches(stoker, media_data, model=model, pixel_dtype="bfloat16", **LAYOUTS[layout])
        assert_finished_equal(ref16, dev, device, torch.bfloat16)


@pytest.mark.parametrize("model", MODELS)
def test_tables_are_the_processors_arithmetic(stoker, media_data, model):
    image, video = reference_tables(model)
    for pixel_dtype in DTYPES:
        b = next(b for b in batches(stoker, media_data, model=model, pixel_dtype=pixel_dtype,
                                    finish="device") if "pixel_values_videos_lut" in b)
        for name, want in (("pixel_values_lut", image), ("pixel_values_videos_lut", video)):
            got = b[name]
            if pixel_dtype == "float32":
                assert np.array_equal(got.numpy().view(np.uint32), want.view(np.uint32)), name
            else:
                assert np.array_equal(got.view(torch.int16).numpy().view(np.uint16), np_bf16(want)), name


def test_uint8_rows_are_an_eighth_of_float32(stoker, media_data):
    """An image row stores one frame where pixel_values has temporal_patch_size (2) copies: 1/8
    of float32's bytes; a video row stores its group's 2 frames: 1/4."""
    cpu = batches(stoker, media_data)
    dev = batches(stoker, media_data, finish="device")
    seen = set()
    for a, b in zip(cpu, dev):
        for name, ratio in (("pixel_values", 8), ("pixel_values_videos", 4)):
            if name in a:
                f32 = a[name].numel() * 4
                u8 = b[name + "_uint8"].numel()
                assert u8 > 0 and f32 == ratio * u8, name
                seen.add(name)
    assert seen == {"pixel_values", "pixel_values_videos"}


def test_finish_refuses_what_it_cannot_make(stoker, media_data):
    b = batches(stoker, media_data, pixel_dtype="bfloat16", finish="device")[0]
    with pytest.raises(ValueError, match="table"):
        stoker.finish(b, device="cpu", dtype=torch.float32)  # a bf16 table cannot give float32
    with pytest.raises(ValueError, match="dtype"):
        stoker.finish(b, device="cpu", dtype=torch.float16)
    broken = dict(b)
    del broken["pixel_values_lut"]
    with pytest.raises(ValueError, match="pixel_values_lut"):
        stoker.finish(broken, device="cpu")
    cpu_batch = batches(stoker, media_data)[0]
    assert stoker.finish(cpu_batch) == cpu_batch  # nothing to finish: unchanged


@pytest.mark.parametrize("device", DEVICES)
def test_served_uint8_views_finish_to_the_cpu_path(stoker, media_data, tmp_path, device):
    sock = str(tmp_path / "s.sock")
    server = subprocess.Popen([_stoker_bin(), "serve", media_data, "--socket", sock,
                               "--batch-size", "4", "--threads", "2", "--max-length", "16384",
                               "--finish", "device", "--quiet", "--idle-timeout-s", "60"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not os.path.exists(sock) and time.monotonic() < deadline:
            time.sleep(0.05)
        client = stoker.Loader(connect=sock, connect_timeout_s=30)
        info = client.arena_info()
        served = []
        for b in client:
            u8 = b["pixel_values_uint8"]
            assert info["base"] <= u8.data_ptr() < info["base"] + info["capacity"]  # zero-copy
            served.append(b)
        cpu = batches(stoker, media_data)
        assert_finished_equal(cpu, served, device)
        del served, b, u8
        out, err = server.communicate(timeout=60)
        assert server.returncode == 0, err[-2000:]
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()


def test_uint8_pixels_are_pillows_resized_images(stoker, tmp_path):
    """What a finish="device" batch hands over is each image's resized RGB as it is: image i's
    slice of pixel_values_uint8, viewed [grid_h·P, grid_w·P, 3], equals Pillow's bicubic resize
    of the file to that size (the HF slow processor's resize; lossless PNGs, so the decode
    cannot differ) — an independent check of the bytes, not only of their finish."""
    from PIL import Image

    rng = np.random.default_rng(7)
    sizes = [(300, 170), (64, 900), (1000, 333), (56, 56)]
    with open(tmp_path / "data.jsonl", "w") as f:
        for k, (w, h) in enumerate(sizes):
            # smooth gradients plus noise: every resize tap matters
            yy, xx = np.mgrid[0:h, 0:w]
            px = np.stack([(xx * 255 // max(1, w - 1)), (yy * 255 // max(1, h - 1)),
                           rng.integers(0, 256, (h, w))], axis=-1).astype(np.uint8)
            Image.fromarray(px, "RGB").save(tmp_path / f"i{k}.png")
            f.write(json.dumps({"messages": [
                {"role": "user", "content": [{"type": "image", "image": f"i{k}.png"},
                                             {"type": "text", "text": "What is it?"}]},
                {"role": "assistant", "content": "Noise."}]}) + "\n")
    got = 0
    for b in stoker.Loader(str(tmp_path / "data.jsonl"), batch_size=2, threads=2,
                           finish="device", max_length=16384):
        u8 = b["pixel_values_uint8"]
        p, m, t, s = b["pixel_values_patching"].tolist()
        assert (p, m, t, s) == (14, 2, 2, 1)
        r0 = 0
        for sid, (gt, gh, gw) in zip(b["sample_ids"].tolist(), b["image_grid_thw"].tolist()):
            n = gt * gh * gw
            pixels = u8[r0:r0 + n].reshape(gh * p, gw * p, 3).numpy()
            want = np.asarray(Image.open(tmp_path / f"i{sid}.png").convert("RGB")
                              .resize((gw * p, gh * p), Image.BICUBIC))
            assert np.array_equal(pixels, want), (sid, gh, gw)
            r0 += n
            got += 1
        assert r0 == u8.shape[0]
    assert got == len(sizes)


def test_finish_refuses_grids_that_do_not_tile_the_pixels(stoker, media_data):
    b = next(b for b in batches(stoker, media_data, finish="device")
             if b["image_grid_thw"].shape[0] > 0)
    for bad in (b["image_grid_thw"][:-1] if b["image_grid_thw"].shape[0] > 1 else
                b["image_grid_thw"] * 2,                        # rows left over / missing
                b["image_grid_thw"] + torch.tensor([0, 1, 0]),  # grid_h not a merge multiple
                b["image_grid_thw"] * torch.tensor([0, 1, 1])):  # an empty grid
        broken = dict(b, image_grid_thw=bad)
        with pytest.raises(ValueError, match="grids"):
            stoker.finish(broken, device="cpu")
    with pytest.raises(ValueError, match="image_grid_thw"):
        stoker.finish({k: v for k, v in b.items() if k != "image_grid_thw"}, device="cpu")
    with pytest.raises(ValueError, match="bytes"):
        stoker.finish(dict(b, pixel_values_uint8=b["pixel_values_uint8"].reshape(-1)), device="cpu")
    with pytest.raises(ValueError, match="do not fit"):
        stoker.finish(dict(b, pixel_values_patching=torch.tensor([16, 2, 2, 1])), device="cpu")
