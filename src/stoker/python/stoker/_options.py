"""The keyword options of `Loader(...)` and `serve(...)`, checked before anything reaches C++.

Every option is declared once, in stoker's option schema (src/stoker/config/options.cc): its
name, type, range (on this machine), choices, default and help. `_stoker.option_schema()` hands
that table over; this module builds one checker per option from it — its type (an int option
takes an int but not a bool; a float option an int or a float; a path a str or os.PathLike; a
list option one of those or a list of them), its range and its choices — and the docstrings'
option lists. A bad value raises `stoker.InvalidArgumentError` (a ValueError) naming the option
and the value, e.g. `batch_size must be an int in [1, 65536], got '8' (str)`. The C++ side checks
again, and checks the options against each other (packing's options, rank with world_size,
prefetch against the arena, ...), naming them as Python does.
"""
from __future__ import annotations

import json
import math
import numbers
import os
from typing import Any, Callable, Dict, List, Optional

from . import _stoker

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


def int_in(lo: int, hi: int, why: str = "", also: Optional[int] = None,
           also_means: str = "") -> Checker:
    suffix = f" ({why})" if why else ""
    full = f"an int in [{lo}, {hi}]{suffix}"
    desc = f"an int ≥ {lo}" if hi in _NATURAL_MAX else full
    if also is not None:
        desc = f"{also} ({also_means}) or {desc}"
        full = f"{also} ({also_means}) or {full}"

    def check(name: str, value: Any) -> int:
        if not _is_int(value):
            fail(f"{name} must be {desc}, {_got(value)}")
        v = int(value)
        if also is not None and v == also:
            return v
        if v < lo:
            fail(f"{name} must be {desc}, {_got(value)}")
        if v > hi:
            fail(f"{name} must be {full}, {_got(value)}")
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


def text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        fail(f"{name} must be a str, {_got(value)}")
    return value


text.desc = "a str"


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


def _pixel_dtype(name: str, value: Any) -> str:
    s = value
    if type(value).__module__ == "torch" and type(value).__name__ == "dtype":
        s = str(value)[len("torch."):]  # torch.bfloat16 → "bfloat16"
    if not isinstance(s, str) or s not in ("float32", "bfloat16"):
        fail(f"{name} must be 'float32', 'bfloat16', torch.float32 or torch.bfloat16, "
             f"{_got(value)}")
    return s


_pixel_dtype.desc = "'float32', 'bfloat16' or a torch dtype"


_STATE_NUMBERS = {"epoch": (0, U64), "position": (0, U64), "errors": (0, U64),
                  "packs": (0, U64), "plan": (1, 2**32 - 1)}
_FP_NAME = frozenset("abcdefghijklmnopqrstuvwxyz_")
_FP_VALUE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:/+-")


def check_state(value: Any, name: str = "state") -> Dict[str, Any]:
    """A state_dict() handed back (load_state_dict, resume_state): untrusted like any option.
    A dict (any Mapping) of: version (1), epoch and position (required), errors, packs and plan
    (packing), fingerprint (a dict of short str → str, what decided the order). Anything else —
    another type, an unknown key, a value that is not an int in range, a bool — raises
    InvalidArgumentError naming the key and the value. Whether the numbers fit this Loader's data
    (a position past the end) and whether the fingerprint matches is the engine's check."""
    from collections.abc import Mapping

    if not isinstance(value, Mapping):
        fail(f"{name} must be a dict from state_dict() (epoch, position, errors, ...), "
             f"{_got(value)}")
    out: Dict[str, Any] = {}
    for key, v in value.items():
        if not isinstance(key, str) or key not in (*_STATE_NUMBERS, "version", "fingerprint", "mix"):
            fail(f"{name}: unknown key {key!r} (a state_dict() has version, epoch, position, "
                 "errors, packs, plan, fingerprint)")
        where = f"{name}['{key}']"
        if key == "version":
            if not _is_int(v) or int(v) != 1:
                fail(f"{where} must be 1 (this stoker's state version), {_got(v)}")
        elif key == "mix":  # a mixture's global plan (issue 23): "SPEC.MODE.G.C0_C1_..."
            if not isinstance(v, str) or not 0 < len(v) <= 4096 or \
                    not set(v) <= set("0123456789abcdefw._"):
                fail(f"{where} must be a str of 1 to 4096 of 0-9 a-f w . _ (from state_dict()), "
                     f"{_got(v)}")
            out[key] = v
        elif key == "fingerprint":
            if not isinstance(v, Mapping) or len(v) > 16:
                fail(f"{where} must be a dict of at most 16 str → str (from state_dict()), "
                     f"{_got(v)}")
            fp = {}
            for fk, fv in v.items():
                if not isinstance(fk, str) or not 0 < len(fk) <= 32 or \
                        not set(fk) <= _FP_NAME:
                    fail(f"{where}: a key must be a str of a-z and _ (1 to 32), {_got(fk)}")
                if not isinstance(fv, str) or not 0 < len(fv) <= 80 or \
                        not set(fv) <= _FP_VALUE:
                    fail(f"{where}['{fk}'] must be a str of 1 to 80 of A-Z a-z 0-9 . _ : / + -, "
                         f"{_got(fv)}")
                fp[fk] = fv
            out[key] = fp
        else:
            lo, hi = _STATE_NUMBERS[key]
            out[key] = int_in(lo, hi)(where, v)
    for key in ("epoch", "position"):
        if key not in out:
            fail(f"{name}['{key}'] is missing (a state_dict() has epoch and position), "
                 f"got keys {sorted(map(str, value.keys()))}")
    if ("packs" in out) != ("plan" in out):
        fail(f"{name}: packs and plan go together (a packing state), got keys "
             f"{sorted(out.keys())}")
    out.pop("version", None)
    return out


def _state(name: str, value: Any) -> Dict[str, int]:
    # Served mode: the numbers travel to the server (it owns the position); no fingerprint.
    s = check_state(value, name)
    s.pop("fingerprint", None)
    return s


_state.desc = "a state dict"


def _as_is(name: str, value: Any) -> Any:
    return value


_as_is.desc = "anything"

# The schema, as _stoker has it (machine-dependent bounds computed on this machine).
SCHEMA: List[Dict[str, Any]] = _stoker.option_schema()


def _json_object(name: str, value: Any) -> str:
    """chat_template_kwargs: a dict (sent as JSON) or its JSON text (checked by the C++ side)."""
    if isinstance(value, dict):
        try:
            return json.dumps(value, ensure_ascii=False)
        except (TypeError, ValueError) as e:
            fail(f"{name} must hold JSON values only: {e}")
    if isinstance(value, str):
        return value
    fail(f"{name} must be a dict or a JSON object str, {_got(value)}")


_json_object.desc = "a dict or a JSON object str"


def _checker(spec: Dict[str, Any]) -> Checker:
    kind = spec["kind"]
    if spec["name"] == "pixel_dtype":  # Python also takes torch dtypes
        c = _pixel_dtype
    elif spec["name"] == "chat_template_kwargs":
        c = _json_object
    elif kind == "bool":
        c = boolean
    elif kind in ("int", "bytes", "uint"):
        c = int_in(spec["lo"], spec["hi"], spec["why"], spec["also"], spec["also_means"])
    elif kind == "number":
        c = number_in(spec["dlo"], spec["dhi"])
    elif kind == "path":
        c = path
    elif kind == "text":
        c = text if spec["name"] != "connect" else _as_is  # connect_target checks it
    elif kind == "list":
        c = strings
    elif kind == "choice":
        c = choice(*spec["choices"])
    else:
        c = _state
    return optional(c) if spec["nullable"] else c


def _table(command: str) -> Dict[str, Checker]:
    return {s["name"]: _checker(s) for s in SCHEMA if command in s["commands"]}


# name → checker, for each entry point (the keys the C++ side reads, plus the package's own).
LOADER_OPTIONS: Dict[str, Checker] = _table("Loader")
SERVE_OPTIONS: Dict[str, Checker] = _table("serve")
DEFAULTS = {s["name"]: s["default"] for s in SCHEMA if "Loader" in s["commands"]}
# Read by the package, never sent to _stoker.
PACKAGE_ONLY = ("connect", "connect_timeout_s", "resume_state", "server_uid")


def check_options(options: Dict[str, Any], who: str = "Loader") -> Dict[str, Any]:
    """The options checked one by one and normalised (paths → str, numbers → int/float) for
    `_stoker`; None (where allowed) means unset. How they combine is checked by the C++ side."""
    table = SERVE_OPTIONS if who == "serve" else LOADER_OPTIONS
    out: Dict[str, Any] = {}
    for name, value in options.items():
        checker = table.get(name)
        if checker is None:
            hint = ""
            if name == "window" and who != "serve":
                hint = (" (window is serve()'s batches a rank may hold; the Loader's samples in "
                        "flight are sample_window)")
            elif name in (LOADER_OPTIONS if who == "serve" else SERVE_OPTIONS):
                hint = f" (an option of {'Loader' if who == 'serve' else 'serve()'})"
            fail(f"{who}: unknown option '{name}'{hint}")
        out[name] = checker(name, value)
    return out


def docs(command: str) -> str:
    """The options of `command` ("Loader" or "serve") as docstring lines, by group."""
    lines: List[str] = []
    group = None
    key = "default" if command == "Loader" else "default_serve"
    for s in SCHEMA:
        if command not in s["commands"]:
            continue
        if s["group"] != group:
            group = s["group"]
            lines.append(f"\n    {group}:")
        extra = []
        if s[key] is not None and s["kind"] != "bool":
            extra.append(f"default {s[key]!r}")
        if s["env"]:
            extra.append(f"else ${s['env']}")
        if s["model_folder"]:
            extra.append("the model folder's stoker.json may set it")
        tail = f" ({'; '.join(extra)})" if extra else ""
        lines.append(f"      {s['name']:<21} {s['help']}{tail}")
    return "\n".join(lines) + "\n"


# Time limits in seconds: ≤ 10^7 s (115 days) keeps every ms/ns conversion far from overflow.
SECONDS = number_in(0.0, 1e7)


def connect_target(value: Any) -> Optional[str]:
    """connect=: True (the per-user default socket) → "", a socket path → str."""
    if value is True:
        return ""
    if isinstance(value, (str, os.PathLike)) and not isinstance(value, bool):
        p = path("connect", value)
        if not p:
            fail("connect must be None, True or a socket path, got '' (an empty path)")
        return p
    fail(f"connect must be None, True or a socket path (str or os.PathLike), {_got(value)}")
