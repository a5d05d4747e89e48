"""Many media tags in one record (issue 30 §7). Splitting a text at <image>/<video> tags was
quadratic: one 0.7 MB record with 100k <image> tags took 27 s of CPU (12.5k/25k/50k tags:
1.0/2.3/7.3 s) and the job waited behind it. Now the split is linear and a record may reference
at most max_media_per_record media (--max-media-per-record, default 1024): a record over it fails
alone with a reason, before any is resolved or fetched. Each run below is bounded in time; the
good records of the same manifest are delivered.
Cheap (~5 s)."""
from __future__ import annotations

import json
import subprocess
import time

import bad_input_media as media

N_TAGS = 100_000
BOUND_S = 8.0  # the whole `stoker run` (start, tokenizer load, 3 records); the old split: 27 s


def sharegpt(text, images):
    return {"conversations": [{"from": "human", "value": text}, {"from": "gpt", "value": "ok"}],
            "images": images}


def run(stoker_bin, ds, *extra):
    t0 = time.monotonic()
    r = subprocess.run([stoker_bin, "run", str(ds / "data.jsonl"), "--batch-size", "1",
                        "--max-error-rate", "1", "--threads", "1", "--quiet", "--arena-mb", "64",
                        "--error-report", str(ds / "errors.jsonl"),
                        "--delivered-log", str(ds / "delivered.log"), *extra],
                       capture_output=True, text=True, timeout=120)
    elapsed = time.monotonic() - t0
    errors = [json.loads(x) for x in (ds / "errors.jsonl").read_text().splitlines()]
    delivered = len((ds / "delivered.log").read_text().splitlines())
    return r, elapsed, errors, delivered


def test_100k_image_tags_fail_fast_with_a_reason(stoker_bin, tmp_path):
    (tmp_path / "a.png").write_bytes(media.png(64, 64, seed=1))
    lines = [
        sharegpt("<image>" * N_TAGS, []),                      # tags without images: 0.7 MB
        sharegpt("<image>" * N_TAGS, ["a.png"] * N_TAGS),      # as many images: over the bound
        sharegpt("<image>What is it?", ["a.png"]),              # a good record
    ]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    r, elapsed, errors, delivered = run(stoker_bin, tmp_path)
    assert r.returncode == 0, r.stderr
    print(f"\n{N_TAGS} tags x 2 records + 1 good: {elapsed:.2f} s")
    assert elapsed < BOUND_S, f"{elapsed:.1f} s for two records of {N_TAGS} tags"
    by_line = {e["line"]: e for e in errors}
    assert set(by_line) == {1, 2}, errors
    assert "100000 <image> tag(s) in the text but 0 image(s)" in by_line[1]["reason"], by_line[1]
    assert by_line[2]["code"] == "ResourceExhausted", by_line[2]
    assert "100000 media" in by_line[2]["reason"] and "max_media_per_record 1024" in \
        by_line[2]["reason"], by_line[2]
    assert delivered == 1


def test_the_bound_is_an_option(stoker_bin, tmp_path):
    (tmp_path / "a.png").write_bytes(media.png(64, 64, seed=1))
    lines = [sharegpt("<image><image><image>Same?", ["a.png"] * 3),
             sharegpt("<image>What is it?", ["a.png"])]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    r, _, errors, delivered = run(stoker_bin, tmp_path)
    assert r.returncode == 0 and not errors and delivered == 2, r.stderr + str(errors)
    r, _, errors, delivered = run(stoker_bin, tmp_path, "--max-media-per-record", "2")
    assert r.returncode == 0, r.stderr
    assert [e["line"] for e in errors] == [1] and delivered == 1, errors
    assert "3 media" in errors[0]["reason"] and "max_media_per_record 2" in errors[0]["reason"]
