"""A compact pure-Python Qwen2 byte-level BPE tokenizer, as Hugging Face's *slow* Qwen2Tokenizer
works: NFC, split on added tokens, the Qwen2 pre-token regex (the `regex` module, for \\p{L}),
bytes → unicode table, rank-ordered BPE merges with a per-word cache. It reads the same
tokenizer.json as stoker (vocab, merges as "a b" strings or [a, b] pairs, added_tokens).

This is the tokenizer of the DataLoader baseline in bench/torch_bench.py — what a pure-Python
pipeline runs per sample — not an oracle (tests use HF's Rust tokenizers through node).
Debian: python3-regex.
"""
from __future__ import annotations

import json
import unicodedata
from functools import lru_cache
from typing import Dict, List

import regex

PRETOKENIZE = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"""
               r"""| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")


@lru_cache()
def bytes_to_unicode() -> Dict[int, str]:
    """GPT-2's reversible byte → printable-unicode map (HF tokenization_qwen2.bytes_to_unicode)."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


class QwenTokenizer:
    def __init__(self, tokenizer_json: str):
        with open(tokenizer_json, encoding="utf-8") as f:
            spec = json.load(f)
        model = spec["model"]
        self.encoder: Dict[str, int] = model["vocab"]
        merges = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m)
                  for m in model["merges"]]
        self.ranks = {m: i for i, m in enumerate(merges)}
        self.added = {t["content"]: t["id"] for t in spec.get("added_tokens", [])}
        # longest first, so "<|im_start|>" never loses to a shorter token that prefixes it
        alts = sorted(self.added, key=len, reverse=True)
        self.added_re = regex.compile("(" + "|".join(regex.escape(a) for a in alts) + ")")
        self.pat = regex.compile(PRETOKENIZE)
        self.byte_encoder = bytes_to_unicode()
        self.cache: Dict[str, List[int]] = {}

    def bpe(self, word: str) -> List[int]:
        ids = self.cache.get(word)
        if ids is not None:
            return ids
        parts = list(word)
        ranks = self.ranks
        while len(parts) > 1:
            best, best_rank = -1, None
            for i in range(len(parts) - 1):
                r = ranks.get((parts[i], parts[i + 1]))
                if r is not None and (best_rank is None or r < best_rank):
                    best, best_rank = i, r
            if best < 0:
                break
            pair = (parts[best], parts[best + 1])
            merged, i = [], 0
            while i < len(parts):  # merge every occurrence of the best pair, left to right
                if i < len(parts) - 1 and (parts[i], parts[i + 1]) == pair:
                    merged.append(parts[i] + parts[i + 1])
                    i += 2
                else:
                    merged.append(parts[i])
                    i += 1
            parts = merged
        ids = [self.encoder[p] for p in parts]
        self.cache[word] = ids
        return ids

    def encode(self, text: str) -> List[int]:
        text = unicodedata.normalize("NFC", text)
        out: List[int] = []
        be = self.byte_encoder
        for k, chunk in enumerate(self.added_re.split(text)):
            if k % 2 == 1:  # an added token (the split's captured group)
                out.append(self.added[chunk])
                continue
            for piece in self.pat.findall(chunk):
                out.extend(self.bpe("".join(be[b] for b in piece.encode("utf-8"))))
        return out


if __name__ == "__main__":
    import sys

    tok = QwenTokenizer(sys.argv[1])
    print(tok.encode(sys.argv[2] if len(sys.argv) > 2 else "Hello, my dog is cute"))
