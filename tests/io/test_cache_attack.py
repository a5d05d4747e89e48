"""The remote-manifest cache under attack by another user (issue 30 §1, §6; ctest `cache_attack`,
labels net + integration). A root `stoker run http://…/data.jsonl` with HOME, XDG_CACHE_HOME,
STOKER_CACHE_DIR and TMPDIR unset (services, cron, containers) caches under /tmp; each run here
gets a private mount namespace whose /tmp is an empty tmpfs (mode 1777, like the real one), and
the attacker — uid 65534 via setpriv — plants files there first, at every name stoker used or
uses (/tmp/stoker-cache and /tmp/stoker-cache-0):
- a symlink at the temporary name the download was written through (predictable: the pid) and at
  the copy's name → the root run used to overwrite the link's target (a root-owned file) with the
  manifest; now the attacker's folder is refused with a message naming both uids, the target is
  untouched;
- a forged manifest of the right size at the copy's name → used to be read as the manifest
  (other batches than the server's); now refused;
- a folder root made first (0700) cannot be planted in, and its verified copy is reused.
And the size cap (§6): a server claiming a 10 GB manifest is refused before any GET — by the
default 4 GiB cap, and with a raised cap by the free-space check on a 64 MiB cache file system.
Needs root, setpriv and `unshare -m` (skips otherwise).
Run: STOKER_BIN=build/stoker /usr/bin/python3 -m pytest -q tests/io/test_cache_attack.py"""
import hashlib
import http.server
import os
import shutil
import subprocess
import threading

import pytest

import servers

STOKER = os.path.abspath(os.environ.get("STOKER_BIN", os.path.join(servers.ROOT, "build", "stoker")))
ATTACKER = 65534


def why_not():
    if os.geteuid() != 0:
        return "needs root (the attacker is another uid)"
    if shutil.which("setpriv") is None or shutil.which("unshare") is None:
        return "needs setpriv and unshare (util-linux)"
    r = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs tmpfs /tmp"],
                       capture_output=True)
    if r.returncode != 0:
        return "no private mount namespace here: " + r.stderr.decode(errors="replace")
    return None


WHY_NOT = why_not()
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=str(WHY_NOT))

RUN_FLAGS = ["--batch-size", "2", "--threads", "1", "--io-threads", "1", "--seed", "1",
             "--quiet", "--arena-mb", "64"]


def clean_env():
    e = {k: v for k, v in os.environ.items()
         if k not in ("HOME", "XDG_CACHE_HOME", "STOKER_CACHE_DIR", "TMPDIR")}
    e["STOKER_IO_DEADLINE_MS"] = "5000"
    return e


def in_fresh_tmp(script, plant="", prepare="", size="256m", timeout=120):
    """`script` (sh) as root in a private mount namespace with an empty tmpfs on /tmp; `plant`
    (sh) runs first as uid 65534, with $1 = the pid the script's `exec stoker` will have;
    `prepare` (sh) runs as root before it."""
    outer = (f"mount -t tmpfs -o mode=1777,size={size} tmpfs /tmp || exit 90\n"
             "cd /\n" + prepare +
             f'setpriv --reuid {ATTACKER} --regid {ATTACKER} --clear-groups sh -c "$PLANT" plant $$ '
             "|| echo ATTACKER-COULD-NOT-PLANT >&2\n" + script)
    env = clean_env()
    env["PLANT"] = plant or "true"
    return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", outer],
                          env=env, capture_output=True, text=True, timeout=timeout, cwd="/")


def outside_tmp(path, name):
    """The namespace hides the real /tmp: files the runs read or write must live elsewhere (ctest
    puts its basetemp in the build tree; a bare pytest run puts it under /tmp)."""
    if not str(path).startswith("/tmp/"):
        return path
    alt = os.path.join(os.path.dirname(STOKER), "test-cache-attack", name)
    shutil.rmtree(alt, ignore_errors=True)
    os.makedirs(alt)
    return type(path)(alt)


@pytest.fixture()
def work(tmp_path, request):
    return outside_tmp(tmp_path, request.node.name)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    d = outside_tmp(tmp_path_factory.mktemp("ds"), "ds")
    subprocess.run([STOKER, "synth", "--out", str(d), "--n", "6", "--seed", "2",
                    "--max-side", "64"], check=True, capture_output=True)
    server = servers.ThreadServer("range", root=str(d))
    uri = f"http://127.0.0.1:{server.port}/data.jsonl"
    work = outside_tmp(tmp_path_factory.mktemp("clean"), "clean")
    # The server's batches, and the copy's name (the same scheme before and after the fix).
    env = clean_env()
    env["STOKER_CACHE_DIR"] = str(work / "cache")
    r = subprocess.run([STOKER, "run", uri, *RUN_FLAGS, "--batch-hashes", str(work / "h.txt")],
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    names = [n for n in os.listdir(work / "cache") if n.endswith(".jsonl")]
    assert len(names) == 1, os.listdir(work / "cache")
    yield {"uri": uri, "dir": d, "name": names[0], "hashes": open(work / "h.txt").read()}
    server.stop()


def run_line(site, out):
    return f"exec {STOKER} run {site['uri']} {' '.join(RUN_FLAGS)} --batch-hashes {out}\n"


def test_planted_symlink_does_not_overwrite_a_root_file(site, work):
    victim = work / "victim.conf"
    victim.write_text("root's precious file\n")
    os.chmod(work, 0o755)
    # The attacker's folder at both names, links at the copy's name, its digest's name and the
    # temporary name a download used to be written through (name + ".tmp" + pid).
    plant = ("for d in /tmp/stoker-cache /tmp/stoker-cache-0; do\n"
             "  mkdir -m 777 $d || exit 1\n"
             f"  for n in {site['name']} {site['name']}.sha256 {site['name']}.tmp$1; do\n"
             f"    ln -s {victim} $d/$n || exit 1\n"
             "  done\n"
             "done\n")
    r = in_fresh_tmp(run_line(site, work / "h.txt"), plant)
    assert "ATTACKER-COULD-NOT-PLANT" not in r.stderr, r.stderr
    assert victim.read_text() == "root's precious file\n", \
        f"the root run wrote through the attacker's symlink: {victim.read_text()[:200]!r}"
    assert r.returncode != 0, r.stderr
    assert "/tmp/stoker-cache-0" in r.stderr and "uid 65534" in r.stderr and "uid 0" in r.stderr, \
        r.stderr
    assert "STOKER_CACHE_DIR" in r.stderr, r.stderr


def forged(site):
    """The server's manifest with other content, same size: the first record's text reversed."""
    good = open(os.path.join(site["dir"], "data.jsonl"), "rb").read()
    first, rest = good.split(b"\n", 1)
    i = first.index(b'"content": "') + len(b'"content": "') if b'"content": "' in first else None
    bad = bytearray(good)
    if i is not None:
        j = first.index(b'"', i)
        bad[i:j] = bytes(reversed(good[i:j])).replace(b"\\", b"/")
    else:
        bad = bytearray(good.replace(b"a", b"b", 3))
    assert len(bad) == len(good) and bytes(bad) != good
    return bytes(bad)


def test_planted_manifest_of_the_right_size_is_not_used(site, work):
    fake = work / "fake.jsonl"
    fake.write_bytes(forged(site))
    digest = hashlib.sha256(fake.read_bytes()).hexdigest()
    plant = ("for d in /tmp/stoker-cache /tmp/stoker-cache-0; do\n"
             "  mkdir -m 777 $d || exit 1\n"
             f"  cp /tmp/fake.jsonl $d/{site['name']} || exit 1\n"
             f"  printf 'sha256 {digest}\\n' > $d/{site['name']}.sha256 || exit 1\n"
             "done\n")
    out = work / "h.txt"
    r = in_fresh_tmp(run_line(site, out), plant,
                     prepare=f"cp {fake} /tmp/fake.jsonl && chmod 644 /tmp/fake.jsonl\n")
    assert "ATTACKER-COULD-NOT-PLANT" not in r.stderr, r.stderr
    used = out.exists() and out.read_text() and out.read_text() != site["hashes"]
    assert not used, "the attacker's manifest was used: batches differ from the server's"
    assert r.returncode != 0, r.stderr
    assert "belongs to uid 65534" in r.stderr, r.stderr


def test_a_folder_made_by_root_cannot_be_planted_in_and_is_reused(site, work):
    out1, out2 = work / "h1.txt", work / "h2.txt"
    script = (f"{STOKER} run {site['uri']} {' '.join(RUN_FLAGS)} --batch-hashes {out1} || exit 1\n"
              "ls -ld /tmp/stoker-cache-0 >&2\n"
              f"setpriv --reuid {ATTACKER} --regid {ATTACKER} --clear-groups "
              f"sh -c 'echo x > /tmp/stoker-cache-0/{site['name']}' && echo PLANTED >&2\n"
              + run_line(site, out2))
    r = in_fresh_tmp(script)
    assert r.returncode == 0, r.stderr
    assert "drwx------" in r.stderr and "PLANTED" not in r.stderr, r.stderr
    assert out1.read_text() == out2.read_text() == site["hashes"]


class _HugeHandler(http.server.BaseHTTPRequestHandler):
    """Claims a 10 GB manifest; counts GETs (the body is zeros)."""
    protocol_version = "HTTP/1.1"
    SIZE = 10 * 10**9

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        self.send_response(200)
        self.send_header("ETag", '"huge"')
        self.send_header("Content-Length", str(self.SIZE))
        self.end_headers()

    def do_GET(self):
        self.server.gets += 1
        a, _, b = self.headers.get("Range", "bytes=0-").partition("=")[2].partition("-")
        start, end = int(a), min(self.SIZE, int(b) + 1 if b else self.SIZE)
        end = min(end, start + (8 << 20))
        self.send_response(206)
        self.send_header("ETag", '"huge"')
        self.send_header("Content-Length", str(end - start))
        self.send_header("Content-Range", f"bytes {start}-{end - 1}/{self.SIZE}")
        self.end_headers()
        self.wfile.write(bytes(end - start))


@pytest.fixture()
def huge():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _HugeHandler)
    httpd.daemon_threads, httpd.gets = True, 0
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    yield httpd
    httpd.shutdown()


def test_a_10_gb_manifest_is_refused_before_a_byte_is_cached(huge):
    uri = f"http://127.0.0.1:{huge.server_address[1]}/big.jsonl"
    # Both runs cache on a 64 MiB tmpfs: a stoker without the cap fills that, not the disk.
    # Default cap (4 GiB).
    r = in_fresh_tmp(f"export STOKER_CACHE_DIR=/tmp/c\nexec {STOKER} run {uri} {' '.join(RUN_FLAGS)}\n",
                     size="64m", timeout=60)
    assert r.returncode != 0
    assert "over the manifest cap of 4294967296 bytes" in r.stderr, r.stderr
    assert huge.gets == 0
    # A raised cap: the free-space check of the cache's file system refuses it.
    r = in_fresh_tmp(f"export STOKER_CACHE_DIR=/tmp/c\nexec {STOKER} run {uri} {' '.join(RUN_FLAGS)} "
                     "--max-manifest-bytes 20G\n", size="64m", timeout=60)
    assert r.returncode != 0
    assert "does not fit in the cache /tmp/c" in r.stderr and "MiB free" in r.stderr, r.stderr
    assert huge.gets == 0
