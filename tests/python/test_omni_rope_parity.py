"""TMRoPE parity: batch/omni_rope.h (through stoker_omni_rope_tool) vs get_rope_index of
Qwen2.5-Omni and Qwen3-Omni and their processors' audio-in-video layout, written from the
transformers 4.57 modeling/processing code in omni_rope_reference.py (torch), on random
sequences of text, standalone audios, images, videos and videos with their audio tracks, with
and without use_audio_in_video, with and without left padding. Positions, rope deltas and the
token layouts must be identical (float32 equality for Qwen3-Omni)."""
import json
import os
import random
import subprocess
import zlib

import pytest

import omni_rope_reference as ref

TOOL = os.environ.get("STOKER_OMNI_ROPE_TOOL")
pytestmark = pytest.mark.skipif(not TOOL, reason="STOKER_OMNI_ROPE_TOOL not set")

PAD = 151643
AUDIO_END = 151648
VISION_END = 151653
SPGS = [1.0, 0.5, 2.0, 2 / 1.87, 4 / 3, 0.8, 1.6, 2 / 0.7, 4.0]


class Tool:
    def __init__(self):
        self.p = subprocess.Popen([TOOL], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(self, q):
        self.p.stdin.write(json.dumps(q) + "\n")
        self.p.stdin.flush()
        return json.loads(self.p.stdout.readline())

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


@pytest.fixture(scope="module")
def tool():
    t = Tool()
    yield t
    t.close()


def feat_len(family, frames):
    return ref.feat_lengths_3(frames) if family == "qwen3-omni" else ref.feat_lengths_25(frames)


def make_sample(rng, family, aiv):
    cfg = ref.QWEN3 if family == "qwen3-omni" else ref.QWEN25
    ids, images, videos, spgs, frames = [], [], [], [], []

    def text(n):
        ids.extend(rng.randrange(1000, 5000) for _ in range(n))

    text(rng.randrange(0, 6))
    for _ in range(rng.randrange(1, 5)):
        kind = rng.choice(["audio", "image", "video", "video"])
        if kind == "audio":
            f = rng.choice([rng.randrange(3, 400), rng.randrange(400, 3000), 100 * rng.randrange(1, 20)])
            frames.append(f)
            ids.extend([cfg["audio_start"]] + [cfg["audio"]] * feat_len(family, f) + [AUDIO_END])
        elif kind == "image":
            g = [1, 2 * rng.randrange(1, 7), 2 * rng.randrange(1, 7)]
            images.append(g)
            ids.extend([cfg["vision_start"]] + [cfg["image"]] * (g[1] * g[2] // 4) + [VISION_END])
        else:
            g = [rng.randrange(1, 9), 2 * rng.randrange(1, 4), 2 * rng.randrange(1, 4)]
            spg = rng.choice(SPGS)
            videos.append(g)
            spgs.append(spg)
            if not aiv:
                ids.extend([cfg["vision_start"]] + [cfg["video"]] * (g[0] * g[1] * g[2] // 4) + [VISION_END])
            else:
                f = rng.randrange(50, 2500)
                frames.append(f)
                runs = ref.aiv_placeholder(family, g, spg, feat_len(family, f), cfg["pps"])
                ids.extend([cfg["vision_start"], cfg["audio_start"]])
                ids.extend(cfg["video"] if r == "V" else cfg["audio"] for r in runs)
                ids.extend([AUDIO_END, VISION_END])
        text(rng.randrange(0, 6))
    mask = [1] * len(ids)
    if rng.random() < 0.3:
        n = rng.randrange(1, 6)
        ids = [PAD] * n + ids
        mask = [0] * n + mask
    return ids, images, videos, spgs, frames, mask


@pytest.mark.parametrize("family", ["qwen2.5-omni", "qwen3-omni"])
@pytest.mark.parametrize("aiv", [False, True])
def test_positions_equal_get_rope_index(tool, family, aiv):
    rng = random.Random(zlib.crc32(f"{family}/{aiv}".encode()))
    fn = ref.rope_3 if family == "qwen3-omni" else ref.rope_25
    checked = 0
    for _ in range(120):
        ids, images, videos, spgs, frames, mask = make_sample(rng, family, aiv)
        want, delta = fn(ids, images, videos, mask, aiv, frames, spgs)
        got = tool.ask({"family": family, "ids": ids, "images": images, "videos": videos, "spg": spgs,
                        "audio_frames": frames, "aiv": aiv, "mask": mask})
        assert "error" not in got, got
        assert got["positions"] == want, (ids, images, videos, spgs, frames)
        assert got["delta"] == delta
        checked += 1
    assert checked == 120


@pytest.mark.parametrize("family", ["qwen2.5-omni", "qwen3-omni"])
def test_audio_only_and_text_only(tool, family):
    """Without image/video grids both models fall back to cumsum(mask) − 1 (audio runs are 1-D)."""
    cfg = ref.QWEN3 if family == "qwen3-omni" else ref.QWEN25
    fn = ref.rope_3 if family == "qwen3-omni" else ref.rope_25
    ids = [11, 12, cfg["audio_start"]] + [cfg["audio"]] * feat_len(family, 700) + [AUDIO_END, 13]
    for mask in ([1] * len(ids), [0, 0] + [1] * (len(ids) - 2)):
        want, delta = fn(ids, None, None, mask, False, [700], None)
        got = tool.ask({"family": family, "ids": ids, "audio_frames": [700], "mask": mask})
        assert got["positions"] == want and got["delta"] == delta


@pytest.mark.parametrize("family", ["qwen2.5-omni", "qwen3-omni"])
def test_audio_in_video_layout(tool, family):
    rng = random.Random(7)
    pps = ref.QWEN3["pps"] if family == "qwen3-omni" else ref.QWEN25["pps"]
    for _ in range(300):
        g = [rng.randrange(1, 12), 2 * rng.randrange(1, 5), 2 * rng.randrange(1, 5)]
        spg = rng.choice(SPGS)
        n = rng.randrange(1, 400)
        seq = ref.aiv_placeholder(family, g, spg, n, pps)
        want = []
        for r in seq:
            a = 1 if r == "A" else 0
            if want and want[-1][0] == a:
                want[-1][1] += 1
            else:
                want.append([a, 1])
        got = tool.ask({"layout": True, "family": family, "grid": g, "spg": spg, "audio_tokens": n})
        assert got["runs"] == want, (g, spg, n)


@pytest.mark.parametrize("family", ["qwen2.5-omni", "qwen3-omni"])
@pytest.mark.parametrize("aiv", [False, True])
def test_fractional_time_index(tool, family, aiv):
    """Videos whose second_per_grid · position_id_per_seconds is not whole (fps 3: spg 2/3, fps
    0.8: spg 2.5, fps 1.87): Qwen3-Omni keeps the float32 fractions (t_index `.float()`, float32
    position_ids), Qwen2.5-Omni truncates them (`.long()`); stoker equals both, with and without
    the audio track merged in."""
    cfg = ref.QWEN3 if family == "qwen3-omni" else ref.QWEN25
    fn = ref.rope_3 if family == "qwen3-omni" else ref.rope_25
    fractional = 0
    for spg in (2 / 3, 2.5, 2 / 1.87):
        g = [5, 4, 6]
        ids = [11, 12, cfg["vision_start"]]
        frames = []
        if aiv:
            frames = [900]
            runs = ref.aiv_placeholder(family, g, spg, feat_len(family, 900), cfg["pps"])
            ids += [cfg["audio_start"]] + [cfg["video"] if r == "V" else cfg["audio"] for r in runs]
            ids += [AUDIO_END]
        else:
            ids += [cfg["video"]] * (g[0] * g[1] * g[2] // 4)
        ids += [VISION_END, 13, 14]
        mask = [1] * len(ids)
        want, delta = fn(ids, None, [g], mask, aiv, frames, [spg])
        got = tool.ask({"family": family, "ids": ids, "videos": [g], "spg": [spg],
                        "audio_frames": frames, "aiv": aiv, "mask": mask})
        assert "error" not in got, got
        assert got["positions"] == want and got["delta"] == delta, spg
        whole = all(float(v).is_integer() for row in want for v in row)
        fractional += not whole
        assert whole == (family == "qwen2.5-omni"), (family, spg)
    assert fractional == (3 if family == "qwen3-omni" else 0)
