"""Media from anywhere, safely (issue 10), end to end through `stoker run` (ctest `media_anywhere`,
labels net + integration):
- a LOCAL manifest whose images mix relative paths, s3:// (s3rver, SigV4 checked) and http://
  produces batches byte-identical (every tensor's bytes) to the same dataset all on local disk —
  once the bucket is allowed (`--allow-bucket`); without it every s3 image is refused
  (PermissionDenied naming the rule) and the good records are still delivered;
- the S3 server killed after the first batch and restarted 10 s later: the run completes with
  the default retry window (120 s, a deadline — it used to be 8 attempts, ~2-6 s), every sample
  once, batch hashes equal to an undisturbed run;
- a remote manifest replaced while it is being downloaded in ranges: the cached copy is exactly
  one version (If-Match on every range; also when the server ignores If-Match, by its ETag);
- secrets (a presigned URL's signature in a manifest and as the manifest's own URL, a wrong
  secret in the environment and in a credentials file, a Python exception) never appear in
  stdout, stderr, the error report or an exception message.
Run: STOKER_BIN=build/stoker /usr/bin/python3 -m pytest -q tests/io/test_media_anywhere.py"""
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time

import pytest

import servers

STOKER = os.environ.get("STOKER_BIN", os.path.join(servers.ROOT, "build", "stoker"))
WHY_NOT = servers.missing_s3rver()
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=str(WHY_NOT))
N = 36


def read_log(path):
    return [line.split()[2:] for line in open(path)]


def run(data, workdir, env=None, extra=(), timeout=180, quiet=True):
    args = [STOKER, "run", data, "--batch-size", "4", "--threads", "2", "--io-threads", "2",
            "--seed", "5", "--max-error-rate", "1", "--arena-mb", "128",
            *(["--quiet"] if quiet else ["--step-ms", "150"]),
            "--error-report", str(workdir / "errors.jsonl"),
            "--delivered-log", str(workdir / "delivered.log"),
            "--batch-hashes", str(workdir / "hashes.txt"), *extra]
    e = dict(env or os.environ)
    e["XDG_CACHE_HOME"] = str(workdir / "cache")
    r = subprocess.run(args, env=e, capture_output=True, text=True, timeout=timeout)
    assert "Sanitizer" not in r.stderr and "runtime error" not in r.stderr, r.stderr
    return r


def errors_of(workdir):
    p = workdir / "errors.jsonl"
    return [json.loads(line) for line in open(p) if line.strip()] if p.exists() else []


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("ds")
    subprocess.run([STOKER, "synth", "--out", str(d), "--n", str(N), "--seed", "11",
                    "--max-side", "160"], check=True, capture_output=True)
    return d


@pytest.fixture(scope="module")
def local(dataset, tmp_path_factory):
    w = tmp_path_factory.mktemp("local")
    r = run(str(dataset / "data.jsonl"), w)
    assert r.returncode == 0, r.stderr
    assert errors_of(w) == []
    return read_log(w / "delivered.log"), open(w / "hashes.txt").read()


@pytest.fixture()
def s3(dataset, tmp_path):
    server = servers.S3rver(str(tmp_path / "s3data")).start()
    client = server.client()
    for name in os.listdir(dataset / "images"):
        client.upload_file(str(dataset / "images" / name), server.bucket, "set/images/" + name)
    client.upload_file(str(dataset / "data.jsonl"), server.bucket, "set/data.jsonl")
    yield server
    server.stop()


@pytest.fixture()
def http(dataset):
    server = servers.ThreadServer("range", root=str(dataset))
    yield server
    server.stop()


def mixed_manifest(dataset, s3, http, out_dir):
    """The dataset's manifest with its image references rotated over relative path, s3:// and
    http://; the records (and so the batches) are otherwise identical."""
    out_dir.mkdir()
    shutil.copytree(dataset / "images", out_dir / "images")  # beneath the manifest (a symlink out would be refused)
    kinds = {"rel": 0, "s3": 0, "http": 0}
    k = 0

    def swap(m):
        nonlocal k
        ref = m.group(1)
        kind = ("rel", "s3", "http")[k % 3]
        k += 1
        kinds[kind] += 1
        if kind == "s3":
            return f'"s3://{s3.bucket}/set/{ref}"'
        if kind == "http":
            return f'"http://127.0.0.1:{http.port}/{ref}"'
        return f'"{ref}"'
    text = open(dataset / "data.jsonl").read()
    mixed = re.sub(r'"(images/[^"]+)"', swap, text)
    (out_dir / "mixed.jsonl").write_text(mixed)
    assert min(kinds.values()) > 3, kinds
    return out_dir / "mixed.jsonl", kinds


def test_local_manifest_mixing_paths_s3_and_http_equals_local(dataset, local, s3, http, tmp_path):
    manifest, kinds = mixed_manifest(dataset, s3, http, tmp_path / "m")
    w = tmp_path / "w"
    w.mkdir()
    r = run(str(manifest), w, env=s3.env(), extra=["--allow-bucket", s3.bucket])
    assert r.returncode == 0, r.stderr
    assert errors_of(w) == []
    assert (read_log(w / "delivered.log"), open(w / "hashes.txt").read()) == local
    # Without the bucket allowed, each record with an s3 image fails alone (the rule named); every
    # other record is still delivered.
    w2 = tmp_path / "w2"
    w2.mkdir()
    r = run(str(manifest), w2, env=s3.env())
    errors = errors_of(w2)
    assert errors and all(e["code"] == "PermissionDenied" and "--allow-bucket" in e["reason"]
                          and e["stage"] == "fetch" for e in errors), errors
    delivered = sum(len(ids) for ids in read_log(w2 / "delivered.log"))
    assert delivered + len(errors) == N


def test_s3_server_killed_and_back_after_10s_with_the_default_window(s3, local, tmp_path):
    w = tmp_path / "w"
    w.mkdir()
    env = s3.env()
    env.pop("STOKER_IO_DEADLINE_MS", None)
    env.pop("STOKER_IO_MAX_ATTEMPTS", None)
    log = w / "delivered.log"
    down = {}

    def kill_then_restart():
        end = time.time() + 60
        while time.time() < end and not (log.exists() and log.read_text().count("\n") >= 1):
            time.sleep(0.01)
        s3.stop()
        down["at"] = time.time()
        time.sleep(10.0)
        s3.start()
        down["for"] = time.time() - down["at"]
    t = threading.Thread(target=kill_then_restart)
    t.start()
    r = run(f"s3://{s3.bucket}/set/data.jsonl", w, env=env,
            extra=["--step-ms", "300", "--prefetch", "1"])
    t.join()
    assert down.get("for", 0) >= 10.0
    assert r.returncode == 0, r.stderr
    assert errors_of(w) == []
    assert (read_log(log), open(w / "hashes.txt").read()) == local


@pytest.mark.parametrize("honor_if_match", [True, False])
def test_manifest_replaced_while_downloading_is_one_version(dataset, http, tmp_path,
                                                            honor_if_match):
    root = tmp_path / "served"
    shutil.copytree(dataset, root, symlinks=True)
    http.httpd.root = str(root)
    http.httpd.honor_if_match = honor_if_match
    v1 = open(root / "data.jsonl", "rb").read()
    lines = v1.decode().splitlines(keepends=True)
    v2 = "".join(reversed(lines)).encode()  # same size, other bytes: a torn copy would show
    assert len(v2) == len(v1) and v2 != v1
    ranged = []

    def before_serve(handler):
        if handler.path.startswith("/data.jsonl") and handler.headers.get("Range"):
            ranged.append(handler.headers.get("Range"))
            if len(ranged) == 2:  # after the first range was served
                (root / "data.jsonl").write_bytes(v2)
    http.httpd.before_serve = before_serve
    w = tmp_path / "w"
    w.mkdir()
    env = dict(os.environ, STOKER_MANIFEST_CHUNK_BYTES="4096")
    r = run(f"http://127.0.0.1:{http.port}/data.jsonl", w, env=env)
    http.httpd.before_serve = None
    assert r.returncode == 0, r.stderr
    assert len(ranged) > len(v1) // 4096 + 1  # the stream started over
    cached = [p for p in (w / "cache" / "stoker").glob("data.jsonl-*.jsonl")]
    assert len(cached) == 1
    assert cached[0].read_bytes() == v2  # exactly the new version, never a mix


SECRETS = ["SIGSECRET111", "CREDSECRET222", "MANIFESTSIG333", "ENVSECRET444", "FILESECRET555",
           "PYSECRET666"]


def assert_no_secret(*texts):
    for t in texts:
        for s in SECRETS:
            assert s not in t, f"secret {s} printed: ...{t[max(0, t.find(s) - 200):t.find(s) + 50]}"


def test_secrets_never_printed(dataset, s3, http, tmp_path):
    # 1. A presigned-style media URL (missing object) in a local manifest; the manifest's own URL
    #    presigned; progress lines on (no --quiet).
    m = tmp_path / "m"
    m.mkdir()
    shutil.copytree(dataset / "images", m / "images")
    text = open(dataset / "data.jsonl").read()
    first = re.search(r'"(images/[^"]+)"', text).group(1)
    signed = (f"http://127.0.0.1:{http.port}/missing.jpg?X-Amz-Algorithm=AWS4-HMAC-SHA256"
              f"&X-Amz-Credential=CREDSECRET222&X-Amz-Signature=SIGSECRET111")
    (m / "data.jsonl").write_text(text.replace(f'"{first}"', f'"{signed}"', 1))
    outputs = []
    w = tmp_path / "w1"
    w.mkdir()
    r = run(str(m / "data.jsonl"), w, quiet=False)
    outputs += [r.stdout, r.stderr, (w / "errors.jsonl").read_text()]
    assert len(errors_of(w)) == 1 and "REDACTED" in errors_of(w)[0]["reason"], errors_of(w)
    # The manifest itself behind a presigned URL (the range server ignores the query), one
    # missing image so the report names the manifest.
    served = tmp_path / "served"
    shutil.copytree(dataset, served, symlinks=True)
    os.remove(served / "images" / os.path.basename(first))
    http.httpd.root = str(served)
    w = tmp_path / "w2"
    w.mkdir()
    r = run(f"http://127.0.0.1:{http.port}/data.jsonl?X-Amz-Signature=MANIFESTSIG333", w,
            quiet=False)
    outputs += [r.stdout, r.stderr, (w / "errors.jsonl").read_text()]
    assert r.returncode == 0, r.stderr
    assert [e["file"] for e in errors_of(w)] == [
        f"http://127.0.0.1:{http.port}/data.jsonl?X-Amz-Signature=REDACTED"]
    # 2. A wrong secret in the environment, then in a credentials file.
    w = tmp_path / "w3"
    w.mkdir()
    r = run(f"s3://{s3.bucket}/set/data.jsonl", w, env=s3.env(secret="ENVSECRET444"))
    assert r.returncode != 0 and "PermissionDenied" in r.stderr, r.stderr
    outputs += [r.stdout, r.stderr]
    home = tmp_path / "home"
    (home / ".aws").mkdir(parents=True)
    (home / ".aws" / "credentials").write_text(
        "[default]\naws_access_key_id = S3RVER\naws_secret_access_key = FILESECRET555\n")
    env = {k: v for k, v in s3.env().items()
           if k not in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    env["HOME"] = str(home)
    w = tmp_path / "w4"
    w.mkdir()
    r = run(f"s3://{s3.bucket}/set/data.jsonl", w, env=env)
    assert r.returncode != 0 and "PermissionDenied" in r.stderr, r.stderr
    outputs += [r.stdout, r.stderr]
    # 3. A Python exception built from a presigned manifest URL that cannot be reached.
    code = (
        "import stoker\n"
        "try:\n"
        "    stoker.Loader(data='http://127.0.0.1:9/m.jsonl?X-Amz-Signature=PYSECRET666',"
        " io_deadline_ms=300)\n"
        "except stoker.StokerError as e:\n"
        "    print('raised', type(e).__name__, e.code, str(e), repr(e))\n")
    env = dict(os.environ)
    if os.environ.get("STOKER_PYTHON_DIR"):
        env["PYTHONPATH"] = os.environ["STOKER_PYTHON_DIR"]
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                       env=env)
    assert "raised" in r.stdout and "REDACTED" in r.stdout, r.stdout + r.stderr
    outputs += [r.stdout, r.stderr]
    assert_no_secret(*outputs)
