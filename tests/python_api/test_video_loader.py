"""Video samples through the engine (issue 14): the Python Loader, packing and the served mode take
video records (files written by `stoker synth --videos` with libavcodec, mixed with image
records) like image records, and what they deliver matches independent references:

* pixel_values_videos / video_grid_thw / second_per_grid_ts against bench/video_reference.py
  (qwen-vl-utils 0.0.14 rules on torchvision/PyAV + the transformers video processor);
* the video pad count per sample = Σ t·h·w / 4;
* position_ids against a Python get_rope_index written here from transformers' Qwen2.5-VL code
  (time index = long(t · second_per_grid_t · tokens_per_second) in float32, tokens_per_second 2);
* Qwen3-VL: one <|vision_start|> … <|vision_end|> block per temporal group.
"""
import json
import os
import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "bench"))
import video_reference as ref  # noqa: E402

from conftest import _stoker_bin  # noqa: E402

VISION_START, VISION_END, IMAGE_PAD, VIDEO_PAD = 151652, 151653, 151655, 151656


@pytest.fixture(scope="module")
def video_data(tmp_path_factory):
    d = tmp_path_factory.mktemp("videos")
    subprocess.run([_stoker_bin(), "synth", "--out", str(d), "--n", "4", "--seed", "3",
                    "--max-side", "256", "--videos", "6", "--threads", "1"],
                   check=True, capture_output=True)
    records = [json.loads(l) for l in (d / "data.jsonl").read_text().splitlines()]
    return d, records


def video_parts(record):
    for m in record.get("messages", []):
        if isinstance(m["content"], list):
            for p in m["content"]:
                if p.get("type") == "video":
                    yield p


def rope_index_qwen25(ids, image_grids, video_grids, seconds, merge=2, tokens_per_second=2):
    """transformers Qwen2_5_VLModel.get_rope_index for one unpadded sequence (3 × L)."""
    ids = list(ids)
    pos = []
    st = 0
    img_i = vid_i = 0
    n_img = sum(1 for i in range(len(ids) - 1) if ids[i] == VISION_START and ids[i + 1] == IMAGE_PAD)
    n_vid = sum(1 for i in range(len(ids) - 1) if ids[i] == VISION_START and ids[i + 1] == VIDEO_PAD)
    for _ in range(n_img + n_vid):
        ed_img = ids.index(IMAGE_PAD, st) if img_i < n_img and IMAGE_PAD in ids[st:] else len(ids) + 1
        ed_vid = ids.index(VIDEO_PAD, st) if vid_i < n_vid and VIDEO_PAD in ids[st:] else len(ids) + 1
        if ed_img < ed_vid:
            t, h, w = image_grids[img_i]
            sec = 0.0
            img_i += 1
            ed = ed_img
        else:
            t, h, w = video_grids[vid_i]
            sec = seconds[vid_i]
            vid_i += 1
            ed = ed_vid
        gt, gh, gw = t, h // merge, w // merge
        text_len = ed - st
        st_idx = int(max(p.max() for p in pos)) + 1 if pos else 0
        pos.append(torch.arange(text_len).view(1, -1).expand(3, -1) + st_idx)
        r = torch.arange(gt).view(-1, 1).expand(-1, gh * gw)
        t_index = (r * torch.tensor(sec, dtype=torch.float32) * tokens_per_second).long().flatten()
        h_index = torch.arange(gh).view(1, -1, 1).expand(gt, -1, gw).flatten()
        w_index = torch.arange(gw).view(1, 1, -1).expand(gt, gh, -1).flatten()
        pos.append(torch.stack([t_index, h_index, w_index]) + text_len + st_idx)
        st = ed + gt * gh * gw
    if st < len(ids):
        st_idx = int(max(p.max() for p in pos)) + 1 if pos else 0
        pos.append(torch.arange(len(ids) - st).view(1, -1).expand(3, -1) + st_idx)
    return torch.cat(pos, dim=1)


def test_loader_videos_match_references(stoker, video_data):
    d, records = video_data
    loader = stoker.Loader(str(d / "data.jsonl"), model="qwen2.5-vl", batch_size=len(records),
                           threads=2, max_length=0)
    batches = list(loader)
    assert len(batches) == 1
    b = batches[0]
    ids = b["sample_ids"].tolist()
    vg = b["video_grid_thw"].tolist()
    spg = b["second_per_grid_ts"].tolist()
    pv = b["pixel_values_videos"].numpy()
    ig = b["image_grid_thw"].tolist()
    row = vid = img = 0
    videos_seen = 0
    for r, sample in enumerate(ids):
        rec = records[sample]
        mask = b["attention_mask"][r].bool()
        seq = b["input_ids"][r][mask]
        n_img = int(((seq[:-1] == VISION_START) & (seq[1:] == IMAGE_PAD)).sum())
        parts = list(video_parts(rec))
        my_vg, my_sec = vg[vid:vid + len(parts)], spg[vid:vid + len(parts)]
        for k, part in enumerate(parts):
            rr = ref.reference(str(d / part["video"]), "qwen25vl", fps=part["fps"])
            assert my_vg[k] == rr["grid"], part["video"]
            assert my_sec[k] == pytest.approx(np.float32(rr["second_per_grid_t"]), rel=0, abs=0)
            n = int(np.prod(rr["grid"]))
            got = pv[row:row + n]
            delta = float(np.abs(got - rr["pixels"]).max())
            # identical, or one uint8 level through the normalisation (video/resize.h)
            assert delta <= 1 / (255 * 0.26130258) + 1e-6, (part["video"], delta)
            row += n
            videos_seen += 1
        assert int((seq == VIDEO_PAD).sum()) == sum(int(np.prod(g)) // 4 for g in my_vg)
        expect = rope_index_qwen25(seq.tolist(), ig[img:img + n_img], my_vg, my_sec)
        got_pos = b["position_ids"][:, r, :][:, mask]
        assert torch.equal(got_pos, expect), rec.get("id")
        vid += len(parts)
        img += n_img
    assert videos_seen == 6 and row == pv.shape[0]


def test_qwen3_one_block_per_temporal_group(stoker, video_data):
    d, records = video_data
    loader = stoker.Loader(str(d / "data.jsonl"), model="qwen3-vl", batch_size=len(records),
                           threads=2, max_length=0)
    b = next(iter(loader))
    vg = b["video_grid_thw"].tolist()
    vid = 0
    for r, sample in enumerate(b["sample_ids"].tolist()):
        parts = list(video_parts(records[sample]))
        if not parts:
            continue
        seq = b["input_ids"][r][b["attention_mask"][r].bool()]
        blocks = int(((seq[:-1] == VISION_START) & (seq[1:] == VIDEO_PAD)).sum())
        assert blocks == sum(g[0] for g in vg[vid:vid + len(parts)])
        for k, part in enumerate(parts):
            rr = ref.reference(str(d / part["video"]), "qwen3vl", fps=part["fps"])
            assert vg[vid + k] == rr["grid"]
        vid += len(parts)


def test_packed_and_served_videos(stoker, video_data, tmp_path):
    d, records = video_data
    data = str(d / "data.jsonl")
    plain = next(iter(stoker.Loader(data, batch_size=len(records), threads=2, max_length=0)))
    packed = list(stoker.Loader(data, threads=2, packing=True, max_tokens=32768))
    rows = sum(p["pixel_values_videos"].shape[0] for p in packed if "pixel_values_videos" in p)
    assert rows == plain["pixel_values_videos"].shape[0]
    sock = str(tmp_path / "v.sock")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(stoker.__file__))
    server = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, stoker; stoker.serve(sys.argv[1], socket=sys.argv[2], batch_size=%d, "
         "threads=2, max_length=0, idle_timeout_s=60)" % len(records), data, sock],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        try:
            client = stoker.Loader(connect=sock, connect_timeout_s=120)
        except stoker.StokerError:
            server.kill()
            raise AssertionError(server.communicate()[1].decode()[-2000:])
        served = next(iter(client))
        for name in ("pixel_values_videos", "video_grid_thw", "second_per_grid_ts", "input_ids"):
            assert torch.equal(served[name], plain[name]), name
        del served, client
    finally:
        server.kill()
        server.wait()


def test_bad_videos_fail_their_samples_with_reasons(video_data, tmp_path):
    """`stoker run` over good and bad video records: the bad ones are reported, one reason each."""
    d, records = video_data
    good = next(r for r in records if list(video_parts(r)))
    part = next(iter(video_parts(good)))
    src = (d / part["video"]).read_bytes()
    (d / "cut.mp4").write_bytes(src[: len(src) // 2])
    lines = [good]
    for name in ("videos/one_frame.mp4", "cut.mp4", "missing.mp4", "images"):
        bad = json.loads(json.dumps(good))
        bad["id"] = "bad-" + name
        for p in video_parts(bad):
            p["video"] = name
        lines.append(bad)
    # A video given as frames, its second frame missing: named as that video's frame, not as an
    # image (issue 21).
    frames = json.loads(json.dumps(good))
    frames["id"] = "bad-frames"
    for p in video_parts(frames):
        del p["video"]
        p["video"] = ["frame0.jpg", "nope.jpg"]
    lines.append(frames)
    (tmp_path / "frame0.jpg").write_bytes(next((d / "images").glob("*.jpg")).read_bytes())
    data = tmp_path / "mixed.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in lines))
    import shutil  # media paths are relative to the manifest, beneath it (no symlinks out)
    shutil.copytree(d / "videos", tmp_path / "videos")
    shutil.copy(d / "cut.mp4", tmp_path / "cut.mp4")
    report = tmp_path / "errors.jsonl"
    run = subprocess.run([_stoker_bin(), "run", str(data), "--batch-size", "2", "--quiet",
                          "--max-error-rate", "1", "--error-report", str(report)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "wait ratio" in run.stderr + run.stdout
    errors = {json.loads(l)["line"]: json.loads(l) for l in report.read_text().splitlines()}
    assert set(errors) == {2, 3, 4, 5, 6}, errors
    assert "nframes should be in [2, 1]" in errors[2]["reason"]
    assert errors[3]["code"] == "DataLoss" and "video 0" in errors[3]["reason"]
    # Every failure names the medium by its kind and index among the sample's videos.
    assert errors[4]["code"] == "NotFound" and errors[4]["reason"].startswith("video 0: ")
    assert errors[5]["stage"] in ("fetch", "decode") and "video 0" in errors[5]["reason"]
    assert errors[6]["code"] == "NotFound" and errors[6]["stage"] == "fetch"
    assert errors[6]["reason"].startswith("video 0: frame 1: "), errors[6]
    assert not any(re.search(r"\bimage \d", e["reason"]) for e in errors.values()), errors
