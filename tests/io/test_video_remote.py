"""Videos from anywhere (issue 14): a local manifest whose video references are rotated over a
relative path, s3:// (s3rver, SigV4 checked) and http:// (a loopback range server) produces batches
byte-identical (every tensor, `--batch-hashes`) to the same dataset all on local disk: the bytes go
through the same fetcher and are decoded from memory. Labels net + integration.
Run: STOKER_BIN=build/stoker /usr/bin/python3 -m pytest -q tests/io/test_video_remote.py"""
import os
import re
import shutil
import subprocess

import pytest

import servers

STOKER = os.environ.get("STOKER_BIN", os.path.join(servers.ROOT, "build", "stoker"))
WHY_NOT = servers.missing_s3rver()
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=str(WHY_NOT))


def run(data, workdir, env=None, extra=()):
    args = [STOKER, "run", data, "--batch-size", "3", "--threads", "2", "--io-threads", "2",
            "--max-error-rate", "0", "--arena-mb", "256", "--quiet",
            "--batch-hashes", str(workdir / "hashes.txt"), *extra]
    e = dict(env or os.environ)
    e["XDG_CACHE_HOME"] = str(workdir / "cache")
    r = subprocess.run(args, env=e, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return open(workdir / "hashes.txt").read()


def test_videos_from_s3_and_http_equal_local(tmp_path):
    d = tmp_path / "ds"
    subprocess.run([STOKER, "synth", "--out", str(d), "--n", "2", "--seed", "5", "--max-side", "128",
                    "--videos", "6", "--threads", "1"], check=True, capture_output=True)
    (tmp_path / "w0").mkdir()
    local = run(str(d / "data.jsonl"), tmp_path / "w0")
    s3 = servers.S3rver(str(tmp_path / "s3data")).start()
    http = servers.ThreadServer("range", root=str(d))
    try:
        client = s3.client()
        for name in os.listdir(d / "videos"):
            client.upload_file(str(d / "videos" / name), s3.bucket, "set/videos/" + name)
        m = tmp_path / "m"
        m.mkdir()
        shutil.copytree(d / "images", m / "images")
        shutil.copytree(d / "videos", m / "videos")
        k = 0

        def swap(match):
            nonlocal k
            ref = match.group(1)
            kind = k % 3
            k += 1
            if kind == 1:
                return f'"s3://{s3.bucket}/set/{ref}"'
            if kind == 2:
                return f'"http://127.0.0.1:{http.port}/{ref}"'
            return f'"{ref}"'

        text = re.sub(r'"(videos/[^"]+)"', swap, (d / "data.jsonl").read_text())
        assert "s3://" in text and "http://" in text
        (m / "mixed.jsonl").write_text(text)
        (tmp_path / "w1").mkdir()
        remote = run(str(m / "mixed.jsonl"), tmp_path / "w1", env=s3.env(),
                     extra=["--allow-bucket", s3.bucket])
        assert remote == local
    finally:
        http.stop()
        s3.stop()
