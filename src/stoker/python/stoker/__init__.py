"""stoker for PyTorch: a C++ VLM SFT data engine behind an iterable of dicts of torch tensors.

    import stoker
    loader = stoker.Loader(data="data.jsonl", model="qwen2.5-vl", batch_size=8)
    for epoch in range(3):             # or epochs=N in one Loader; each `for` is one epoch
        for batch in loader:           # dict: input_ids, labels, attention_mask, position_ids,
            ...                        #       pixel_values, image_grid_thw, sample_ids (+ with
                                       #       videos: pixel_values_videos, video_grid_thw,
                                       #       second_per_grid_ts; + with a mixture spec:
                                       #       source_index into loader.sources())
    sd = loader.state_dict()           # small dict; Loader(...).load_state_dict(sd) resumes

With finish="device" the batches carry each image's resized uint8 pixels (pixel_values_uint8, ...)
instead of pixel_values: `stoker.finish(batch, device="cuda")` builds pixel_values there, bit for
bit the CPU path's (stoker/_finish.py).

Tensors are zero-copy views (DLPack) into the engine's arena; a batch's memory goes back to the
engine when the last of its tensors dies, so holding batches holds engine memory (the engine
waits when its arena is full). Errors: see the table in ERROR_CLASSES and README.md.
"""
from __future__ import annotations

import collections
import os
import warnings
import weakref
from typing import Any, Dict, Iterator, Optional, Sequence, Union

from . import _options, _stoker
from ._finish import finish

__version__: str = _stoker.__version__  # CMake's project version, compiled into the extension

_Path = Union[str, "os.PathLike[str]"]
_Paths = Union[_Path, Sequence[_Path]]
__all__ = [
    "Loader", "StokerError", "InvalidArgumentError", "NotFoundError", "PermissionDeniedError",
    "DeadlineExceededError", "ERROR_CLASSES", "live_tensors", "serve", "StokerWarning", "finish",
]


# Served mode: a Loader(connect=...) takes batches as the server makes them. These are its own.
_SERVED_OPTIONS = ("rank", "world_size")


def _refuse_server_options(options: Dict[str, Any]) -> None:
    """Loader(connect=...) with pipeline options: the server's own apply, these would be silently
    ignored — refuse them, naming each (a value equal to the default passes: it changes nothing)."""
    defaults = _loader_defaults()
    given = [name for name, value in options.items()
             if name not in _SERVED_OPTIONS and
             (name not in defaults or not (value is defaults[name] or value == defaults[name]))]
    if given:
        shown = ", ".join(f"{n}={options[n]!r}" for n in given)
        _options.fail(f"Loader(connect=...): {shown}: the server makes the batches, so these "
                      "would be ignored here; give them to the server (`stoker serve ...` / "
                      "stoker.serve(...)). A served Loader takes rank, world_size, "
                      "connect_timeout_s, resume_state and server_uid")


_DEFAULTS: Optional[Dict[str, Any]] = None


def _loader_defaults() -> Dict[str, Any]:
    global _DEFAULTS
    if _DEFAULTS is None:
        import inspect

        _DEFAULTS = {name: p.default
                     for name, p in inspect.signature(Loader.__init__).parameters.items()
                     if p.default is not inspect.Parameter.empty}
    return _DEFAULTS


# ---- errors: one table from stoker's error codes to Python exceptions -----------------------

class StokerError(RuntimeError):
    """Base of every stoker error; `.code` is stoker's error code name ("DataLoss", ...)."""

    code: str = "Internal"


class StokerWarning(UserWarning):
    """What stoker goes on with but says: a forced resume, a state without a fingerprint."""


class InvalidArgumentError(StokerError, ValueError):
    code = "InvalidArgument"


class NotFoundError(StokerError, FileNotFoundError):
    code = "NotFound"


class PermissionDeniedError(StokerError, PermissionError):
    code = "PermissionDenied"


class DeadlineExceededError(StokerError, TimeoutError):
    code = "DeadlineExceeded"


# Codes not listed (Unavailable, DataLoss, ResourceExhausted, Unimplemented, Cancelled, Internal)
# raise StokerError itself with `.code` set. ResourceExhausted is deliberately NOT MemoryError:
# the engine returns it when the failure budget is exceeded (too many bad samples), and for an
# arena request larger than the whole arena — neither is the interpreter running out of memory,
# and code that catches MemoryError to free caches would do the wrong thing.
ERROR_CLASSES: Dict[str, type] = {
    "InvalidArgument": InvalidArgumentError,
    "NotFound": NotFoundError,
    "PermissionDenied": PermissionDeniedError,
    "DeadlineExceeded": DeadlineExceededError,
}
_stoker.install_error_classes(
    {code: ERROR_CLASSES.get(code, StokerError) for code in (
        "InvalidArgument", "NotFound", "PermissionDenied", "Unavailable", "DeadlineExceeded",
        "DataLoss", "ResourceExhausted", "Unimplemented", "Cancelled", "Internal",
        "FailedPrecondition")})


def live_tensors() -> int:
    """Tensors exported by any Loader and not yet freed (for leak checks)."""
    return _stoker.live_tensors()


_torch_from_dlpack = None


def _from_dlpack():
    global _torch_from_dlpack
    if _torch_from_dlpack is None:
        import torch.utils.dlpack  # imported on first Loader, not on `import stoker` (1.5-3 s)

        # The C entry point takes the capsule directly (from_dlpack's Python wrapper first probes
        # for __dlpack__: ~1.3 µs more per tensor); the public one where it is missing.
        _torch_from_dlpack = getattr(torch._C, "_from_dlpack", torch.utils.dlpack.from_dlpack)
    return _torch_from_dlpack


def serve(
    data: _Paths,
    socket: Optional[_Path] = None,
    world_size: Optional[int] = None,
    window: int = 4,
    idle_timeout_s: Optional[float] = None,
    progress_s: float = 5.0,
    quiet: bool = False,
    **loader_options: Any,
) -> Dict[str, Any]:
    """The node server: serves every rank of a `world_size`-rank job on this node its own shard
    (the batches of an in-process `Loader(data, rank=r, world_size=world_size)`), zero-copy over
    shared memory, to `stoker.Loader(connect=socket)` processes — the same library, the same
    behaviour and the same output lines as `stoker serve` (and `stoker cluster --serve`): a rank
    whose process dies and attaches again continues after the last batch it released (what it
    held is sent again, first); a client's `resume_state` wins; per-rank counters (and Prometheus
    metrics with `metrics_port=`). socket=None: the per-user default path (the clients' default
    with connect=True); world_size=None: $WORLD_SIZE, else 1. Blocks, GIL released, until every
    rank finished its epochs (Ctrl-C: KeyboardInterrupt once the server is closed); returns the
    counters in total and per rank. `loader_options` are Loader's (batch_size, media_root, ...;
    threads is for all ranks together, split among them), checked the same way; a bad one
    raises InvalidArgumentError before anything listens."""
    kw = _options.check_options(dict(loader_options, data=data, socket=socket,
                                     world_size=world_size, window=window,
                                     idle_timeout_s=idle_timeout_s, progress_s=progress_s,
                                     quiet=quiet), "serve")
    # SIGTERM stops the server cleanly too (clients closed, socket unlinked), as it stops `stoker
    # serve`: raised here as KeyboardInterrupt, like Ctrl-C, once the server is closed.
    import signal
    import threading

    previous = None
    if threading.current_thread() is threading.main_thread() and \
            signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        def _terminate(signum: int, frame: Any) -> None:
            raise KeyboardInterrupt("SIGTERM")

        previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        return _stoker.serve(kw)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


class Loader:
    """Batches for this rank, in a deterministic order, as dicts of torch tensors.

    Iterating yields the batches of the current epoch and stops at its end; iterate again for the
    next epoch (with epochs=N or epochs=-1). rank/world_size default to the launcher's variables
    (torchrun, Open MPI, Slurm). Every blocking call releases the GIL.

    With a mixture spec as the data, every rank yields exactly one batch per global step of the
    plan: a step whose every sample failed on this rank is an empty batch (0 samples:
    `sample_ids` and every tensor with 0 rows), never skipped, so DDP ranks stay in step. A
    training loop must not skip it on that rank alone (the other ranks' gradient all-reduce would
    wait for it): take a zero-loss step there (e.g. `loss = sum(p.sum() for p in
    model.parameters()) * 0`) or skip the step on every rank together.

    Every option is checked before the engine starts: its type (an int option takes an int, not
    a bool or a str; a float option an int or a float; paths a str or os.PathLike), its range on
    this machine and its choices, then how the options combine. A bad one raises
    InvalidArgumentError (a ValueError) naming it, e.g. "batch_size must be an int in [1, 65536],
    got '8' (str)"; so does an unknown option. The options below come from stoker's option schema
    (`stoker options` prints them all; the README's table is the same); those not in the
    signature are keyword arguments too.

    Failed samples are skipped, reported (error_report, stats()) and budgeted: strict=True stops
    at the first; max_errors=N when more than N failed; max_error_rate=F (default 0.1) when more
    than a share F of this run's samples failed, checked once min_seen (100) were seen and again
    at the end of the data over all of them, however few (1 failed of 5 raises StokerError, code
    "DataLoss", at the end). Samples over max_length are dropped, not failed loudly: a
    RuntimeWarning gives their count at the end of each epoch that dropped some
    (stats()['dropped_too_long']).
    """

    def __init__(
        self,
        data: Optional[_Paths] = None,
        model: _Path = "qwen2.5-vl",
        tokenizer: Optional[_Path] = None,
        batch_size: int = 8,
        max_length: int = 8192,
        seed: int = 0,
        rank: Optional[int] = None,
        world_size: Optional[int] = None,
        threads: int = 0,
        prefetch: int = 4,
        mode: str = "prefetch",
        epochs: int = 1,
        strict: bool = False,
        max_errors: Optional[int] = None,
        max_error_rate: float = 0.10,
        error_report: Optional[_Path] = None,
        pixel_dtype: Any = "float32",
        finish: str = "cpu",
        padding: str = "longest",
        io_threads: int = 4,
        arena_bytes: int = 1 << 30,
        media_root: Optional[_Paths] = None,
        trust_media_paths: bool = False,
        allow_buckets: Union[None, str, Sequence[str]] = None,
        max_object_bytes: int = 256 << 20,
        max_record_bytes: int = 16 << 20,
        io_deadline_ms: Optional[int] = None,
        imds: bool = False,
        packing: bool = False,
        max_tokens: Optional[int] = None,
        pack_format: Optional[str] = None,
        connect: Union[None, bool, _Path] = None,
        trace: Optional[_Path] = None,
        **advanced: Any,
    ) -> None:
        # Every option is checked here, before C++ sees it (type, range, choices; _options.py).
        options: Dict[str, Any] = dict(
            model=model, tokenizer=tokenizer, batch_size=batch_size, max_length=max_length,
            seed=seed, rank=rank, world_size=world_size, threads=threads, prefetch=prefetch,
            mode=mode, epochs=epochs, strict=strict, max_errors=max_errors,
            max_error_rate=max_error_rate, error_report=error_report, pixel_dtype=pixel_dtype,
            finish=finish, padding=padding, io_threads=io_threads, arena_bytes=arena_bytes,
            trust_media_paths=trust_media_paths, max_object_bytes=max_object_bytes,
            max_record_bytes=max_record_bytes, io_deadline_ms=io_deadline_ms, imds=imds,
            packing=packing, max_tokens=max_tokens, pack_format=pack_format)
        if "arena_mb" in advanced and arena_bytes == 1 << 30:
            del options["arena_bytes"]  # the cap given in MiB instead (one option, two spellings)
        if media_root is not None:
            options["media_root"] = media_root
        if allow_buckets is not None:
            options["allow_buckets"] = allow_buckets
        if data is not None:
            options["data"] = data
        if trace is not None:
            options["trace"] = trace
        self._from_dlpack = _from_dlpack()
        self._stash = None  # first batch of the next epoch, read while ending this one
        # A mixture's sources (sources()) and their first sample ids as a tensor (source_index);
        # read once, at the first batch or sources() call (None: not yet).
        self._sources = None
        self._source_firsts = None
        self._ended = False
        self._max_length = max_length
        self._too_long_warned = 0  # dropped_too_long already warned about
        self._handoff_ns: "collections.deque[int]" = collections.deque(maxlen=8192)
        self.batch_size = batch_size
        self._client = None
        if connect is None and data is None and os.environ.get("STOKER_SERVER"):
            # Launched next to a node server (`stoker serve`) that named its socket in
            # STOKER_SERVER: an explicit choice. A default socket that merely exists is not one
            # (it could be anyone's job on this node): the error below names it instead.
            connect = os.environ["STOKER_SERVER"]
        if connect is not None:
            # Served mode: batches come from a `stoker serve` / `stoker.serve` process on this
            # node; `data` and the pipeline options are the server's business (pass data=None).
            # The attach names this rank (rank/world_size, else torchrun's RANK/WORLD_SIZE, Open
            # MPI, Slurm): `stoker serve` sends this rank's own shard, resumed from resume_state
            # (a dict with epoch/position/errors) or from what this rank last released.
            if trace is not None:
                _options.fail("Loader: trace= traces an in-process Loader; in served mode trace "
                              "the server (stoker serve --trace FILE)")
            target = _options.connect_target(connect)
            timeout_s = _options.SECONDS("connect_timeout_s", advanced.pop("connect_timeout_s", 30))
            resume_state = advanced.pop("resume_state", None)
            # A server of another uid only when named (server_uid=, else $STOKER_SERVER_UID,
            # checked by the option schema): the client checks the server's SO_PEERCRED.
            server_uid = advanced.pop("server_uid", None)
            server_uid = _options.LOADER_OPTIONS["server_uid"]("server_uid", server_uid)
            if server_uid is None:
                server_uid = _stoker.option_env("server_uid")
            options.update(advanced)
            kw = _options.check_options(options, "Loader")
            _refuse_server_options(options)
            state = None
            if resume_state is not None:
                state = _options.check_state(resume_state, "resume_state")
                state.pop("fingerprint", None)  # served: the server owns the order
            self._client = _stoker.RawClient(
                target, int(timeout_s * 1000), -1 if kw["rank"] is None else kw["rank"],
                -1 if kw["world_size"] is None else kw["world_size"], state,
                -1 if server_uid is None else server_uid)
            self._raw = self._client
            return
        if data is None:
            hint = ""
            try:
                if os.path.exists(_stoker.default_socket_path()):
                    hint = (f"; a node server listens at {_stoker.default_socket_path()}: "
                            "connect=True uses it")
            except StokerError:
                pass  # no private socket folder: no server
            raise InvalidArgumentError(
                "Loader: pass data=... (or connect=... / $STOKER_SERVER for served mode)" + hint)
        options.update(advanced)  # sample_window, fetch_bytes_in_flight, arena_shared, ...
        self._raw = _stoker.RawLoader(_options.check_options(options, "Loader"))
        if trace is not None:
            # The trace is written when the engine stops: close(), `with`, garbage collection,
            # or at interpreter exit (weakref.finalize runs atexit) — whichever comes first.
            weakref.finalize(self, self._raw.close)

    # -- iteration ------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[Dict[str, Any]]:
        raw_next = self._raw.next
        wrap = self._wrap
        epoch = None
        while not self._ended:
            if self._stash is not None:
                item, self._stash = self._stash, None
            else:
                item = raw_next()
            if item is None:
                self._ended = True
                self._warn_dropped()
                return
            if epoch is None:
                epoch = item[2]
            elif item[2] != epoch:
                self._stash = item
                self._warn_dropped()
                return
            yield wrap(item)

    def _warn_dropped(self) -> None:
        """Samples over max_length are skipped (reported, not raised): say how many, once per
        epoch that dropped some (issue 30 §14: they vanished silently)."""
        if self._client is not None:
            return
        n = int(self._raw.stats().get("dropped_too_long", 0))
        if n > self._too_long_warned:
            warnings.warn(
                f"stoker.Loader: {n - self._too_long_warned} sample(s) longer than max_length="
                f"{self._max_length} tokens were dropped ({n} in all; stats()['dropped_too_long'],"
                " stats()['failures'] name them); raise max_length, or truncate=True to cut whole"
                " turns instead", RuntimeWarning, stacklevel=3)
            self._too_long_warned = n

    def _wrap(self, item) -> Dict[str, Any]:
        caps, _step, _epoch, ready_ns = item
        fd = self._from_dlpack
        out = {name: fd(cap) for name, cap in caps.items()}
        if "max_length_q" in out:  # packed HF form: flash-attention takes Python ints
            out["max_length_q"] = int(out["max_length_q"])
            out["max_length_k"] = int(out["max_length_k"])
        if self._sources is None:
            self.sources()
        if self._source_firsts is not None and "sample_ids" in out:
            # Each sample's source (an index into sources()): its id's range [first_id,
            # first_id + records), one per entry of sample_ids (a padded row, a packed sequence).
            import torch

            ids = out["sample_ids"]
            out["source_index"] = (torch.searchsorted(self._source_firsts, ids, right=True) - 1).to(torch.int32)
        self._handoff_ns.append(_stoker.monotonic_ns() - ready_ns)
        return out

    # -- state ----------------------------------------------------------------------------------
    def state_dict(self) -> Dict[str, Any]:
        """Position after the last batch this iterator yielded: a few ints, and the fingerprint
        of what decided the order (data, seed, batch size, packing, max_length, model)."""
        self._local_only("state_dict")
        s = self._raw.state_before_last() if self._stash is not None else self._raw.state()
        s["version"] = 1
        return s

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Resume before the first batch: delivers exactly what was not delivered (any world size).
        Checked like every option (InvalidArgumentError naming the key and the value): a dict
        from state_dict(), its numbers within this data (a position past the end is refused), its
        fingerprint this Loader's — a state written with another seed, batch size, dataset, ...
        is refused naming the field, unless force_resume=True: then it resumes and warns
        (StokerWarning). A state without a fingerprint (an older stoker) resumes with a warning."""
        self._local_only("load_state_dict")
        note = self._raw.resume(_options.check_state(state, "load_state_dict: state"))
        if note:
            import warnings

            warnings.warn(f"stoker: load_state_dict: {note}", StokerWarning, stacklevel=2)

    def stats(self) -> Dict[str, Any]:
        """Engine counters (wait ratio, per-stage busy time and utilisation) + hand-off cost.
        With a mixture spec: "sources", per leaf name, share, records, first_id (its samples are
        sample ids [first_id, first_id + records)), subflavors (Energon's dict attached to every
        sample of the leaf), planned (the job's plan), delivered and failed (this rank).
        Served mode: the client's counters (batches, socket bytes) + hand-off cost."""
        s = self._client.info() if self._client is not None else self._raw.stats()
        h = sorted(self._handoff_ns)
        if h:
            s["handoff_us_p50"] = h[len(h) // 2] / 1e3
            s["handoff_us_p99"] = h[min(len(h) - 1, (len(h) * 99) // 100)] / 1e3
        return s

    def sources(self) -> list:
        """A mixture's sources, in the order of the `source_index` each of its batches carries
        (int32, one per entry of `sample_ids`: a padded batch's rows, a pack's sequences): per
        source its index, name (the leaf's path as the spec resolved it), share (weight or
        repetitions), records, first_id (its samples are sample ids [first_id, first_id +
        records)) and subflavors (Energon's dict for every sample of it: MetadatasetV2's
        `subflavors`, outer levels' keys winning). Empty for data that is not a mixture (its
        batches then have no source_index). Served mode: the server's plan is not sent to the
        client, so this is empty there and the batches have no source_index (use the server's
        summary, or a Loader of your own)."""
        if self._sources is None:
            table = [] if self._client is not None else self._raw.stats().get("sources", [])
            self._sources = [{"index": i, "name": e["name"], "share": e["share"], "records": e["records"],
                              "first_id": e["first_id"], "subflavors": e["subflavors"]}
                             for i, e in enumerate(table)]
            if self._sources:
                import torch

                self._source_firsts = torch.tensor([e["first_id"] for e in self._sources], dtype=torch.int64)
        return [dict(e) for e in self._sources]

    # -- introspection --------------------------------------------------------------------------
    def arena_info(self) -> Dict[str, int]:
        """base address, capacity, in_use, peak_in_use, fd of the arena tensors point into
        (served mode: base and capacity of this process's copy-on-write mapping, server_pid)."""
        return self._client.info() if self._client is not None else self._raw.arena()

    def rank_info(self) -> Dict[str, int]:
        self._local_only("rank_info")
        return self._raw.rank()

    def _local_only(self, what: str) -> None:
        if self._client is not None:
            raise NotImplementedError(
                f"{what}() in served mode: the stoker.serve process owns the position")

    def close(self) -> None:
        """Stops the engine (joins its threads, GIL released). Delivered tensors stay valid."""
        self._stash = None
        self._raw.close()

    def __enter__(self) -> "Loader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# The option lists of the docstrings, from the schema (one declaration per option).
Loader.__doc__ = (Loader.__doc__ or "") + "\n    Options:" + _options.docs("Loader")
serve.__doc__ = (serve.__doc__ or "") + "\n    Options:" + _options.docs("serve")
