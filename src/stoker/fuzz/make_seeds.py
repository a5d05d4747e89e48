#!/usr/bin/python3
"""Seed corpora for stoker_fuzz, generated at run time (nothing generated is committed):
  - each target's hand-made seeds (`stoker_fuzz --target=T --write-seeds=DIR`: the project's own
    encoders for images and wire messages, small documents written in the harness sources);
  - `stoker synth --bad-fraction`: its JSONL records (OpenAI messages, some deliberately broken) and
    its images (JPEG baseline/progressive/grey/CMYK, PNG in every mode, WebP lossy/lossless/alpha),
    sorted into the jpeg/png/webp targets by their magic bytes;
  - the bad-input suite (tests/python/bad_input_kinds.py): its hostile records and media files;
  - the real chat templates of tests/jinja/templates, each with a parity context (jinja target).
usage: make_seeds.py --fuzz BUILD/stoker_fuzz --out DIR [--stoker BUILD/stoker]
Files over 64 KiB are left out (libFuzzer's -max_len follows the largest seed)."""
import argparse
import hashlib
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[2]
MAX_SEED = 64 * 1024
RECORD_TARGETS = ("record", "chat", "tokenizer")


def put(out: pathlib.Path, target: str, data: bytes, prefix: str) -> None:
    if len(data) > MAX_SEED:
        return
    d = out / target
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{prefix}-{hashlib.sha1(data).hexdigest()[:16]}").write_bytes(data)


def media_target(data: bytes):
    if data[:3] == b"\xff\xd8\xff":
        return "jpeg"
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        return "png"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    return None


def add_record(out: pathlib.Path, line: bytes, prefix: str) -> None:
    put(out, "record", line, prefix)
    put(out, "tokenizer", line, prefix)
    for opt in (b"\x00", b"\x01", b"\xc3"):  # chat: byte 0 picks template and options
        put(out, "chat", opt + line, prefix)


def add_media_tree(out: pathlib.Path, root: pathlib.Path, prefix: str) -> int:
    n = 0
    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.is_symlink() and p.stat().st_size <= MAX_SEED:
            data = p.read_bytes()
            t = media_target(data)
            if t is not None:
                put(out, t, data, prefix)
                n += 1
            elif p.suffix.lower() in (".jpg", ".png", ".webp", ".gif", ".bmp", ".svg", ".tiff"):
                for t in ("jpeg", "png", "webp"):  # broken or foreign: every decoder's corpus
                    put(out, t, data, prefix)
    return n


def synth_seeds(out: pathlib.Path, stoker: str, tmp: pathlib.Path) -> None:
    ds = tmp / "synth"
    subprocess.run([stoker, "synth", "--out", str(ds), "--n", "64", "--max-side", "160",
                    "--bad-fraction", "0.25", "--threads", "1"], check=True,
                   stdout=subprocess.DEVNULL)
    data = (ds / "data.jsonl").read_bytes()
    for line in data.splitlines():
        if line.strip():
            add_record(out, line, "synth")
    put(out, "manifest", data[:8192], "synth")
    n = add_media_tree(out, ds, "synth")
    print(f"make_seeds: stoker synth: {len(data.splitlines())} records, {n} images")


def bad_input_seeds(out: pathlib.Path, tmp: pathlib.Path) -> None:
    sys.path.insert(0, str(REPO / "tests" / "python"))
    import bad_input_kinds as kinds  # noqa: E402  (needs Pillow: /usr/bin/python3)
    ds = tmp / "bad"
    ds.mkdir()
    lines = []
    # The groups whose files are small and plain (no FIFOs, sparse GiB files or huge lines).
    for build in (kinds.json_kinds, kinds.structure_kinds, kinds.path_kinds, kinds.image_kinds,
                  kinds.bomb_kinds):
        for k in build(ds):
            add_record(out, k.line, "bad")
            lines.append(k.line)
    put(out, "manifest", b"\n".join(l for l in lines if len(l) < 2048)[:8192], "bad")
    n = add_media_tree(out, ds, "bad")
    print(f"make_seeds: bad-input suite: {len(lines)} records, {n} media files")


def jinja_seeds(out: pathlib.Path) -> None:
    import json
    jdir = REPO / "tests" / "jinja"
    contexts = json.loads((jdir / "contexts.json").read_text())["contexts"]
    n = 0
    for i, t in enumerate(sorted((jdir / "templates").glob("*.jinja"))):
        c = contexts[i % len(contexts)]
        variables = {"messages": c["messages"], "tools": c.get("tools"), "documents": None,
                     "add_generation_prompt": c.get("add_generation_prompt", False),
                     "bos_token": "<s>", "eos_token": "</s>", **c.get("kwargs", {})}
        put(out, "jinja", t.read_bytes() + b"\n#CTX#\n" + json.dumps(variables).encode(), "corpus")
        n += 1
    print(f"make_seeds: tests/jinja: {n} templates")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--fuzz", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--stoker", default="")
    a = ap.parse_args()
    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    targets = [l.split()[0] for l in subprocess.run([a.fuzz, "--list"], check=True,
                                                    capture_output=True, text=True).stdout.splitlines()]
    for t in targets:
        subprocess.run([a.fuzz, f"--target={t}", f"--write-seeds={out / t}"], check=True)
    with tempfile.TemporaryDirectory(prefix="stoker-seeds-") as tmp:
        if a.stoker and pathlib.Path(a.stoker).exists():
            synth_seeds(out, a.stoker, pathlib.Path(tmp))
        else:
            print("make_seeds: no stoker binary: no synth seeds (build/stoker)")
        bad_input_seeds(out, pathlib.Path(tmp))
    jinja_seeds(out)
    for t in targets:
        print(f"make_seeds: {t}: {len(list((out / t).iterdir()))} seeds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
