"""Samples over max_length (issue 30 §14). The README's synth sets lost samples to max_length
8192 (a 3840x2160 image alone is ~10.6k Qwen2.5-VL tokens) and the Python Loader dropped them
without a word. Now `stoker synth` scales a record's images to fit the default max_length unless
asked for long records (--long-records), and the Loader warns at the end of an epoch with the
count of samples dropped as too long, which stats()["dropped_too_long"] carries."""
import subprocess
import warnings

import pytest

from conftest import _stoker_bin


def synth(out, *args):
    subprocess.run([_stoker_bin(), "synth", "--out", str(out), *args], check=True,
                   capture_output=True)
    return str(out / "data.jsonl")


def epoch(stoker, data, **kw):
    loader = stoker.Loader(data, batch_size=8, threads=2, **kw)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ids = [i for b in loader for i in b["sample_ids"].tolist()]
    return loader, ids, [w for w in caught if issubclass(w.category, RuntimeWarning)]


# The README's set (`stoker synth --out . --n 32`) and scripts/demo.sh's (`--n 64 --seed 1`).
@pytest.mark.parametrize("args", [("--n", "32"), ("--n", "64", "--seed", "1")])
def test_readme_synth_sets_fit_the_default_max_length(stoker, tmp_path, args):
    data = synth(tmp_path, *args)
    loader, ids, warned = epoch(stoker, data)
    assert sorted(ids) == list(range(int(args[1]))), "every record delivered"
    assert loader.stats()["dropped_too_long"] == 0 and not warned, [str(w.message) for w in warned]


def test_dropped_samples_are_counted_and_warned(stoker, tmp_path):
    data = synth(tmp_path, "--n", "32", "--long-records")  # the sizes as drawn: some too long
    loader, ids, warned = epoch(stoker, data)
    s = loader.stats()
    dropped = s["dropped_too_long"]
    assert dropped >= 1 and len(ids) == 32 - dropped, (dropped, len(ids))
    assert len(warned) == 1, [str(w.message) for w in warned]
    msg = str(warned[0].message)
    assert f"{dropped} sample(s) longer than max_length=8192" in msg, msg
    too_long = [f for f in s["failures"] if (f["stage"], f["code"]) == ("tokenize",
                                                                        "ResourceExhausted")]
    assert sum(f["count"] for f in too_long) == dropped
