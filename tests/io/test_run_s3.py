"""`stoker run` over S3 (s3rver, SigV4 checked) end to end (ctest `run_s3`, label `net`): a
synthetic dataset uploaded with boto3 and read through `stoker run s3://…` delivers exactly the
batches (sample ids, in order) of a local run over the same files (and so does http://); a missing object is one
NotFound line (stage fetch) in the error report and the run goes on; a wrong secret is a clear
PermissionDenied; the server killed and restarted within the retry window → every sample once;
killed for longer → a clear Unavailable/DeadlineExceeded stop, and --resume after the server is
back completes the epoch exactly.
Run: STOKER_BIN=build/stoker /usr/bin/python3 -m pytest -q tests/io/test_run_s3.py"""
import json
import os
import subprocess
import threading
import time

import pytest

import servers

STOKER = os.environ.get("STOKER_BIN", os.path.join(servers.ROOT, "build", "stoker"))
WHY_NOT = servers.missing_s3rver()
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=str(WHY_NOT))
N = 40


def read_log(path):
    out = []
    for line in open(path):
        f = line.split()
        out.append((int(f[0]), [int(x) for x in f[2:]]))
    return out


def run(data, workdir, env=None, extra=(), timeout=120):
    args = [STOKER, "run", data, "--batch-size", "4", "--threads", "2", "--io-threads", "2",
            "--seed", "3", "--quiet", "--max-error-rate", "1", "--arena-mb", "128",
            "--error-report", str(workdir / "errors.jsonl"),
            "--delivered-log", str(workdir / "delivered.log"),
            "--batch-hashes", str(workdir / "hashes.txt"), *extra]
    e = dict(env or os.environ)
    e["XDG_CACHE_HOME"] = str(workdir.parent / "cache")
    r = subprocess.run(args, env=e, capture_output=True, text=True, timeout=timeout)
    assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr  # ASan tree
    return r


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("ds")
    subprocess.run([STOKER, "synth", "--out", str(d), "--n", str(N), "--seed", "7",
                    "--max-side", "160"], check=True, capture_output=True)
    return d


@pytest.fixture(scope="module")
def local_log(dataset, tmp_path_factory):
    w = tmp_path_factory.mktemp("local")
    r = run(str(dataset / "data.jsonl"), w)
    assert r.returncode == 0, r.stderr
    hashes = open(w / "hashes.txt").read()
    assert len(hashes.split()) == len(read_log(w / "delivered.log")) > 0
    return read_log(w / "delivered.log"), hashes


@pytest.fixture()
def s3(dataset, tmp_path):
    server = servers.S3rver(str(tmp_path / "s3data")).start()
    client = server.client()
    for root, _, files in os.walk(dataset):
        for f in files:
            path = os.path.join(root, f)
            if f.endswith(".stoker-index"):
                continue
            client.upload_file(path, server.bucket, "set/" + os.path.relpath(path, dataset))
    yield server
    server.stop()


def test_s3_run_equals_local_run(s3, local_log, tmp_path):
    w = tmp_path / "w"
    w.mkdir()
    r = run(f"s3://{s3.bucket}/set/data.jsonl", w, env=s3.env())
    assert r.returncode == 0, r.stderr
    assert (read_log(w / "delivered.log"), open(w / "hashes.txt").read()) == local_log
    # Second run: the manifest comes from the cache (same URI + ETag), same result.
    r = run(f"s3://{s3.bucket}/set/data.jsonl", w, env=s3.env())
    assert r.returncode == 0, r.stderr
    assert (read_log(w / "delivered.log"), open(w / "hashes.txt").read()) == local_log
    assert len(list((tmp_path / "cache" / "stoker").glob("data.jsonl-*.jsonl"))) == 1


def test_http_run_equals_local_run(dataset, local_log, tmp_path):
    server = servers.ThreadServer("range", root=str(dataset))
    try:
        w = tmp_path / "w"
        w.mkdir()
        r = run(f"http://127.0.0.1:{server.port}/data.jsonl", w)
        assert r.returncode == 0, r.stderr
        assert (read_log(w / "delivered.log"), open(w / "hashes.txt").read()) == local_log
    finally:
        server.stop()


def test_missing_object_is_one_not_found(s3, local_log, tmp_path, dataset):
    client = s3.client()
    first_image = sorted(p for p in os.listdir(dataset / "images"))[0]
    client.delete_object(Bucket=s3.bucket, Key=f"set/images/{first_image}")
    w = tmp_path / "w"
    w.mkdir()
    r = run(f"s3://{s3.bucket}/set/data.jsonl", w, env=s3.env())
    assert r.returncode == 0, r.stderr
    errors = [json.loads(line) for line in open(w / "errors.jsonl") if line.strip()]
    assert len(errors) == 1, errors
    e = errors[0]
    assert (e["stage"], e["code"], e["file"]) == ("fetch", "NotFound",
                                                  f"s3://{s3.bucket}/set/data.jsonl"), e
    assert first_image in e["reason"] and "404" in e["reason"], e
    delivered = sorted(i for _, ids in read_log(w / "delivered.log") for i in ids)
    expected = sorted(i for _, ids in local_log[0] for i in ids)
    assert len(delivered) == len(expected) - len(errors)


def test_wrong_secret_is_permission_denied(s3, tmp_path):
    w = tmp_path / "w"
    w.mkdir()
    t0 = time.time()
    r = run(f"s3://{s3.bucket}/set/data.jsonl", w, env=s3.env(secret="wrong"))
    assert r.returncode != 0
    assert "PermissionDenied" in r.stderr and "403" in r.stderr, r.stderr
    assert "wrong" not in r.stderr.replace("wrong secret", "")
    assert time.time() - t0 < 10  # no retry storm


def restart_later(server, log, down_s):
    """Kills the server once the run has delivered its first batch (most of the epoch still to
    fetch: step 400 ms, prefetch 1), restarts it `down_s` later."""
    def go():
        end = time.time() + 30
        while time.time() < end and not (log.exists() and log.read_text().count("\n") >= 1):
            time.sleep(0.01)
        server.stop()
        time.sleep(down_s)
        server.start()
    t = threading.Thread(target=go)
    t.start()
    return t


def test_server_restarted_within_the_window(s3, local_log, tmp_path):
    w = tmp_path / "w"
    w.mkdir()
    env = s3.env()
    env["STOKER_IO_MAX_ATTEMPTS"] = "30"  # the 120 s deadline is the window, not 8 attempts
    t = restart_later(s3, w / "delivered.log", 1.0)
    r = run(f"s3://{s3.bucket}/set/data.jsonl", w, env=env,
            extra=["--step-ms", "400", "--prefetch", "1"])
    t.join()
    assert r.returncode == 0, r.stderr
    assert (read_log(w / "delivered.log"), open(w / "hashes.txt").read()) == local_log


def test_server_gone_too_long_then_resume(s3, local_log, tmp_path):
    w = tmp_path / "w"
    w.mkdir()
    state = w / "state"
    env = s3.env()
    env["STOKER_IO_DEADLINE_MS"] = "1500"  # a short retry window keeps the test short
    t = restart_later(s3, w / "delivered.log", 6.0)
    r = run(f"s3://{s3.bucket}/set/data.jsonl", w, env=env,
            extra=["--step-ms", "400", "--prefetch", "1", "--state-file", str(state)])
    assert r.returncode != 0
    assert "Unavailable" in r.stderr or "DeadlineExceeded" in r.stderr, r.stderr
    assert "resume" in r.stderr
    t.join()
    r = run(f"s3://{s3.bucket}/set/data.jsonl", w, env=env,
            extra=["--state-file", str(state), "--resume", str(state)])
    assert r.returncode == 0, r.stderr
    assert read_log(w / "delivered.log") == local_log[0]


def test_stop_with_reads_in_flight(s3, tmp_path):
    # The loader is destroyed after one batch while the rest of the window's reads are in flight:
    # their callbacks must find the engine gone and return their budget (clean under ASan).
    w = tmp_path / "w"
    w.mkdir()
    r = run(f"s3://{s3.bucket}/set/data.jsonl", w, env=s3.env(), extra=["--limit-batches", "1"])
    assert r.returncode == 0, r.stderr
    assert len(read_log(w / "delivered.log")) == 1
