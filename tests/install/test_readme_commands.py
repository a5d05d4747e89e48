"""The README's commands run as written, in a fresh shell (issue 30 §12, §13).
- `stoker` on PATH: scripts/setup.sh (and so scripts/demo.sh) runs scripts/link_stoker.sh, which
  links the binary into a bin folder of the default PATH (/usr/local/bin as root). Here the link
  goes to a temporary folder ($STOKER_LINK_DIR) standing for it; the link step is idempotent and
  never replaces a regular file.
- Each `<!-- readme-test: NAME -->` block of README.md (first steps; the one-machine `mpirun`
  scale-out, as root here) runs with `bash -e` in an empty folder, in a fresh environment
  (`env -i`, PATH = that folder + the system's default), exactly as written.
Before: `stoker: command not found` after setup.sh, and the README's `mpirun --hostfile hosts
…` failed as root (Open MPI refuses root) and on one machine (no hosts file, -np above the cores).
Run: STOKER_BIN=build/stoker /usr/bin/python3 -m pytest -q tests/install/test_readme_commands.py"""
import os
import pathlib
import re
import shutil
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent.parent
STOKER = os.path.abspath(os.environ.get("STOKER_BIN", str(REPO / "build" / "stoker")))
LINK = REPO / "scripts" / "link_stoker.sh"
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def readme_blocks():
    text = (REPO / "README.md").read_text()
    return dict(re.findall(r"<!-- readme-test: (\S+) -->\n```sh\n(.*?)```", text, re.S))


@pytest.fixture()
def linked(tmp_path):
    """The bin folder setup.sh would fill, filled by the same script."""
    bin_dir = tmp_path / "bin"
    env = dict(os.environ, STOKER_LINK_DIR=str(bin_dir))
    r = subprocess.run([str(LINK), STOKER], env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert os.readlink(bin_dir / "stoker") == os.path.realpath(STOKER)
    return bin_dir


def fresh_shell(script, cwd, bin_dir, timeout=600):
    env = {"HOME": str(cwd), "PATH": f"{bin_dir}:{SYSTEM_PATH}", "LANG": "C.UTF-8",
           "OMP_NUM_THREADS": "1"}
    return subprocess.run(["env", "-i", *[f"{k}={v}" for k, v in env.items()], "bash",
                           "--noprofile", "--norc", "-e", "-c", script], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout)


def test_setup_links_stoker_into_the_default_path(tmp_path):
    setup = (REPO / "scripts" / "setup.sh").read_text()
    assert "scripts/link_stoker.sh" in setup, "setup.sh no longer puts stoker on PATH"
    where = subprocess.run([str(LINK), "--print-dir"], capture_output=True, text=True,
                           env={k: v for k, v in os.environ.items() if k != "STOKER_LINK_DIR"})
    if os.geteuid() == 0:
        assert where.stdout.strip() == "/usr/local/bin"
    assert where.stdout.strip() in (SYSTEM_PATH.split(":") + [os.path.expanduser("~/.local/bin")])
    # Idempotent: a second run changes and prints nothing; a regular file is left alone.
    bin_dir = tmp_path / "bin"
    env = dict(os.environ, STOKER_LINK_DIR=str(bin_dir), PATH=f"{bin_dir}:{SYSTEM_PATH}")
    first = subprocess.run([str(LINK), STOKER], env=env, capture_output=True, text=True)
    second = subprocess.run([str(LINK), STOKER], env=env, capture_output=True, text=True)
    assert first.returncode == second.returncode == 0
    assert "setup:" in first.stdout and second.stdout == "", (first.stdout, second.stdout)
    (bin_dir / "stoker").unlink()
    (bin_dir / "stoker").write_text("#!/bin/sh\necho installed\n")
    third = subprocess.run([str(LINK), STOKER], env=env, capture_output=True, text=True)
    assert third.returncode == 0 and "left as it is" in third.stderr
    assert (bin_dir / "stoker").read_text().endswith("echo installed\n")


def test_readme_first_steps_run_as_written(tmp_path, linked):
    blocks = readme_blocks()
    assert "first-steps.sh" in blocks, blocks.keys()
    work = tmp_path / "work"
    work.mkdir()
    r = fresh_shell(blocks["first-steps.sh"], work, linked)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert "16 samples, 0 failed" in r.stdout, r.stdout[-2000:]


@pytest.mark.skipif(shutil.which("mpirun") is None, reason="no mpirun (Open MPI)")
def test_readme_mpirun_runs_as_written_on_one_machine(tmp_path, linked):
    blocks = readme_blocks()
    assert "scale-out.sh" in blocks, blocks.keys()
    out = subprocess.run([STOKER, "cluster", "--help"], capture_output=True, text=True)
    if "usage" not in out.stdout + out.stderr:
        pytest.skip("this stoker was built without the cluster module")
    work = tmp_path / "work"
    work.mkdir()
    r = fresh_shell(blocks["scale-out.sh"], work, linked)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    text = r.stdout + r.stderr
    assert "rank 0 receiver" in text and "samples 32" in text, text[-3000:]
    assert (work / "st").exists(), "the receiver's --state-file"
