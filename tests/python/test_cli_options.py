"""The `stoker` commands parse their flags strictly: an integer that overflows its field, trailing
junk or a bad byte size exits with status 2 and one line naming the flag and the value (it used
to be accepted: `stoker run --batch-size 99999999999` ran with a wrapped int). The media/I-O flags
are shared by run, serve and inspect; --media-root and --allow-bucket repeat, single-valued flags
do not; --trust-media-paths warns once."""
from __future__ import annotations

import os
import subprocess

import pytest

# The machine's bounds, computed here independently of stoker (config/options.cc states the rule:
# CPU threads 4 per core, at least 64, at most 1024; I/O threads 16 per core, 256..4096; sizes
# at most the physical memory).
CORES = len(os.sched_getaffinity(0))
CPU_CAP = min(1024, max(64, 4 * CORES))
IO_CAP = min(4096, max(256, 16 * CORES))
MEMORY = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")

MEDIA_FLAGS = ["--media-root", "--trust-media-paths", "--allow-bucket", "--max-object-bytes",
               "--max-record-bytes", "--io-deadline-ms", "--imds"]


@pytest.fixture(scope="module")
def data(stoker_bin, tmp_path_factory):
    out = tmp_path_factory.mktemp("synth")
    subprocess.run([stoker_bin, "synth", "--out", str(out), "--n", "8", "--seed", "3",
                    "--max-side", "64"], check=True, capture_output=True, timeout=120)
    return str(out / "data.jsonl")


def stoker(stoker_bin, *args, timeout=120):
    return subprocess.run([stoker_bin, *args], capture_output=True, text=True, timeout=timeout)


def run_flags(stoker_bin, data, *flags):
    # Small and quiet, unless the test sets the flag itself (a flag given twice is an error).
    base = []
    for flag, value in (("--threads", "1"), ("--io-threads", "1"), ("--arena-mb", "64")):
        if not any(f == flag or f.startswith(flag + "=") for f in flags):
            base += [flag, value]
    return stoker(stoker_bin, "run", data, "--quiet", *base, *flags)


def assert_usage_error(r, text):
    assert r.returncode == 2, (r.returncode, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert text in lines[0], lines[0]
    assert "batches" not in r.stdout  # nothing ran


@pytest.mark.parametrize("flags,text", [
    (["--batch-size", "99999999999"],
     "--batch-size must be an integer in [1, 65536], got '99999999999'"),
    (["--batch-size", "4294967300"], "--batch-size must be an integer in [1, 65536]"),
    (["--batch-size", "8x"], "--batch-size must be an integer in [1, 65536], got '8x'"),
    (["--batch-size=+8"], "got '+8'"),
    (["--io-threads", "2147483648"], f"--io-threads must be an integer in [1, {IO_CAP}] (16 x "),
    (["--prefetch", "0"], "--prefetch must be an integer in [1, 1024], got '0'"),
    (["--seed", "18446744073709551616"], "--seed must be an integer in [0, 18446744073709551615]"),
    (["--seed", "-1"], "got '-1'"),
    (["--arena-mb", "99999999999999999"],
     f"--arena-mb must be an integer in [1, {(MEMORY // 4 * 3) >> 20}] (3/4 of this machine's"),
    (["--max-error-rate", "nan"], "--max-error-rate must be a number in [0, 1], got 'nan'"),
    (["--threads", "99999999999"], f"--threads must be an integer in [0, {CPU_CAP}] (4 x "),
    (["--max-object-bytes", "99999999999T"], "--max-object-bytes must be a byte count in [1, "),
    (["--max-object-bytes", "256MB"], "got '256MB'"),
    (["--max-record-bytes", "5G"], "--max-record-bytes must be a byte count in [1, 4294967296]"),
    (["--io-deadline-ms", "1e3"], "--io-deadline-ms must be an integer in [1, 2147483647]"),
    (["--batch-size", "4", "--batch-size", "8"], "--batch-size given twice ('4', then '8')"),
    (["--model", "--batch-size", "4"], "--model needs a value, got the flag --batch-size"),
    (["--rank", "3", "--world-size", "2"], "--rank must be an integer in [0, 1], got '3'"),
    (["--batchsize", "4"], "unknown flag --batchsize (stoker run --help lists them)"),
    # issue 28: values no machine honours are refused at start, naming option, value and range
    (["--threads", "100000"], f"--threads must be an integer in [0, {CPU_CAP}]"),
    (["--io-threads", "100000"], f"--io-threads must be an integer in [1, {IO_CAP}]"),
    (["--batch-size", "2147483647"], "--batch-size must be an integer in [1, 65536]"),
    (["--sample-window", "2147483647"], "--sample-window must be an integer in [0, 65536]"),
    (["--prefetch", "2147483647"], "--prefetch must be an integer in [1, 1024]"),
    (["--arena-mb", "1", "--prefetch", "100"],
     "--prefetch must be an integer in [1, 16] (one ready batch per 64 KiB of the 1 MiB arena"),
    (["--arena-mb", str((MEMORY >> 20) + 1)], "3/4 of this machine's memory"),
])
def test_run_rejects_bad_values_with_status_2(stoker_bin, data, flags, text):
    assert_usage_error(run_flags(stoker_bin, data, *flags), text)


def test_repeatable_media_flags_and_the_trust_warning(stoker_bin, data, tmp_path):
    r = run_flags(stoker_bin, data, "--media-root", str(tmp_path), "--media-root=/tmp",
                  "--allow-bucket", "one", "--allow-bucket", "*", "--max-object-bytes", "16MiB",
                  "--max-record-bytes", "1M", "--io-deadline-ms", "5000", "--imds")
    assert r.returncode == 0, r.stderr
    assert "8 samples, 0 failed" in r.stdout
    assert "WARNING" not in r.stderr
    r = run_flags(stoker_bin, data, "--trust-media-paths")
    assert r.returncode == 0, r.stderr
    warnings = [l for l in r.stderr.splitlines() if "WARNING" in l]
    assert len(warnings) == 1 and "--trust-media-paths" in warnings[0] and "ANY file" in warnings[0]
    assert_usage_error(run_flags(stoker_bin, data, "--media-root="),
                       "--media-root needs a value, got ''")
    assert_usage_error(run_flags(stoker_bin, data, "--imds=yes"), "--imds takes no value")


def test_serve_and_inspect_share_the_media_flags(stoker_bin, data, tmp_path):
    sock = str(tmp_path / "s.sock")
    # serve: a bad flag is reported before anything listens
    r = stoker(stoker_bin, "serve", data, "--socket", sock, "--max-record-bytes", "8G")
    assert_usage_error(r, "--max-record-bytes must be a byte count in [1, 4294967296]")
    r = stoker(stoker_bin, "serve", data, "--socket", sock, "--window", "65")
    assert_usage_error(r, "--window must be an integer in [1, 64], got '65'")
    r = stoker(stoker_bin, "serve", data, "--socket", sock, "--media-root", "/a", "--media-root",
               "/b", "--batch-size", "0")
    assert_usage_error(r, "--batch-size must be an integer in [1, 65536], got '0'")
    # inspect reads media too: the same flags, the same checks
    (tmp_path / "more").mkdir()
    r = stoker(stoker_bin, "inspect", data, "--media-root", str(tmp_path), "--media-root",
               str(tmp_path / "more"), "--allow-bucket", "b", "--max-object-bytes", "1G",
               "--limit", "2")
    assert r.returncode == 0, r.stderr
    # A media root that does not exist is a configuration error, named.
    r = stoker(stoker_bin, "inspect", data, "--media-root", "/no/such/root")
    assert r.returncode == 2 and "media root /no/such/root" in r.stderr, r.stderr
    r = stoker(stoker_bin, "inspect", data, "--io-deadline-ms", "0")
    assert_usage_error(r, "--io-deadline-ms must be an integer in [1, 2147483647], got '0'")
    r = stoker(stoker_bin, "inspect", data, "--limit", "10x")
    assert_usage_error(r, "--limit must be an integer in [0, ")


def test_world_size_from_the_environment_is_parsed_strictly(stoker_bin, data, tmp_path):
    import os
    env = dict(os.environ, WORLD_SIZE="4x")
    r = subprocess.run([stoker_bin, "serve", data, "--socket", str(tmp_path / "s.sock")],
                       capture_output=True, text=True, timeout=60, env=env)
    assert_usage_error(r, "$WORLD_SIZE must be an integer in [1, 4096], got '4x'")


@pytest.mark.parametrize("cmd,flags,text", [
    ("synth", ["--n", "99999999999"], "--n must be an integer in [1, 10000000]"),
    ("synth", ["--max-side", "31"], "--max-side must be an integer in [32, 2147483647]"),
    ("synth", ["--images-only", "--size", "99999999999x2"], "--size width must be an integer"),
    ("consume", ["--socket", "x", "--step-ms", "inf"], "--step-ms must be a number in [0, "),
    ("bench", ["ladder", "--steps", "-1"], "--steps must be an integer in [1, 2147483647]"),
])
def test_other_commands_parse_strictly_too(stoker_bin, tmp_path, cmd, flags, text):
    args = [cmd, *flags]
    if cmd == "synth":
        args += ["--out", str(tmp_path / "o")]
    r = stoker(stoker_bin, *args)
    if cmd == "bench" and "this build has no benchmarks" in r.stderr:
        pytest.skip("built with STOKER_BUILD_BENCH=OFF (the sanitizer tree)")
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert text in r.stderr, r.stderr


@pytest.mark.parametrize("cmd", ["run", "serve", "inspect"])
def test_help_lists_every_media_flag(stoker_bin, cmd):
    r = stoker(stoker_bin, cmd, "--help")
    assert r.returncode == 0
    for flag in MEDIA_FLAGS:
        assert flag in r.stdout, (cmd, flag)


@pytest.mark.parametrize("var,value,text", [
    ("STOKER_IO_DEADLINE_MS", "2s",
     "$STOKER_IO_DEADLINE_MS must be an integer in [1, 2147483647], got '2s'"),
    ("STOKER_IO_MAX_ATTEMPTS", "0", "$STOKER_IO_MAX_ATTEMPTS must be an integer in [1, 1000]"),
    ("STOKER_FETCH_BLOCKING", "yes",
     "$STOKER_FETCH_BLOCKING must be 1 or 0 (true or false), got 'yes'"),
    ("STOKER_MANIFEST_CHUNK_BYTES", "-1",
     "$STOKER_MANIFEST_CHUNK_BYTES must be a byte count in [1, 1073741824]"),
])
def test_environment_fallbacks_are_read_at_start_and_named(stoker_bin, data, var, value, text):
    # Once, strictly, when the settings are built: a bad value stops the run before it starts
    # (it used to be read deep in the engine with atoll: '2s' meant 2 ms, junk meant unset).
    r = subprocess.run([stoker_bin, "run", data, "--quiet", "--threads", "1"],
                       capture_output=True, text=True, timeout=60, env=dict(os.environ, **{var: value}))
    assert_usage_error(r, text)


def test_several_data_files_are_arguments_and_a_comma_is_part_of_a_name(stoker_bin, tmp_path):
    def synth(name, n, seed):
        out = tmp_path / name
        subprocess.run([stoker_bin, "synth", "--out", str(out), "--n", str(n), "--seed", str(seed),
                        "--max-side", "64"], check=True, capture_output=True, timeout=120)
        return out / "data.jsonl"
    a, b = synth("a", 5, 1), synth("b", 3, 2)
    log = tmp_path / "delivered.log"
    r = run_flags(stoker_bin, str(a), str(b), "--batch-size", "2", "--delivered-log", str(log))
    assert r.returncode == 0, r.stderr
    ids = sorted(int(i) for line in log.read_text().splitlines() for i in line.split()[2:])
    assert ids == list(range(8)), ids  # both manifests, one dataset
    # A manifest whose name has a comma opens as that file (it used to be split in two).
    comma = a.parent / "x,y.jsonl"
    comma.write_text(a.read_text())
    r = run_flags(stoker_bin, str(comma))
    assert r.returncode == 0, r.stderr
    assert "5 samples, 0 failed" in r.stdout, r.stdout
    # The old comma list is refused, not guessed, and the message says what to write.
    r = run_flags(stoker_bin, f"{a},{b}")
    assert_usage_error(r, "several data files are separate arguments (DATA.jsonl MORE.jsonl ...)")


@pytest.mark.parametrize("cmd", ["run", "serve", "cluster", "inspect"])
def test_help_is_the_schema(stoker_bin, cmd):
    # --help's option sections are the option table's, for this command.
    r = stoker(stoker_bin, cmd, "--help")
    table = stoker(stoker_bin, "options", "--command", cmd)
    assert r.returncode == 0 and table.returncode == 0
    assert table.stdout in r.stdout


def test_readme_option_table_is_the_schemas(stoker_bin):
    # The README's table is `stoker options --markdown`, the option schema (config/options.cc).
    import pathlib
    readme = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = readme.split("<!-- options-table:begin -->\n")[1].split("<!-- options-table:end -->")[0]
    r = stoker(stoker_bin, "options", "--markdown")
    assert r.returncode == 0, r.stderr
    assert block == r.stdout, ("README.md's option table differs from the schema: replace it "
                               "with the output of `stoker options --markdown`")
