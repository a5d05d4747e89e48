"""The native renderers stay as a fast path only because they give what the Jinja engine gives on
the stock templates (ctest `template_fast_path`): on the synth set (images, videos, multi-turn,
system prompts, tokenizer-stressing text), `stoker run`'s batch hashes for the three presets,
padded and packed, are the same with the fast path (the default) and without it (a template
kwargs option sends every record through the Jinja engine; the summary says which ran).
src/stoker/text/native_equivalence_test.cc compares text, ids and labels per conversation."""
from __future__ import annotations

import subprocess

import pytest

PRESETS = ["qwen2-vl", "qwen2.5-vl", "qwen3-vl"]
MODES = {"padded": ["--batch-size", "4"], "packed": ["--packing", "--max-tokens", "16384"]}


@pytest.fixture(scope="module")
def synth(stoker_bin, tmp_path_factory):
    out = tmp_path_factory.mktemp("fast") / "ds"
    subprocess.run([stoker_bin, "synth", "--out", str(out), "--n", "120", "--max-side", "256",
                    "--videos", "8", "--threads", "2"], check=True, stdout=subprocess.DEVNULL,
                   timeout=300)
    return out / "data.jsonl"


def run(stoker_bin, data, tmp, preset, mode, *extra):
    hashes = tmp / f"{preset}-{mode}-{len(extra)}.txt"
    r = subprocess.run([stoker_bin, "run", str(data), "--model", preset, "--threads", "2",
                        "--batch-hashes", str(hashes), *MODES[mode], *extra],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert ", 0 failed" in r.stdout, r.stdout
    line = next(x for x in r.stdout.splitlines() if x.startswith("  chat template: "))
    return hashes.read_text().split(), line


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("preset", PRESETS)
def test_fast_path_batches_equal_the_jinja_engines(stoker_bin, synth, tmp_path, preset, mode):
    fast, fast_line = run(stoker_bin, synth, tmp_path, preset, mode)
    slow, slow_line = run(stoker_bin, synth, tmp_path, preset, mode,
                          "--chat-template-kwargs", '{"stoker_test_no_fast_path": true}')
    assert "native" in fast_line and "fast path" in fast_line, fast_line
    assert "native" not in slow_line, slow_line
    assert len(fast) > 0 and fast == slow
