"""Qwen3-Omni (a model folder of model_type qwen3_omni_moe) through every delivery path (issue 25's
"identical batches everywhere" for the family whose position_ids are float32 with fractions):
the synth image + video-with-audio + audio set of test_audio_loader, plus videos sampled at fps 3
and 5 (second_per_grid·13 = 8.67 / 5.2 per step: fractional TMRoPE time positions) with and
without use_audio_in_video, through

* `stoker run` padded (to the longest; to max_length), HF-packed (4 and 3 position rows) and Megatron-packed,
* the in-process Loader (the same options),
* `stoker serve` (the CLI; padded and HF-packed) + `Loader(connect=...)`: float32 position_ids read zero-copy from the
  server's arena,
* `stoker cluster` under mpirun, every wire (float, uint8, encoded; positions travel as doubles)
  padded, and encoded to max_length / uint8 HF-packed / float Megatron-packed,

gives the same FNV-1a batch hashes everywhere; and the position_ids of the padded and HF-packed
batches equal get_rope_index of Qwen3-Omni written from transformers in torch
(tests/python/omni_rope_reference.py) on each sample's ids, grids, seconds and reference audio
lengths (bench/audio_reference.py: soundfile/ffmpeg + numpy + libsoxr + the NumPy Whisper
extractor; nothing there imports stoker)."""
import json
import os
import shutil
import subprocess
import tempfile

import numpy as np
import pytest
import torch

from conftest import _stoker_bin
from test_audio_loader import (IMAGE, Q3_CFG, VIDEO, audio_parts, batch_hash,  # noqa: F401,E501 (data: the fixture)
                               data, fractional_video_records, qwen3_omni_folder, ref, rope_ref)

import stoker

AS = 151669  # <|audio_start|> of the folder
CLI = ["--batch-size", "3", "--seed", "7", "--epochs", "1", "--threads", "1", "--io-threads", "2",
       "--prefetch", "2", "--quiet", "--max-error-rate", "0", "--arena-mb", "256"]
PACK = ["--packing", "--max-tokens", "4096", "--pack-window", "8"]
PACK_KW = dict(packing=True, max_tokens=4096, pack_window=8)
FORMS = {  # name: (CLI flags, Loader keywords)
    "padded": ([], {}),
    "fixed": (["--pad-to-max", "--max-length", "4096"], dict(padding="max_length", max_length=4096)),
    "hf4": (PACK, PACK_KW),
    "hf3": (PACK + ["--position-rows", "3"], dict(PACK_KW, position_rows=3)),
    "megatron": (PACK + ["--pack-format", "megatron", "--pack-align", "8"],
                 dict(PACK_KW, pack_format="megatron", pack_align=8)),
}


@pytest.fixture(scope="module")
def q3(data, tmp_path_factory):
    root, _, records = data
    records = records + fractional_video_records(root, records)
    # One more: the 2 s aiv video at fps 5 (10 frames, second_per_grid 0.4 → 5.2 positions per
    # grid step, not exact in binary).
    extra = json.loads(json.dumps(records[-2]))
    extra["id"] = "fractional-fps5"
    extra["messages"][0]["content"][0]["fps"] = 5.0
    records.append(extra)
    path = root / "q3-mixed.jsonl"  # media paths are relative to the data root
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    folder = qwen3_omni_folder(tmp_path_factory.mktemp("q3folder"))
    return root, path, records, folder


def reference_lengths(root, record):
    """The audio mask sums of one processor call on the sample's clips (padding=True, no
    truncation), from the reference loader and extractor."""
    parts = list(audio_parts(record))
    if not parts:
        return [], False
    waves = []
    for p in parts:
        offset = p[1] or 0.0
        duration = None if p[2] is None else p[2] - offset
        waves.append(ref.librosa_load(str(root / p[0]), offset=offset, duration=duration)[0])
    _, m, _ = ref.features_for_model("qwen3-omni", waves, vectorized=True)
    return [int(x) for x in m.sum(-1)], any(p[3] is not None for p in parts)


class Oracle:
    """Per sample: get_rope_index of Qwen3-Omni (float32) on its ids and the batch's grids."""

    def __init__(self, root, records):
        self.root, self.records, self.lengths = root, records, {}

    def expect(self, sid, seq, igrids, vgrids, vsec):
        if sid not in self.lengths:
            self.lengths[sid] = reference_lengths(self.root, self.records[sid])
        lengths, in_video = self.lengths[sid]
        pos, _ = rope_ref.rope_3(seq, igrids, vgrids, [1] * len(seq), in_video, lengths, vsec, cfg=Q3_CFG)
        return np.asarray(pos, dtype=np.float32)


def media_counts(seq):
    n_img = sum(1 for i in range(1, len(seq)) if seq[i] == IMAGE and seq[i - 1] == 151652)
    n_vid = sum(1 for i in range(1, len(seq)) if seq[i] == VIDEO and seq[i - 1] in (151652, AS))
    return n_img, n_vid


def grids(b):
    return (b["image_grid_thw"].numpy().tolist() if "image_grid_thw" in b else [],
            b["video_grid_thw"].numpy().tolist() if "video_grid_thw" in b else [],
            b["second_per_grid_ts"].numpy().tolist() if "second_per_grid_ts" in b else [])


def check_padded(b, oracle, fractional):
    ids, att, pos = b["input_ids"].numpy(), b["attention_mask"].numpy(), b["position_ids"].numpy()
    assert b["position_ids"].dtype == torch.float32 and pos.shape[0] == 3
    igrids, vgrids, vsec = grids(b)
    img = vid = 0
    for row, sid in enumerate(b["sample_ids"].numpy().tolist()):
        seq = ids[row][att[row] == 1].tolist()
        n_img, n_vid = media_counts(seq)
        expect = oracle.expect(sid, seq, igrids[img:img + n_img], vgrids[vid:vid + n_vid],
                               vsec[vid:vid + n_vid])
        assert np.array_equal(pos[:, row, :][:, att[row] == 1], expect), sid
        assert (pos[:, row, :][:, att[row] == 0] == 1).all()
        if (expect != np.floor(expect)).any():
            fractional.add(sid)
        img += n_img
        vid += n_vid
    assert img == len(igrids) and vid == len(vgrids)


def check_hf_packed(b, oracle, rows):
    ids, pos = b["input_ids"].numpy()[0], b["position_ids"].numpy()
    assert b["position_ids"].dtype == torch.float32 and pos.shape[:2] == (rows, 1)
    cu = b["cu_seq_lens_q"].numpy().tolist()
    igrids, vgrids, vsec = grids(b)
    img = vid = 0
    for k, sid in enumerate(b["sample_ids"].numpy().tolist()):
        seq = ids[cu[k]:cu[k + 1]].tolist()
        n_img, n_vid = media_counts(seq)
        expect = oracle.expect(sid, seq, igrids[img:img + n_img], vgrids[vid:vid + n_vid],
                               vsec[vid:vid + n_vid])
        got = pos[:, 0, cu[k]:cu[k + 1]]
        if rows == 4:  # row 0: the text positions (arange), then the three TMRoPE rows
            assert np.array_equal(got[0], np.arange(len(seq), dtype=np.float32)), sid
            got = got[1:]
        assert np.array_equal(got, expect), sid
        img += n_img
        vid += n_vid
    assert cu[-1] == len(ids)


def run_hashes(path, folder, tmp, extra=()):
    tmp.mkdir(parents=True, exist_ok=True)
    out = tmp / "hashes.txt"
    r = subprocess.run([_stoker_bin(), "run", str(path), "--model", str(folder), *CLI,
                        "--batch-hashes", str(out), *extra], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return out.read_text().split()


def loader(path, folder, **kw):
    return stoker.Loader(str(path), model=str(folder), arena_bytes=256 << 20, max_error_rate=0.0,
                         batch_size=3, seed=7, epochs=1, **kw)


def test_qwen3_omni_identical_batches_everywhere(q3, tmp_path):
    root, path, records, folder = q3
    oracle = Oracle(root, records)
    hashes = {}
    fractional = set()
    for form, (flags, kw) in FORMS.items():
        hashes[form] = run_hashes(path, folder, tmp_path / form, flags)
        got = []
        for b in loader(path, folder, **kw):
            if form in ("padded", "fixed"):
                check_padded(b, oracle, fractional)
                assert form == "padded" or b["input_ids"].shape[1] == 4096
            elif form.startswith("hf"):
                check_hf_packed(b, oracle, int(form[2]))
            else:  # Megatron THD: 1-D int64 arange per sub-sequence (no mRoPE rows in that form)
                assert b["position_ids"].dtype == torch.int64 and b["position_ids"].dim() == 2
            got.append(f"{batch_hash(b):016x}")
        assert got == hashes[form], form
    assert len(hashes["padded"]) >= 5 and len(set(map(tuple, hashes.values()))) == len(FORMS)
    # The fps-3 and fps-5 videos (with and without their track) keep fractional positions.
    n = len(records)
    assert {n - 3, n - 2, n - 1} <= fractional, fractional

    for form in ("padded", "hf4"):
        assert served_hashes(path, folder, FORMS[form][0]) == hashes[form], form

    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not installed: the cluster half needs it")
    mpirun = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,tcp",
              "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo"]
    for wire, form in (("float", "padded"), ("uint8", "padded"), ("encoded", "padded"),
                       ("encoded", "fixed"), ("uint8", "hf4"), ("float", "megatron")):
        out = tmp_path / f"cluster-{wire}-{form}.txt"
        r = subprocess.run([*mpirun, "--map-by", "node", "-np", "3", _stoker_bin(), "cluster",
                            str(path), "--model", str(folder), *CLI, "--wire", wire,
                            "--batch-hashes", str(out), *FORMS[form][0]],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        assert out.read_text().split() == hashes[form], (wire, form)


def served_hashes(path, folder, extra=()):
    """`stoker serve` (one rank) → Loader(connect=...): every tensor a view of the server's arena
    (position_ids float32 included), the hashes of what it read."""
    sock_dir = tempfile.mkdtemp(prefix="stoker-q3-")  # a Unix socket path is short (108 bytes)
    sock = os.path.join(sock_dir, "s.sock")
    proc = subprocess.Popen([_stoker_bin(), "serve", str(path), "--socket", sock, "--world-size", "1",
                             "--model", str(folder), *CLI, *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        client = stoker.Loader(connect=sock, connect_timeout_s=60, rank=0, world_size=1)
        info = client.arena_info()
        served = []
        for b in client:
            assert b["position_ids"].dtype == torch.float32
            for name, t in b.items():
                if isinstance(t, torch.Tensor) and t.numel() > 0:  # (an empty one has no storage)
                    assert info["base"] <= t.data_ptr() < info["base"] + info["capacity"], name
            served.append(f"{batch_hash(b):016x}")
            del b, t
        del client
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(sock_dir, ignore_errors=True)
    return served
