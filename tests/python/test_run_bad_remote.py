"""Hostile remote data through `stoker run` and `stoker.Loader` (ctest `run_bad_remote`, labels
net + integration; loopback only): media behind tests/io/fault_server.py (403, 404, persistent
500/503, slow, stalled, reset, truncated, wrong Content-Length both ways, redirect loop, not HTTP,
an HTML page, a dead host; issue 29: a 50 MiB error body, giant and countless headers, a 1 MiB
reason phrase or Location, a 100 KiB URL, a backslash in the authority and other malformed URLs)
from a remote manifest served by the same server and from a local manifest; a remote manifest pointing at local files; bodies over --max-object-bytes with and
without Content-Length; the server SIGKILLed after the first batch and restarted 3 s later (all
delivered, nothing failed); an S3 bucket not allowed, then allowed (s3rver). The retry window is
STOKER_IO_DEADLINE_MS=2000 (the default for the restart). Same checks and table as
test_run_bad_local.py; the table goes to <build>/tests/bad_input_remote.md.
Run: STOKER_BIN=build/stoker STOKER_PYTHON_DIR=build/python /usr/bin/python3 -m pytest -q \
     tests/python/test_run_bad_remote.py
"""
from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

import bad_input_harness as h
import bad_input_media as media
import bad_input_remote_kinds as rk
from bad_input_harness import DELIVERED, Group, Kind
from bad_input_kinds import with_image

sys.path.insert(0, str(h.REPO / "tests" / "io"))
import fault_server  # noqa: E402
import servers  # noqa: E402

RUNNERS = ["run", "loader"]
MB = 1 << 20
DEADLINE = {"STOKER_IO_DEADLINE_MS": "2000"}
BASE = {"http": "http://127.0.0.1:0", "restart": "http://127.0.0.1:0"}  # set by the fixture
S3_WHY_NOT = servers.missing_s3rver()
TABLE = None


def _rel(p: pathlib.Path) -> str:
    return "/".join(p.parts[-3:])  # <dataset key>/ds/data.jsonl under the server's root


def _restart_kinds(ds: pathlib.Path):
    rk._media(ds)
    return [Kind("server_killed_3s", with_image("media/ok.png"), DELIVERED,
                 "server SIGKILLed after the 1st batch, back 3 s later: all delivered, no fails")]


def _s3_kinds(allowed):
    def build(ds: pathlib.Path):
        rk._media(ds)
        return rk.bucket_kinds(allowed)
    return build


GROUPS = [
    Group("http_manifest", lambda ds: rk.remote_manifest_kinds(BASE["http"], ds),
          publish=lambda p: f"{BASE['http']}/{_rel(p)}", env=dict(DEADLINE)),
    Group("http_media", lambda ds: rk.local_manifest_kinds(BASE["http"], ds), env=dict(DEADLINE)),
    Group("http_retry", lambda ds: rk.fault_kinds(BASE["http"], ds, retry=True),
          publish=lambda p: f"{BASE['http']}/{_rel(p)}", env=dict(DEADLINE)),
    Group("http_media_retry", lambda ds: rk.fault_kinds(BASE["http"], ds, "lm_", retry=True),
          env=dict(DEADLINE)),
    Group("http_hostile", lambda ds: rk.hostile_kinds(BASE["http"], ds),
          publish=lambda p: f"{BASE['http']}/{_rel(p)}", env=dict(DEADLINE)),
    Group("http_media_hostile", lambda ds: rk.hostile_kinds(BASE["http"], ds, "lm_"),
          env=dict(DEADLINE)),
    Group("http_lone_500", lambda ds: rk.lone_500_kinds(BASE["http"], ds),
          publish=lambda p: f"{BASE['http']}/{_rel(p)}", env=dict(DEADLINE), n_good=5),
    Group("http_caps", lambda ds: rk.caps_kinds(BASE["http"], ds),
          ["--max-object-bytes", str(MB)], {"max_object_bytes": MB},
          publish=lambda p: f"{BASE['http']}/{_rel(p)}", env=dict(DEADLINE)),
    Group("server_restart", _restart_kinds, ["--prefetch", "1", "--step-ms", "250"],
          {"prefetch": 1}, timeout=90, publish=lambda p: f"{BASE['restart']}/{_rel(p)}",
          loader_spec={"hold_s": 0.25}, n_good=47),  # the default retry window
    Group("s3_bucket", _s3_kinds(False), env=dict(DEADLINE)),
    Group("s3_bucket_allowed", _s3_kinds(True), ["--allow-bucket", "other"],
          {"allow_buckets": ["other"]}, env=dict(DEADLINE)),
]
PARAMS = h.plan(GROUPS)


def pytest_terminal_summary_lines():
    return TABLE.lines() if TABLE is not None else []


class Restartable:
    """fault_server.py as its own process on a fixed port: SIGKILLed and started again."""

    def __init__(self, root: pathlib.Path):
        self.root, self.port, self.proc = root, servers.free_port(), None

    def start(self):
        if self.proc is None or self.proc.poll() is not None:
            self.proc = subprocess.Popen(
                [h.PYTHON, fault_server.__file__, "--root", str(self.root), "--port",
                 str(self.port), "--lifetime", "600"], stdout=subprocess.DEVNULL,
                start_new_session=True)
            servers.wait_port(self.port)

    def kill(self):
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def watch(self, work: pathlib.Path, runner: str):
        """Kills the server once the first batch is logged, starts it again 3 s later."""
        log = work / ("delivered.log" if runner == "run" else "delivered.txt")
        state = {"killed": None, "back": False}

        def tick(_elapsed):
            if state["killed"] is None and log.exists() and log.stat().st_size > 0:
                self.kill()
                state["killed"] = time.monotonic()
            elif state["killed"] and not state["back"] and \
                    time.monotonic() - state["killed"] >= 3.0:
                self.start()
                state["back"] = True
        return tick


@pytest.fixture(scope="module")
def suite(stoker_bin, tmp_path_factory):
    global TABLE
    out = os.environ.get("STOKER_BAD_TABLE") or \
        str(tmp_path_factory.getbasetemp().parent / "bad_input_remote.md")
    TABLE = h.Table(pathlib.Path(out), "bad input, remote data (stoker run / stoker.Loader)")
    root = tmp_path_factory.mktemp("bad_remote")
    www = root / "www"
    www.mkdir()
    http = fault_server.FaultServer(str(www)).start()
    http.prepare_gzip(512)
    restart = Restartable(www)
    restart.start()
    BASE["http"], BASE["restart"] = http.base, f"http://127.0.0.1:{restart.port}"
    groups = {g.name: g for g in GROUPS}
    groups["server_restart"].watch = restart.watch
    s3 = None
    if S3_WHY_NOT is None:
        s3 = servers.S3rver(str(root / "s3data")).start()
        client = s3.client()
        client.create_bucket(Bucket="other")
        client.put_object(Bucket="other", Key="x.png", Body=media.png(80, 64, seed=8))
        for name in ("s3_bucket", "s3_bucket_allowed"):
            groups[name].env.update(s3.env())
            groups[name].publish = _uploader(client)

    def before_run(group, runner):
        http.counts.clear()  # flaky/<n> counts per run
        restart.start()
    env = dict(os.environ, STOKER_CACHE_DIR=str(root / "cache"))
    yield h.Suite(stoker_bin, root, GROUPS, TABLE, env, data_root=www, before_run=before_run)
    http.stop()
    restart.kill()
    if s3 is not None:
        s3.stop()


def _uploader(client):
    def publish(manifest: pathlib.Path) -> str:
        ds = manifest.parent
        key = ds.parent.name
        for p in ds.rglob("*"):
            if p.is_file() and not p.name.endswith(".stoker-index"):
                client.upload_file(str(p), "bkt", f"{key}/ds/{p.relative_to(ds)}")
        return f"s3://bkt/{key}/ds/data.jsonl"
    return publish


def _skip_if_missing(group, runner):
    if runner == "loader" and h.python_dir() is None:
        pytest.skip("the _stoker extension is not built (no <build>/python/stoker)")
    if group.startswith("s3") and S3_WHY_NOT is not None:
        pytest.skip(S3_WHY_NOT)


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("group,kind", PARAMS, ids=[f"{g}-{k}" for g, k in PARAMS])
def test_bad_remote_input(suite, group, kind, runner):
    _skip_if_missing(group, runner)
    outcome, detail = suite.outcome(group, kind, runner)
    assert outcome == "ok", f"{kind} via {runner}: {outcome}: {detail}"
    if group == "server_restart":
        res = suite.results[(suite.build(group, kind), runner)]
        assert res.report == [], f"samples failed while the server was away: {res.report[:3]}"
