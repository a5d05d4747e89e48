"""Audio through the engine (issue 25): a mixed image + video + audio dataset (`stoker synth
--audio`, plus hand-written ShareGPT / multi-clip / audio_start-audio_end records) with the
Qwen2.5-Omni preset through `stoker run`, the Python Loader, packing and `stoker cluster` (every
wire) gives identical batches (FNV-1a batch hashes), and what the batches hold matches independent
references:

* input_features / feature_attention_mask against bench/audio_reference.py (python3-soundfile or
  the ffmpeg CLI, numpy mean, Debian's libsoxr through ctypes at python-soxr's HQ settings, the
  transformers NumPy Whisper extractor; nothing there imports stoker): max |diff| <= 1e-5, masks
  identical;
* the <|AUDIO|> run of each clip = the Qwen2.5-Omni token formula on the reference mask sum; a
  video with use_audio_in_video: its block = the processor's 2-second interleave of its video and
  track tokens (omni_rope_reference.aiv_placeholder);
* position_ids = get_rope_index of Qwen2.5-Omni written from transformers in torch
  (tests/python/omni_rope_reference.py) on the sample's ids, grids, seconds and audio lengths.
"""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import torch
import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "bench"))
sys.path.insert(0, str(HERE.parent / "python"))
import audio_reference as ref  # noqa: E402
import omni_rope_reference as rope_ref  # noqa: E402
from qwen3_omni_folder import Q3_CFG  # noqa: E402,F401 (test_audio_qwen3_omni imports it from here)
from qwen3_omni_folder import qwen3_omni_folder as make_qwen3_omni_folder  # noqa: E402

from conftest import _stoker_bin  # noqa: E402

import stoker  # noqa: E402
from stoker import _stoker  # noqa: E402

AUDIO, AUDIO_BOS, AUDIO_EOS, IMAGE, VIDEO = 151646, 151647, 151648, 151655, 151656
MODEL = "qwen2.5-omni"
COMMON = dict(batch_size=3, seed=7, epochs=1)
CLI = ["--model", MODEL, "--batch-size", "3", "--seed", "7", "--epochs", "1", "--threads", "1",
       "--io-threads", "2", "--prefetch", "2", "--quiet", "--max-error-rate", "0",
       "--arena-mb", "768"]
PACK = ["--packing", "--max-tokens", "4096", "--pack-window", "8"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    d = tmp_path_factory.mktemp("audio")
    subprocess.run([_stoker_bin(), "synth", "--out", str(d), "--n", "3", "--seed", "3",
                    "--max-side", "128", "--videos", "2", "--audio", "10", "--threads", "1"],
                   check=True, capture_output=True)
    records = [json.loads(l) for l in (d / "data.jsonl").read_text().splitlines()]
    assert any("use_audio_in_video" in json.dumps(r) for r in records)  # a video with its track
    audios = [p["audio"] for r in records for m in r["messages"] if isinstance(m["content"], list)
              for p in m["content"] if p.get("type") == "audio"]
    images = sorted(str(p.relative_to(d)) for p in (d / "images").iterdir())
    # ShareGPT with <audio> tags and an object entry with audio_start/audio_end; two clips and an
    # image in one OpenAI record; a clip range through the OpenAI keys.
    records.append({"id": "sharegpt-audio", "conversations": [
        {"from": "human", "value": "<audio>\nWhat is this?<image>"},
        {"from": "gpt", "value": "A sound."},
        {"from": "human", "value": "And this? <audio>"},
        {"from": "gpt", "value": "Another."}],
        "images": [images[0]],
        "audios": [audios[0], {"audio": audios[2], "audio_start": 0.5, "audio_end": 2.25}]})
    records.append({"id": "two-clips", "messages": [
        {"role": "user", "content": [{"type": "audio", "audio": audios[1]},
                                     {"type": "image", "image": images[1]},
                                     {"type": "audio", "audio": audios[3], "audio_start": 1}]},
        {"role": "assistant", "content": "Two sounds and a picture."}]})
    path = d / "mixed.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return d, path, records


def audio_parts(record):
    """(path, start, end, video index or None) of each audio in order of appearance: audio parts,
    and the tracks of video parts with use_audio_in_video (qwen-omni-utils' order)."""
    if "messages" in record:
        videos = 0
        for m in record["messages"]:
            if isinstance(m["content"], list):
                for p in m["content"]:
                    if p.get("type") == "audio":
                        yield p["audio"], p.get("audio_start"), p.get("audio_end"), None
                    elif p.get("type") == "video":
                        if p.get("use_audio_in_video") or record.get("use_audio_in_video"):
                            yield p["video"], p.get("video_start"), p.get("video_end"), videos
                        videos += 1
        return
    entries = record.get("audios", [])
    text = "".join(t["value"] for t in record["conversations"])
    assert text.count("<audio>") == len(entries)
    for e in entries:
        if isinstance(e, str):
            yield e, None, None, None
        else:
            yield e["audio"], e.get("audio_start"), e.get("audio_end"), None


def reference_clip(root, part):
    path, start, end, _ = part
    offset = start or 0.0
    duration = None if end is None else end - offset
    wave = ref.librosa_load(str(root / path), offset=offset, duration=duration)[0]
    feats, mask, tokens = ref.features_for_model(MODEL, [wave], vectorized=True)
    return feats[0], mask[0], tokens[0]


def batch_hash(batch):
    """stoker's --batch-hashes: FNV-1a over every tensor's shape (int64) then bytes, in order."""
    h = None
    for t in batch.values():
        if isinstance(t, int):  # the packed form's max_length_q/k: 0-d int64 in the batch
            h = _stoker.fnv1a64(np.asarray(t, dtype=np.int64).tobytes(), h)
            continue
        shape = np.asarray(t.shape, dtype=np.int64)
        h = _stoker.fnv1a64(shape.tobytes()) if h is None else _stoker.fnv1a64(shape.tobytes(), h)
        h = _stoker.fnv1a64(np.ascontiguousarray(t.numpy()).view(np.uint8).reshape(-1), h)
    return h


def loader_hashes(path, **kw):
    loader = stoker.Loader(str(path), model=MODEL, arena_bytes=768 << 20, max_error_rate=0.0,
                           **COMMON, **kw)
    return [f"{batch_hash(b):016x}" for b in loader]


def run_hashes(path, tmp, extra=()):
    tmp.mkdir(parents=True, exist_ok=True)
    out = tmp / "hashes.txt"
    r = subprocess.run([_stoker_bin(), "run", str(path), *CLI, "--batch-hashes", str(out), *extra],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    return out.read_text().split()


def test_features_tokens_positions_match_the_references(data):
    root, path, records = data
    by_index = {i: r for i, r in enumerate(records)}
    loader = stoker.Loader(str(path), model=MODEL, arena_bytes=768 << 20, max_error_rate=0.0,
                           **COMMON)
    seen_clips = 0
    samples = 0
    worst = 0.0
    for b in loader:
        ids = b["input_ids"].numpy()
        att = b["attention_mask"].numpy()
        pos = b["position_ids"].numpy()
        feats = b["input_features"].numpy() if "input_features" in b else np.zeros((0, 128, 30000))
        fmask = b["feature_attention_mask"].numpy() if "input_features" in b else np.zeros((0, 30000))
        igrids = b["image_grid_thw"].numpy().tolist()
        vgrids = b["video_grid_thw"].numpy().tolist() if "video_grid_thw" in b else []
        vsec = b["second_per_grid_ts"].numpy().tolist() if "second_per_grid_ts" in b else []
        clip = img = vid = 0
        for row, sid in enumerate(b["sample_ids"].numpy().tolist()):
            samples += 1
            rec = by_index[sid]
            seq = ids[row][att[row] == 1].tolist()
            n_img = sum(1 for i in range(1, len(seq)) if seq[i] == IMAGE and seq[i - 1] != IMAGE)
            n_vid = sum(1 for i in range(1, len(seq)) if seq[i] == VIDEO and seq[i - 1] in (151652, AUDIO_BOS))
            # Each audio block: the tokens between <|audio_bos|> and <|audio_eos|>.
            blocks = []
            for i, t in enumerate(seq):
                if t == AUDIO_BOS:
                    blocks.append(seq[i + 1:seq.index(AUDIO_EOS, i)])
            parts = list(audio_parts(rec))
            assert len(parts) == len(blocks), rec.get("id", sid)
            lengths = []
            in_video = any(p[3] is not None for p in parts)
            for k, part in enumerate(parts):
                f, m, tokens = reference_clip(root, part)
                if part[3] is None:
                    expect_block = [AUDIO] * tokens
                else:  # the processor's audio-in-video layout for this video and track
                    v = vid + part[3]
                    layout = rope_ref.aiv_placeholder(MODEL, vgrids[v], vsec[v], tokens, 25)
                    expect_block = [AUDIO if x == "A" else VIDEO for x in layout]
                assert blocks[k] == expect_block, (rec.get("id"), k)
                got = feats[clip]
                assert got.shape == f.shape
                diff = float(np.abs(got - f).max())
                worst = max(worst, diff)
                assert diff <= 1e-5, (rec.get("id"), k, diff)
                assert np.array_equal(fmask[clip], m), (rec.get("id"), k)
                lengths.append(int(m.sum()))
                clip += 1
                seen_clips += 1
            expect, _ = rope_ref.rope_25(seq, igrids[img:img + n_img], vgrids[vid:vid + n_vid],
                                         [1] * len(seq), in_video, lengths, vsec[vid:vid + n_vid])
            assert np.array_equal(pos[:, row, :][:, att[row] == 1], np.asarray(expect)), sid
            img += n_img
            vid += n_vid
        assert clip == feats.shape[0]
    assert samples == len(records)
    assert seen_clips >= 12
    print(f"audio features: {seen_clips} clips, max |diff| {worst:.3g}")


def test_run_loader_packing_and_cluster_deliver_identical_batches(data, tmp_path):
    _, path, _ = data
    padded = run_hashes(path, tmp_path / "run")
    assert len(padded) >= 4
    assert loader_hashes(path) == padded
    packed = run_hashes(path, tmp_path / "pack", PACK)
    assert loader_hashes(path, packing=True, max_tokens=4096, pack_window=8) == packed
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun not installed: the cluster half needs it")
    mpirun = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,tcp",
              "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo"]
    for wire, extra, expect in (("float", [], padded), ("uint8", [], padded),
                                ("encoded", [], padded), ("uint8", PACK, packed)):
        out = tmp_path / f"cluster-{wire}-{len(extra)}.txt"
        r = subprocess.run([*mpirun, "--map-by", "node", "-np", "3", _stoker_bin(), "cluster",
                            str(path), *CLI, "--wire", wire, "--batch-hashes", str(out), *extra],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        assert out.read_text().split() == expect, wire


SERVER = """
import json, sys
import stoker
print(json.dumps(stoker.serve(sys.argv[1], socket=sys.argv[2], model="qwen2.5-omni", batch_size=3,
                              seed=7, epochs=1, threads=1, arena_bytes=768 << 20,
                              max_error_rate=0.0, idle_timeout_s=60)))
"""


def test_served_batches_carry_the_audio_tensors(data, tmp_path):
    """`stoker.serve` → Loader(connect=...) over the shm hand-off: the same batch hashes as the
    in-process Loader (input_features and feature_attention_mask included)."""
    _, path, _ = data
    sock = str(tmp_path / "s.sock")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(stoker.__file__))
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(path), sock], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        client = stoker.Loader(connect=sock, connect_timeout_s=60)
        served = []
        for b in client:
            assert "input_features" in b or "pixel_values" in b
            served.append(f"{batch_hash(b):016x}")
            del b
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert served == loader_hashes(path)


def test_qwen2_audio_preset(data):
    """Qwen2-Audio: features padded/truncated to 30 s (the synth set's 31 s clip is cut), the same
    token formula, its template's "Audio N: " prefix, 1-D positions 0..L-1."""
    root, _, records = data
    audio_only = [r for r in records if "messages" in r and all(
        p.get("type") in ("audio", "text") for m in r["messages"] if isinstance(m["content"], list)
        for p in m["content"])]
    audio_only = [r for r in audio_only if any(True for _ in audio_parts(r))]
    assert len(audio_only) >= 8
    path = root / "audio_only.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in audio_only))
    binary = pathlib.Path(_stoker_bin()).resolve().parent  # build/ or PREFIX/bin
    tok = next(d / "share/stoker/tokenizers/qwen2_5/tokenizer.json" for d in (binary, binary.parent)
               if (d / "share/stoker/tokenizers/qwen2_5/tokenizer.json").exists())
    vocab = json.loads(tok.read_text())["model"]["vocab"]
    text_of = {i: t.replace("\u0120", " ") for t, i in vocab.items()}
    loader = stoker.Loader(str(path), model="qwen2-audio", arena_bytes=256 << 20,
                           max_error_rate=0.0, batch_size=4, seed=1)
    n = 0
    for b in loader:
        ids, att = b["input_ids"].numpy(), b["attention_mask"].numpy()
        assert tuple(b["position_ids"].shape) == tuple(ids.shape)
        feats, fmask = b["input_features"].numpy(), b["feature_attention_mask"].numpy()
        assert feats.shape[1:] == (128, 3000)
        for row, sid in enumerate(b["sample_ids"].numpy().tolist()):
            seq = ids[row][att[row] == 1].tolist()
            assert b["position_ids"][row][att[row] == 1].tolist() == list(range(len(seq)))
            (part,) = list(audio_parts(audio_only[sid]))
            wave = ref.librosa_load(str(root / part[0]))[0]
            f, m, tokens = ref.features_for_model("qwen2-audio", [wave], vectorized=True)
            assert float(np.abs(feats[row] - f[0]).max()) <= 1e-5
            assert np.array_equal(fmask[row], m[0])
            assert seq.count(AUDIO) == tokens[0]
            start = seq.index(AUDIO_BOS)
            assert "".join(text_of.get(t, "?") for t in seq[start - 5:start]).endswith("Audio 1: ")
            n += 1
    assert n == len(audio_only)


def qwen3_omni_folder(root):
    """A Qwen3-Omni folder (tests/python/qwen3_omni_folder.py) under root."""
    return make_qwen3_omni_folder(_stoker_bin(), root)


def fractional_video_records(root, records):
    """Two records whose video positions are fractional in Qwen3-Omni (second_per_grid·13 not
    whole): a synth video (2 s or more) sampled at fps 3 (second_per_grid ≈ 2/3 → ≈ 8.67 per step) with
    its audio track (use_audio_in_video) and without."""
    videos = [p["video"] for r in records if "messages" in r for m in r["messages"]
              if isinstance(m["content"], list) for p in m["content"]
              if p.get("type") == "video" and p.get("use_audio_in_video")]  # ones with a track
    assert videos
    out = []
    for aiv in (True, False):
        part = {"type": "video", "video": videos[0], "fps": 3.0}
        if aiv:
            part["use_audio_in_video"] = True
        out.append({"id": f"fractional-{aiv}", "messages": [
            {"role": "user", "content": [part, {"type": "text", "text": "What happens?"}]},
            {"role": "assistant", "content": "Something moves."}]})
    return out


def test_qwen3_omni_folder(data, tmp_path):
    """Qwen3-Omni rules through the engine: a sample's clips padded to its longest (clips of
    different widths in a batch; the batch as wide as its widest), the 3-Omni token formula,
    Qwen3-VL vision (factor 32), token-level audio-in-video merge at 13 positions/s, positions =
    get_rope_index of Qwen3-Omni: float32 position_ids, fractional where a video's
    second_per_grid·13 is (transformers keeps t·second_per_grid·13 unrounded in float32), with and
    without use_audio_in_video."""
    root, path, records = data
    records = records + fractional_video_records(root, records)
    path = root / "with-fractional.jsonl"  # media paths are relative to the data root
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    folder = qwen3_omni_folder(tmp_path)
    report = tmp_path / "errors.jsonl"
    loader = stoker.Loader(str(path), model=str(folder), arena_bytes=256 << 20,
                           max_error_rate=0.0, batch_size=3, seed=7, error_report=str(report))
    AP, AS, AE = 151675, 151669, 151670
    samples = clips = 0
    widths = set()
    fractional = {}  # sample id -> with use_audio_in_video
    for b in loader:
        ids, att, pos = b["input_ids"].numpy(), b["attention_mask"].numpy(), b["position_ids"].numpy()
        assert b["position_ids"].dtype == torch.float32  # transformers' dtype for Qwen3-Omni
        igrids = b["image_grid_thw"].numpy().tolist()
        vgrids = b["video_grid_thw"].numpy().tolist() if "video_grid_thw" in b else []
        vsec = b["second_per_grid_ts"].numpy().tolist() if "second_per_grid_ts" in b else []
        feats = b["input_features"].numpy() if "input_features" in b else None
        fmask = b["feature_attention_mask"].numpy() if "input_features" in b else None
        clip = img = vid = 0
        for row, sid in enumerate(b["sample_ids"].numpy().tolist()):
            rec = records[sid]
            seq = ids[row][att[row] == 1].tolist()
            n_img = sum(1 for i in range(1, len(seq)) if seq[i] == IMAGE and seq[i - 1] == 151652)
            n_vid = sum(1 for i in range(1, len(seq)) if seq[i] == VIDEO and seq[i - 1] in (151652, AS))
            parts = list(audio_parts(rec))
            blocks = [seq[i + 1:seq.index(AE, i)] for i, t in enumerate(seq) if t == AS]
            assert len(blocks) == len(parts)
            if parts:  # one processor call per sample: padding=True (the longest), no truncation
                waves = []
                for p in parts:
                    offset = p[1] or 0.0
                    duration = None if p[2] is None else p[2] - offset
                    waves.append(ref.librosa_load(str(root / p[0]), offset=offset, duration=duration)[0])
                f, m, tokens = ref.features_for_model("qwen3-omni", waves, vectorized=True)
                F = f.shape[2]
                widths.add(F)
                assert feats.shape[2] >= F
                for k, p in enumerate(parts):
                    assert float(np.abs(feats[clip][:, :F] - f[k]).max()) <= 1e-5, (sid, k)
                    assert not feats[clip][:, F:].any()
                    assert np.array_equal(fmask[clip][:F], m[k]) and not fmask[clip][F:].any()
                    if p[3] is None:
                        assert blocks[k] == [AP] * tokens[k]
                    else:
                        v = vid + p[3]
                        layout = rope_ref.aiv_placeholder("qwen3-omni", vgrids[v], vsec[v], tokens[k], 13.0)
                        assert blocks[k] == [AP if x == "A" else VIDEO for x in layout], (sid, k)
                    clip += 1
                    clips += 1
                lengths = [int(x) for x in m.sum(-1)]
            else:
                lengths = []
            in_video = any(p[3] is not None for p in parts)
            expect, _ = rope_ref.rope_3(seq, igrids[img:img + n_img], vgrids[vid:vid + n_vid],
                                        [1] * len(seq), in_video, lengths, vsec[vid:vid + n_vid],
                                        cfg=Q3_CFG)
            expect = np.asarray(expect, dtype=np.float32)
            got = pos[:, row, :][:, att[row] == 1]
            assert got.dtype == np.float32 and np.array_equal(got, expect), sid
            assert (pos[:, row, :][:, att[row] == 0] == 1).all()  # padding: HF's 1
            if (expect != np.floor(expect)).any():
                fractional[sid] = in_video
            img += n_img
            vid += n_vid
            samples += 1
    # Videos whose second_per_grid·13 is fractional (the two records above; synth's 29.97 fps
    # clip sampled at ~1 fps) keep their fractions, as transformers does: no sample fails.
    assert not report.exists() or not report.read_text().strip(), report.read_text()
    assert samples == len(records)
    n = len(records)
    assert fractional.get(n - 2) is True and fractional.get(n - 1) is False, fractional
    assert clips >= 12 and len(widths) >= 4
