"""Hostile audio (issue 25 item 6): each fails with a clear reason, in bounded time and memory.

Files are made here (the `ffmpeg` CLI, python-soundfile, hand-written RIFF headers), then cut or
patched. Each run of stoker_audio_tool gets a 1 GiB address-space limit (not under ASan) and a
30 s timeout; the expected reason is a substring of its error line; a wall-clock bound is checked
for the bombs.
"""
import os
import resource
import struct
import subprocess
import time

import numpy as np
import pytest
import soundfile as sf

TOOL = os.environ.get("STOKER_AUDIO_TOOL")
pytestmark = pytest.mark.skipif(not TOOL, reason="STOKER_AUDIO_TOOL not set")
SANITIZED = os.environ.get("STOKER_SANITIZE") == "1"


def limit_memory():
    if not SANITIZED:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def run(*args):
    t0 = time.monotonic()
    p = subprocess.run([TOOL, *map(str, args)], capture_output=True, text=True, timeout=30,
                       preexec_fn=limit_memory)
    return p.returncode, p.stderr.strip(), time.monotonic() - t0


def ffmpeg(path, *args):
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", *args, str(path)], check=True, timeout=120)


def wav(fmt, channels, rate, bits, data, claimed=None):
    size = len(data) if claimed is None else claimed
    block = channels * bits // 8
    m = 0xFFFFFFFF
    return (b"RIFF" + struct.pack("<I", (36 + size) & m) + b"WAVE" + b"fmt " +
            struct.pack("<IHHIIHH", 16, fmt, channels, rate, (rate * block) & m, block, bits) +
            b"data" + struct.pack("<I", size) + data)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("badaudio")
    sine = ["-f", "lavfi", "-i", "sine=frequency=440:duration=3:sample_rate=22050"]
    ffmpeg(d / "ok.flac", *sine, "-c:a", "flac")
    ffmpeg(d / "ok.mp3", *sine, "-c:a", "libmp3lame")
    ffmpeg(d / "ok.ogg", *sine, "-c:a", "libvorbis")
    ffmpeg(d / "ok.m4a", *sine, "-c:a", "aac")
    ffmpeg(d / "fast.m4a", *sine, "-c:a", "aac", "-movflags", "+faststart")
    ffmpeg(d / "video_only.mp4", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=10:duration=1",
           "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p")
    # Decompression bombs: 20 minutes of silence in a few KB (FLAC: libsndfile, the header says
    # 20 min; ADTS AAC: FFmpeg, no length in any header).
    ffmpeg(d / "bomb.flac", "-f", "lavfi", "-i", "anullsrc=r=8000:cl=mono", "-t", "1200", "-c:a", "flac")
    ffmpeg(d / "bomb.aac", "-f", "lavfi", "-i", "anullsrc=r=8000:cl=mono", "-t", "1200", "-c:a", "aac",
           "-b:a", "8k", "-f", "adts")
    # An M4A whose headers (mvhd, mdhd) say 1 s over 20 minutes of samples: only the decode-time
    # cap can stop it.
    ffmpeg(d / "long.m4a", "-f", "lavfi", "-i", "anullsrc=r=8000:cl=mono", "-t", "1200", "-c:a", "aac",
           "-b:a", "8k", "-movflags", "+faststart")
    x = bytearray((d / "long.m4a").read_bytes())
    for box in (b"mvhd", b"mdhd"):
        i = x.find(box)
        assert x[i + 4] == 0  # version 0: timescale at +16, duration at +20
        x[i + 20:i + 24] = x[i + 16:i + 20]  # duration = timescale: 1 s
    (d / "bomb.m4a").write_bytes(bytes(x))
    pcm = (np.sin(np.arange(16000) * 0.05) * 8000).astype("<i2").tobytes()
    (d / "ok.wav").write_bytes(wav(1, 1, 16000, 16, pcm))
    (d / "empty.wav").write_bytes(b"")
    (d / "junk.bin").write_bytes(os.urandom(40000))
    (d / "text.wav").write_bytes(b"this is not audio\n" * 100)
    (d / "zero_length.wav").write_bytes(wav(1, 1, 16000, 16, b""))
    (d / "rate_1hz.wav").write_bytes(wav(1, 1, 1, 16, pcm))
    (d / "rate_4ghz.wav").write_bytes(wav(1, 1, 4_000_000_000, 16, pcm))
    (d / "channels_500.wav").write_bytes(wav(1, 500, 16000, 16, pcm[:16000]))
    (d / "channels_0.wav").write_bytes(wav(1, 0, 16000, 16, pcm))
    (d / "claims_hours.wav").write_bytes(wav(1, 1, 16000, 16, pcm, claimed=0xF0000000))
    (d / "truncated.wav").write_bytes(wav(1, 1, 16000, 16, pcm)[:20000])
    for name in ("flac", "mp3", "ogg"):
        b = (d / f"ok.{name}").read_bytes()
        (d / f"truncated.{name}").write_bytes(b[: len(b) // 2])
    m4a = (d / "ok.m4a").read_bytes()
    (d / "truncated_moov.m4a").write_bytes(m4a[: len(m4a) // 2])   # moov at the end: lost
    fast = (d / "fast.m4a").read_bytes()
    (d / "truncated_data.m4a").write_bytes(fast[: len(fast) * 2 // 3])  # samples lost
    for bad, name in ((np.nan, "nan"), (np.inf, "inf")):
        x = np.sin(np.arange(8000) * 0.01).astype(np.float32)
        x[4321] = bad
        sf.write(d / f"{name}.wav", x, 16000, subtype="FLOAT")
    return d


CASES = [
    ("empty.wav", "empty file"),
    ("junk.bin", "not a readable audio file"),
    ("text.wav", "not a readable audio file"),
    ("zero_length.wav", "no samples"),
    ("truncated.ogg", "no samples"),  # cut before the first audio page: libsndfile reads 0 frames
    ("rate_1hz.wav", "sample rate 1 Hz"),
    ("rate_4ghz.wav", ""),            # libsndfile and FFmpeg both refuse the header
    ("channels_500.wav", "500 channels"),
    ("channels_0.wav", ""),
    ("claims_hours.wav", "truncated"),
    ("truncated.wav", "truncated"),
    ("truncated.flac", ""),           # libFLAC: lost sync, or fewer frames than STREAMINFO says
    ("truncated.mp3", "truncated"),
    ("truncated_moov.m4a", "not a readable audio file"),
    ("truncated_data.m4a", ""),
    ("nan.wav", "frame 4321 is NaN"),
    ("inf.wav", "frame 4321 is infinite"),
    ("video_only.mp4", "no audio stream"),
]


@pytest.mark.parametrize("name,reason", CASES)
def test_bad_audio_fails_with_a_reason(files, name, reason):
    rc, err, _ = run("load", files / name)
    assert rc == 1, (name, err)
    assert err and "audio" in err, err
    assert reason in err, err


@pytest.mark.parametrize("name", ["bomb.flac", "bomb.aac", "bomb.m4a"])
def test_decompression_bombs_are_capped(files, name):
    """20 minutes of silence: refused at the 600 s cap — from the header before decoding (FLAC's
    STREAMINFO, FFmpeg's bitrate estimate for ADTS), or, for the M4A whose headers say 1 s, by the
    decode-time cap — within seconds."""
    rc, err, seconds = run("load", files / name)
    assert rc == 1 and ("cap" in err or "claims" in err), err
    assert seconds < 10, seconds
    rc, err, seconds = run("load", files / name, "--max-duration", "30")
    assert rc == 1 and ("cap" in err or "claims" in err), err
    assert seconds < 3, seconds


def test_the_good_files_load(files):
    for name in ("ok.wav", "ok.flac", "ok.mp3", "ok.ogg", "ok.m4a", "fast.m4a"):
        rc, err, _ = run("load", files / name)
        assert rc == 0, (name, err)


def test_wall_clock_budget(files):
    """A decode that would take longer than --max-seconds stops with DeadlineExceeded.

    20 minutes of AAC decode in well under 0.2 s on a fast machine (CI), so the budgets are ones
    no machine meets: 10 ms stops the decode; 0.1 ms stops the open or the probe, never with a
    half-probed stream's made-up reason (it said "sample rate 0 Hz" before)."""
    rc, err, seconds = run("load", files / "bomb.aac", "--max-duration", "100000", "--max-seconds", "0.01")
    assert rc == 1 and ("took longer" in err or "took too long" in err), err
    assert seconds < 5
    for _ in range(5):
        rc, err, _ = run("load", files / "bomb.aac", "--max-duration", "100000", "--max-seconds", "0.0001")
        assert rc == 1 and ("took longer" in err or "took too long" in err), err
