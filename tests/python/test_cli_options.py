"""The `stoker` commands parse their flags strictly: an integer that overflows its field, trailing
junk or a bad byte size exits with status 2 and one line naming the flag and the value (it used
to be accepted: `stoker run --batch-size 99999999999` ran with a wrapped int). The media/I-O flags
are shared by run, serve and inspect; --media-root and --allow-bucket repeat, single-valued flags
do not; --trust-media-paths warns once."""
from __future__ import annotations

import subprocess

import pytest

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
     "--batch-size must be an integer in [1, 2147483647], got '99999999999'"),
    (["--batch-size", "4294967300"], "--batch-size must be an integer in [1, 2147483647]"),
    (["--batch-size", "8x"], "--batch-size must be an integer in [1, 2147483647], got '8x'"),
    (["--batch-size=+8"], "got '+8'"),
    (["--io-threads", "2147483648"], "--io-threads must be an integer in [1, 2147483647]"),
    (["--prefetch", "0"], "--prefetch must be an integer in [1, 2147483647], got '0'"),
    (["--seed", "18446744073709551616"], "--seed must be an integer in [0, 18446744073709551615]"),
    (["--seed", "-1"], "got '-1'"),
    (["--arena-mb", "99999999999999999"], "--arena-mb must be an integer in [1, "),
    (["--max-error-rate", "nan"], "--max-error-rate must be a number in [0, 1], got 'nan'"),
    (["--threads", "99999999999"], "--threads must be an integer in [0, 2147483647]"),
    (["--max-object-bytes", "99999999999T"], "--max-object-bytes must be a byte count in [1, "),
    (["--max-object-bytes", "256MB"], "got '256MB'"),
    (["--max-record-bytes", "5G"], "--max-record-bytes must be a byte count in [1, 4294967296]"),
    (["--io-deadline-ms", "1e3"], "--io-deadline-ms must be an integer in [1, 2147483647]"),
    (["--batch-size", "4", "--batch-size", "8"], "--batch-size given twice ('4', then '8')"),
    (["--model", "--batch-size", "4"], "--model needs a value, got the flag --batch-size"),
    (["--rank", "3", "--world-size", "2"], "--rank must be an integer in [0, 1], got '3'"),
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
                       "--media-root needs a folder, got ''")
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
    assert_usage_error(r, "--batch-size must be an integer in [1, 2147483647], got '0'")
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
