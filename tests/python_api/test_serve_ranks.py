"""`stoker serve` and `stoker.serve()`: one node server, every local rank its own shard (DESIGN.md
§4 "One node"). Both are shm::NodeServer; the tests that matter run against each (`kind`), and
the last one checks the two gave each rank the same batches and the same reattach behaviour.

The server is the real CLI (`stoker serve`) or a Python process calling stoker.serve(...), the
consumers are separate /usr/bin/python3 processes
that get their rank the way torchrun gives it (RANK / WORLD_SIZE in the environment) and iterate
one epoch through stoker.Loader(connect=...). Checked against the in-process Loader for the same
rank (an independent path through the engine: no server, no socket). Crash semantics under test:
a rank's position is what its process RELEASED; batches it held when it died are sent again to the
process that re-attaches as that rank, so the union over all processes is the epoch exactly once.
"""
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time

import pytest

from conftest import _stoker_bin, _synth

N = 48          # records; a multiple of world size x batch size: no tail padding (no repeats)
BATCH = 4
WORLD = 2

# A consumer: iterates one epoch and logs each batch's sample ids. `hold K`: after K batches it
# keeps (never releases) the next 2, says "ready" and waits to be killed.
CONSUMER = r"""
import json, os, sys, time
import stoker
sock, out, mode = sys.argv[1], sys.argv[2], sys.argv[3]
out = out.replace("{rank}", os.environ.get("RANK", "x"))
loader = stoker.Loader(connect=sock, connect_timeout_s=30)
info = loader.arena_info()
f = open(out, "w")
def log(**kw):
    f.write(json.dumps(kw) + "\n"); f.flush()
log(rank=info["rank"], world_size=info["world_size"], base=info["base"], cap=info["capacity"])
done, held = 0, []
for b in loader:
    ids = b["sample_ids"].tolist()
    for name, t in b.items():  # zero-copy: every tensor lies in this process's arena mapping
        assert info["base"] <= t.data_ptr() < info["base"] + info["capacity"], name
    if mode.startswith("hold") and done >= int(mode[4:]):
        held.append(b)
        log(held=ids)
        if len(held) == 2:
            time.sleep(0.3)  # lets the server read the releases already sent
            log(ready=1)
            time.sleep(600)
        continue
    del b, t  # the last tensors of the batch: this sends its release
    log(done=ids)
    done += 1
log(end=True)
"""


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return _synth(tmp_path_factory.mktemp("ranks"), N)


@pytest.fixture
def consumer_env(stoker):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(stoker.__file__))
    env.pop("STOKER_SERVER", None)
    return env


# A Python node server: the same options as the CLI's below, through stoker.serve().
PY_SERVER = r"""
import json, sys
import stoker
data, sock, world, batch = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
out = stoker.serve(data, socket=sock, world_size=world, batch_size=batch, threads=2,
                   progress_s=0.5)
print(json.dumps(out), flush=True)
"""


class Server:
    def __init__(self, data, sock, *extra, kind="cli", env=None):
        self.sock = sock
        self.kind = kind
        if kind == "cli":
            cmd = [_stoker_bin(), "serve", data, "--socket", sock, "--world-size", str(WORLD),
                   "--batch-size", str(BATCH), "--threads", "2", "--progress-s", "0.5", *extra]
        else:
            assert not extra, extra
            cmd = [sys.executable, "-c", PY_SERVER, data, sock, str(WORLD), str(BATCH)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env)
        first = self.proc.stdout.readline()
        assert "listening on " + sock in first, first + self.proc.stderr.read()

    def wait(self, timeout=60):
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out, err

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def server(data, tmp_path, consumer_env):
    servers = []

    def start(*extra, kind="cli"):
        s = Server(data, str(tmp_path / "node.sock"), *extra, kind=kind, env=consumer_env)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.stop()


KINDS = ["cli", "python"]
# What each kind of server did in the kill-and-reattach scenario (compared at the end).
SEEN = {}


def consume(env, sock, out, rank, mode="all", **kw):
    e = dict(env, RANK=str(rank), WORLD_SIZE=str(WORLD), LOCAL_RANK=str(rank),
             LOCAL_WORLD_SIZE=str(WORLD))
    return subprocess.Popen([sys.executable, "-c", CONSUMER, sock, str(out), mode], env=e,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def read_log(path):
    with open(path) as f:
        return [json.loads(line) for line in f]


def batches(log, key="done"):
    return [r[key] for r in log if key in r]


def in_process(stoker, data, rank, state=None):
    loader = stoker.Loader(data, batch_size=BATCH, threads=2, rank=rank, world_size=WORLD)
    if state is not None:
        loader.load_state_dict(state)
    return [b["sample_ids"].tolist() for b in loader]


def flat(bs):
    return [i for b in bs for i in b]


@pytest.mark.parametrize("kind", KINDS)
def test_each_rank_gets_its_own_shard(stoker, data, server, consumer_env, tmp_path, kind):
    srv = server(kind=kind)
    procs = [consume(consumer_env, srv.sock, tmp_path / f"r{r}.jsonl", r) for r in range(WORLD)]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    logs = [read_log(tmp_path / f"r{r}.jsonl") for r in range(WORLD)]
    for r, log in enumerate(logs):
        assert log[0]["rank"] == r and log[0]["world_size"] == WORLD
        assert log[-1] == {"end": True}
        # The same batches, in the same order, as this rank's in-process Loader.
        assert batches(log) == in_process(stoker, data, r)
    ids = [flat(batches(log)) for log in logs]
    assert len(ids[0]) == len(ids[1]) == N // WORLD
    assert not set(ids[0]) & set(ids[1])
    assert sorted(ids[0] + ids[1]) == list(range(N))
    rc, out, err = srv.wait()
    assert rc == 0, err
    assert "every rank finished; 12 batches sent, 12 released, 0 reclaimed" in out, out
    assert not os.path.exists(srv.sock), "the socket outlived the server"


@pytest.mark.parametrize("kind", KINDS)
def test_killed_rank_reattaches_and_the_epoch_is_served_exactly_once(
        stoker, data, server, consumer_env, tmp_path, kind):
    srv = server(kind=kind)
    r0 = consume(consumer_env, srv.sock, tmp_path / "r0.jsonl", 0)
    r1 = consume(consumer_env, srv.sock, tmp_path / "r1a.jsonl", 1, mode="hold2")
    deadline = time.time() + 120
    log_a = tmp_path / "r1a.jsonl"
    while not (os.path.exists(log_a) and '"ready"' in log_a.read_text()):
        assert r1.poll() is None and time.time() < deadline, r1.stderr.read() if r1.poll() else ""
        time.sleep(0.05)
    r1.send_signal(signal.SIGKILL)  # mid-epoch, holding 2 batches (+ more in its socket queue)
    r1.wait()
    r1b = consume(consumer_env, srv.sock, tmp_path / "r1b.jsonl", 1)  # the relaunched rank 1
    for p in (r0, r1b):
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    first, second = read_log(tmp_path / "r1a.jsonl"), read_log(tmp_path / "r1b.jsonl")
    released, held = batches(first), batches(first, "held")
    assert len(released) == 2 and len(held) == 2
    # Held (sent, unreleased) batches come again, first; nothing released comes twice.
    assert batches(second)[:2] == held
    assert released + batches(second) == in_process(stoker, data, 1)
    everything = flat(batches(read_log(tmp_path / "r0.jsonl"))) + flat(released + batches(second))
    assert sorted(everything) == list(range(N)), "an epoch, each sample exactly once"
    rc, out, err = srv.wait()
    assert rc == 0, err
    assert "rank 1 attached (client" in out and "from epoch 0 position 16" in out, out
    # 2 released + 4 reclaimed (2 held, 2 more within the window) by the dead process.
    assert "(1 lost, 0 refused)" in out and "4 reclaimed" in out, out
    ranks, totals = _rank_lines(out)
    SEEN[kind] = {"released": released, "held": held, "second": batches(second),
                  "rank0": batches(read_log(tmp_path / "r0.jsonl")), "ranks": ranks,
                  "totals": totals,
                  "attached": sorted(line.split("(client ")[0] + line.split("), ")[1]
                                     for line in out.splitlines() if " attached (client " in line)}


@pytest.mark.parametrize("kind", KINDS)
def test_client_state_wins_and_wrong_world_is_refused(stoker, data, server, consumer_env, kind):
    srv = server(kind=kind)
    with pytest.raises(stoker.StokerError) as e:
        stoker.Loader(connect=srv.sock, rank=0, world_size=3)
    assert "world size 2, not 3" in str(e.value)
    # A rank that saved its own state (its last state_dict) resumes from it.
    state = {"epoch": 0, "position": 24}
    resumed = stoker.Loader(connect=srv.sock, rank=1, world_size=WORLD, resume_state=state)
    got = [b["sample_ids"].tolist() for b in resumed]
    assert got == in_process(stoker, data, 1, state)
    # Another process for a rank that is attached is refused, not served the same shard twice.
    other = stoker.Loader(connect=srv.sock, rank=0, world_size=WORLD)
    with pytest.raises(stoker.StokerError) as e:
        stoker.Loader(connect=srv.sock, rank=0, world_size=WORLD)
    assert "attached already" in str(e.value)
    del other


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_socket_and_arena_are_private_and_cleaned_up_on_signal(stoker, server, monkeypatch, sig):
    srv = server()
    mode = os.lstat(srv.sock).st_mode
    assert stat.S_ISSOCK(mode) and stat.S_IMODE(mode) == 0o600
    monkeypatch.setenv("STOKER_SERVER", srv.sock)  # no data, no connect: the node server
    loader = stoker.Loader(rank=0, world_size=WORLD)
    assert loader.arena_info()["server_pid"] == srv.proc.pid
    next(iter(loader))
    # The arena is a memfd: no name in any filesystem; its inode is 0600 all the same.
    memfds = []
    for fd in os.listdir(f"/proc/{srv.proc.pid}/fd"):
        target = os.readlink(f"/proc/{srv.proc.pid}/fd/{fd}")
        if target.startswith("/memfd:"):
            memfds.append(stat.S_IMODE(os.stat(f"/proc/{srv.proc.pid}/fd/{fd}").st_mode))
    assert memfds and all(m == 0o600 for m in memfds), memfds
    srv.proc.send_signal(sig)
    rc, out, err = srv.wait(timeout=30)
    assert rc == 0, err
    assert "stopped by signal" in out and "socket removed" in out, out
    assert not os.path.exists(srv.sock)
    loader.close()


@pytest.mark.skipif(shutil.which("torchrun") is None, reason="no torchrun")
def test_torchrun_two_local_ranks(stoker, data, server, consumer_env, tmp_path):
    srv = server()
    script = tmp_path / "consumer.py"
    script.write_text(CONSUMER)
    out = tmp_path / "t{rank}.jsonl"
    env = dict(consumer_env, OMP_NUM_THREADS="1")
    # Debian's torch 1.13 under Python 3.11: torchrun's default --redirects/--tee "0" parse to
    # None (Std.NONE is no longer an iterable Flag member) and it crashes before starting any
    # worker; "1"/"2" (stdout to its log dir, stderr teed) parse fine.
    p = subprocess.run(["torchrun", "--standalone", "--nproc_per_node", str(WORLD),
                        "--redirects", "1", "--tee", "2", "--log_dir", str(tmp_path / "tr"),
                        str(script), srv.sock, str(out), "all"],
                       env=env, capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stderr[-3000:]
    for r in range(WORLD):
        log = read_log(tmp_path / f"t{r}.jsonl")
        assert log[0]["rank"] == r
        assert batches(log) == in_process(stoker, data, r)
    rc, out_text, err = srv.wait()
    assert rc == 0, err


def _readme_examples():
    """The README's `stoker serve` + torchrun example: each `<!-- example: NAME -->` block."""
    readme = os.path.join(os.path.dirname(__file__), "..", "..", "README.md")
    text = open(readme).read()
    blocks = {}
    for part in text.split("<!-- example: ")[1:]:
        name, rest = part.split(" -->", 1)
        body = rest.split("```", 2)[1]
        blocks[name] = body.split("\n", 1)[1]  # without the fence's language line
    return blocks


@pytest.mark.skipif(shutil.which("torchrun") is None, reason="no torchrun")
def test_readme_torchrun_example_runs_as_written(stoker, consumer_env, tmp_path):
    blocks = _readme_examples()
    assert set(blocks) == {"train.py", "run.sh"}, blocks.keys()
    work = tmp_path / "work"  # "an empty folder": the two files only
    work.mkdir()
    for name, body in blocks.items():
        (work / name).write_text(body)
    bin_dir = tmp_path / "bin"  # `stoker` on PATH, as after `cmake --install`
    bin_dir.mkdir()
    os.symlink(os.path.abspath(_stoker_bin()), bin_dir / "stoker")
    env = dict(consumer_env, PATH=f"{bin_dir}:{os.environ['PATH']}", OMP_NUM_THREADS="1")
    # Its own process group: if torchrun fails, the background server is killed with it.
    p = subprocess.Popen(["bash", "-e", "run.sh"], cwd=work, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = p.communicate(timeout=300)
    finally:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()
    assert p.returncode == 0, stdout[-2000:] + stderr[-3000:]
    out = stdout + stderr
    # Every rank served its shard; the server ended on its own (`wait` returned).
    for r in range(2):
        assert f"rank {r}: " in out and f"rank {r}: 0 batches" not in out, out[-3000:]
    assert "every rank finished" in out, out[-3000:]


def _rank_lines(out):
    """Final per-rank counters and the summary's totals from `stoker serve`'s output."""
    import re
    ranks = {}
    for m in re.finditer(r"rank (\d+): \w+, sent (\d+) released (\d+) reclaimed (\d+), "
                         r"attaches (\d+)", out):
        ranks[int(m.group(1))] = [int(x) for x in m.groups()[1:]]  # the last line per rank wins
    m = re.search(r"; (\d+) batches sent, (\d+) released, (\d+) reclaimed, (\d+) clients "
                  r"\((\d+) lost, (\d+) refused\)", out)
    assert m, out
    return ranks, [int(x) for x in m.groups()]


def test_serve_totals_add_up(stoker, data, server, consumer_env, tmp_path):
    srv = server()
    # A second server on the same socket is refused — and its liveness probe is no client.
    other = subprocess.run([_stoker_bin(), "serve", data, "--socket", srv.sock, "--world-size",
                            str(WORLD)], capture_output=True, text=True, timeout=60)
    assert other.returncode != 0 and "live server" in other.stderr, other.stderr
    # A refused attach (wrong world size) is counted as refused, not as a lost client.
    with pytest.raises(stoker.StokerError, match="world size 2, not 3"):
        stoker.Loader(connect=srv.sock, rank=0, world_size=3)
    r0 = consume(consumer_env, srv.sock, tmp_path / "r0.jsonl", 0)
    r1 = consume(consumer_env, srv.sock, tmp_path / "r1a.jsonl", 1, mode="hold2")
    log_a = tmp_path / "r1a.jsonl"
    deadline = time.time() + 120
    while not (os.path.exists(log_a) and '"ready"' in log_a.read_text()):
        assert r1.poll() is None and time.time() < deadline
        time.sleep(0.05)
    r1.send_signal(signal.SIGKILL)  # dies holding batches: reclaimed, then served again
    r1.wait()
    r1b = consume(consumer_env, srv.sock, tmp_path / "r1b.jsonl", 1)
    for p in (r0, r1b):
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    rc, out, err = srv.wait()
    assert rc == 0, err
    ranks, (sent, released, reclaimed, clients, lost, refused) = _rank_lines(out)
    assert sorted(ranks) == [0, 1], out
    assert sent == sum(r[0] for r in ranks.values()), out
    assert released == sum(r[1] for r in ranks.values()), out
    assert reclaimed == sum(r[2] for r in ranks.values()), out
    assert clients == sum(r[3] for r in ranks.values()) == 3, out  # r0, r1a, r1b
    assert (lost, refused) == (1, 1), out  # r1a; the world-size-3 attach
    assert sent == released + reclaimed, out  # every client gone: nothing held
    assert released == N // BATCH and reclaimed >= 2, out  # each batch released once


def test_served_loader_refuses_pipeline_options(stoker, data, server, monkeypatch, tmp_path):
    srv = server()
    for kw in ({"batch_size": 16}, {"data": "x.jsonl"}, {"packing": True},
               {"media_root": "/data"}, {"sample_window": 2}):
        with pytest.raises(stoker.InvalidArgumentError, match="would be ignored") as e:
            stoker.Loader(connect=srv.sock, rank=0, world_size=WORLD, **kw)
        assert next(iter(kw)) in str(e.value)
    # Defaults change nothing and pass; so do the served Loader's own options.
    loader = stoker.Loader(connect=srv.sock, rank=0, world_size=WORLD, batch_size=8,
                           connect_timeout_s=5)
    loader.close()
    # No data, no connect, no $STOKER_SERVER: a socket that merely exists at the default path is
    # not used — the error names it.
    monkeypatch.delenv("STOKER_SERVER", raising=False)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path))
    default = stoker._stoker.default_socket_path()
    dflt = subprocess.Popen([_stoker_bin(), "serve", data, "--world-size", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=dict(os.environ))
    try:
        assert "listening on " + default in dflt.stdout.readline()
        with pytest.raises(stoker.InvalidArgumentError, match="connect=True uses it") as e:
            stoker.Loader(rank=0, world_size=1)
        assert default in str(e.value)
    finally:
        dflt.kill()
        dflt.wait()


def test_python_and_cli_servers_behave_alike():
    # stoker.serve() and `stoker serve` are one library: each rank got the same batches, the
    # killed rank's held batches came again first to its replacement, from the same state, and
    # every counter (per rank and in total) is the same.
    if set(SEEN) != set(KINDS):
        pytest.skip("needs both runs of test_killed_rank_reattaches_... (run the whole file)")
    assert SEEN["python"] == SEEN["cli"], (SEEN["python"], SEEN["cli"])
