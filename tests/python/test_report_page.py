"""The run report (issue 30 §17): the stage-utilisation plot went to 175 % (busy seconds are
credited when an item finishes, so a long item lifted one interval over its capacity) and
index.html listed no failure reasons.
- utilisation(): every point ≤ 100 % of threads × wall, the total busy seconds kept, against a
  hand-computed timeline (one 0.35 s item credited in one 0.1 s interval of 1 thread: 350 % the
  old way);
- a real `stoker run --report` on a set with broken records: every stage's points ≤ 100 %, and
  index.html lists the failure reasons — each (stage, code) of the error report's most frequent
  kinds, with counts that add up to the run's failures.
Needs matplotlib for /usr/bin/python3 (the report's own requirement; skips without it). ~10 s."""
from __future__ import annotations

import collections
import html
import importlib.util
import json
import pathlib
import subprocess
import sys

import pytest

import stoker_cli

REPO = pathlib.Path(__file__).resolve().parent.parent.parent
SCRIPT = REPO / "data" / "report" / "stoker_report.py"

pytest.importorskip("matplotlib")


def load_report():
    spec = importlib.util.spec_from_file_location("stoker_report", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_utilisation_is_at_most_100_percent_and_keeps_the_area():
    rep = load_report()
    # 1 thread, 0.1 s intervals; the item ran 0.35 s (t = 0.05 .. 0.40) and is credited at 0.4.
    cum = [0.0, 0.0, 0.0, 0.0, 0.35, 0.35, 0.40]
    timeline = [{"t_s": f"{0.1 * i:.1f}", "busy_x": str(b), "threads_x": "1"}
                for i, b in enumerate(cum)]
    pts = rep.utilisation(timeline, "x")
    assert [round(t, 1) for t, _ in pts] == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
    ys = [round(y, 6) for _, y in pts]
    # 0.35 s moved back over 0.4, 0.3, 0.2 (100 %, 100 %, 100 %) and 0.05 s into 0.1 (50 %).
    assert ys == [50.0, 100.0, 100.0, 100.0, 0.0, 50.0], ys
    assert abs(sum(y * 0.1 / 100 for y in ys) - 0.40) < 1e-9


def test_report_page_lists_failure_reasons(stoker_bin, tmp_path):
    stoker = stoker_bin
    d = tmp_path / "ds"
    stoker_cli.synth(stoker, d, ["--n", "60", "--seed", "5", "--max-side", "96",
                                 "--bad-fraction", "0.2"])
    out = tmp_path / "run"
    errors = tmp_path / "errors.jsonl"
    r = subprocess.run([stoker, "run", str(d / "data.jsonl"), "--batch-size", "4", "--quiet",
                        "--threads", "2", "--arena-mb", "128", "--max-error-rate", "1",
                        "--error-report", str(errors), "--report", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    summary = json.loads((out / "summary.json").read_text())
    reported = [json.loads(x) for x in errors.read_text().splitlines()]
    assert summary["failed"] == len(reported) > 0
    kinds = summary["failures"]
    assert sum(k["count"] for k in kinds) == len(reported)
    by_kind = collections.Counter((e["stage"], e["code"]) for e in reported)
    page = (out / "index.html").read_text()
    assert "Failed samples by reason" in page
    for (stage, code), n in by_kind.items():
        assert f"<td>{html.escape(stage)}</td><td>{html.escape(code)}</td>" in page, (stage, code)
    # Every stage's plotted utilisation, from the run's own timeline, is at most 100 %.
    rep = load_report()
    timeline = rep.read_csv(str(out / "timeline.csv"))
    for s in rep.stage_names(timeline):
        ys = [y for _, y in rep.utilisation(timeline, s)]
        assert ys and max(ys) <= 100.0 + 1e-9, (s, max(ys))
