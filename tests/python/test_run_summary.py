"""What `stoker run` tells a newcomer (issue 15 §3), checked against independent sources: the
failures listed by reason against the run's own --error-report lines (every failed sample, one
JSON line each), peak RSS against /usr/bin/time's "Maximum resident set size" (the kernel's
number, measured outside the process), progress lines when stderr is a pipe, what the wait ratio
means without a trainer step, and `stoker --version` against CMakeLists.txt's project version."""
import collections
import json
import pathlib
import re
import subprocess

import pytest

from stoker_cli import run, synth

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bad_data(stoker_bin, tmp_path_factory):
    out = synth(stoker_bin, tmp_path_factory.mktemp("summary"),
                ["--n", "40", "--seed", "3", "--bad-fraction", "0.3", "--max-side", "256"])
    return str(out / "data.jsonl")


def stoker_run(stoker_bin, data, *extra):
    # --max-length 600: some good samples fail too, as ResourceExhausted at tokenize.
    return run([stoker_bin, "run", data, "--batch-size", "4", "--threads", "2", "--max-length",
                "600", "--max-error-rate", "1", "--arena-mb", "128", *extra],
               timeout=300).stdout.decode()


def test_failures_are_listed_by_reason(stoker_bin, bad_data, tmp_path):
    report = tmp_path / "errors.jsonl"
    with_report = stoker_run(stoker_bin, bad_data, "--quiet", "--error-report", str(report))
    plain = stoker_run(stoker_bin, bad_data, "--quiet")
    lines = [json.loads(x) for x in report.read_text().splitlines()]
    failed = int(re.search(r"samples, (\d+) failed", plain).group(1))
    assert failed == len(lines) >= 8, plain
    # Without --error-report the summary says how to get the full list; with it, where it is.
    assert "full list: none written; --error-report FILE" in plain, plain
    assert f"full list: {report}" in with_report, with_report
    kinds = re.findall(r"^    (\d+) x (\w+) (\w+): (.*)\n      e\.g\. sample (\d+) \((.*):(\d+)\): "
                       r"(.*)$", plain, re.M)
    more = re.search(r"^    (\d+) more in (\d+) other kinds$", plain, re.M)
    assert kinds, plain
    counts = [int(k[0]) for k in kinds]
    assert counts == sorted(counts, reverse=True), "most frequent first"
    assert sum(counts) + (int(more.group(1)) if more else 0) == failed, plain
    # Per stage and code, the listed counts never exceed the report's, and every example is a
    # real failed sample with exactly that stage, code and reason.
    by_stage_code = collections.Counter((x["stage"], x["code"]) for x in lines)
    listed = collections.Counter()
    for count, stage, code, _pattern, sample, file, line, reason in kinds:
        listed[(stage, code)] += int(count)
        match = [x for x in lines if x["sample"] == int(sample)]
        assert match and match[0]["stage"] == stage and match[0]["code"] == code, (sample, lines)
        assert match[0]["reason"] == reason and match[0]["file"] == file
        assert match[0]["line"] == int(line)
    for key, n in listed.items():
        assert n <= by_stage_code[key], (key, n, by_stage_code)
    if not more:
        assert listed == by_stage_code
    # Missing images are one kind, whatever their file names.
    missing = [k for k in kinds if k[2] == "NotFound"]
    assert len(missing) <= 1 and (not missing or "PATH" in missing[0][3]), missing


def test_progress_is_plain_lines_on_a_pipe(stoker_bin, bad_data):
    proc = run([stoker_bin, "run", bad_data, "--batch-size", "2", "--threads", "2",
                "--max-error-rate", "1", "--step-ms", "150", "--limit-batches", "8", "--arena-mb", "128",
                "--progress-s", "0.2"], timeout=300)
    err = proc.stderr.decode()
    assert "\r" not in err, repr(err[:300])
    progress = [x for x in err.splitlines() if re.match(r"stoker run: \d+ batches, \d+ samples", x)]
    assert len(progress) >= 3, err


def test_wait_ratio_is_explained_without_a_trainer_step(stoker_bin, bad_data):
    note = "nothing consumes the batches"
    assert note in stoker_run(stoker_bin, bad_data, "--quiet", "--limit-batches", "2")
    assert note not in stoker_run(stoker_bin, bad_data, "--quiet", "--limit-batches", "2",
                                  "--step-ms", "5")


def test_peak_rss_is_what_the_kernel_reports(stoker_bin, bad_data):
    proc = run(["/usr/bin/time", "-f", "maxrss_kib %M", stoker_bin, "run", bad_data, "--quiet",
                "--batch-size", "4", "--threads", "2", "--max-error-rate", "1",
                "--arena-mb", "256"], timeout=300)
    out, err = proc.stdout.decode(), proc.stderr.decode()
    ours = float(re.search(r"peak RSS ([\d.]+) MiB \(VmHWM", out).group(1))
    theirs = int(re.search(r"maxrss_kib (\d+)", err).group(1)) / 1024
    # /usr/bin/time reads the peak at exit, after our summary: never lower, and teardown adds
    # nothing much.
    assert theirs * 0.95 - 4 <= ours <= theirs + 1, (ours, theirs, out)
    parts = re.search(r"RSS now ([\d.]+) MiB = ([\d.]+) anonymous \+ ([\d.]+) shared memory \+ "
                      r"([\d.]+) files; the batch arena is ([\d.]+) MiB", out)
    now, anon, shmem, files, arena = map(float, parts.groups())
    assert abs(anon + shmem + files - now) < 0.5, out
    assert 0 < arena <= 256 and arena <= now + 0.5, out  # --arena-mb 256, written at start


def test_version_is_the_project_version(stoker_bin):
    project = re.search(r"project\(stoker VERSION ([\d.]+)",
                        (REPO / "CMakeLists.txt").read_text()).group(1)
    assert run([stoker_bin, "--version"]).stdout.decode() == f"stoker {project}\n"
    assert subprocess.run([stoker_bin, "help"], capture_output=True, text=True).returncode == 0
