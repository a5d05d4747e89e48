"""Hostile videos (issue 14 item 7): each fails with a clear reason, in bounded time and memory.

Files are made here: encoded with the `ffmpeg` CLI, then cut or patched byte-wise (MP4 boxes).
Each run of stoker_video_tool gets a 1.5 GiB address-space limit (not under ASan, whose shadow
memory needs terabytes of address space: there ASan's own allocation checks stand in) and a 30 s
timeout; the expected reason is a substring of its error line.
"""
import os
import resource
import struct
import subprocess

import pytest

TOOL = os.environ.get("STOKER_VIDEO_TOOL")
pytestmark = pytest.mark.skipif(not TOOL, reason="STOKER_VIDEO_TOOL not set")


def ffmpeg(path, *args):
    subprocess.run(["ffmpeg", "-loglevel", "error", "-y", *args, str(path)], check=True)


SANITIZED = os.environ.get("STOKER_SANITIZE") == "1"


def limit_memory():
    if not SANITIZED:
        resource.setrlimit(resource.RLIMIT_AS, (1536 << 20, 1536 << 20))


def run(path, *flags):
    p = subprocess.run([TOOL, str(path), *flags], capture_output=True, text=True, timeout=30,
                       preexec_fn=limit_memory)
    return p.returncode, p.stdout, p.stderr.strip()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    src = ["-f", "lavfi", "-i", "testsrc2=size=160x90:rate=25:duration=3", "-c:v", "libx264",
           "-preset", "veryfast", "-bf", "2", "-g", "25", "-pix_fmt", "yuv420p"]
    ffmpeg(d / "ok.mp4", *src)
    ffmpeg(d / "fast.mp4", *src, "-movflags", "+faststart")
    ffmpeg(d / "audio.mp4", "-f", "lavfi", "-i", "sine=duration=1", "-c:a", "aac")
    ffmpeg(d / "one.mp4", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25", "-frames:v", "1",
           "-c:v", "libx264", "-pix_fmt", "yuv420p")
    ffmpeg(d / "thin.mp4", "-f", "lavfi", "-i", "testsrc2=size=4096x16:rate=5:duration=1",
           "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p")
    ok = (d / "ok.mp4").read_bytes()
    fast = bytearray((d / "fast.mp4").read_bytes())
    (d / "trunc_moov.mp4").write_bytes(ok[: len(ok) // 2])          # moov at the end: lost
    (d / "trunc_data.mp4").write_bytes(bytes(fast[: len(fast) * 2 // 3]))  # samples lost
    (d / "empty.mp4").write_bytes(b"")
    (d / "junk.mp4").write_bytes(os.urandom(50000))

    def patched(name, tag, offset, value):
        x = bytearray(fast)
        i = x.find(tag)
        x[i + offset:i + offset + 4] = struct.pack(">I", value)
        (d / name).write_bytes(bytes(x))

    patched("stts_1e9.mp4", b"stts", 12, 10**9)       # a header claiming 10^9 frames
    patched("stsz_1e9.mp4", b"stsz", 12, 10**9)
    patched("stsz_0.mp4", b"stsz", 12, 0)             # zero frames
    i = fast.find(b"mdhd")
    timescale = struct.unpack(">I", fast[i + 16:i + 20])[0]
    patched("duration_1e6.mp4", b"mdhd", 20, min(2**32 - 1, 10**6 * timescale))  # 10^6 s claimed
    x = bytearray(fast)
    m = x.find(b"mdat")
    for k in range(0, 400):  # flip bytes through the coded frames
        p = m + 64 + (k * 7919) % (len(x) - m - 64)
        x[p] ^= 0xFF
    (d / "corrupt.mp4").write_bytes(bytes(x))
    return d


# (file, extra flags, expected exit, reason substring)
BAD = [
    ("trunc_moov.mp4", [], "not a readable container"),
    ("trunc_data.mp4", [], "truncated"),
    ("empty.mp4", [], "empty file"),
    ("junk.mp4", [], "not a readable container"),
    ("audio.mp4", [], "no video stream"),
    ("one.mp4", [], "nframes should be in [2, 1]"),
    ("stsz_0.mp4", [], "no frames"),
    ("stts_1e9.mp4", [], "header lists 1000000000 frames"),
    ("stsz_1e9.mp4", [], "not a readable container"),
    ("corrupt.mp4", [], "corrupt"),
    ("thin.mp4", [], "aspect ratio"),
    ("ok.mp4", ["--max-side", "100"], "exceeds the limit"),
    ("ok.mp4", ["--video-start", "10", "--video-end", "20"], "beyond the last frame"),
    ("ok.mp4", ["--video-start", "2", "--video-end", "1"], "before video_start"),
    ("ok.mp4", ["--fps", "2", "--nframes", "4"], "either fps or nframes"),
]


@pytest.mark.parametrize("name,flags,reason", BAD, ids=[f"{b[0]}{''.join(b[1])}" for b in BAD])
def test_bad_video_fails_with_reason(files, name, flags, reason):
    rc, out, err = run(files / name, *flags)
    assert rc == 1, (rc, out, err)
    assert reason in err, err
    assert err.count("\n") == 0, "one error line, no FFmpeg log noise"


def test_header_claims_are_not_trusted(files):
    # A 10^6 s duration claim: the frames actually present decide (75 frames at 25 fps).
    rc, out, err = run(files / "duration_1e6.mp4")
    assert rc == 0, err
    assert '"total_frames":75' in out


def test_video_end_beyond_duration_is_clamped(files):
    # qwen-vl-utils (torchvision backend) reads to the end of the stream: same here.
    rc, out, err = run(files / "ok.mp4", "--video-start", "1", "--video-end", "1000")
    assert rc == 0, err
    assert '"total_frames":50' in out
