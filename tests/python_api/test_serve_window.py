"""`stoker serve … --window 1` with the README's loop (issue 30 §8). `for b in Loader(connect=…)`
keeps the previous batch alive (the loop variable) while next() waits for the following one; with
a window of 1 the server waited for that batch's release and the loop hung forever after batch 1.
Now the client tells the server when it waits with nothing queued, and the window counts the batch
being replaced. The README's train.py loop (as written there) runs against `stoker serve
--window 1` and against `stoker.serve(window=1)`, each within a time bound, every batch delivered.
"""
import os
import re
import subprocess
import sys
import time

import pytest

from conftest import _stoker_bin, _synth

HERE = os.path.dirname(os.path.abspath(__file__))
README = os.path.join(HERE, "..", "..", "README.md")
N, BATCH = 24, 4


def readme_train_py():
    text = open(README).read()
    m = re.search(r"<!-- example: train.py -->\n```python\n(.*?)```", text, re.S)
    assert m, "README: the train.py example is gone"
    return m.group(1)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    return _synth(tmp_path_factory.mktemp("win"), N)


def run_consumer(sock, tmp_path, timeout=60):
    script = tmp_path / "train.py"
    script.write_text(readme_train_py())
    env = dict(os.environ, STOKER_SERVER=sock, RANK="0", WORLD_SIZE="1", LOCAL_RANK="0",
               LOCAL_WORLD_SIZE="1", PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    t0 = time.monotonic()
    try:
        r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the README loop hung against a --window 1 server ({timeout} s)")
    return r, time.monotonic() - t0


def loop_against(srv, sock, tmp_path, finished):
    """The README loop against server `srv`: every batch delivered, the server done by itself."""
    try:
        r, elapsed = run_consumer(sock, tmp_path)
        assert r.returncode == 0, r.stderr
        assert f"rank 0: {N // BATCH} batches" in r.stdout, r.stdout + r.stderr
        out, err = srv.communicate(timeout=60)
        assert srv.returncode == 0, err
        assert finished in out, out
        return elapsed
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()


def test_readme_loop_with_window_1_on_stoker_serve(data, tmp_path):
    sock = str(tmp_path / "node.sock")
    srv = subprocess.Popen([_stoker_bin(), "serve", data, "--world-size", "1", "--socket", sock,
                            "--batch-size", str(BATCH), "--window", "1", "--threads", "1"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    elapsed = loop_against(srv, sock, tmp_path, "every rank finished")
    print(f"\n--window 1, README loop: {N // BATCH} batches in {elapsed:.2f} s")


def test_readme_loop_with_window_1_on_python_serve(data, tmp_path):
    sock = str(tmp_path / "py.sock")
    # serve() is the node server `stoker serve` runs (shm::NodeServer): world_size ranks, each its
    # own shard; it returns once every rank finished.
    code = ("import stoker, sys\n"
            f"stoker.serve(data={data!r}, socket={sock!r}, world_size=1, batch_size={BATCH},"
            " window=1, threads=1)\n")
    srv = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True,
                           env=dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p)))
    loop_against(srv, sock, tmp_path, "every rank finished")
