"""Hostile local data through `stoker run` and `stoker.Loader` (ctest `run_bad_local`, labels
integration + sanitize): ~80 kinds of bad record or file (bad_input_kinds.py), interleaved with
good synth records in a few datasets. For every kind and both runners: no crash (no signal, no
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
import shutil
import tempfile

import pytest

import bad_input_harness as h
import bad_input_kinds as kinds

RUNNERS = ["run", "loader"]


def _plan():
    """(group, kind names) at collection time: the builders run once into a scratch folder."""
    plan = []
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="stoker-bad-plan-"))
    try:
        for g in kinds.groups():
            ds = scratch / g.name / "ds"
            ds.mkdir(parents=True)
            plan.append((g, [k.name for k in g.build(ds)]))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return plan


PLAN = _plan()
PARAMS = [(g.name, k) for g, names in PLAN for k in names]
TABLE = None


def pytest_terminal_summary_lines():
    return TABLE.lines() if TABLE is not None else []


class Suite:
    def __init__(self, stoker_bin, root: pathlib.Path):
        self.bin, self.root = stoker_bin, root
        self.groups = {g.name: g for g, _ in PLAN}
        self.built = {}     # dataset key -> (layout, {kind name: Kind})
        self.results = {}   # (dataset key, runner) -> RunResult
        self.baseline_rss = {}
        self.env = dict(os.environ, STOKER_CACHE_DIR=str(root / "cache"))
        py = h.python_dir()
        if py:
            self.env["STOKER_PYTHON_DIR"] = py

    def _key(self, group, kind):
        return f"{group}.{kind}" if h.ISOLATE else group

    def _build(self, group, kind):
        key = self._key(group, kind)
        if key not in self.built:
            ds = self.root / key / "ds"
            ds.mkdir(parents=True)
            ks = self.groups[group].build(ds)
            if h.ISOLATE:
                ks = [k for k in ks if k.name == kind]
            good = h.synth_good_lines(self.bin, ds, len(ks) + 3)
            self.built[key] = (h.write_manifest(ds / "data.jsonl", good, ks),
                               {k.name: k for k in ks})
        return key

    def _subst(self, value, ds):
        outside = str(ds.parent / "outside")
        if isinstance(value, str):
            return value.replace("{outside}", outside)
        return value

    def _run(self, key, group, runner):
        if (key, runner) not in self.results:
            g, (layout, _) = self.groups[group], self.built[key]
            ds = pathlib.Path(layout.manifest).parent
            work = self.root / key / runner
            if runner == "run":
                res = h.run_stoker(self.bin, layout, work, [self._subst(a, ds) for a in g.run_args],
                                   env=self.env, timeout=g.timeout)
            else:
                opts = {k: self._subst(v, ds) for k, v in g.loader_opts.items()}
                res = h.run_loader(layout, work, opts, env=self.env, timeout=g.timeout + 15)
            self.results[(key, runner)] = res
            TABLE.note_run(key, res)
        return self.results[(key, runner)]

    def baseline(self, runner):
        """A good-only dataset: exit 0, everything delivered, no report lines; its peak RSS."""
        if runner not in self.baseline_rss:
            ds = self.root / "baseline" / "ds"
            if not (ds / "data.jsonl").exists():
                ds.mkdir(parents=True)
                good = h.synth_good_lines(self.bin, ds, 24)
                self.base_layout = h.write_manifest(ds / "data.jsonl", good, [])
            lay, work = self.base_layout, self.root / "baseline" / runner
            res = (h.run_stoker(self.bin, lay, work, env=self.env) if runner == "run"
                   else h.run_loader(lay, work, env=self.env))
            TABLE.note_run("baseline", res)
            assert res.rc == 0 and not res.crashed, f"good data failed: {res.error or res.stderr}"
            assert sorted(res.delivered) == lay.good_ids and res.report == []
            self.baseline_rss[runner] = res.maxrss_kb
        return self.baseline_rss[runner]

    def outcome(self, group, kind, runner):
        bound = self.baseline(runner) + h.RSS_MARGIN_KB
        key = self._build(group, kind)
        layout, ks = self.built[key]
        res = self._run(key, group, runner)
        outcome, detail = h.judge(ks[kind], layout, res, bound)
        TABLE.record(ks[kind], group, runner, outcome, detail)
        return outcome, detail


@pytest.fixture(scope="module")
def suite(stoker_bin, tmp_path_factory):
    global TABLE
    out = os.environ.get("STOKER_BAD_TABLE") or \
        str(tmp_path_factory.getbasetemp().parent / "bad_input_local.md")
    TABLE = h.Table(pathlib.Path(out), "bad input, local data (stoker run / stoker.Loader)")
    return Suite(stoker_bin, tmp_path_factory.mktemp("bad_local"))


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
