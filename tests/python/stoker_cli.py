"""Helpers to drive the `stoker` executable from tests: synth, preprocess (+ .npy dumps), and an
independent classifier of image files (format / coding / mode), read with Pillow and the RIFF
chunk names, so per-format counts never trust stoker's own description of its files."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

from PIL import Image, JpegImagePlugin

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".webp"}


def python_child_env(env: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """The environment for a child /usr/bin/python3 that imports `stoker`: the tree's extension
    on PYTHONPATH (STOKER_PYTHON_DIR), and in the sanitizer tree (STOKER_SANITIZE=1) the ASan and
    UBSan runtimes preloaded — the extension is built with them and they must load first; leak
    checking off (the interpreter's own allocations are not ours)."""
    e = dict(env or os.environ)
    if e.get("STOKER_PYTHON_DIR"):
        e["PYTHONPATH"] = e["STOKER_PYTHON_DIR"]
    if e.get("STOKER_SANITIZE") == "1":
        libs = [subprocess.run(["gcc", f"-print-file-name={n}"], capture_output=True,
                               text=True).stdout.strip() for n in ("libasan.so", "libubsan.so")]
        e["LD_PRELOAD"] = ":".join(libs)
        e["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=1"
    return e


def run(cmd: Sequence[str], timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(list(cmd), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    if proc.returncode < 0:
        raise AssertionError(f"{cmd[0]} died from signal {signal.Signals(-proc.returncode).name}:\n"
                             f"{proc.stderr.decode(errors='replace')[-4000:]}")
    if check and proc.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} exited {proc.returncode}:\n"
                             f"{proc.stderr.decode(errors='replace')[-4000:]}")
    return proc


def synth(stoker_bin: str, out: pathlib.Path, extra: Sequence[str] = (), timeout: float = 600):
    run([stoker_bin, "synth", "--out", str(out), *extra], timeout=timeout)
    return out


@dataclass
class Preprocessed:
    returncode: int
    records: List[dict]
    stderr: str


def preprocess(stoker_bin: str, model: str, files: Sequence[str], dump_dir: Optional[str] = None,
               dtype: Optional[str] = None, timeout: float = 600, env=None,
               extra: Sequence[str] = ()) -> Preprocessed:
    cmd = [stoker_bin, "preprocess", "--model", model, *extra]
    if dtype:
        cmd += ["--dtype", dtype]
    if dump_dir:
        cmd += ["--dump-dir", str(dump_dir)]
    cmd += [str(f) for f in files]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                          env=env)
    records = [json.loads(line) for line in proc.stdout.decode().splitlines() if line.strip()]
    return Preprocessed(proc.returncode, records, proc.stderr.decode(errors="replace"))


def image_files(root: pathlib.Path) -> List[pathlib.Path]:
    return sorted(p for p in root.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())


def _webp_kind(path: pathlib.Path) -> str:
    data = path.read_bytes()
    chunks = []
    pos = 12
    while pos + 8 <= len(data):
        fourcc = data[pos:pos + 4]
        size = int.from_bytes(data[pos + 4:pos + 8], "little")
        chunks.append(fourcc)
        pos += 8 + size + (size & 1)
    coding = "lossless" if b"VP8L" in chunks else "lossy"
    return coding + ("+alpha" if b"ALPH" in chunks else "")


def classify(path: pathlib.Path) -> str:
    """e.g. 'jpeg/progressive/4:2:0/RGB', 'png/P', 'webp/lossless/RGBA' (from Pillow)."""
    with Image.open(path) as img:
        fmt = (img.format or "?").lower()
        if fmt == "jpeg":
            coding = "progressive" if img.info.get("progressive") or img.info.get("progression") \
                else "baseline"
            sampling = {0: "4:4:4", 1: "4:2:2", 2: "4:2:0"}.get(
                JpegImagePlugin.get_sampling(img), "-")
            if img.mode in ("L", "CMYK"):
                sampling = "-"
            return f"jpeg/{coding}/{sampling}/{img.mode}"
        if fmt == "png":
            return f"png/{img.mode}"
        if fmt == "webp":
            return f"webp/{_webp_kind(path)}/{img.mode}"
        return f"{fmt}/{img.mode}"


def count_by(keys: Sequence[str]) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for k in keys:
        out[k] = out.get(k, 0) + 1
    return dict(sorted(out.items()))
