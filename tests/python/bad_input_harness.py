"""The bad-input harness: datasets that interleave bad records ("kinds") with good ones, two runners
(`stoker run` and the Python `stoker.Loader`, each a child process under a timeout whose peak RSS
is read with os.wait4), and the judge that turns one run into one outcome per kind.

A kind is one hostile record (or file) and what must happen to it: a per-sample error line in
the error report naming its file:line with an expected code (and stage) and a reason matching a
regex — or, for kinds that are legitimate, delivery. Whatever the kind, the run must not crash or
hang, every good record of the manifest must be delivered and peak RSS must stay within a bound.
Outcomes: ok, crash, hang, job stopped, silently delivered, wrong code, no report line, good
lost, RSS, flood (more than PRINT_BOUND bytes printed, or a report line over REPORT_LINE_BOUND),
option rejected (a flag or keyword this build does not know yet).
"""
from __future__ import annotations

import json
import os
import pathlib
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Tuple

import stoker_cli

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parent.parent
LOADER_CHILD = HERE / "bad_input_loader_child.py"
PYTHON = "/usr/bin/python3"
SANITIZED = os.environ.get("STOKER_SANITIZE") == "1"
SLOW = 2.0 if SANITIZED else 1.0  # measured: ASan/UBSan children run ~2x slower here
RSS_MARGIN_KB = int(os.environ.get("STOKER_BAD_RSS_MARGIN_MB", "384")) * 1024 * \
    (2 if SANITIZED else 1)
ISOLATE = os.environ.get("STOKER_BAD_ISOLATE") == "1"  # one dataset per kind (diagnosis)
# What one run may print (stdout + stderr, and the Loader's exception text) and how long one error
# report line may be, whatever the data (issue 29: a 50 MB error body, a 100 KB URL).
PRINT_BOUND = 256 << 10
REPORT_LINE_BOUND = 8 << 10
DELIVER = frozenset()  # Expect(codes=DELIVER): the record is legitimate and must be delivered


@dataclass(frozen=True)
class Expect:
    codes: FrozenSet[str]
    reason: str = ""
    stages: Optional[FrozenSet[str]] = None

    def describe(self) -> str:
        if not self.codes:
            return "delivered"
        s = "/".join(sorted(self.codes))
        return s + (f" @{'/'.join(sorted(self.stages))}" if self.stages else "")


def fails(codes, reason, stages=None) -> Expect:
    codes = {codes} if isinstance(codes, str) else set(codes)
    stages = None if stages is None else frozenset({stages} if isinstance(stages, str) else stages)
    return Expect(frozenset(codes), reason, stages)


DELIVERED = Expect(DELIVER)


@dataclass
class Kind:
    name: str
    line: bytes              # the record: one JSONL line, no newline
    expect: Expect
    what: str = ""           # one line for the table


@dataclass
class Layout:
    """A written manifest: which global sample id / line is which."""
    manifest: str                       # path or URI the runners get
    report_file: str                    # what the error report names as "file"
    kind_rows: Dict[str, Tuple[int, int]] = field(default_factory=dict)  # kind -> (id, line)
    good_ids: List[int] = field(default_factory=list)


def write_manifest(path: pathlib.Path, good_lines: Sequence[bytes], kinds: Sequence[Kind],
                   every: int = 1) -> Layout:
    """good, kind, good, kind, ... then the remaining good lines (`every` goods between kinds)."""
    assert len(good_lines) >= len(kinds) * every + 1, "not enough good records to interleave"
    lay = Layout(str(path), str(path))
    lines: List[bytes] = []
    goods = list(good_lines)
    for k in kinds:
        for _ in range(every):
            lay.good_ids.append(len(lines))
            lines.append(goods.pop(0))
        lay.kind_rows[k.name] = (len(lines), len(lines) + 1)
        assert b"\n" not in k.line, k.name
        lines.append(k.line)
    for g in goods:
        lay.good_ids.append(len(lines))
        lines.append(g)
    path.write_bytes(b"\n".join(lines) + b"\n")
    return lay


def synth_good_lines(stoker_bin: str, out: pathlib.Path, n: int, seed: int = 11) -> List[bytes]:
    """n good records from `stoker synth` (images under out/images, paths relative to out)."""
    subprocess.run([stoker_bin, "synth", "--out", str(out), "--n", str(n), "--seed", str(seed),
                    "--max-side", "160", "--threads", "2"], check=True, capture_output=True,
                   timeout=120 * SLOW)
    lines = (out / "data.jsonl").read_bytes().splitlines()
    (out / "data.jsonl").unlink()
    return [ln for ln in lines if ln.strip()]


# -- children -------------------------------------------------------------------------------
@dataclass
class RunResult:
    runner: str
    rc: Optional[int] = None         # exit status (None: killed by a signal or the timeout)
    sig: Optional[int] = None
    timed_out: bool = False
    maxrss_kb: int = 0
    wall_s: float = 0.0
    stderr: str = ""
    printed: int = 0                 # bytes on stdout + stderr (+ the Loader's exception text)
    max_report_line: int = 0         # bytes of the longest error report line
    report: List[dict] = field(default_factory=list)
    delivered: List[int] = field(default_factory=list)
    error: str = ""                  # the fatal error (run: stderr; Loader: the exception)

    @property
    def crashed(self) -> bool:
        killed = self.sig is not None and not self.timed_out  # a signal we did not send
        return killed or any(m in self.stderr for m in (
            "Sanitizer", "runtime error:", "Traceback (most recent call last)"))

    @property
    def option_rejected(self) -> bool:
        return self.rc not in (0, None) and re.search(
            r"unknown (flag|option)|unrecognized|unexpected keyword|not a known option",
            self.error, re.I) is not None


# Peak RSS through GNU time when present: a child's own ru_maxrss counts the memory of the
# process it was forked from until its exec (Linux records the pre-exec mm's high-water mark), so
# os.wait4 reads this test process's size (hundreds of MiB after a big report) into every child.
TIME_BIN = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def _time_report(path: pathlib.Path) -> Tuple[Optional[int], Optional[int], Optional[int]]:
    """(maxrss KiB, exit status, signal) from GNU time's -o file; Nones when it has none."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None, None, None
    sig = next((int(m.group(1)) for m in (re.search(r"terminated by signal (\d+)", x)
                                          for x in lines) if m), None)
    last = lines[-1].split() if lines else []
    if len(last) != 2 or not all(x.isdigit() for x in last):
        return None, None, None
    return int(last[0]), (None if sig else int(last[1])), sig


def run_child(cmd: Sequence[str], env: Dict[str, str], timeout: float, stderr_path: pathlib.Path,
              on_tick=None) -> Tuple[Optional[int], Optional[int], bool, int, float]:
    """Runs cmd in its own process group; kills the group after `timeout` s. Returns (exit
    status, signal, timed out, peak RSS KiB, wall s). on_tick(elapsed) is called every 50 ms.
    stderr goes to `stderr_path`, stdout beside it (stdout.txt): printed_bytes() counts both."""
    t0 = time.monotonic()
    rss_file = stderr_path.parent / "maxrss.txt"
    if rss_file.exists():
        rss_file.unlink()
    if TIME_BIN:
        cmd = [TIME_BIN, "-f", "%M %x", "-o", str(rss_file)] + list(cmd)
    with open(stderr_path, "wb") as err, open(stderr_path.parent / "stdout.txt", "wb") as out:
        proc = subprocess.Popen(list(cmd), env=env, stdout=out, stderr=err,
                                start_new_session=True)
    timed_out = False
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            break
        elapsed = time.monotonic() - t0
        if elapsed > timeout and not timed_out:
            timed_out = True
            os.killpg(proc.pid, signal.SIGKILL)
            pid, status, ru = os.wait4(proc.pid, 0)
            break
        if on_tick is not None:
            on_tick(elapsed)
        time.sleep(0.05)
    proc.returncode = 0  # reaped here; keep Popen from waiting again
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # anything the child left behind
    except ProcessLookupError:
        pass
    rc = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - t0
    maxrss, child_rc, child_sig = _time_report(rss_file) if TIME_BIN else (None, None, None)
    if maxrss is not None and not timed_out:
        return child_rc, child_sig, False, maxrss, wall
    return (rc if rc >= 0 else None, -rc if rc < 0 else None, timed_out, ru.ru_maxrss, wall)


def printed_bytes(work: pathlib.Path) -> int:
    return sum((work / f).stat().st_size for f in ("stdout.txt", "stderr.txt")
               if (work / f).exists())


def _tail(path: pathlib.Path, n: int = 64 << 10) -> str:
    """The last `n` bytes of a file as text (a flooded stderr is never read whole)."""
    with open(path, "rb") as f:
        f.seek(max(0, path.stat().st_size - n))
        return f.read().decode(errors="replace")


def _longest_line(path: pathlib.Path) -> int:
    if not path.exists():
        return 0
    return max((len(ln) for ln in path.read_bytes().splitlines()), default=0)


def _read_report(path: pathlib.Path) -> List[dict]:
    if not path.exists():
        return []
    out = []
    for line in path.read_text(errors="replace").splitlines():
        if line.strip():
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                out.append({"unparsable": line})
    return out


def run_stoker(stoker_bin: str, layout: Layout, work: pathlib.Path, extra: Sequence[str] = (),
               env: Optional[Dict[str, str]] = None, timeout: float = 60,
               on_tick=None) -> RunResult:
    work.mkdir(parents=True, exist_ok=True)
    report, log = work / "errors.jsonl", work / "delivered.log"
    cmd = [stoker_bin, "run", layout.manifest, "--threads", "2", "--io-threads", "2",
           "--batch-size", "4", "--quiet", "--max-error-rate", "1", "--arena-mb", "128",
           "--error-report", str(report), "--delivered-log", str(log), *extra]
    res = RunResult("run")
    res.rc, res.sig, res.timed_out, res.maxrss_kb, res.wall_s = run_child(
        cmd, env or dict(os.environ), timeout * SLOW, work / "stderr.txt", on_tick)
    res.stderr = _tail(work / "stderr.txt")
    res.error = res.stderr[-3000:] if res.rc else ""
    res.printed = printed_bytes(work)
    res.max_report_line = _longest_line(report)
    res.report = _read_report(report)
    if log.exists():
        for line in log.read_text().splitlines():
            res.delivered += [int(x) for x in line.split()[2:]]
    return res


def run_loader(layout: Layout, work: pathlib.Path, options: Optional[dict] = None,
               env: Optional[Dict[str, str]] = None, timeout: float = 90, on_tick=None,
               spec_extra: Optional[dict] = None) -> RunResult:
    """The same through `stoker.Loader` in a child /usr/bin/python3 (see bad_input_loader_child)."""
    work.mkdir(parents=True, exist_ok=True)
    spec = {"data": layout.manifest, "report": str(work / "errors.jsonl"),
            "delivered": str(work / "delivered.txt"), "result": str(work / "result.json"),
            "options": {**dict(threads=2, io_threads=2, batch_size=4, max_error_rate=1.0,
                               arena_bytes=128 << 20), **(options or {})}, **(spec_extra or {})}
    (work / "spec.json").write_text(json.dumps(spec))
    e = stoker_cli.python_child_env(env)
    res = RunResult("loader")
    res.rc, res.sig, res.timed_out, res.maxrss_kb, res.wall_s = run_child(
        [PYTHON, str(LOADER_CHILD), str(work / "spec.json")], e, timeout * SLOW,
        work / "stderr.txt", on_tick)
    res.stderr = _tail(work / "stderr.txt")
    res.printed = printed_bytes(work)
    res.max_report_line = _longest_line(work / "errors.jsonl")
    res.report = _read_report(work / "errors.jsonl")
    if (work / "delivered.txt").exists():
        res.delivered = [int(x) for x in (work / "delivered.txt").read_text().split()]
    if (work / "result.json").exists():
        res.error = json.loads((work / "result.json").read_text()).get("error", "")
        res.printed += len(res.error.encode())  # what a trainer would print
        res.error = res.error[-3000:]
    elif res.rc:
        res.error = res.stderr[-3000:]
    return res


# -- the judge ------------------------------------------------------------------------------
def _same_file(a: str, b: str) -> bool:
    if "://" in a or "://" in b:
        return a == b
    return os.path.realpath(a) == os.path.realpath(b)


def judge(kind: Kind, layout: Layout, res: RunResult, rss_bound_kb: int) -> Tuple[str, str]:
    """(outcome, detail) of one kind in one run."""
    if res.crashed:
        why = f"signal {signal.Signals(res.sig).name}" if res.sig else "sanitizer/traceback"
        return "crash", f"{why}: {res.stderr[-1500:]}"
    if res.timed_out:
        return "hang", f"killed after {res.wall_s:.0f} s; {len(res.delivered)} delivered"
    if res.option_rejected:
        return "option rejected", res.error[-300:]
    sid, line = layout.kind_rows[kind.name]
    mine = [r for r in res.report
            if r.get("sample") == sid or (r.get("line") == line and
                                          _same_file(str(r.get("file", "")), layout.report_file))]
    stopped = res.rc != 0
    delivered = sid in set(res.delivered)
    exp = kind.expect
    if not exp.codes:
        if not delivered:
            if mine:
                return "wrong code", f"expected delivery, got {_brief(mine[0])}"
            return ("job stopped" if stopped else "lost"), res.error[-300:]
    else:
        if delivered:
            return "silently delivered", f"sample {sid} is in a batch; report: {_brief_all(mine)}"
        if not mine:
            if stopped:
                return "job stopped", res.error[-400:]
            return "no report line", f"no line for sample {sid} ({layout.report_file}:{line})"
        r = mine[0]
        if r.get("sample") != sid or r.get("line") != line or \
                not _same_file(str(r.get("file", "")), layout.report_file):
            return "wrong record", f"expected sample {sid} at {layout.report_file}:{line}: {r}"
        if r.get("code") not in exp.codes:
            return "wrong code", _brief(r)
        if exp.stages and r.get("stage") not in exp.stages:
            return "wrong stage", _brief(r)
        if exp.reason and not re.search(exp.reason, str(r.get("reason", "")), re.I):
            return "wrong reason", _brief(r)
    good = set(layout.good_ids)
    lost = sorted(good - set(res.delivered))
    if lost:
        return ("job stopped" if stopped else "good lost"), \
            f"{len(lost)} good samples not delivered (e.g. {lost[:5]}); {res.error[-300:]}"
    if stopped:
        return "job stopped", res.error[-300:]
    if res.printed > PRINT_BOUND or res.max_report_line > REPORT_LINE_BOUND:
        return "flood", (f"{res.printed} bytes printed, longest report line "
                         f"{res.max_report_line} bytes")
    if res.maxrss_kb > rss_bound_kb:
        return "RSS", f"peak RSS {res.maxrss_kb // 1024} MiB > bound {rss_bound_kb // 1024} MiB"
    return "ok", (_brief(mine[0]) if mine else "delivered")


def _brief(r: dict) -> str:
    return f"{r.get('code')} @{r.get('stage')}: {str(r.get('reason', ''))[:200]}"


def _brief_all(rows: List[dict]) -> str:
    return "; ".join(_brief(r) for r in rows) or "none"


# -- the table ------------------------------------------------------------------------------
class Table:
    """kinds × runner outcomes, written as markdown to `path` after every change."""

    def __init__(self, path: pathlib.Path, title: str):
        self.path, self.title = path, title
        self.rows: Dict[str, dict] = {}
        self.runs: Dict[Tuple[str, str], RunResult] = {}
        self.measured: Dict[Tuple[str, str], str] = {}  # (kind, runner) -> a row of measures

    def note_run(self, dataset: str, res: RunResult) -> None:
        self.runs[(dataset, res.runner)] = res

    def record(self, kind: Kind, group: str, runner: str, outcome: str, detail: str,
               res: Optional[RunResult] = None, layout: Optional[Layout] = None) -> None:
        row = self.rows.setdefault(kind.name, {"group": group, "what": kind.what,
                                               "expect": kind.expect.describe()})
        row[runner] = outcome
        row[runner + "_detail"] = _cell(detail, 160)
        if res is not None and layout is not None:
            self.measured[(kind.name, runner)] = _measures(kind, runner, outcome, res, layout)
        self.write()

    def lines(self) -> List[str]:
        out = [f"{self.title}: {len(self.rows)} kinds",
               "| kind | group | expected | stoker run | Loader | detail (first not ok) |",
               "| --- | --- | --- | --- | --- | --- |"]
        for name, r in sorted(self.rows.items(), key=lambda kv: (kv[1]["group"], kv[0])):
            detail = next((r[x + "_detail"] for x in ("run", "loader")
                           if r.get(x) not in (None, "ok")), "")
            out.append(f"| {name} | {r['group']} | {r['expect']} | {r.get('run', '-')} | "
                       f"{r.get('loader', '-')} | {detail} |")
        counts: Dict[str, int] = {}
        for r in self.rows.values():
            for x in ("run", "loader"):
                if x in r:
                    counts[r[x]] = counts.get(r[x], 0) + 1
        out.append("outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
        out += ["",
                "| dataset | runner | exit | wall s | peak RSS MiB | delivered | report lines |",
                "| --- | --- | --- | --- | --- | --- | --- |"]
        for (name, runner), r in sorted(self.runs.items()):
            out.append(f"| {name} | {runner} | {_exit(r)} | {r.wall_s:.1f} | {r.maxrss_kb // 1024} | "
                       f"{len(r.delivered)} | {len(r.report)} |")
        if self.measured:
            out += ["", "per kind (exit, time, bytes printed and peak RSS are those of the run "
                    "holding the kind: one run per kind with STOKER_BAD_ISOLATE=1)",
                    "| kind | runner | outcome | exit | wall s | bytes printed | longest report "
                    "line | peak RSS MiB | good delivered | reason (the kind's report line, or "
                    "the run's error) |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- "
                    "| --- |"]
            out += [self.measured[k] for k in sorted(self.measured)]
        return out

    def write(self) -> None:
        self.path.write_text("\n".join(self.lines()) + "\n")


def _cell(text: str, n: int) -> str:
    text = text.replace("\n", " ").replace("|", "/")
    return text if len(text) <= n else text[:n - 1] + "…"


def _exit(r: RunResult) -> str:
    return "timeout" if r.timed_out else (f"signal {r.sig}" if r.sig else str(r.rc))


def _measures(kind: Kind, runner: str, outcome: str, r: RunResult, layout: Layout) -> str:
    sid, _ = layout.kind_rows[kind.name]
    mine = [x for x in r.report if x.get("sample") == sid]
    if mine:
        why = f"{mine[0].get('code')}: {mine[0].get('reason', '')}"
    elif r.rc:
        why = "stopped: " + (r.error.strip().splitlines() or [""])[-1]
    else:
        why = "delivered" if sid in set(r.delivered) else "no report line"
    why = re.sub(r"\b(https?|s3|file)://\S*", "URL", why)  # the reason, not the address
    good = set(layout.good_ids)
    got = len(good & set(r.delivered))
    return (f"| {kind.name} | {runner} | {outcome} | {_exit(r)} | {r.wall_s:.1f} | {r.printed:,} | "
            f"{r.max_report_line:,} | {r.maxrss_kb // 1024} | {got}/{len(good)} | {_cell(why, 110)} |")


# -- groups of kinds, run once per runner ----------------------------------------------------
@dataclass
class Group:
    """Kinds that share one dataset (and so one run per runner). `build(ds)` writes the group's
    files into the dataset folder and returns its kinds; "{ds}" and "{outside}" in run_args and
    loader_opts name the dataset folder and the folder beside it. `publish(manifest path)`
    returns what the runners read when the manifest is remote (uploading it first if need be).
    `watch(work dir, runner)` returns an on_tick(elapsed) that acts during the run (e.g. kills a
    server); `loader_spec` adds to the Loader child's spec (e.g. hold_s, a trainer step)."""
    name: str
    build: Callable[[pathlib.Path], List[Kind]]
    run_args: List[str] = field(default_factory=list)
    loader_opts: Dict = field(default_factory=dict)
    timeout: float = 60
    publish: Optional[Callable[[pathlib.Path], str]] = None
    env: Dict[str, str] = field(default_factory=dict)
    watch: Optional[Callable[[pathlib.Path, str], Callable[[float], None]]] = None
    loader_spec: Dict = field(default_factory=dict)
    n_good: int = 0  # good records (default: one more than needed to interleave, plus 2)


def plan(groups: Sequence[Group]) -> List[Tuple[str, str]]:
    """(group, kind) pairs at collection time: the builders run once into a scratch folder."""
    import shutil
    import tempfile
    out = []
    scratch = pathlib.Path(tempfile.mkdtemp(prefix="stoker-bad-plan-"))
    try:
        for g in groups:
            ds = scratch / g.name / "ds"
            ds.mkdir(parents=True)
            out += [(g.name, k.name) for k in g.build(ds)]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return out


class Suite:
    """Builds each group's dataset on first use (synth's good records + the kinds), runs it once
    per runner, judges every kind and records it in the table. With ISOLATE, one dataset per
    kind. `before_run(group, runner)` is called before each child starts."""

    def __init__(self, stoker_bin: str, root: pathlib.Path, groups: Sequence[Group], table: Table,
                 env: Dict[str, str], data_root: Optional[pathlib.Path] = None, before_run=None):
        self.bin, self.root, self.table, self.env = stoker_bin, root, table, env
        self.data_root = data_root or root
        self.groups = {g.name: g for g in groups}
        self.before_run = before_run
        self.built: Dict[str, Tuple[Layout, Dict[str, Kind]]] = {}
        self.results: Dict[Tuple[str, str], RunResult] = {}
        self.baseline_rss: Dict[str, int] = {}
        py = python_dir()
        if py:
            self.env["STOKER_PYTHON_DIR"] = py

    def build(self, group: str, kind: Optional[str] = None) -> str:
        key = f"{group}.{kind}" if ISOLATE and kind else group
        if key not in self.built:
            g = self.groups[group]
            ds = self.data_root / key / "ds"
            ds.mkdir(parents=True)
            ks = g.build(ds)
            if ISOLATE and kind:
                ks = [k for k in ks if k.name == kind]
            good = synth_good_lines(self.bin, ds, max(g.n_good, len(ks) + 3))
            lay = write_manifest(ds / "data.jsonl", good, ks)
            if g.publish is not None:
                lay.manifest = lay.report_file = g.publish(ds / "data.jsonl")
            self.built[key] = (lay, {k.name: k for k in ks})
        return key

    def _subst(self, v, ds: pathlib.Path):
        if isinstance(v, str):
            return v.replace("{ds}", str(ds)).replace("{outside}", str(ds.parent / "outside"))
        return v

    def run(self, key: str, group: str, runner: str) -> RunResult:
        if (key, runner) not in self.results:
            g, (layout, _) = self.groups[group], self.built[key]
            ds = self.data_root / key / "ds"
            work = self.root / "work" / key / runner
            env = dict(self.env, **g.env)
            on_tick = g.watch(work, runner) if g.watch else None
            if self.before_run:
                self.before_run(group, runner)
            if runner == "run":
                res = run_stoker(self.bin, layout, work, [self._subst(a, ds) for a in g.run_args],
                                 env=env, timeout=g.timeout, on_tick=on_tick)
            else:
                opts = {k: self._subst(v, ds) for k, v in g.loader_opts.items()}
                res = run_loader(layout, work, opts, env=env, timeout=g.timeout + 15,
                                 on_tick=on_tick, spec_extra=g.loader_spec)
            self.results[(key, runner)] = res
            self.table.note_run(key, res)
        return self.results[(key, runner)]

    def baseline(self, runner: str, n: int = 24) -> int:
        """A good-only local dataset: exit 0, everything delivered, no report lines; the peak RSS
        the bad datasets are held to (plus RSS_MARGIN_KB)."""
        if runner not in self.baseline_rss:
            ds = self.root / "baseline" / "ds"
            if not (ds / "data.jsonl").exists():
                ds.mkdir(parents=True)
                self.base_layout = write_manifest(ds / "data.jsonl",
                                                  synth_good_lines(self.bin, ds, n), [])
            lay, work = self.base_layout, self.root / "baseline" / runner
            res = (run_stoker(self.bin, lay, work, env=self.env) if runner == "run"
                   else run_loader(lay, work, env=self.env))
            self.table.note_run("baseline", res)
            assert res.rc == 0 and not res.crashed, f"good data failed: {res.error or res.stderr}"
            assert sorted(res.delivered) == lay.good_ids and res.report == []
            self.baseline_rss[runner] = res.maxrss_kb
        return self.baseline_rss[runner]

    def outcome(self, group: str, kind: str, runner: str) -> Tuple[str, str]:
        bound = self.baseline(runner) + RSS_MARGIN_KB
        key = self.build(group, kind)
        layout, ks = self.built[key]
        res = self.run(key, group, runner)
        outcome, detail = judge(ks[kind], layout, res, bound)
        self.table.record(ks[kind], group, runner, outcome, detail, res, layout)
        return outcome, detail


def python_dir() -> Optional[str]:
    """<build>/python holding the `stoker` package, or None (the Loader half then skips).
    $STOKER_PYTHON_DIR when set — empty means this tree has no extension (ctest sets it) —,
    else the Release tree's build/python."""
    d = os.environ.get("STOKER_PYTHON_DIR")
    if d is None:
        d = str(REPO / "build" / "python")
    return d if d and (pathlib.Path(d) / "stoker" / "__init__.py").exists() else None


if __name__ == "__main__":
    sys.exit("a library for tests/python/test_run_bad_*.py")
