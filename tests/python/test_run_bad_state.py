"""Issue #28 in the bad-input suite (ctest `run_bad_state`, label integration): state files,
state dicts, numeric options and output paths (bad_input_state_cases.py), through `stoker run` /
`stoker cluster` and `stoker.Loader`. Each case must end with its exit status (refused: 2 /
InvalidArgumentError; not found or too big: 1; accepted with a warning: 0), its one-line reason
naming the file, field, key, option or path, within its time bound (refusals at once: 3-5 s for
the CLI, 20-25 s for a Python child that imports torch), within its RSS bound, and without a
traceback. The cases × outcome table is printed in the summary and written to
<build>/tests/bad_input_state.md (or $STOKER_BAD_TABLE).
Run: STOKER_BIN=build/stoker STOKER_PYTHON_DIR=build/python /usr/bin/python3 -m pytest -q \\
     tests/python/test_run_bad_state.py
"""
from __future__ import annotations

import os
import pathlib

import pytest

import bad_input_harness as h
import bad_input_state_cases as cases

TABLE_LINES = []
ROWS = {}


def pytest_terminal_summary_lines():
    return TABLE_LINES


@pytest.fixture(scope="module")
def ctx(stoker_bin, tmp_path_factory):
    return cases.Ctx(stoker_bin, tmp_path_factory.mktemp("bad_state"), h.python_dir())


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    out = pathlib.Path(os.environ.get("STOKER_BAD_TABLE") or
                       tmp_path_factory.getbasetemp().parent / "bad_input_state.md")

    def write():
        TABLE_LINES[:] = [
            f"state files, state dicts, options, output paths: {len(ROWS)} cases",
            "| case | group | runner | exit (want) | s | peak RSS MiB | reason | verdict |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for c in cases.CASES:
            if c.name in ROWS:
                o, bad = ROWS[c.name]
                TABLE_LINES.append(
                    f"| {c.name} | {c.group} | {c.runner} | {o.exit} ({'/'.join(map(str, c.exit))}) "
                    f"| {o.wall_s:.1f} | {o.rss_mb} | {o.reason[:180]} | "
                    f"{'ok' if not bad else '; '.join(bad)[:160]} |")
        out.write_text("\n".join(TABLE_LINES) + "\n")
    return write


@pytest.mark.parametrize("case", cases.CASES, ids=[c.name for c in cases.CASES])
def test_case(ctx, table, case):
    if case.runner == "loader" and ctx.python_dir is None:
        pytest.skip("the _stoker extension is not built (no <build>/python/stoker)")
    o = cases.run_case(case, ctx)
    bad = cases.judge(case, o)
    ROWS[case.name] = (o, bad)
    table()
    assert not bad, f"{case.name}: {bad}; stderr: {o.stderr[-1500:]}"


def test_case_count():
    assert len(cases.CASES) >= 60
    groups = {c.group for c in cases.CASES}
    assert groups == {"state file", "load_state_dict", "options", "output paths"}
