"""Served mode: a `stoker.serve` process feeds `stoker.Loader(connect=...)` zero-copy over the shm
hand-off (the client maps the server's arena). Same batches as the in-process Loader; every batch
released when its tensors die; iteration stops at epoch ends."""
import os
import subprocess
import sys

import pytest

SERVER = """
import json, sys
import stoker
print(json.dumps(stoker.serve(sys.argv[1], socket=sys.argv[2], batch_size=4, threads=2,
                              epochs=2, idle_timeout_s=60)))
"""


@pytest.fixture
def server(stoker, dataset, tmp_path):
    sock = str(tmp_path / "s.sock")
    env = dict(os.environ)  # the server imports the same stoker build as this test
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(stoker.__file__))
    p = subprocess.Popen([sys.executable, "-c", SERVER, dataset, sock], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env)
    yield sock, p
    if p.poll() is None:
        p.kill()
        p.wait()


def test_served_batches_equal_in_process_ones(stoker, dataset, server):
    sock, proc = server
    client = stoker.Loader(connect=sock)
    info = client.arena_info()
    assert info["server_pid"] == proc.pid
    epochs = []
    for _ in range(2):
        ids = []
        for b in client:
            for name, t in b.items():  # views into this process's mapping of the server arena
                assert info["base"] <= t.data_ptr() < info["base"] + info["capacity"], name
            ids.append(b["sample_ids"].tolist())
        epochs.append(ids)
    del b, t
    local = stoker.Loader(dataset, batch_size=4, threads=2, epochs=2)
    assert epochs == [[b["sample_ids"].tolist() for b in local] for _ in range(2)]
    assert client.stats()["handoff_us_p50"] > 0
    with pytest.raises(NotImplementedError):
        client.state_dict()
    import json

    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    s = json.loads(out.strip().splitlines()[-1])
    assert s["batches_sent"] == s["batches_released"] == 20 and s["clients_lost"] == 0
    assert s["descriptor_bytes"] < 20 * 2048  # descriptors only, never pixels


def test_connect_without_server_is_an_error(stoker, tmp_path):
    with pytest.raises(stoker.StokerError) as e:
        stoker.Loader(connect=str(tmp_path / "nobody.sock"), connect_timeout_s=0.2)
    assert e.value.code in {"NotFound", "Unavailable", "DeadlineExceeded"}
