"""Loader(...) and serve(...) options are checked before C++ sees them: type (an int option takes an
int but not a bool or a str), range (what the engine's field holds) and choices, each error an
InvalidArgumentError naming the option and the value. Regression: Loader(batch_size='8') used to
fail with pybind11's "Unable to cast ..." naming nothing, and batch_size=2**40 wrapped.
The C++ side (make_config) checks again; the media/I-O options are accepted and mapped."""
import math
import os
import pathlib

import pytest

I32 = 2**31 - 1
# This machine's bounds, computed here from the rule the schema states (config/options.cc):
# CPU threads 4 per core (64..1024), I/O threads 16 per core (256..4096), sizes the memory.
CORES = len(os.sched_getaffinity(0))
CPU_CAP = min(1024, max(64, 4 * CORES))
IO_CAP = min(4096, max(256, 16 * CORES))
MEMORY = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
ARENA_MAX = MEMORY // 4 * 3  # the arena cap: at most 3/4 of the memory (options.cc)

# (option, bad value, the message's text) — wrong types, bools for ints, out of range, choices.
BAD = [
    ("batch_size", "8", "batch_size must be an int in [1, 65536], got '8' (str)"),
    ("batch_size", True, "batch_size must be an int in [1, 65536], got True (bool)"),
    ("batch_size", 8.0, "batch_size must be an int in [1, 65536], got 8.0 (float)"),
    ("batch_size", 0, "batch_size must be an int in [1, 65536], got 0 (int)"),
    ("batch_size", 2**31, "batch_size must be an int in [1, 65536], got 2147483648 (int)"),
    ("batch_size", 99999999999, "batch_size must be an int in [1, 65536]"),
    ("max_length", -1, "max_length must be an int ≥ 0, got -1 (int)"),
    ("max_length", 2**63, "max_length must be an int in [0, 2147483647]"),
    ("seed", -1, "seed must be an int ≥ 0, got -1 (int)"),
    ("seed", 2**64, "seed must be an int in [0, 18446744073709551615]"),
    ("seed", False, "seed must be an int ≥ 0, got False (bool)"),
    ("epochs", 0, "epochs must be -1 (forever) or an int ≥ 1, got 0 (int)"),
    ("epochs", -2, "epochs must be -1 (forever) or an int ≥ 1, got -2 (int)"),
    ("epochs", "2", "epochs must be -1 (forever) or an int ≥ 1, got '2' (str)"),
    ("threads", -1, f"threads must be an int in [0, {CPU_CAP}] (4 x {CORES} core"),
    ("threads", True, "threads must be an int in [0, "),
    ("prefetch", 0, "prefetch must be an int in [1, 1024], got 0 (int)"),
    ("io_threads", 2**31, f"io_threads must be an int in [1, {IO_CAP}] (16 x {CORES} core"),
    ("arena_bytes", 100, f"arena_bytes must be an int in [4096, {ARENA_MAX}] (3/4 of this machine's "
                         "memory"),
    ("arena_bytes", 2**64, f"arena_bytes must be an int in [4096, {ARENA_MAX}]"),
    ("max_error_rate", 1.5, "max_error_rate must be a number in [0, 1], got 1.5 (float)"),
    ("max_error_rate", math.nan, "max_error_rate must be a number in [0, 1], got nan (float)"),
    ("max_error_rate", math.inf, "max_error_rate must be a number in [0, 1]"),
    ("max_error_rate", True, "max_error_rate must be a number in [0, 1], got True (bool)"),
    ("max_error_rate", "0.1", "max_error_rate must be a number in [0, 1], got '0.1' (str)"),
    ("max_errors", -1, "max_errors must be None or an int ≥ 0, got -1 (int)"),
    ("max_errors", "3", "max_errors must be None or an int ≥ 0, got '3' (str)"),
    ("strict", 1, "strict must be a bool (True or False), got 1 (int)"),
    ("strict", "yes", "strict must be a bool (True or False), got 'yes' (str)"),
    ("mode", "fast", "mode must be one of 'serial', 'concurrent', 'prefetch', got 'fast' (str)"),
    ("padding", "max", "padding must be one of 'longest', 'max_length', got 'max' (str)"),
    ("pixel_dtype", "float16", "pixel_dtype must be 'float32', 'bfloat16', torch.float32 or "
                               "torch.bfloat16, got 'float16' (str)"),
    ("model", 5, "model must be a str or an os.PathLike, got 5 (int)"),
    ("tokenizer", b"tok", "tokenizer must be None or a str or an os.PathLike, got b'tok' (bytes)"),
    ("error_report", 3, "error_report must be None or a str or an os.PathLike, got 3 (int)"),
    ("rank", -1, "rank must be None or an int ≥ 0, got -1 (int)"),
    ("world_size", 0, "world_size must be None or an int ≥ 1, got 0 (int)"),
    # media/I-O options
    ("media_root", 5, "media_root must be a str or os.PathLike, or a list of them, got 5 (int)"),
    ("media_root", ["/a", 3], "media_root must be a str or os.PathLike, or a list of them"),
    ("media_root", [""], "media_root: an empty entry"),
    ("media_root", b"/a", "media_root must be a str or os.PathLike, or a list of them"),
    ("allow_buckets", 7, "allow_buckets must be a str or os.PathLike, or a list of them"),
    ("allow_buckets", ["ok", None], "allow_buckets must be a str or os.PathLike, or a list"),
    ("trust_media_paths", 1, "trust_media_paths must be a bool (True or False), got 1 (int)"),
    ("trust_media_paths", "yes", "trust_media_paths must be a bool"),
    ("imds", 0, "imds must be a bool (True or False), got 0 (int)"),
    ("max_object_bytes", 0, f"max_object_bytes must be an int in [1, {MEMORY}] (this machine's"),
    ("max_object_bytes", "256M", "max_object_bytes must be an int in [1, "),
    ("max_object_bytes", True, "max_object_bytes must be an int in [1, "),
    ("max_object_bytes", 2**63, f"max_object_bytes must be an int in [1, {MEMORY}]"),
    ("max_record_bytes", (4 << 30) + 1, "max_record_bytes must be an int in [1, 4294967296], "
                                        "got 4294967297 (int)"),
    ("max_record_bytes", 1.0, "max_record_bytes must be an int in [1, 4294967296], got 1.0"),
    ("io_deadline_ms", 0, "io_deadline_ms must be None or an int ≥ 1, got 0 (int)"),
    ("io_deadline_ms", 2**31, "io_deadline_ms must be None or an int in [1, 2147483647]"),
    ("io_deadline_ms", 1.5, "io_deadline_ms must be None or an int ≥ 1, got 1.5 (float)"),
    # advanced options
    ("sample_window", -1, "sample_window must be an int in [0, 65536], got -1 (int)"),
    ("fetch_bytes_in_flight", 0, "fetch_bytes_in_flight must be an int in [1, "),
    ("arena_shared", 1, "arena_shared must be a bool"),
    ("min_seen", -1, "min_seen must be an int ≥ 0"),
    ("local_rank", "0", "local_rank must be None or an int ≥ 0, got '0' (str)"),
    ("worker_sched", "fifo", "worker_sched must be one of 'batch', 'idle', 'normal'"),
    ("cache_dir", 3, "cache_dir must be None or a str or an os.PathLike, got 3 (int)"),
    ("io_max_attempts", 0, "io_max_attempts must be None or an int in [1, 1000], got 0 (int)"),
    # issue 28: values no machine honours (they hung, aborted or failed late before)
    ("threads", 100000, f"threads must be an int in [0, {CPU_CAP}]"),
    ("io_threads", 100000, f"io_threads must be an int in [1, {IO_CAP}]"),
    ("batch_size", 2**31 - 1, "batch_size must be an int in [1, 65536]"),
    ("sample_window", 2**31 - 1, "sample_window must be an int in [0, 65536]"),
    ("prefetch", 2**31 - 1, "prefetch must be an int in [1, 1024]"),
    ("arena_bytes", 2**46, f"arena_bytes must be an int in [4096, {ARENA_MAX}]"),
    # arena_mb: the same option in MiB (as --arena-mb), its range the same one in MiB
    ("arena_mb", 0, f"arena_mb must be None or an int in [1, {ARENA_MAX >> 20}] (3/4 of this machine's memory"),
    ("arena_mb", MEMORY, f"arena_mb must be None or an int in [1, {ARENA_MAX >> 20}]"),
    ("arena_mb", 64.0, "arena_mb must be None or an int in [1, "),
]


@pytest.mark.parametrize("name,value,message", BAD, ids=[f"{n}={v!r}" for n, v, _ in BAD])
def test_bad_option_raises_before_cpp_naming_it(stoker, tmp_path, name, value, message):
    # The data does not exist: an error about it (NotFound) would mean C++ ran first.
    with pytest.raises(stoker.InvalidArgumentError) as e:
        stoker.Loader(str(tmp_path / "missing.jsonl"), **{name: value})
    assert message in str(e.value)
    assert isinstance(e.value, ValueError) and e.value.code == "InvalidArgument"
    assert "Unable to cast" not in str(e.value)


def test_data_and_pairing(stoker, tmp_path):
    with pytest.raises(stoker.InvalidArgumentError, match=r"data must be a str or os.PathLike"):
        stoker.Loader(5)
    with pytest.raises(stoker.InvalidArgumentError, match=r"data must be .*got \['a', 5\]"):
        stoker.Loader(["a", 5])
    with pytest.raises(stoker.InvalidArgumentError, match="rank and world_size go together"):
        stoker.Loader(str(tmp_path / "x.jsonl"), rank=0)
    with pytest.raises(stoker.InvalidArgumentError,
                       match=r"rank must be an int in \[0, world_size - 1\] = \[0, 1\], got 2"):
        stoker.Loader(str(tmp_path / "x.jsonl"), rank=2, world_size=2)
    with pytest.raises(stoker.InvalidArgumentError, match="unknown option 'batchsize'"):
        stoker.Loader(str(tmp_path / "x.jsonl"), batchsize=4)


def ids(loader):
    return [i for b in loader for i in b["sample_ids"].tolist()]


def test_new_options_are_accepted_and_leave_a_local_run_unchanged(stoker, dataset, tmp_path):
    want = ids(stoker.Loader(dataset, batch_size=4, threads=2))
    here = pathlib.Path(dataset).parent
    got = ids(stoker.Loader(
        pathlib.Path(dataset), batch_size=4, threads=2,
        media_root=[here, str(tmp_path)], trust_media_paths=False, allow_buckets=["b1", "*"],
        max_object_bytes=64 << 20, max_record_bytes=1 << 20, io_deadline_ms=5000, imds=False))
    assert got == want and len(want) == 40
    # one folder (not a list), one bucket name, defaults spelled out, and True switches
    got = ids(stoker.Loader(dataset, batch_size=4, threads=2, media_root=str(here),
                            allow_buckets="b1", io_deadline_ms=None, imds=True,
                            trust_media_paths=True, max_record_bytes=4 << 30))
    assert got == want


def test_arena_mb_is_arena_bytes_in_mib(stoker, dataset):
    # One option, two spellings (issue 22): arena_mb=N is arena_bytes=N MiB, as --arena-mb N.
    by_mib = stoker.Loader(dataset, batch_size=4, threads=2, arena_mb=48)
    by_bytes = stoker.Loader(dataset, batch_size=4, threads=2, arena_bytes=48 << 20)
    assert by_mib.arena_info()["capacity"] == by_bytes.arena_info()["capacity"] == 48 << 20
    assert ids(by_mib) == ids(by_bytes)
    with pytest.raises(stoker.InvalidArgumentError, match="same option"):
        stoker.Loader(dataset, arena_mb=48, arena_bytes=48 << 20)


def test_numbers_that_are_ints_or_floats_by_value(stoker, dataset):
    np = pytest.importorskip("numpy")
    # numpy ints are ints (numbers.Integral); an int is a fine float; a torch dtype a dtype.
    import torch
    loader = stoker.Loader(dataset, batch_size=np.int64(4), seed=np.uint64(2**64 - 1),
                           max_error_rate=1, threads=2, pixel_dtype=torch.bfloat16)
    b = next(iter(loader))
    assert b["input_ids"].shape[0] == 4 and b["pixel_values"].dtype == torch.bfloat16


def test_cpp_checks_again_before_narrowing(stoker, dataset):
    """_stoker.RawLoader called directly (no package checks): the same errors, never a wrap."""
    raw = stoker._stoker.RawLoader
    cases = [
        ({"batch_size": 2**40}, "batch_size must be an int in [1, 65536], got 1099511627776"),
        ({"batch_size": True}, "batch_size must be an int in [1, 65536], got True (bool)"),
        ({"batch_size": "8"}, "batch_size must be an int in [1, 65536], got '8' (str)"),
        ({"seed": -1}, "seed must be an int in [0, 18446744073709551615], got -1"),
        ({"seed": 2**64}, "seed must be an int in [0, 18446744073709551615]"),
        ({"threads": 2**31}, f"threads must be an int in [0, {CPU_CAP}]"),
        ({"max_length": 2**63}, "max_length must be an int in [0, 2147483647]"),
        ({"max_error_rate": math.nan}, "max_error_rate must be a number in [0, 1], got nan"),
        ({"max_error_rate": 10**400}, "max_error_rate must be a number in [0, 1]"),
        ({"strict": 1}, "strict must be a bool, got 1 (int)"),
        ({"media_root": [3]}, "media_root must be a str or a list of non-empty strs"),
        ({"media_root": [""]}, "media_root must be a str or a list of non-empty strs"),
        ({"allow_buckets": 5}, "allow_buckets must be a str or a list of non-empty strs"),
        ({"max_record_bytes": 4 << 31}, "max_record_bytes must be an int in [1, 4294967296]"),
        ({"io_deadline_ms": 0}, "io_deadline_ms must be an int in [1, 2147483647], got 0"),
        ({"imds": "yes"}, "imds must be a bool"),
        ({"rank": 2**32, "world_size": 2}, "rank must be an int in [0, 2147483647]"),
        ({"no_such": 1}, "unknown option 'no_such'"),
        ({"connect": "x"}, "unknown option 'connect'"),  # the package's, never _stoker's
        # how options combine is checked here too, naming them as Python does
        ({"max_tokens": 5}, "max_tokens needs packing=True or token_budget=True"),
        ({"packing": True, "token_budget": True}, "packing and token_budget exclude each other"),
        ({"rank": 0}, "rank and world_size go together"),
        ({"rank": 2, "world_size": 2}, "rank must be an int in [0, world_size - 1] = [0, 1], got 2"),
        ({"arena_bytes": 1 << 20, "prefetch": 17},
         "prefetch must be an int in [1, 16] (one ready batch per 64 KiB of the 1 MiB arena, "
         "arena_bytes), got 17"),
        ({"trace_sample": 2}, "trace_sample needs trace=FILE"),
        ({"arena_mb": 0}, f"arena_mb must be an int in [1, {ARENA_MAX >> 20}] (3/4 of this machine's memory"),
        ({"arena_mb": True}, "arena_mb must be an int in [1, "),
        ({"arena_mb": 64, "arena_bytes": 64 << 20},
         "arena_mb and arena_bytes are the same option (MiB / bytes): give one"),
        ({"arena_mb": 1, "prefetch": 17},
         "prefetch must be an int in [1, 16] (one ready batch per 64 KiB of the 1 MiB arena"),
    ]
    for extra, message in cases:
        with pytest.raises(stoker.InvalidArgumentError) as e:
            raw(dict({"data": [dataset]}, **extra))
        assert message in str(e.value), (extra, str(e.value))
    # and the new keys are read: a valid set creates a loader
    ok = raw({"data": [dataset], "batch_size": 4, "media_root": [str(pathlib.Path(dataset).parent)],
              "allow_buckets": "*", "trust_media_paths": False, "max_object_bytes": 1 << 20,
              "max_record_bytes": 1 << 16, "io_deadline_ms": 1000, "imds": False})
    assert ok.next() is not None
    ok.close()


SERVE_BAD = [
    (dict(batch_size="8"), "batch_size must be an int in [1, 65536], got '8' (str)"),
    (dict(media_root=[1]), "media_root must be a str or os.PathLike, or a list of them"),
    (dict(world_size=0), "world_size must be None or an int in [1, 4096], got 0 (int)"),
    (dict(world_size=True), "world_size must be None or an int in [1, 4096], got True (bool)"),
    (dict(window=0), "window must be an int in [1, 64], got 0 (int)"),
    (dict(window=65), "window must be an int in [1, 64], got 65 (int)"),
    (dict(idle_timeout_s="1"), "idle_timeout_s must be None or a number in [0, 1e+07]"),
    (dict(progress_s=-1), "progress_s must be a number in [0, 86400], got -1 (int)"),
    (dict(progress_s=math.inf), "progress_s must be a number in [0, 86400]"),
    (dict(clients=2), "serve: unknown option 'clients'"),  # the unranked server is gone
    # every rank has its own arena: together they must fit the memory (checked in C++)
    (dict(world_size=4, arena_bytes=MEMORY // 2),
     "arena_bytes x world_size = "),
    (dict(socket=5), "socket must be None or a str or an os.PathLike, got 5 (int)"),
    (dict(connect_timeout_s=1), "serve: unknown option 'connect_timeout_s'"),
]


@pytest.mark.parametrize("kw,message", SERVE_BAD, ids=[str(k) for k, _ in SERVE_BAD])
def test_serve_checks_options_before_starting(stoker, tmp_path, kw, message):
    # Nothing is served and nothing waits: the error comes before the loader or the socket.
    with pytest.raises(stoker.InvalidArgumentError) as e:
        stoker.serve(str(tmp_path / "missing.jsonl"), **kw)
    assert message in str(e.value)
    assert not list(tmp_path.iterdir())


def test_served_mode_checks_its_own_options(stoker, tmp_path):
    sock = str(tmp_path / "nobody.sock")
    with pytest.raises(stoker.InvalidArgumentError,
                       match=r"connect must be None, True or a socket path .*got False \(bool\)"):
        stoker.Loader(connect=False)
    with pytest.raises(stoker.InvalidArgumentError,
                       match=r"connect_timeout_s must be a number in \[0, 1e\+07\], got '1'"):
        stoker.Loader(connect=sock, connect_timeout_s="1")
    with pytest.raises(stoker.InvalidArgumentError,
                       match=r"resume_state\['epoch'\] must be an int ≥ 0, got '1' \(str\)"):
        stoker.Loader(connect=sock, resume_state={"epoch": "1", "position": 0})
    with pytest.raises(stoker.InvalidArgumentError, match=r"rank must be None or an int ≥ 0"):
        stoker.Loader(connect=sock, rank=-3)
    with pytest.raises(stoker.InvalidArgumentError, match=r"batch_size must be an int in \[1, 65536\]"):
        stoker.Loader(connect=sock, batch_size="4")
    # server_uid (issue 30 §2): a schema option of the served Loader, $STOKER_SERVER_UID its
    # fallback, both checked before anything connects.
    with pytest.raises(stoker.InvalidArgumentError,
                       match=r"server_uid must be None or an int in \[0, 4294967294\]"):
        stoker.Loader(connect=sock, server_uid=-1)


def test_server_uid_from_the_environment_is_checked_by_the_schema(stoker, tmp_path, monkeypatch):
    monkeypatch.setenv("STOKER_SERVER_UID", "nobody")
    with pytest.raises(stoker.InvalidArgumentError,
                       match=r"\$STOKER_SERVER_UID must be an integer in \[0, 4294967294\], "
                             r"got 'nobody'"):
        stoker.Loader(connect=str(tmp_path / "nobody.sock"), connect_timeout_s=0)
    monkeypatch.setenv("STOKER_SERVER_UID", "65534")
    assert stoker._stoker.option_env("server_uid") == 65534
    monkeypatch.delenv("STOKER_SERVER_UID")
    assert stoker._stoker.option_env("server_uid") is None


def test_errors_from_the_engine_name_the_python_argument(stoker, bad_dataset):
    # The failure budget is checked deep in the engine; from Python it names max_errors, the
    # argument the user can change, not the CLI's --max-errors (base/option_name.h).
    loader = stoker.Loader(bad_dataset, batch_size=4, threads=1, max_errors=0)
    with pytest.raises(stoker.StokerError) as e:
        for _ in loader:
            pass
    message = str(e.value)
    assert "max_errors 0" in message, message
    assert "--" not in message.split(";")[0], message


def test_connect_to_an_empty_path_is_refused(stoker):
    # issue 28: Loader(connect="") used to wait for the default socket.
    with pytest.raises(stoker.InvalidArgumentError, match="connect must be None, True or a "
                                                          "socket path, got '' "):
        stoker.Loader(connect="")


def test_environment_fallbacks_are_named_from_python_too(stoker, dataset, monkeypatch):
    monkeypatch.setenv("STOKER_IO_DEADLINE_MS", "soon")
    with pytest.raises(stoker.InvalidArgumentError,
                       match=r"\$STOKER_IO_DEADLINE_MS must be an integer in \[1, 2147483647\]"):
        stoker.Loader(dataset)
    monkeypatch.setenv("STOKER_IO_DEADLINE_MS", "1500")
    stoker.Loader(dataset, io_deadline_ms=2000, threads=1).close()  # the argument wins
