"""`stoker inspect` and `stoker render` with the audio families (issue 25): qwen2-audio,
qwen2.5-omni and a Qwen3-Omni folder, on `stoker synth --audio 14` data (every synth kind: WAV
16/24-bit/float, FLAC, OGG Vorbis, Opus, MP3, M4A, a 31 s clip, MP4 videos whose AAC track is
used with use_audio_in_video).

Expectations computed independently of stoker:
- sample rate and channels: ffprobe (first audio stream) and the reference loader
  (bench/audio_reference.py: python3-soundfile on libsndfile, else audioread's ffmpeg CLI);
  header frames: soundfile's count where libsndfile reads the file, else a duration within 0.1 s
  of ffprobe's;
- the 16 kHz length: the reference librosa.load path (soundfile/audioread, numpy mean, libsoxr HQ
  through ctypes, librosa's length fix);
- feature frames: WhisperFeatureExtractor's attention-mask rule written here in numpy (pad or
  truncate to max_length / the longest, mask[::160], last column dropped when P % 160 != 0);
- tokens: the models' formulas with Python floor division (audio_reference.tokens_*);
- render: the text equals Python jinja2 rendering the stock template (tests/jinja/templates);
  positions equal get_rope_index of Qwen2.5-Omni / Qwen3-Omni written from transformers
  (omni_rope_reference.py), Qwen2-Audio's 0..L-1.
The Qwen-VL presets stay as they were: no audio rows, the clips counted as skipped.
"""
import json
import math
import pathlib
import re
import subprocess

import jinja2
import numpy as np
import pytest

import audio_reference as ref
import omni_rope_reference as rope
from qwen3_omni_folder import Q3_CFG, q3_template, qwen3_omni_folder

HERE = pathlib.Path(__file__).resolve().parent
TEMPLATES = HERE.parent / "jinja" / "templates"
# model → (padded length P in 16 kHz samples, or None: the record's longest; truncation; tokens)
RULES = {
    "qwen2-audio": (30 * 16000, True, ref.tokens_qwen2_audio),
    "qwen2.5-omni": (300 * 16000, True, ref.tokens_qwen2_audio),
    "qwen3-omni": (None, False, ref.tokens_qwen3_omni),
}
def run(args, ok=(0,)):
    p = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert p.returncode in ok, f"{' '.join(map(str, args))}: rc {p.returncode}\n{p.stderr}"
    return p


@pytest.fixture(scope="module")
def data(stoker_bin, tmp_path_factory):
    root = tmp_path_factory.mktemp("audio_cli")
    run([stoker_bin, "synth", "--out", str(root), "--n", "2", "--audio", "14", "--max-side", "256",
         "--threads", "1"])
    records = [json.loads(line) for line in (root / "data.jsonl").read_text().splitlines()]
    return root, records


@pytest.fixture(scope="module")
def q3_folder(stoker_bin, tmp_path_factory):
    """A Qwen3-Omni folder: the installed Qwen3 tokenizer with the Omni added tokens, the Omni
    template with the Qwen3 names (qwen3_omni_folder.py, as the Loader's tests make it)."""
    return qwen3_omni_folder(stoker_bin, tmp_path_factory.mktemp("q3"))


def model_arg(model, q3_folder):
    return str(q3_folder) if model == "qwen3-omni" else model


def clips_of(record):
    """(path, is_track) of the record's clips in order: audio parts, videos' tracks."""
    for m in record["messages"]:
        if isinstance(m["content"], list):
            for p in m["content"]:
                if p.get("type") == "audio":
                    yield p["audio"], False
                elif p.get("type") == "video" and p.get("use_audio_in_video"):
                    yield p["video"], True


_WAVES = {}


def wave_len(path):
    if path not in _WAVES:
        wave, native, channels, backend = ref.librosa_load(str(path))
        _WAVES[path] = (len(wave), native, channels, backend)
    return _WAVES[path]


def ffprobe(path):
    p = run(["ffprobe", "-v", "error", "-select_streams", "a:0", "-show_entries",
             "stream=sample_rate,channels,duration:format=duration", "-of", "json", str(path)])
    j = json.loads(p.stdout)
    s = j["streams"][0]
    duration = s.get("duration") or j["format"].get("duration")
    return int(s["sample_rate"]), int(s["channels"]), float(duration)


def expected_call(model, lengths):
    """(padded frames, [mask frames], [tokens]) of one WhisperFeatureExtractor call."""
    target, truncation, formula = RULES[model]
    if target is None:
        target = max(lengths)
    masks = []
    for n in lengths:
        n = min(n, target) if truncation else n
        m = np.zeros(max(target, n), dtype=np.int32)
        m[:n] = 1
        m = m[:target] if truncation else m
        r = m[::160]
        if len(m) % 160 != 0:
            r = r[:-1]
        masks.append(int(r.sum()))
    frames = target // 160
    return frames, masks, [int(formula(s)) for s in masks]


def expected_clips(model, root, record):
    clips = list(clips_of(record))
    lengths = [wave_len(root / p)[0] for p, _ in clips]
    if not clips:
        return []
    frames, masks, tokens = expected_call(model, lengths)
    return [dict(path=p, track=t, samples=n, frames=frames, mask=m, tokens=k)
            for (p, t), n, m, k in zip(clips, lengths, masks, tokens)]


# ---------------------------------------------------------------------------------------------
# inspect


@pytest.mark.parametrize("model", ["qwen2-audio", "qwen2.5-omni", "qwen3-omni"])
def test_inspect_json(stoker_bin, data, q3_folder, model):
    root, records = data
    p = run([stoker_bin, "inspect", str(root / "data.jsonl"), "--model", model_arg(model, q3_folder),
             "--json"], ok=(0, 1))
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    summary = lines[-1]["summary"]
    rows = [x for x in lines if "audio" in x]
    images = [x for x in lines if "image" in x]
    expect = []
    for k, rec in enumerate(records):
        for e in expected_clips(model, root, rec):
            e["line"] = k + 1
            expect.append(e)
    assert len(rows) == len(expect) == 14, (len(rows), len(expect))
    total = 0
    for row, e in zip(rows, expect):
        where = f"{model} line {e['line']} {e['path']}"
        assert row["ok"], (where, row)
        assert (row["line"], row["audio"], row["track"]) == (e["line"], e["path"], e["track"]), where
        n, native, channels, backend = wave_len(root / e["path"])
        rate, ch, duration = ffprobe(root / e["path"])
        assert row["sample_rate"] == native == rate, (where, row["sample_rate"], native, rate)
        assert row["channels"] == channels == ch, (where, row["channels"], channels, ch)
        assert row["backend"] == backend, where
        if backend == "sndfile":
            import soundfile as sf
            assert row["header_frames"] == sf.info(str(root / e["path"])).frames, where
        else:
            assert abs(row["duration_s"] - duration) < 0.1, (where, row["duration_s"], duration)
        assert row["samples"] == e["samples"], (where, row["samples"], e["samples"])
        assert math.isclose(row["seconds"], e["samples"] / 16000, abs_tol=1e-6), where
        assert row["frames"] == e["frames"], (where, row["frames"], e["frames"])
        assert row["feature_frames"] == e["mask"], (where, row["feature_frames"], e["mask"])
        assert row["tokens"] == e["tokens"], (where, row["tokens"], e["tokens"])
        assert row["load_ms"] > 0 and row["features_ms"] > 0, where
        assert row["container"] and row["codec"], where
        total += e["tokens"]
    assert summary["audios"] == 14 and summary["audio_errors"] == 0
    assert summary["audio_tokens"] == total
    assert math.isclose(summary["audio_seconds"], sum(e["samples"] for e in expect) / 16000, abs_tol=2e-3)
    n_images = sum(1 for r in records for m in r["messages"] if isinstance(m["content"], list)
                   for q in m["content"] if q.get("type") == "image")
    assert len(images) == n_images > 0
    if model == "qwen2-audio":  # no image processor: each image fails with the reason
        assert p.returncode == 1
        assert all(not x["ok"] and "takes no images" in x["error"] for x in images)
        assert summary["image_errors"] == n_images
    else:
        assert p.returncode == 0, p.stdout
        assert all(x["ok"] for x in images)


def test_inspect_text(stoker_bin, data):
    root, records = data
    p = run([stoker_bin, "inspect", str(root / "data.jsonl"), "--model", "qwen2.5-omni"])
    out = p.stdout
    assert "grid|frames" in out and "norm|feats" in out
    total = sum(e["tokens"] for r in records for e in expected_clips("qwen2.5-omni", root, r))
    assert re.search(r"^  audio          14 processed \(.*\), 0 failed;", out, re.M), out
    assert re.search(rf"^  audio tokens   {total:,} total;", out, re.M), out
    assert "padded to 300 s (max_length)" in out
    assert re.search(r"^  errors         0$", out, re.M)


@pytest.mark.parametrize("model", ["qwen2.5-vl", "qwen3-vl"])
def test_inspect_vl_unchanged(stoker_bin, data, model):
    """A Qwen-VL model takes no audio: no audio rows, the clips counted as skipped."""
    root, records = data
    p = run([stoker_bin, "inspect", str(root / "data.jsonl"), "--model", model, "--json"])
    lines = [json.loads(x) for x in p.stdout.splitlines()]
    assert not any("audio" in x for x in lines)
    summary = lines[-1]["summary"]
    parts = sum(1 for r in records for m in r["messages"] if isinstance(m["content"], list)
                for q in m["content"] if q.get("type") == "audio")
    assert summary["audios_skipped"] == parts == 12
    assert "audios" not in summary and "audio_tokens" not in summary
    text = run([stoker_bin, "inspect", str(root / "data.jsonl"), "--model", model]).stdout
    assert "  audio          12 skipped (the model takes no audio)" in text
    assert "audio tokens" not in text


# ---------------------------------------------------------------------------------------------
# render

RUN = re.compile(r"^\s*(\d+)\s+(\d+)\s+-100\s+((?:[thwp] \S+\.\.\S+\s+)+)(\S+) x(\d+) \((.*)\)$")
ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(-?\d+)\s+(.*?)\s+(\".*\")$")


def parse_render(out, rows):
    """(text, ids, labels, positions per token (a list of `rows` floats, None inside runs except
    at their ends), runs [(begin, token, count, what)])."""
    head, rest = out.split("\n", 1)
    text = rest.split("\n\n== ", 1)[0]
    ids, labels, pos, runs = [], [], [], []
    for line in rest.splitlines():
        m = RUN.match(line)
        if m:
            begin, tid, ranges, name, count, what = m.groups()
            count = int(count)
            ends = re.findall(r"[thwp] (\S+)\.\.(\S+)", ranges)
            assert len(ends) == rows, line
            ids += [int(tid)] * count
            labels += [-100] * count
            first = [float(a) for a, _ in ends]
            last = [float(b) for _, b in ends]
            pos += [first] + [None] * (count - 2) + [last] if count > 1 else [first]
            runs.append((int(begin), name, count, what))
            continue
        m = ROW.match(line)
        if m and not line.lstrip().startswith("pos"):
            i, tid, label, values, _ = m.groups()
            assert int(i) == len(ids), line
            ids.append(int(tid))
            labels.append(int(label))
            vals = values.split()
            assert len(vals) == rows, line
            pos.append([float(v) for v in vals])
    return text, ids, labels, pos, runs


def jinja_text(template, record):
    env = jinja2.Environment(trim_blocks=False, lstrip_blocks=False)
    msgs = []
    for m in record["messages"]:
        c = m["content"]
        msgs.append({"role": m["role"], "content": c})
    return env.from_string(template).render(messages=msgs, add_generation_prompt=False)


def audio_records(records):
    return [r for r in records if list(clips_of(r))]


@pytest.mark.parametrize("model", ["qwen2-audio", "qwen2.5-omni", "qwen3-omni"])
def test_render(stoker_bin, data, q3_folder, model, tmp_path):
    root, records = data
    template = {"qwen2-audio": (TEMPLATES / "qwen2_audio.jinja").read_text(),
                "qwen2.5-omni": (TEMPLATES / "qwen2_5_omni.jinja").read_text(),
                "qwen3-omni": q3_template()}[model]
    audio_pad = {"qwen2-audio": "<|AUDIO|>", "qwen2.5-omni": "<|AUDIO|>", "qwen3-omni": "<|audio_pad|>"}[model]
    video_pad = "<|video_pad|>" if model == "qwen3-omni" else "<|VIDEO|>"
    cfg = Q3_CFG if model == "qwen3-omni" else rope.QWEN25
    checked = 0
    for rec in audio_records(records):
        clips = expected_clips(model, root, rec)
        track = any(c["track"] for c in clips)
        if model == "qwen2-audio" and track:
            continue  # a video: Qwen2-Audio takes none (test_render_refusals)
        f = root / f"{rec['id']}.json"
        f.write_text(json.dumps(rec))
        out = run([stoker_bin, "render", "--model", model_arg(model, q3_folder), str(f)]).stdout
        rows = 1 if model == "qwen2-audio" else 3
        text, ids, labels, pos, runs = parse_render(out, rows)
        where = f"{model} {rec['id']}"
        assert text == jinja_text(template, rec), where
        assert len(ids) == len(pos)
        audio_runs = [r for r in runs if r[1] == audio_pad]
        if not track:
            assert [(r[2], r[3]) for r in audio_runs] == \
                [(c["tokens"], f"audio {k}, {c['mask']} feature frames") for k, c in enumerate(clips)], where
        else:
            assert sum(r[2] for r in audio_runs) == clips[0]["tokens"], where
            video_runs = [r for r in runs if r[1] == video_pad]
            assert sum(r[2] for r in video_runs) == 2 * 8 * 8 // 4, where  # --video-grid 2,8,8
            assert all(f"with its audio track: {clips[0]['tokens']} audio tokens" in r[3] for r in runs)
        if rows == 1:
            expect = [[float(i)] for i in range(len(ids))]
        else:
            grids = [[2, 8, 8]] if track else []
            fn = rope.rope_3 if model == "qwen3-omni" else rope.rope_25
            p, _ = fn(ids, [], grids, [1] * len(ids), track, [c["mask"] for c in clips],
                      [1.0] if track else [], cfg=cfg)
            expect = [[float(p[r][i]) for r in range(3)] for i in range(len(ids))]
        for i, got in enumerate(pos):
            if got is not None:
                assert np.allclose(got, expect[i], atol=1e-3), (where, i, got, expect[i])
        assert f"{len(ids)} tokens" in out
        checked += 1
    assert checked >= (11 if model == "qwen2-audio" else 13), checked


def test_render_refusals(stoker_bin, data, tmp_path):
    root, records = data
    video = next(r for r in records if any(t for _, t in clips_of(r)))
    image = next(r for r in records if r["id"].startswith("synth"))
    audio = next(r for r in audio_records(records) if not any(t for _, t in clips_of(r)))
    for name, rec, args, reason in (
            ("video", video, ["--model", "qwen2-audio"], "takes no videos"),
            ("image", image, ["--model", "qwen2-audio"], "takes no images"),
            ("think", audio, ["--model", "qwen2.5-omni", "--think", "answer"], "Jinja engine")):
        f = root / f"refuse-{name}.json"
        f.write_text(json.dumps(rec))
        p = run([stoker_bin, "render", *args, str(f)], ok=(1, 2))
        assert reason in p.stderr, p.stderr
    # An audio file outside the record's folder is refused as run refuses it (trust boundary).
    bad = json.loads(json.dumps(audio))
    bad["messages"][0]["content"][0]["audio"] = str(root / "audio" / pathlib.Path(
        bad["messages"][0]["content"][0]["audio"]).name)
    outside = tmp_path / "elsewhere.json"
    outside.write_text(json.dumps(bad))
    p = run([stoker_bin, "render", "--model", "qwen2.5-omni", str(outside)], ok=(1,))
    assert "audio 0" in p.stderr, p.stderr
