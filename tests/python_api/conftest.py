"""Fixtures for the `stoker` Python API tests (run with Debian's /usr/bin/python3 + torch 1.13).

STOKER_PYTHON_DIR (or PYTHONPATH) names <build>/python; STOKER_BIN the stoker binary used to
generate the synthetic datasets (ctest passes both)."""
import os
import subprocess
import sys

import pytest

_py_dir = os.environ.get("STOKER_PYTHON_DIR")
if _py_dir:
    sys.path.insert(0, _py_dir)


def _stoker_bin() -> str:
    b = os.environ.get("STOKER_BIN")
    if not b:
        here = os.path.dirname(os.path.abspath(__file__))
        b = os.path.join(here, "..", "..", "build", "stoker")
    return b


def _synth(out, n, *extra):
    subprocess.run([_stoker_bin(), "synth", "--out", str(out), "--n", str(n), "--seed", "7",
                    "--max-side", "320", *extra], check=True, capture_output=True)
    return str(out / "data.jsonl")


@pytest.fixture(scope="session")
def dataset(tmp_path_factory):
    """40 synthetic records (text-only, single/multi-image, multi-turn), small images."""
    return _synth(tmp_path_factory.mktemp("synth"), 40)


@pytest.fixture(scope="session")
def bad_dataset(tmp_path_factory):
    """40 records, a quarter of them broken (missing/corrupt/truncated images, bad JSON, ...)."""
    return _synth(tmp_path_factory.mktemp("bad"), 40, "--bad-fraction", "0.25")


@pytest.fixture(scope="session")
def stoker():
    import stoker as s

    return s
