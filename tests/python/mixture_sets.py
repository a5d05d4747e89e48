"""The 3-source mixture the mixture tests share (test_mixture_engine.py,
test_served_mixture_resume.py): `stoker synth` sets a (40 records, one JSONL), b (30, three
WebDataset shards), c (20, two Energon shards), and two MetadatasetV2 specs over them."""
from __future__ import annotations

import subprocess

EPOCHIZED = """__module__: megatron.energon
__class__: MetadatasetV2
splits:
  train:
    blend_epochized:
      - repetitions: 1
        path: a/data.jsonl
      - repetitions: 2
        path: b/shards/data-{000..002}.tar
      - repetitions: 0.5
        path: c/energon
"""
WEIGHTED = """__module__: megatron.energon
__class__: MetadatasetV2
splits:
  train:
    blend:
      - weight: 5
        path: a/data.jsonl
      - weight: 2
        path: b/shards/data-{000..002}.tar
      - weight: 1
        path: c/energon
"""
SIZES = (40, 30, 20)


def make_mix(stoker_bin, d):
    """The three sets under `d`, with epochized.yaml and weighted.yaml beside them."""
    for name, n, seed, shards in (("a", SIZES[0], 1, 1), ("b", SIZES[1], 2, 3), ("c", SIZES[2], 3, 2)):
        subprocess.run([stoker_bin, "synth", "--out", str(d / name), "--n", str(n), "--seed", str(seed),
                        "--max-side", "128", "--shards", str(shards)], check=True, capture_output=True)
    (d / "epochized.yaml").write_text(EPOCHIZED)
    (d / "weighted.yaml").write_text(WEIGHTED)
    return d
