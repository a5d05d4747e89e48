"""Hostile local data through `stoker run` and `stoker.Loader` (ctest `run_bad_local`, labels
integration + sanitize): ~80 kinds of bad record or file (bad_input_kinds.py), interleaved with
good synth records in a few datasets. For every kind and both runners (the sanitizer tree:
`stoker run` only): no crash (no signal, no
sanitizer report, no Python traceback), no hang (each child under a timeout), one error-report
line naming the record's file:line with the expected code, stage and reason — or delivery, for
the legitimate kinds of the option groups —, every good record of the manifest delivered, peak
RSS (os.wait4) within the good-data baseline + STOKER_BAD_RSS_MARGIN_MB (384). The kinds ×
outcome table is printed in the summary and written to <build>/tests/bad_input_local.md.
STOKER_BAD_ISOLATE=1 runs each kind in its own dataset (to tell which kind stopped a run).
Run: STOKER_BIN=build/stoker STOKER_PYTHON_DIR=build/python /usr/bin/python3 -m pytest -q \
     tests/python/test_run_bad_local.py
"""
from __future__ import annotations

import os
import pathlib

import pytest

import bad_input_harness as h
import bad_input_kinds as kinds

# The sanitizer tree runs the `stoker run` half only (CI time: the Loader half doubled this test
# there, 116 s): the Loader drives the same engine, and its Python glue runs under ASan/UBSan in
# special_files. The Release tree runs both.
RUNNERS = ["run"] if h.SANITIZED else ["run", "loader"]
GROUPS = kinds.groups()
PARAMS = h.plan(GROUPS)
TABLE = None


def pytest_terminal_summary_lines():
    return TABLE.lines() if TABLE is not None else []


@pytest.fixture(scope="module")
def suite(stoker_bin, tmp_path_factory):
    global TABLE
    out = os.environ.get("STOKER_BAD_TABLE") or \
        str(tmp_path_factory.getbasetemp().parent / "bad_input_local.md")
    TABLE = h.Table(pathlib.Path(out), "bad input, local data (stoker run / stoker.Loader)")
    root = tmp_path_factory.mktemp("bad_local")
    return h.Suite(stoker_bin, root, GROUPS, TABLE,
                   dict(os.environ, STOKER_CACHE_DIR=str(root / "cache")))


def _skip_without_python(runner):
    if runner == "loader" and h.python_dir() is None:
        pytest.skip("the _stoker extension is not built (no <build>/python/stoker)")


@pytest.mark.parametrize("runner", RUNNERS)
def test_good_data_control(suite, runner):
    """The control: good data alone runs clean under the same options, and gives the RSS
    baseline the bad datasets are held to."""
    _skip_without_python(runner)
    assert suite.baseline(runner) > 0


@pytest.mark.parametrize("runner", RUNNERS)
@pytest.mark.parametrize("group,kind", PARAMS, ids=[f"{g}-{k}" for g, k in PARAMS])
def test_bad_input(suite, group, kind, runner):
    _skip_without_python(runner)
    outcome, detail = suite.outcome(group, kind, runner)
    assert outcome == "ok", f"{kind} via {runner}: {outcome}: {detail}"


def test_kind_count():
    assert len(PARAMS) >= 60, len(PARAMS)
