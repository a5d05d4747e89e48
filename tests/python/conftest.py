"""Shared pytest setup for stoker's integration tests.

The stoker binary comes from (first match): `--stoker-bin PATH`, `$STOKER_BIN`, then the usual
build trees (build/, build-par/). ctest passes `$<TARGET_FILE:stoker>` through STOKER_BIN so the
same tests run against the Release and the ASan/UBSan binaries.
Run with Debian's /usr/bin/python3 (it has Pillow 9.4, numpy and pytest).
"""

from __future__ import annotations

import os
import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE))
# The pixel oracle (hf_image_reference.py) lives in bench/: the benchmarks use it as their peer,
# and tests may import from bench/ (never the reverse).
sys.path.insert(0, str(REPO / "bench"))


def pytest_addoption(parser):
    parser.addoption("--stoker-bin", default=None, help="path of the stoker executable")


@pytest.fixture(scope="session")
def stoker_bin(request) -> str:
    candidates = [request.config.getoption("--stoker-bin"), os.environ.get("STOKER_BIN")]
    candidates += [str(REPO / d / "stoker") for d in ("build", "build-par")]
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    pytest.fail("stoker binary not found: pass --stoker-bin or set STOKER_BIN")


def pytest_terminal_summary(terminalreporter):
    """Per-format counts and parity numbers collected by the tests, shown even under -q."""
    lines = []
    for mod in list(sys.modules.values()):
        getter = getattr(mod, "pytest_terminal_summary_lines", None)
        if callable(getter) and getattr(mod, "__file__", "") and \
                pathlib.Path(mod.__file__).parent == HERE:
            lines += getter()
    if lines:
        terminalreporter.section("stoker integration report")
        for line in lines:
            terminalreporter.write_line(line)
