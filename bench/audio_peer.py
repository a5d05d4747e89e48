#!/usr/bin/python3
"""The peer of `stoker bench audio`: the audio path a user runs today without stoker —
qwen-omni-utils' `librosa.load(path, sr=16000)` (soundfile on libsndfile, or audioread's `ffmpeg`
child for M4A; numpy channel mean; libsoxr HQ as python-soxr runs it, here through ctypes on the
same libsoxr; librosa's fix_length), then transformers' WhisperFeatureExtractor on its NumPy path
(the per-frame rfft loop of audio_utils.spectrogram) with the model's padding — the formulas in
audio_reference.py beside this file.

usage: /usr/bin/python3 bench/audio_peer.py --model qwen3-omni --warmup W --passes P
           --list FILES.txt --dump-dir DIR

Runs on the core the caller pinned it to, numpy/BLAS at one thread. W untimed passes, then P
timed ones; each clip's CPU time is time.process_time() plus the CPU of child processes (the
ffmpeg CLI audioread starts for M4A). Per clip and pass: zlib.crc32 of the 16 kHz waveform and of
input_features (float32 bytes); after the first timed pass, untimed, each clip's features go to
DIR/<k>.f32. Prints one JSON object.
"""
from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import pathlib  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import zlib  # noqa: E402

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import numpy as np  # noqa: E402

import audio_reference as ref  # noqa: E402


def cpu_now():
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="qwen3-omni")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--list", required=True)
    ap.add_argument("--dump-dir", required=True)
    a = ap.parse_args()
    files = [line for line in pathlib.Path(a.list).read_text().splitlines() if line]
    dump = pathlib.Path(a.dump_dir)

    def one(path):
        wave = ref.librosa_load(path)[0]
        feats, mask, tokens = ref.features_for_model(a.model, [wave])
        return wave, feats, mask, tokens

    for _ in range(a.warmup):
        for f in files:
            one(f)
    passes = []
    clips = [dict(wave_crc=[], feat_crc=[]) for _ in files]
    for p in range(a.passes):
        cpu = wall = 0.0
        for k, f in enumerate(files):
            c0, w0 = cpu_now(), time.perf_counter()
            wave, feats, mask, tokens = one(f)
            cpu += cpu_now() - c0
            wall += time.perf_counter() - w0
            clips[k]["wave_crc"].append(zlib.crc32(np.ascontiguousarray(wave, dtype=np.float32).tobytes()))
            clips[k]["feat_crc"].append(zlib.crc32(np.ascontiguousarray(feats[0], dtype=np.float32).tobytes()))
            if p == 0:
                np.ascontiguousarray(feats[0], dtype=np.float32).tofile(dump / f"{k}.f32")
                clips[k].update(samples=int(wave.shape[0]), frames=int(feats.shape[2]),
                                mask_sum=int(mask.sum()), tokens=int(tokens[0]))
        passes.append(dict(cpu_s=cpu, wall_s=wall))
    versions = dict(numpy=np.__version__, soxr=ref.soxr_version(), ffmpeg=ref.ffmpeg_cli_version())
    try:
        import soundfile
        versions["soundfile"] = soundfile.__version__
        versions["libsndfile"] = soundfile.__libsndfile_version__
    except Exception:  # pragma: no cover
        pass
    print(json.dumps(dict(passes=passes, clips=clips, versions=versions)))


if __name__ == "__main__":
    main()
