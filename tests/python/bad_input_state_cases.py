"""Issue #28's cases: the files, options and output paths around the media path, as a new user or
an attacker would give them — state files (`stoker run --resume`), state dicts
(`Loader.load_state_dict`), numeric options at and past their ranges, output paths that cannot be
written (at start, or when the disk fills at the end). Each case is one child process (`stoker
run` / `stoker cluster`, or a `stoker.Loader` snippet in bad_input_state_child.py) under a
timeout, with its exit status, wall time, peak RSS (os.wait4) and one-line reason; the expected
exit status and reason are the contract.

Also a command line, for the before/after table of the issue:
    bad_input_state_cases.py --stoker BIN [--python-dir DIR] --out results.json
        runs every case against BIN (no assertions) and writes the measurements;
    bad_input_state_cases.py --compare before.json after.json
        prints the markdown table: case, then exit / time / RSS / reason before and after.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bad_input_harness as h  # noqa: E402
import stoker_cli  # noqa: E402

CHILD = HERE / "bad_input_state_child.py"
RECORDS = 24
# RLIMIT_FSIZE as a full disk: writes past the limit fail with EFBIG (SIGXFSZ ignored, which
# survives the exec) — the run's small files fit, a trace or an error report does not. The
# limited process writes its stderr into a pipe this wrapper copies out, so the limit does not
# cut the messages themselves; the wrapper exits as the child did.
FSIZE_WRAP = """
import os, resource, signal, sys
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    os.dup2(w, 2)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    n = int(sys.argv[1])
    resource.setrlimit(resource.RLIMIT_FSIZE, (n, n))
    os.execv(sys.argv[2], sys.argv[2:])
os.close(w)
while True:
    b = os.read(r, 65536)
    if not b:
        break
    os.write(2, b)
status = os.waitpid(pid, 0)[1]
if os.WIFSIGNALED(status):
    os.kill(os.getpid(), os.WTERMSIG(status))
sys.exit(os.WEXITSTATUS(status))
"""


def machine_memory_mb() -> int:
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") >> 20


@dataclass
class Ctx:
    """What the cases build on: the binary, a scratch root, two good datasets and one with
    failures; state files written by this binary (cached)."""
    stoker: str
    root: pathlib.Path
    python_dir: Optional[str]
    states: Dict[str, pathlib.Path] = field(default_factory=dict)

    def __post_init__(self):
        self.data = self._dataset("data", 11, 0)
        self.other = self._dataset("other", 12, 0)
        self.bad = self._dataset("bad", 13, 0.3)

    def _dataset(self, name: str, seed: int, bad: float) -> str:
        d = self.root / "datasets" / name
        if not (d / "data.jsonl").exists():
            d.mkdir(parents=True, exist_ok=True)
            subprocess.run([self.stoker, "synth", "--out", str(d), "--n", str(RECORDS), "--seed",
                            str(seed), "--max-side", "96", "--threads", "2",
                            "--bad-fraction", str(bad)], check=True, capture_output=True,
                           timeout=120)
            # Index it once (the index cache beside it), so a case's limits meet only its own.
            subprocess.run([self.stoker, "run", str(d / "data.jsonl"), "--quiet", "--arena-mb",
                            "64", "--limit-batches", "1", "--max-error-rate", "1"],
                           capture_output=True, timeout=120)
        return str(d / "data.jsonl")

    def path(self, name: str) -> pathlib.Path:
        p = self.root / "files" / name
        p.parent.mkdir(parents=True, exist_ok=True)
        return p

    def run_args(self, *extra: str, data: Optional[str] = None, command: str = "run") -> List[str]:
        """The command with light defaults (2 threads, batch 4, a 64 MiB arena); a flag in
        `extra` replaces its default."""
        base = {"--threads": "2", "--io-threads": "2", "--batch-size": "4", "--arena-mb": "64"}
        args = [self.stoker, command, data or self.data, "--quiet"]
        for flag, value in base.items():
            if flag not in extra:
                args += [flag, value]
        return args + list(extra)

    def state(self, key: str = "seed0", *extra: str) -> pathlib.Path:
        """A state file this binary wrote after 2 batches (seed 0, batch 4, `data`)."""
        if key not in self.states:
            p = self.path(f"state-{key}")
            subprocess.run(self.run_args("--limit-batches", "2", "--state-file", str(p), *extra),
                           check=True, capture_output=True, timeout=120)
            self.states[key] = p
        return self.states[key]

    def edited_state(self, name: str, edit: Callable[[str], str]) -> str:
        p = self.path(name)
        p.write_text(edit(self.state().read_text()))
        return str(p)


@dataclass
class Case:
    name: str
    group: str                   # state file | load_state_dict | options | output paths
    runner: str                  # run (a CLI child) | loader (a Python child)
    what: str
    make: Callable[[Ctx], object]  # argv (run) or a snippet (loader); may write files
    exit: Tuple[int, ...]        # expected exit status(es)
    reason: str                  # regex the one-line reason must match
    max_s: float = 10.0
    max_rss_mb: int = 700
    fsize: int = 0               # RLIMIT_FSIZE for the child (a full disk); 0: none


@dataclass
class Outcome:
    exit: str
    wall_s: float
    rss_mb: int
    reason: str
    stderr: str = ""

    def as_dict(self):
        return {"exit": self.exit, "wall_s": round(self.wall_s, 2), "rss_mb": self.rss_mb,
                "reason": self.reason}


def _reason_from_stderr(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    said = [ln for ln in lines if re.match(r"stoker( \w+)?:", ln) or "Error" in ln or
            "warning" in ln.lower()]
    return (said[-1] if said else (lines[-1] if lines else ""))[:400]


def run_case(case: Case, ctx: Ctx, timeout: float = 40) -> Outcome:
    work = ctx.root / "work" / case.name
    work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    if case.runner == "run":
        cmd = list(case.make(ctx))
        if case.fsize:
            cmd = [h.PYTHON, "-c", FSIZE_WRAP, str(case.fsize), *cmd]
        rc, sig, timed_out, rss, wall = h.run_child(cmd, env, timeout, work / "stderr.txt")
        err = (work / "stderr.txt").read_text(errors="replace")
        reason = _reason_from_stderr(err)
    else:
        if ctx.python_dir:
            env["STOKER_PYTHON_DIR"] = ctx.python_dir
        spec = {"data": ctx.data, "other": ctx.other, "work": str(work),
                "code": case.make(ctx), "result": str(work / "result.json")}
        (work / "spec.json").write_text(json.dumps(spec))
        (work / "result.json").unlink(missing_ok=True)
        cmd = [h.PYTHON, str(CHILD), str(work / "spec.json")]
        if case.fsize:
            cmd = [h.PYTHON, "-c", FSIZE_WRAP, str(case.fsize), *cmd]
        rc, sig, timed_out, rss, wall = h.run_child(cmd, stoker_cli.python_child_env(env),
                                                    timeout, work / "stderr.txt")
        err = (work / "stderr.txt").read_text(errors="replace")
        reason = _reason_from_stderr(err)
        if (work / "result.json").exists():
            r = json.loads((work / "result.json").read_text())
            if r["raised"]:
                reason = f"{r['raised']}: {r['error']}"[:400]
            elif r["warnings"]:
                reason = r["warnings"][-1][:400]
            elif not reason:
                reason = "ok"
    if timed_out:
        ex = "timeout"
    elif sig:
        ex = f"signal {sig}"
    else:
        ex = str(rc)
    if ex == "0" and not reason:
        reason = "ok"
    return Outcome(ex, wall, rss // 1024, reason.replace("|", "/"), err)


def judge(case: Case, o: Outcome) -> List[str]:
    """What is wrong with an outcome (empty: as expected)."""
    bad = []
    if o.exit not in tuple(str(e) for e in case.exit):
        bad.append(f"exit {o.exit}, expected {'/'.join(map(str, case.exit))}")
    if not re.search(case.reason, o.reason, re.S):
        bad.append(f"reason {o.reason!r} does not match {case.reason!r}")
    if o.wall_s > case.max_s * h.SLOW:
        bad.append(f"{o.wall_s:.1f} s > {case.max_s} s")
    if o.rss_mb > case.max_rss_mb * (2 if h.SANITIZED else 1):
        bad.append(f"peak RSS {o.rss_mb} MiB > {case.max_rss_mb} MiB")
    if any(m in o.stderr for m in ("Traceback (most recent call last)", "Sanitizer",
                                   "runtime error:")):
        bad.append("a traceback or sanitizer report on stderr")
    return bad


# ---- the cases -------------------------------------------------------------------------------

def _fifo(ctx: Ctx, name: str) -> str:
    p = ctx.path(name)
    if not p.exists():
        os.mkfifo(p)
    return str(p)


def _big_file(ctx: Ctx) -> str:
    p = ctx.path("state-100MiB")
    if not p.exists():
        with open(p, "wb") as f:
            f.write(b"stoker-state v1 epoch=0 position=0 errors=0 ")
            f.truncate(100 << 20)  # sparse
    return str(p)


def _garbage(ctx: Ctx) -> str:
    p = ctx.path("state-garbage")
    p.write_bytes(bytes(range(256)) * 8)
    return str(p)


def _text(ctx: Ctx, name: str, text: str) -> str:
    p = ctx.path(name)
    p.write_text(text)
    return str(p)


def _sub(pattern: str, repl: str) -> Callable[[str], str]:
    return lambda text: re.sub(pattern, repl, text)


def _no_fp(text: str) -> str:
    return re.sub(r" fp\.\S+", "", text)


NOT_A_FILE = r"(not a regular file|is a FIFO|character device|folder)"
RESUME = lambda ctx, *x: ctx.run_args("--resume", *x)  # noqa: E731

STATE_CASES = [
    Case("resume-dev-zero", "state file", "run", "--resume /dev/zero",
         lambda c: RESUME(c, "/dev/zero"), (2,), r"/dev/zero is a character device", 3),
    Case("resume-fifo", "state file", "run", "--resume a FIFO (no writer)",
         lambda c: RESUME(c, _fifo(c, "fifo-state")), (2,), r"is a FIFO, not a regular file", 3),
    Case("resume-folder", "state file", "run", "--resume a folder",
         lambda c: RESUME(c, str(c.root)), (2,), r"is a folder, not a regular file", 3),
    Case("resume-100MiB", "state file", "run", "--resume a 100 MiB (sparse) file",
         lambda c: RESUME(c, _big_file(c)), (1,), r"over the 65536-byte limit", 3),
    Case("resume-missing", "state file", "run", "--resume a file that does not exist",
         lambda c: RESUME(c, str(c.path("no-such-state"))), (1,), r"No such file", 3),
    Case("resume-empty", "state file", "run", "--resume an empty file",
         lambda c: RESUME(c, _text(c, "state-empty", "")), (2,), r"state file .*empty", 3),
    Case("resume-binary-garbage", "state file", "run", "--resume 2 KiB of binary garbage",
         lambda c: RESUME(c, _garbage(c)), (2,),
         r"state file .*state-garbage: not a state file: it contains NUL bytes", 3),
    Case("resume-truncated", "state file", "run", "--resume a state cut mid-field",
         lambda c: RESUME(c, _text(c, "state-cut", "stoker-state v1 epoch=0 posit")), (2,),
         r"state-cut: line 1: .*field 'posit'", 3),
    Case("resume-bad-number", "state file", "run", "--resume position=12x",
         lambda c: RESUME(c, c.edited_state("state-bad-number", _sub(r"position=\d+",
                                                                      "position=12x"))),
         (2,), r"field 'position' must be a number", 3),
    Case("resume-bad-batches", "state file", "run", "--resume batches=abc",
         lambda c: RESUME(c, c.edited_state("state-bad-batches", _sub(r"batches=\d+",
                                                                       "batches=abc"))),
         (2,), r"line 2: field 'batches'", 3),
    Case("resume-huge-position", "state file", "run", "--resume position=10^18",
         lambda c: RESUME(c, c.edited_state("state-huge-pos", _sub(r"position=\d+",
                                                                    "position=1000000000000000000"))),
         (2,), r"position 1000000000000000000 is past the end of an epoch of this data", 5),
    Case("resume-huge-epoch", "state file", "run", "--resume epoch=2^63",
         lambda c: RESUME(c, c.edited_state("state-huge-epoch", _sub(r"epoch=\d+",
                                                                     "epoch=9223372036854775808"))),
         (2,), r"epoch 9223372036854775808 is past this run's 1 epochs", 5),
    Case("resume-other-seed", "state file", "run", "a state of seed 0 resumed with --seed 1",
         lambda c: RESUME(c, str(c.state()), "--seed", "1"), (2,),
         r"another order \(seed: the state's 0, this run's 1\).*--force-resume", 5),
    Case("resume-other-seed-forced", "state file", "run", "the same with --force-resume",
         lambda c: RESUME(c, str(c.state()), "--seed", "1", "--force-resume"), (0,),
         r"warning: .*seed: the state's 0, this run's 1\) because of --force-resume", 8),
    Case("resume-other-batch-size", "state file", "run", "a state of batch 4 resumed with 8",
         lambda c: RESUME(c, str(c.state()), "--batch-size", "8"), (2,),
         r"batch_size: the state's 4, this run's 8", 5),
    Case("resume-other-dataset", "state file", "run", "a state of one dataset, another's run",
         lambda c: ctx_other(c, "--resume", str(c.state())), (2,),
         r"another order \(data: the state's 24:[0-9a-f]+, this run's 24:[0-9a-f]+\)", 5),
    Case("resume-other-batch-size-forced", "state file", "run", "the same with --force-resume",
         lambda c: RESUME(c, str(c.state()), "--batch-size", "8", "--force-resume"), (0,),
         r"warning: .*batch_size: the state's 4, this run's 8\) because of --force-resume", 8),
    Case("resume-other-dataset-forced", "state file", "run", "the same with --force-resume",
         lambda c: ctx_other(c, "--resume", str(c.state()), "--force-resume"), (0,),
         r"warning: .*\(data: the state's 24:[0-9a-f]+, this run's 24:[0-9a-f]+\) because of "
         r"--force-resume", 8),
    Case("resume-old-format", "state file", "run", "a state without a fingerprint (older stoker)",
         lambda c: RESUME(c, c.edited_state("state-old", _no_fp)), (0,),
         r"warning: .*no order fingerprint", 8),
]


def ctx_other(c: Ctx, *extra: str) -> List[str]:
    return c.run_args(*extra, data=c.other)


SD = "sd = take(L(), 2).state_dict()\n"
PY_STATE = [
    Case("lsd-str", "load_state_dict", "loader", "load_state_dict('garbage')",
         lambda c: "L().load_state_dict('garbage')", (3,),
         r"InvalidArgumentError: load_state_dict: state must be a dict .*got 'garbage' \(str\)", 20),
    Case("lsd-list", "load_state_dict", "loader", "load_state_dict([1, 2])",
         lambda c: "L().load_state_dict([1, 2])", (3,),
         r"InvalidArgumentError: .*got \[1, 2\] \(list\)", 20),
    Case("lsd-none", "load_state_dict", "loader", "load_state_dict(None)",
         lambda c: "L().load_state_dict(None)", (3,), r"InvalidArgumentError: .*got None", 20),
    Case("lsd-garbage-value", "load_state_dict", "loader", "epoch='abc'",
         lambda c: "L().load_state_dict({'epoch': 'abc', 'position': 0, 'errors': 0})", (3,),
         r"InvalidArgumentError: load_state_dict: state\['epoch'\] must be an int .*got 'abc'", 20),
    Case("lsd-negative", "load_state_dict", "loader", "position=-1",
         lambda c: "L().load_state_dict({'epoch': 0, 'position': -1, 'errors': 0})", (3,),
         r"state\['position'\] must be an int ≥ 0, got -1", 20),
    Case("lsd-float", "load_state_dict", "loader", "position=1.5",
         lambda c: "L().load_state_dict({'epoch': 0, 'position': 1.5})", (3,),
         r"state\['position'\] must be an int .*got 1.5 \(float\)", 20),
    Case("lsd-bool", "load_state_dict", "loader", "epoch=True",
         lambda c: "L().load_state_dict({'epoch': True, 'position': 0})", (3,),
         r"state\['epoch'\] must be an int .*got True \(bool\)", 20),
    Case("lsd-2**70", "load_state_dict", "loader", "position=2**70",
         lambda c: "L().load_state_dict({'epoch': 0, 'position': 2**70})", (3,),
         r"state\['position'\] must be an int in \[0, 18446744073709551615\]", 20),
    Case("lsd-huge-position", "load_state_dict", "loader", "a real state, position=10**18",
         lambda c: SD + "sd['position'] = 10**18\nL().load_state_dict(sd)", (3,),
         r"load_state_dict: state: position 1000000000000000000 is past the end", 25),
    Case("lsd-missing-key", "load_state_dict", "loader", "{'epoch': 0} (no position)",
         lambda c: "L().load_state_dict({'epoch': 0})", (3,),
         r"state\['position'\] is missing", 20),
    Case("lsd-unknown-key", "load_state_dict", "loader", "an unknown key",
         lambda c: "L().load_state_dict({'epoch': 0, 'position': 0, 'positon': 4})", (3,),
         r"unknown key 'positon'", 20),
    Case("lsd-bad-fingerprint", "load_state_dict", "loader", "fingerprint={'seed': '1 2'}",
         lambda c: SD + "sd['fingerprint'] = {'seed': '1 2'}\nL().load_state_dict(sd)", (3,),
         r"state\['fingerprint'\]\['seed'\] must be a str", 25),
    Case("lsd-other-seed", "load_state_dict", "loader", "seed 0's state into seed=1",
         lambda c: SD + "L(seed=1).load_state_dict(sd)", (3,),
         r"seed: the state's 0, this run's 1.*force_resume=True", 25),
    Case("lsd-other-seed-forced", "load_state_dict", "loader", "the same, force_resume=True",
         lambda c: SD + "take(L(seed=1, force_resume=True), 0).load_state_dict(sd)", (0,),
         r"StokerWarning: .*seed: the state's 0, this run's 1\) because of force_resume=True", 25),
    Case("lsd-other-batch-size", "load_state_dict", "loader", "batch 4's state into batch 8",
         lambda c: SD + "L(batch_size=8).load_state_dict(sd)", (3,),
         r"batch_size: the state's 4, this run's 8", 25),
    Case("lsd-other-dataset", "load_state_dict", "loader", "a state of another dataset",
         lambda c: SD + "L(data=OTHER).load_state_dict(sd)", (3,), r"another order \(data: ", 25),
    Case("lsd-old-state", "load_state_dict", "loader", "a state dict without a fingerprint",
         lambda c: SD + "sd.pop('fingerprint', None)\nl = L(); l.load_state_dict(sd); take(l, 1)",
         (0,), r"StokerWarning: .*no order fingerprint", 25),
]

I31 = str(2**31 - 1)
OPTION_CASES = [
    Case("threads-100000", "options", "run", "--threads 100000",
         lambda c: c.run_args("--threads", "100000"), (2,), r"--threads must be an integer in \[0, ", 5),
    Case("py-threads-100000", "options", "loader", "threads=100000",
         lambda c: "L(threads=100000)", (3,), r"threads must be an int in \[0, ", 20),
    Case("io-threads-100000", "options", "run", "--io-threads 100000",
         lambda c: c.run_args("--io-threads", "100000"), (2,), r"--io-threads must be an integer in \[1, ", 5),
    Case("py-io-threads-100000", "options", "loader", "io_threads=100000",
         lambda c: "L(io_threads=100000)", (3,), r"io_threads must be an int in \[1, ", 20),
    Case("batch-size-2^31-1", "options", "run", "--batch-size 2^31-1",
         lambda c: c.run_args("--batch-size", I31), (2,), r"--batch-size must be an integer in \[1, 65536\]", 5),
    Case("py-batch-size-2^31-1", "options", "loader", "batch_size=2**31-1",
         lambda c: "L(batch_size=2**31-1)", (3,), r"batch_size must be an int in \[1, 65536\]", 20),
    Case("sample-window-2^31-1", "options", "run", "--sample-window 2^31-1",
         lambda c: c.run_args("--sample-window", I31), (2,), r"--sample-window must be an integer in \[0, ", 5),
    Case("py-window-2^31-1", "options", "loader", "window=2**31-1 (main's name of the sample window)",
         lambda c: "L(window=2**31-1)", (3,), r"unknown option 'window' .*sample_window", 20),
    Case("py-sample-window-2^31-1", "options", "loader", "sample_window=2**31-1",
         lambda c: "L(sample_window=2**31-1)", (3,), r"sample_window must be an int in \[0, ", 20),
    Case("prefetch-2^31-1", "options", "run", "--prefetch 2^31-1",
         lambda c: c.run_args("--prefetch", I31), (2,), r"--prefetch must be an integer in \[1, ", 5),
    Case("py-prefetch-2^31-1", "options", "loader", "prefetch=2**31-1",
         lambda c: "take(L(prefetch=2**31-1), 1)", (3,), r"prefetch must be an int in \[1, ", 20),
    Case("arena-2^46", "options", "run", "--arena-mb 2^26 (2^46 bytes)",
         lambda c: c.run_args("--arena-mb", str(2**26)), (2,), r"--arena-mb must be an integer in \[1, ", 5),
    Case("py-arena-2^46", "options", "loader", "arena_bytes=2**46",
         lambda c: "L(arena_bytes=2**46)", (3,), r"arena_bytes must be an int in \[4096, ", 20),
    Case("arena-all-memory", "options", "run", "--arena-mb = the machine's memory",
         lambda c: c.run_args("--arena-mb", str(machine_memory_mb())), (2,),
         r"--arena-mb must be an integer in \[1, \d+\] \(3/4 of this machine's memory", 5),
    Case("py-connect-empty", "options", "loader", "Loader(connect='')",
         lambda c: "stoker.Loader(connect='')", (3,), r"connect must be None, True or a socket path", 20),
    # The largest values the ranges allow run (bounded time and memory), they do not hang.
    Case("max-prefetch", "options", "run", "--prefetch 1024 (its bound for a 64 MiB arena)",
         lambda c: c.run_args("--prefetch", "1024"), (0,), r"ok", 15),
    Case("max-batch-size", "options", "run", "--batch-size 65536",
         lambda c: c.run_args("--batch-size", "65536"), (0,), r"ok", 15),
    Case("max-sample-window", "options", "run", "--sample-window 4096 (64 MiB arena)",
         lambda c: c.run_args("--sample-window", "4096"), (0,), r"ok", 15),
    Case("max-threads-io", "options", "run", "--threads 64 --io-threads 256 (2 cores)",
         lambda c: c.run_args("--threads", "64", "--io-threads", "256"), (0,), r"ok", 20),
    Case("max-arena", "options", "run", "--arena-mb = 3/4 of the memory",
         lambda c: c.run_args("--arena-mb", str(machine_memory_mb() * 3 // 4)), (0,), r"ok", 20,
         max_rss_mb=1400),
]

MISSING = "/nonexistent/dir/"
NOT_WRITABLE = r"cannot be written \(checking the folder /nonexistent/dir: No such file"
OUTPUT_CASES = [
    Case("trace-missing-folder", "output paths", "run", "--trace /nonexistent/dir/t.json",
         lambda c: c.run_args("--trace", MISSING + "t.json"), (2,), "--trace .*" + NOT_WRITABLE, 3),
    Case("py-trace-missing-folder", "output paths", "loader", "trace='/nonexistent/dir/t.json'",
         lambda c: f"take(L(trace='{MISSING}t.json'), 100)", (3,), "trace .*" + NOT_WRITABLE, 20),
    Case("error-report-missing-folder", "output paths", "run", "--error-report in a missing folder",
         lambda c: c.run_args("--error-report", MISSING + "e.jsonl"), (2,),
         "--error-report .*" + NOT_WRITABLE, 3),
    Case("py-error-report-missing-folder", "output paths", "loader", "error_report= likewise",
         lambda c: f"take(L(error_report='{MISSING}e.jsonl'), 100)", (3,),
         "error_report .*" + NOT_WRITABLE, 20),
    Case("delivered-log-missing-folder", "output paths", "run", "--delivered-log likewise",
         lambda c: c.run_args("--delivered-log", MISSING + "d.log"), (2,),
         "--delivered-log .*" + NOT_WRITABLE, 3),
    Case("batch-hashes-missing-folder", "output paths", "run", "--batch-hashes likewise",
         lambda c: c.run_args("--batch-hashes", MISSING + "h.txt"), (2,),
         "--batch-hashes .*" + NOT_WRITABLE, 3),
    Case("state-file-missing-folder", "output paths", "run", "--state-file likewise",
         lambda c: c.run_args("--state-file", MISSING + "state"), (2,),
         "--state-file .*" + NOT_WRITABLE, 3),
    Case("summary-json-missing-folder", "output paths", "run", "cluster --summary-json likewise",
         lambda c: c.run_args("--summary-json", MISSING + "s.json", command="cluster"), (2,),
         "--summary-json .*" + NOT_WRITABLE, 5),
    Case("report-under-a-file", "output paths", "run", "--report FILE/r (its parent is a file)",
         lambda c: c.run_args("--report", _text(c, "a-file", "x") + "/r"), (2,),
         r"--report .*a-file/r: cannot be written \(.*(Not a directory|is a regular file)", 3),
    Case("error-report-fifo", "output paths", "run", "--error-report a FIFO (no reader)",
         lambda c: c.run_args("--error-report", _fifo(c, "fifo-report")), (2,),
         r"--error-report .*is a FIFO", 3),
    Case("trace-is-a-folder", "output paths", "run", "--trace an existing folder",
         lambda c: c.run_args("--trace", str(c.root)), (2,), r"--trace .*is a folder", 3),
    # The disk fills up (RLIMIT_FSIZE 8 KiB): diagnostic outputs warn, data outputs fail.
    Case("full-disk-trace", "output paths", "run", "--trace, the disk full at the end",
         lambda c: c.run_args("--trace", str(c.path("full-trace.json"))), (0,),
         r"warning: --trace .*(File too large|trace).*--strict-outputs", 10, fsize=8 << 10),
    Case("full-disk-trace-strict", "output paths", "run", "the same with --strict-outputs",
         lambda c: c.run_args("--trace", str(c.path("full-trace2.json")), "--strict-outputs"),
         (1,), r"--trace .*File too large", 10, fsize=8 << 10),
    Case("py-full-disk-trace", "output paths", "loader", "trace=, the disk full at close",
         lambda c: f"l = L(trace='{c.path('full-trace-py.json')}'); take(l, 6); l.close()", (0,),
         r"warning: trace: .*File too large", 25, fsize=8 << 10),
    Case("full-disk-error-report", "output paths", "run", "--error-report, the disk full",
         lambda c: c.run_args("--error-report", str(c.path("full-errors.jsonl")),
                              "--max-error-rate", "1", data=c.bad),
         (0,), r"warning: --error-report: .*File too large", 10, fsize=600),
    Case("full-disk-state", "output paths", "run", "--state-file, the disk full (a data output)",
         lambda c: c.run_args("--state-file", str(c.path("full-state"))), (1,),
         r"--state-file: saving the state: writing .*full-state.tmp: File too large", 10,
         fsize=100),
]

CASES: List[Case] = STATE_CASES + PY_STATE + OPTION_CASES + OUTPUT_CASES


def main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--stoker")
    ap.add_argument("--python-dir")
    ap.add_argument("--root", default="/tmp/stoker-bad-state")
    ap.add_argument("--out")
    ap.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"))
    ap.add_argument("--only", help="a regex: only the cases it matches (their rows are updated in "
                                    "an existing --out file)")
    ap.add_argument("--as-limit-mb", type=int, default=0,
                    help="RLIMIT_AS for every child (a build that reads /dev/zero until memory "
                         "runs out must not take a shared machine's memory with it)")
    a = ap.parse_args(argv)
    if a.as_limit_mb:
        import resource

        n = a.as_limit_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (n, n))
    if a.compare:
        before, after = (json.load(open(p)) for p in a.compare)
        print("| case | runner | before: exit, s, MiB, reason | after: exit, s, MiB, reason |")
        print("| --- | --- | --- | --- |")
        for c in CASES:
            def cell(r):
                if c.name not in r:
                    return "-"
                x = r[c.name]
                why = re.sub(r"/\S*/(files|datasets|work)/", "…/", x["reason"]) or "(nothing said)"
                return f"{x['exit']}, {x['wall_s']:.1f} s, {x['rss_mb']} MiB: {why[:140]}"
            print(f"| {c.name} ({c.what}) | {c.runner} | {cell(before)} | {cell(after)} |")
        return 0
    root = pathlib.Path(a.root)
    root.mkdir(parents=True, exist_ok=True)
    ctx = Ctx(a.stoker, root, a.python_dir)
    out = {}
    if a.only and a.out and pathlib.Path(a.out).exists():
        out = json.loads(pathlib.Path(a.out).read_text())
    for c in CASES:
        if c.runner == "loader" and not a.python_dir:
            continue
        if a.only and not re.search(a.only, c.name):
            continue
        o = run_case(c, ctx)
        out[c.name] = dict(o.as_dict(), problems=judge(c, o))
        print(f"{c.name}: {o.exit} {o.wall_s:.1f} s {o.rss_mb} MiB {o.reason[:160]}", flush=True)
    if a.out:
        pathlib.Path(a.out).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
