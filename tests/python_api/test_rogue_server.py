"""A hand-off server run by another user (issue 30 §2): a rogue server as uid 65534 (setpriv)
speaks the hand-off protocol (hello + arena memfd, one batch whose input_ids are 666) to anyone.
A root `stoker.Loader(connect=path)` used to take its forged batch; now the client checks the
server's uid (SO_PEERCRED) before reading a byte and refuses with a message naming both uids —
unless the user names that uid (STOKER_SERVER_UID). `stoker consume` (C++ client) likewise.
Needs root and setpriv (skips otherwise)."""
import os
import shutil
import subprocess
import sys
import tempfile
import time

import pytest

ROGUE = r'''
import array, os, socket, struct, sys
path = sys.argv[1]
MAGIC, VER = 0x524b5453, 4  # shm/detail/wire.h kVersion
def hdr(t):
    return struct.pack("<IHH", MAGIC, VER, t)
arena = os.memfd_create("rogue")
os.ftruncate(arena, 4096)
os.pwrite(arena, struct.pack("<4q", 666, 666, 666, 666), 0)
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(path)
os.chmod(path, 0o777)
s.listen(8)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    c.settimeout(0.5)
    try:
        c.recv(65536)  # the attach, if any
    except OSError:
        pass
    hello = hdr(1) + struct.pack("<Qi", 4096, os.getpid())
    c.sendmsg([hello], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [arena]))])
    name = b"input_ids"
    batch = (hdr(2) + struct.pack("<QqQQQQI", 1, 0, 0, 0, 0, 4096, 1) +
             struct.pack("<BBHQ", 1, 2, len(name), 0) + struct.pack("<qq", 1, 4) + name)
    c.send(batch)
    c.send(hdr(3))
'''

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                                reason="needs root and setpriv (the server is another uid)")


@pytest.fixture()
def rogue():
    d = tempfile.mkdtemp(prefix="stoker-rogue-")
    os.chmod(d, 0o777)
    path = os.path.join(d, "sock")
    p = subprocess.Popen(["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups",
                          "/usr/bin/python3", "-c", ROGUE, path], stdout=subprocess.PIPE,
                         text=True, cwd="/")
    try:
        assert p.stdout.readline().strip() == "ready"
        yield path
    finally:
        p.kill()
        p.wait()
        shutil.rmtree(d, ignore_errors=True)


def loader_child(path, env_extra=None, kwargs=""):
    """A Loader(connect=path) in a child: prints the first batch's input_ids, or the error."""
    code = ("import stoker, sys\n"
            "try:\n"
            f"    for b in stoker.Loader(connect={path!r}, connect_timeout_s=5{kwargs}):\n"
            "        print('BATCH', b['input_ids'].tolist()); break\n"
            "except Exception as e:\n"
            "    print('ERROR', type(e).__name__, e)\n")
    env = dict(os.environ, **(env_extra or {}))
    env.pop("STOKER_SERVER_UID", None) if not env_extra else None
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=60)


def test_a_server_of_another_uid_is_refused(rogue, stoker):
    r = loader_child(rogue)
    assert "BATCH" not in r.stdout, "the forged batch was taken: " + r.stdout
    assert "ERROR PermissionDeniedError" in r.stdout, r.stdout + r.stderr
    assert "runs as uid 65534" in r.stdout and "this user (uid 0)" in r.stdout, r.stdout
    assert "STOKER_SERVER_UID=65534" in r.stdout, r.stdout


def test_a_named_uid_is_accepted(rogue, stoker):
    r = loader_child(rogue, {"STOKER_SERVER_UID": "65534"})
    assert "BATCH [[666, 666, 666, 666]]" in r.stdout, r.stdout + r.stderr


def test_a_uid_named_by_the_keyword_is_accepted(rogue, stoker):
    # server_uid= (the option schema's; $STOKER_SERVER_UID is its fallback).
    r = loader_child(rogue, kwargs=", server_uid=65534")
    assert "BATCH [[666, 666, 666, 666]]" in r.stdout, r.stdout + r.stderr
    r = loader_child(rogue, kwargs=", server_uid=65533")
    assert "ERROR PermissionDeniedError" in r.stdout and "allowed: uid 65533" in r.stdout, r.stdout


def test_stoker_consume_refuses_it_too(rogue):
    stoker_bin = os.environ.get("STOKER_BIN", os.path.join(os.path.dirname(__file__), "..", "..",
                                                            "build", "stoker"))
    env = {k: v for k, v in os.environ.items() if k != "STOKER_SERVER_UID"}
    r = subprocess.run([stoker_bin, "consume", "--socket", rogue], env=env, capture_output=True,
                       text=True, timeout=60)
    assert r.returncode != 0
    assert "runs as uid 65534" in r.stderr and "uid 0" in r.stderr, r.stderr


def test_stoker_consume_takes_the_uid_from_the_environment(rogue):
    # consume reads $STOKER_SERVER_UID through the option schema (server_uid's fallback), strictly.
    stoker_bin = os.environ.get("STOKER_BIN", os.path.join(os.path.dirname(__file__), "..", "..",
                                                            "build", "stoker"))
    r = subprocess.run([stoker_bin, "consume", "--socket", rogue],
                       env=dict(os.environ, STOKER_SERVER_UID="65534"), capture_output=True,
                       text=True, timeout=60)
    assert "runs as uid" not in r.stderr, r.stderr
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([stoker_bin, "consume", "--socket", rogue],
                       env=dict(os.environ, STOKER_SERVER_UID="-5"), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "$STOKER_SERVER_UID must be an integer in [0, 4294967294], got '-5'" in r.stderr, r.stderr
