"""Audio parity: stoker's audio path vs the Python reference path (bench/audio_reference.py:
python3-soundfile on libsndfile, else audioread's `ffmpeg -f s16le` child; numpy channel mean;
libsoxr through ctypes at python-soxr's HQ settings; librosa's length fix; the NumPy
WhisperFeatureExtractor formulas of transformers) on every `stoker synth --audio` kind and on
files this test encodes with the `ffmpeg` CLI (PCM 8/16/24/32-bit and float, AIFF, µ-law AU,
FLAC 24-bit, Vorbis, Opus, MP3 incl. VBR without a Xing header, AAC in M4A/ADTS/MP4/MOV, WMA, Opus
in Matroska, Vorbis in WebM, 5.1 and 12 channels).

Must be identical: the decoded samples, the 16 kHz waveforms, the masks and token counts.
input_features: within 1e-5 (the largest difference is printed; measured 0 here).
"""
import json
import os
import subprocess

import numpy as np
import pytest
import soundfile as sf

import audio_reference as ref

TOOL = os.environ.get("STOKER_AUDIO_TOOL")
pytestmark = pytest.mark.skipif(not TOOL, reason="STOKER_AUDIO_TOOL not set")

SINE = ["-f", "lavfi", "-i"]
# name → (extension, ffmpeg arguments)
FFMPEG = {
    "wav_s16_44k_stereo": ("wav", SINE + ["sine=frequency=330:duration=2.5:sample_rate=44100", "-f", "lavfi", "-i",
                                          "anoisesrc=duration=2.5:sample_rate=44100:amplitude=0.05",
                                          "-filter_complex", "amerge=inputs=2", "-c:a", "pcm_s16le"]),
    "wav_u8_22k": ("wav", SINE + ["sine=frequency=500:duration=1.3:sample_rate=22050", "-c:a", "pcm_u8"]),
    "wav_s32_48k": ("wav", SINE + ["sine=frequency=1000:duration=1.1:sample_rate=48000", "-c:a", "pcm_s32le"]),
    "wav_f64_32k": ("wav", SINE + ["sine=frequency=200:duration=1.7:sample_rate=32000", "-c:a", "pcm_f64le"]),
    "aiff_11k": ("aiff", SINE + ["sine=frequency=700:duration=2.0:sample_rate=11025"]),
    "au_mulaw_8k": ("au", SINE + ["anoisesrc=duration=1.0:sample_rate=8000:amplitude=0.3", "-c:a", "pcm_mulaw"]),
    "flac_s24_48k_stereo": ("flac", SINE + ["sine=frequency=440:duration=2.2:sample_rate=48000", "-ac", "2",
                                             "-sample_fmt", "s32", "-c:a", "flac"]),
    "ogg_vorbis_32k": ("ogg", SINE + ["anoisesrc=duration=2.0:sample_rate=32000:amplitude=0.2:color=pink",
                                      "-c:a", "libvorbis"]),
    "opus_48k_stereo": ("opus", SINE + ["sine=frequency=880:duration=1.9:sample_rate=48000", "-ac", "2",
                                        "-c:a", "libopus", "-b:a", "64k"]),
    "mp3_22k_stereo": ("mp3", SINE + ["sine=frequency=300:duration=2.4:sample_rate=22050", "-ac", "2",
                                      "-c:a", "libmp3lame"]),
    "mp3_8k_vbr_noxing": ("mp3", SINE + ["anoisesrc=duration=1.5:sample_rate=8000:amplitude=0.2",
                                         "-c:a", "libmp3lame", "-q:a", "5", "-write_xing", "0"]),
    "m4a_aac_44k_51": ("m4a", SINE + ["sine=frequency=523:duration=2.0:sample_rate=44100", "-ac", "6",
                                      "-c:a", "aac"]),
    "adts_aac_16k": ("aac", SINE + ["sine=frequency=250:duration=2.6:sample_rate=16000", "-c:a", "aac", "-f", "adts"]),
    "mp4_h264_aac_48k": ("mp4", SINE + ["testsrc2=size=96x64:rate=25:duration=2", "-f", "lavfi", "-i",
                                        "sine=frequency=660:duration=2:sample_rate=48000", "-ac", "2",
                                        "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
                                        "-c:a", "aac", "-shortest"]),
    "mov_pcm_s16": ("mov", SINE + ["sine=frequency=350:duration=1.4:sample_rate=44100", "-c:a", "pcm_s16le"]),
    "wma_v2": ("wma", SINE + ["sine=frequency=450:duration=1.6:sample_rate=22050", "-c:a", "wmav2"]),
    "mkv_opus": ("mkv", SINE + ["testsrc2=size=64x48:rate=10:duration=1.5", "-f", "lavfi", "-i",
                                "sine=frequency=510:duration=1.5:sample_rate=48000",
                                "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p",
                                "-c:a", "libopus", "-shortest"]),
    # Two audio tracks: the ffmpeg CLI (and stoker) take the default-disposition one, not the one
    # with more channels.
    "mka_two_tracks": ("mka", SINE + ["sine=frequency=300:duration=1.5:sample_rate=22050", "-f", "lavfi", "-i",
                                      "sine=frequency=900:duration=1.5:sample_rate=44100", "-map", "0:a",
                                      "-map", "1:a", "-ac:1", "2", "-c:a", "libvorbis"]),
    "webm_vorbis": ("webm", SINE + ["testsrc2=size=64x48:rate=10:duration=1.2", "-f", "lavfi", "-i",
                                    "sine=frequency=610:duration=1.2:sample_rate=44100",
                                    "-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8",
                                    "-c:a", "libvorbis", "-shortest"]),
}
# Qwen2.5-Omni pads every clip to 300 s (30000 frames: ~2 s of reference time per clip): a subset.
OMNI25 = {"synth_0", "synth_1", "synth_11", "m4a_aac_44k_51", "wav_s16_44k_stereo"}
MODELS = ["qwen2-audio", "qwen2.5-omni", "qwen3-omni"]
MAX_FEATURE_DIFF = 1e-5
RESULTS = {"features_max_abs": 0.0, "waveforms": 0, "feature_cases": 0}


def tool(*args):
    p = subprocess.run([TOOL, *args], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise AssertionError(f"stoker_audio_tool {' '.join(args)}: {p.stderr.strip()}")
    return json.loads(p.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def files(tmp_path_factory, stoker_bin):
    d = tmp_path_factory.mktemp("audio")
    out = {}
    for name, (ext, args) in FFMPEG.items():
        path = str(d / f"{name}.{ext}")
        subprocess.run(["ffmpeg", "-loglevel", "error", "-y", *args, path], check=True, timeout=120)
        out[name] = path
    # 12 channels (numpy's pairwise mean from 8 channels on), written with python-soundfile.
    rng = np.random.default_rng(12)
    many = (rng.standard_normal((30000, 12)) * np.linspace(0.01, 0.3, 12)).astype(np.float32)
    out["wav_12ch_24k"] = str(d / "wav_12ch_24k.wav")
    sf.write(out["wav_12ch_24k"], many, 24000, subtype="FLOAT")
    syn = d / "synth"
    subprocess.run([stoker_bin, "synth", "--out", str(syn), "--n", "1", "--audio", "14"], check=True,
                   capture_output=True, timeout=300)
    with open(syn / "audio.jsonl") as f:
        for k, line in enumerate(f):
            out[f"synth_{k}"] = str(syn / json.loads(line)["path"])
    return out


def names():
    return list(FFMPEG) + ["wav_12ch_24k"] + [f"synth_{k}" for k in range(14)]


@pytest.mark.parametrize("name", names())
def test_decode_and_waveform_identical(files, name, tmp_path):
    path = files[name]
    samples, rate, backend = ref.decode_only(path)
    info = tool("decode", path, "--out", str(tmp_path / "d.f32"))
    assert info["backend"] == backend
    assert info["sample_rate"] == rate and info["channels"] == samples.shape[0]
    mine = np.fromfile(tmp_path / "d.f32", dtype=np.float32)
    expect = samples.T.reshape(-1)
    assert mine.shape == expect.shape, (mine.shape, expect.shape)
    assert np.array_equal(mine, expect), f"decoded samples differ: max {np.abs(mine - expect).max()}"
    wave, native, channels, backend2 = ref.librosa_load(path)
    info = tool("load", path, "--out", str(tmp_path / "w.f32"))
    w = np.fromfile(tmp_path / "w.f32", dtype=np.float32)
    assert w.shape == wave.shape, (w.shape, wave.shape)
    assert np.array_equal(w, wave), f"16 kHz waveform differs: max {np.abs(w - wave).max()}"
    RESULTS["waveforms"] += 1


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("name", names())
def test_features_mask_tokens(files, name, model, tmp_path):
    if model == "qwen2.5-omni" and name not in OMNI25:
        pytest.skip("Qwen2.5-Omni on a subset (the reference takes ~2 s per clip)")
    wave = ref.librosa_load(files[name])[0]
    feats, mask, tokens = ref.features_for_model(model, [wave])
    got = tool("features", "--model", model, files[name], "--out", str(tmp_path / "f.f32"),
               "--mask", str(tmp_path / "m.i32"))
    assert got["frames"] == feats.shape[2]
    mine = np.fromfile(tmp_path / "f.f32", dtype=np.float32).reshape(feats.shape)
    diff = float(np.abs(mine - feats).max())
    RESULTS["features_max_abs"] = max(RESULTS["features_max_abs"], diff)
    RESULTS["feature_cases"] += 1
    assert diff <= MAX_FEATURE_DIFF, diff
    m = np.fromfile(tmp_path / "m.i32", dtype=np.int32).reshape(mask.shape)
    assert np.array_equal(m, mask)
    assert got["mask_sums"] == [int(s) for s in mask.sum(-1)]
    assert got["tokens"] == tokens


@pytest.mark.parametrize("model", ["qwen2-audio", "qwen3-omni"])
def test_one_call_with_several_clips(files, model, tmp_path):
    """A sample with several audios is one feature-extractor call: Qwen3-Omni pads them to the
    longest (the shorter ones get ceil masks, the longest floor), Qwen2-Audio to 30 s."""
    picks = ["synth_0", "mp3_22k_stereo", "synth_9", "adts_aac_16k"]
    waves = [ref.librosa_load(files[n])[0] for n in picks]
    feats, mask, tokens = ref.features_for_model(model, waves)
    got = tool("features", "--model", model, *[files[n] for n in picks], "--out", str(tmp_path / "f.f32"),
               "--mask", str(tmp_path / "m.i32"))
    mine = np.fromfile(tmp_path / "f.f32", dtype=np.float32).reshape(feats.shape)
    diff = float(np.abs(mine - feats).max())
    RESULTS["features_max_abs"] = max(RESULTS["features_max_abs"], diff)
    assert diff <= MAX_FEATURE_DIFF
    assert np.array_equal(np.fromfile(tmp_path / "m.i32", dtype=np.int32).reshape(mask.shape), mask)
    assert got["tokens"] == tokens


@pytest.mark.parametrize("name,offset,duration", [
    ("synth_0", 0.5, 1.2), ("synth_3", 1.25, None), ("m4a_aac_44k_51", 0.3, 0.9),
    ("mp4_h264_aac_48k", 1.0, None), ("flac_s24_48k_stereo", 0.0, 0.77), ("synth_4", 0.37, 1.0),
    ("synth_10", 0.5, None)])
def test_offset_and_duration(files, name, offset, duration, tmp_path):
    """qwen-omni-utils' audio_start/audio_end: librosa.load(offset=start, duration=end − start) —
    soundfile's seek + read (an MP3 seek restarts the decoder: not a slice of the full decode), or
    a slice of audioread's samples."""
    path = files[name]
    expect = ref.librosa_load(path, offset=offset, duration=duration)[0]
    args = ["load", path, "--offset", repr(offset), "--out", str(tmp_path / "w.f32")]
    if duration is not None:
        args += ["--duration", repr(duration)]
    tool(*args)
    w = np.fromfile(tmp_path / "w.f32", dtype=np.float32)
    assert w.shape == expect.shape and np.array_equal(w, expect)


def test_reference_loop_equals_vectorized():
    """The per-frame loop (what transformers runs, used by `stoker bench audio`) and the same
    operations on a frame matrix give the same features (so either can be the oracle)."""
    rng = np.random.default_rng(2)
    w = (rng.standard_normal(40000) * 0.1).astype(np.float32)
    a = ref.whisper_features([w], padding=True, truncation=False)[0]
    b = ref.whisper_features([w], padding=True, truncation=False, vectorized=True)[0]
    assert np.array_equal(a, b)


def test_zz_report(capsys):
    with capsys.disabled():
        print(f"\naudio parity: {RESULTS['waveforms']} files with identical decoded samples and 16 kHz "
              f"waveforms; {RESULTS['feature_cases']} feature cases, max |input_features diff| = "
              f"{RESULTS['features_max_abs']:.3g}; libsoxr {ref.soxr_version()}; {ref.ffmpeg_cli_version()}")
