"""The keyword options of `Loader(...)` and `serve(...)`, checked before anything reaches C++.

Each option has one checker: its type (an int option takes an int but not a bool; a float option
an int or a float; a path a str or os.PathLike; a list option one of those or a list of them),
its range (what the engine's field holds) and its choices. A bad value raises
`stoker.InvalidArgumentError` (a ValueError) naming the option and the value, e.g.
`batch_size must be an int ≥ 1, got '8' (str)`. The C++ side (`make_config`) checks again.
"""
from __future__ import annotations

import math
import numbers
import os
from typing import Any, Callable, Dict, List, Optional

I32 = 2**31 - 1
I64 = 2**63 - 1
U64 = 2**64 - 1
_NATURAL_MAX = (I32, I64, U64)  # a field's own limit: "an int ≥ 1" says enough until it is hit


def fail(message: str) -> None:
    from . import InvalidArgumentError  # defined by the package before any option is checked

    raise InvalidArgumentError(message)


def _got(value: Any) -> str:
    r = repr(value)
    if len(r) > 80:
        r = r[:77] + "..."
    return f"got {r} ({type(value).__name__})"


def _is_int(value: Any) -> bool:
    # numbers.Integral covers numpy's ints too; bool is an int in Python but never a count here.
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


Checker = Callable[[str, Any], Any]


def int_in(lo: int, hi: int) -> Checker:
    desc = f"an int ≥ {lo}" if hi in _NATURAL_MAX else f"an int in [{lo}, {hi}]"

    def check(name: str, value: Any) -> int:
        if not _is_int(value):
            fail(f"{name} must be {desc}, {_got(value)}")
        v = int(value)
        if v < lo:
            fail(f"{name} must be {desc}, {_got(value)}")
        if v > hi:
            fail(f"{name} must be an int in [{lo}, {hi}], {_got(value)}")
        return v

    check.desc = desc
    return check


def number_in(lo: float, hi: float) -> Checker:
    desc = f"a number in [{lo:g}, {hi:g}]"

    def check(name: str, value: Any) -> float:
        if not isinstance(value, numbers.Real) or isinstance(value, bool):
            fail(f"{name} must be {desc}, {_got(value)}")
        v = float(value)
        if not math.isfinite(v) or v < lo or v > hi:
            fail(f"{name} must be {desc}, {_got(value)}")
        return v

    check.desc = desc
    return check


def boolean(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        fail(f"{name} must be a bool (True or False), {_got(value)}")
    return value


boolean.desc = "a bool"


def path(name: str, value: Any) -> str:
    if isinstance(value, os.PathLike):
        p = os.fspath(value)
        if isinstance(p, str):
            return p
    elif isinstance(value, str):
        return value
    fail(f"{name} must be a str or an os.PathLike, {_got(value)}")


path.desc = "a str or an os.PathLike"


def strings(name: str, value: Any) -> List[str]:
    """A str / os.PathLike, or a list (tuple, any iterable but a str) of them; none empty."""
    desc = "a str or os.PathLike, or a list of them"
    if isinstance(value, (str, os.PathLike)):
        items = [value]
    elif isinstance(value, (bytes, dict)) or not hasattr(value, "__iter__"):
        fail(f"{name} must be {desc}, {_got(value)}")
    else:
        items = list(value)
    out = []
    for item in items:
        if not isinstance(item, (str, os.PathLike)):
            fail(f"{name} must be {desc}, {_got(value)}")
        s = path(name, item)
        if not s:
            fail(f"{name}: an empty entry in {_got(value)}")
        out.append(s)
    return out


strings.desc = "a str or os.PathLike, or a list of them"


def choice(*names: str) -> Checker:
    desc = "one of " + ", ".join(repr(n) for n in names)

    def check(name: str, value: Any) -> str:
        if not isinstance(value, str) or value not in names:
            fail(f"{name} must be {desc}, {_got(value)}")
        return value

    check.desc = desc
    return check


def optional(inner: Checker) -> Checker:
    def check(name: str, value: Any) -> Any:
        if value is None:
            return None
        try:
            return inner(name, value)
        except ValueError as e:
            message = str(e)
        # The same message, saying that None was allowed too (raised outside the except: one
        # traceback, not a chain).
        fail(message.replace(f"{name} must be ", f"{name} must be None or ", 1))

    check.desc = "None or " + inner.desc
    return check


def _epochs(name: str, value: Any) -> int:
    if not _is_int(value) or not (int(value) == -1 or 1 <= int(value) <= I64):
        fail(f"{name} must be -1 (forever) or an int ≥ 1, {_got(value)}")
    return int(value)


def _pixel_dtype(name: str, value: Any) -> str:
    s = value
    if type(value).__module__ == "torch" and type(value).__name__ == "dtype":
        s = str(value)[len("torch."):]  # torch.bfloat16 → "bfloat16"
    if not isinstance(s, str) or s not in ("float32", "bfloat16"):
        fail(f"{name} must be 'float32', 'bfloat16', torch.float32 or torch.bfloat16, "
             f"{_got(value)}")
    return s


def _position_rows(name: str, value: Any) -> int:
    if not _is_int(value) or int(value) not in (3, 4):
        fail(f"{name} must be 3 or 4, {_got(value)}")
    return int(value)


_position_rows.desc = "3 or 4"

# Options that only mean something with packing=True or token_budget=True.
PACKING_ONLY = ("max_tokens", "pack_format", "pack_window", "pack_align", "position_rows")

# The engine's options: name → checker (the dict keys make_config in module.cc reads).
LOADER_OPTIONS: Dict[str, Checker] = {
    "data": strings,
    "model": path,
    "tokenizer": optional(path),
    "batch_size": int_in(1, I32),
    "max_length": int_in(0, I64),
    "padding": choice("longest", "max_length"),
    "pixel_dtype": _pixel_dtype,
    "seed": int_in(0, U64),
    "epochs": _epochs,
    "rank": optional(int_in(0, I32)),
    "world_size": optional(int_in(1, I32)),
    "local_rank": optional(int_in(0, I32)),
    "local_world_size": optional(int_in(1, I32)),
    "mode": choice("serial", "concurrent", "prefetch"),
    "threads": int_in(0, I32),
    "prefetch": int_in(1, I32),
    "io_threads": int_in(1, I32),
    "window": int_in(0, I32),
    "fetch_bytes_in_flight": int_in(1, I64),
    "arena_bytes": int_in(4096, 2**62),
    "arena_mb": int_in(1, 2**42),
    "arena_shared": boolean,
    "worker_sched": choice("batch", "idle", "normal"),
    "strict": boolean,
    "max_errors": optional(int_in(0, I64)),
    "max_error_rate": number_in(0.0, 1.0),
    "min_seen": int_in(0, I64),
    "error_report": optional(path),
    "media_root": strings,
    "trust_media_paths": boolean,
    "allow_buckets": strings,
    "max_object_bytes": int_in(1, I64),
    "max_record_bytes": int_in(1, 4 << 30),
    "io_deadline_ms": optional(int_in(1, I32)),
    "imds": boolean,
    "packing": boolean,
    "token_budget": boolean,
    "max_tokens": optional(int_in(1, I32)),
    "pack_format": optional(choice("hf", "megatron")),
    "pack_window": int_in(1, 1 << 24),
    "pack_align": int_in(1, 1 << 20),
    "position_rows": _position_rows,
    "truncate": boolean,
    "exif": choice("apply", "ignore"),
    "small_images": choice("resize", "refuse"),
    "trace": optional(path),
    "trace_sample": int_in(1, I64),
    "trace_max_events": int_in(1, I64),
}

# Time limits in seconds: ≤ 10^7 s (115 days) keeps every ms/ns conversion far from overflow.
SECONDS = number_in(0.0, 1e7)


def check_loader_options(options: Dict[str, Any], who: str = "Loader",
                         ranks_paired: bool = True) -> Dict[str, Any]:
    """The options checked and normalised (paths → str, numbers → int/float) for `_stoker`.
    ranks_paired: rank and world_size go together (in served mode either may come from the
    launcher's environment instead)."""
    out: Dict[str, Any] = {}
    for name, value in options.items():
        checker = LOADER_OPTIONS.get(name)
        if checker is None:
            fail(f"{who}: unknown option '{name}'")
        out[name] = checker(name, value)
    if ranks_paired and (out.get("rank") is None) != (out.get("world_size") is None):
        fail(f"{who}: rank and world_size go together, got rank={options.get('rank')!r}, "
             f"world_size={options.get('world_size')!r}")
    if out.get("rank") is not None and out.get("world_size") is not None and \
            out["rank"] >= out["world_size"]:
        fail(f"rank must be an int in [0, world_size - 1] = [0, {out['world_size'] - 1}], "
             f"{_got(options['rank'])}")
    if out.get("max_errors", 0) is None:
        out["max_errors"] = -1  # the engine's "no limit"
    _check_packing(out, who)
    for name in ("trace_sample", "trace_max_events"):
        if name in out and out.get("trace") is None:
            fail(f"{who}: {name} needs trace=FILE")
    if out.get("trace") is None:
        out.pop("trace", None)
    return out


def _check_packing(out: Dict[str, Any], who: str) -> None:
    pack, budget = out.get("packing", False), out.get("token_budget", False)
    if pack and budget:
        fail(f"{who}: packing and token_budget exclude each other")
    for name in PACKING_ONLY:
        if out.get(name) is not None and not (pack or budget):
            fail(f"{who}: {name} needs packing=True or token_budget=True")
    if budget and out.get("pack_format") is not None:
        fail(f"{who}: pack_format is for packing=True (token budgets give padded batches)")
    if out.get("pack_align") is not None and out.get("pack_format") != "megatron":
        fail(f"{who}: pack_align is for pack_format='megatron'")
    for name in PACKING_ONLY:
        if name in out and out[name] is None:
            del out[name]  # None: the engine's default


def connect_target(value: Any) -> Optional[str]:
    """connect=: True (the per-user default socket) → "", a socket path → str."""
    if value is True:
        return ""
    if isinstance(value, (str, os.PathLike)) and not isinstance(value, bool):
        return path("connect", value)
    fail(f"connect must be None, True or a socket path (str or os.PathLike), {_got(value)}")
