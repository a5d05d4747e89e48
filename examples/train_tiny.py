#!/usr/bin/python3
"""A runnable VLM-SFT-shaped training loop fed by stoker (run with Debian's /usr/bin/python3).

    examples/train_tiny.py                       # generates a 256-record synthetic set first
    examples/train_tiny.py --data my.jsonl --epochs 3 --batch-size 8

The model is deliberately tiny (hashed token embedding + a linear over mean-pooled pixel_values
+ a linear head, next-token loss on the labels) so that on a CPU the loader is visible in the
numbers. On a machine with CUDA the same script copies each batch to the GPU through pinned
memory with non_blocking=True and trains there. Per epoch it prints its own wait-time ratio
(time blocked waiting for the next batch ÷ epoch time) and stoker's stats().
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import torch

import stoker

VOCAB = 1024  # token ids hashed into a small table: the model is not the point here


class TinyVlm(torch.nn.Module):
    def __init__(self, dim: int = 64, pixel_cols: int = 1176):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, dim)
        self.pixels = torch.nn.Linear(pixel_cols, dim)
        self.head = torch.nn.Linear(dim, VOCAB)

    def forward(self, input_ids, attention_mask, pixel_values, labels):
        h = self.embed(input_ids % VOCAB) * attention_mask.unsqueeze(-1)
        if pixel_values.shape[0] > 0:  # text-only batches have no pixel rows
            h = h + self.pixels(pixel_values.float().mean(dim=0))
        # next-token prediction, the head only where a label is supervised (cheap on a CPU)
        sup = labels[:, 1:] >= 0
        return self.head(h[:, :-1][sup]), labels[:, 1:][sup] % VOCAB


def synth(n: int) -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    stoker_bin = os.environ.get("STOKER_BIN", os.path.join(here, "..", "build", "stoker"))
    out = tempfile.mkdtemp(prefix="stoker-train-tiny-")
    subprocess.run([stoker_bin, "synth", "--out", out, "--n", str(n), "--max-side", "768"],
                   check=True, capture_output=True)
    return os.path.join(out, "data.jsonl")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", help="JSONL manifest (default: generate --synth records)")
    ap.add_argument("--synth", type=int, default=256)
    ap.add_argument("--model", default="qwen2.5-vl")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--threads", type=int, default=0, help="stoker CPU threads (0: all cores)")
    ap.add_argument("--max-steps", type=int, default=0, help="stop each epoch after N steps")
    args = ap.parse_args()

    data = args.data or synth(args.synth)
    cuda = torch.cuda.is_available()
    device = torch.device("cuda" if cuda else "cpu")
    model = TinyVlm().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()

    loader = stoker.Loader(data, model=args.model, batch_size=args.batch_size,
                           threads=args.threads, epochs=args.epochs,
                           pixel_dtype="bfloat16" if cuda else "float32")
    print(f"device {device}, data {data}, rank {loader.rank_info()}")
    for epoch in range(args.epochs):
        t_epoch = time.perf_counter()
        waited, steps, samples, loss_sum = 0.0, 0, 0, 0.0
        it = iter(loader)
        while True:
            t0 = time.perf_counter()
            batch = next(it, None)
            waited += time.perf_counter() - t0
            if batch is None:
                break
            if cuda:  # pinned staging + async copy; the arena block is freed when `batch` dies
                batch = {k: v.pin_memory().to(device, non_blocking=True) for k, v in batch.items()}
            logits, target = model(batch["input_ids"], batch["attention_mask"],
                                   batch["pixel_values"], batch["labels"])
            loss = loss_fn(logits, target)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            loss_sum += float(loss)
            steps += 1
            samples += int(batch["input_ids"].shape[0])
            if args.max_steps and steps >= args.max_steps:
                break
        elapsed = time.perf_counter() - t_epoch
        print(f"epoch {epoch}: {steps} steps, {samples} samples, loss {loss_sum / max(steps, 1):.3f}, "
              f"{samples / elapsed:.1f} samples/s, wait-time ratio {100 * waited / elapsed:.1f}% "
              f"({waited:.2f} s of {elapsed:.2f} s blocked on the loader)")
        if args.max_steps and steps >= args.max_steps:
            for _ in it:  # finish the epoch so the next `for` starts the next one
                pass
    s = loader.stats()
    stages = ", ".join(f"{k} {100 * v['utilisation']:.0f}%" for k, v in s["stages"].items())
    print(f"stoker: {s['samples']} samples, {s['failed']} failed, wait ratio "
          f"{100 * s['wait_ratio']:.1f}%, first batch {s['first_batch_s']:.2f} s, hand-off p50 "
          f"{s.get('handoff_us_p50', 0):.0f} us; stage utilisation: {stages}")
    print(f"state_dict: {loader.state_dict()}")


if __name__ == "__main__":
    sys.exit(main())
