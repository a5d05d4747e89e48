"""The independent side of stoker's template tests: a record and a model folder's chat template ->
the input_ids and labels transformers and the SFT label rules give, computed here without stoker:

  * the text: Python jinja2 3.1 under Hugging Face's chat-template environment
    (tests/jinja/hf_jinja_env.py), with transformers' variables: the record's messages as they
    are, its "tools" and "documents", add_generation_prompt=False, the tokenizer_config.json
    special tokens, then template kwargs (the run's, then the record's "chat_template_kwargs");
  * the media: the Qwen2/2.5-VL processor's placeholder expansion, a string replacement of each
    <|image_pad|> / <|video_pad|>, in order, by grid_t*grid_h*grid_w/4 copies (the k-th of a
    kind is the record's k-th medium of that kind);
  * the ids: Hugging Face's Rust tokenizers (npm `tokenizers` through node,
    tests/text/tokenizer_oracle.js offsets mode) on the whole expanded string;
  * the labels: transformers' return_assistant_tokens_mask rule (tokenizer path, hf_jinja_env)
    over the {% generation %} spans of the template, or — a template without them — over each
    ChatML assistant turn, "<|im_start|>assistant\\n" .. its "<|im_end|>" and the "\\n" after it;
    tokens of a media block (<|vision_start|> .. <|vision_end|>) are never labelled.
A record the template cannot render (jinja2 raises) or whose placeholders do not match its media
is a failure, with the reason.
"""
from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

REPO = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "jinja"))
import hf_jinja_env as hf  # noqa: E402

ORACLES = REPO / "tools" / "oracles" / "node_modules"
ORACLE_JS = REPO / "tests" / "text" / "tokenizer_oracle.js"
IMAGE_PAD, VIDEO_PAD = "<|image_pad|>", "<|video_pad|>"
BLOCK = re.compile(r"<\|vision_start\|>(?:<\|image_pad\|>|<\|video_pad\|>)+<\|vision_end\|>")
TURN_BEGIN, TURN_END, TURN_AFTER = "<|im_start|>assistant\n", "<|im_end|>", "\n"
SPECIAL = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token",
           "mask_token", "additional_special_tokens")


def special_tokens(folder: pathlib.Path) -> Dict:
    """transformers' special_tokens_map from tokenizer_config.json (set fields only)."""
    cfg = json.loads((folder / "tokenizer_config.json").read_text())
    out = {}
    for name in SPECIAL:
        v = cfg.get(name)
        if isinstance(v, dict):
            v = v.get("content")
        if isinstance(v, list):
            v = [x.get("content") if isinstance(x, dict) else x for x in v]
        if v:
            out[name] = v
    return out


def media_of(record: Dict) -> Tuple[int, int]:
    """(images, videos) in the record's messages, in order."""
    images = videos = 0
    for m in record["messages"]:
        if isinstance(m.get("content"), list):
            for p in m["content"]:
                t = p.get("type")
                images += t in ("image", "image_url")
                videos += t in ("video", "video_url")
    return images, videos


@dataclass
class Expected:
    ids: Optional[List[int]] = None
    labels: Optional[List[int]] = None
    error: str = ""
    text: str = ""
    rule: str = ""


@dataclass
class Harness:
    template: str
    folder: pathlib.Path
    kwargs: Dict = field(default_factory=dict)

    def render(self, record: Dict):
        env = hf.make_environment()
        variables = {"messages": record["messages"], "tools": record.get("tools"),
                     "documents": record.get("documents"), "add_generation_prompt": False}
        variables.update(special_tokens(self.folder))
        variables.update(self.kwargs)
        variables.update(record.get("chat_template_kwargs") or {})
        return hf.render(env.from_string(self.template), variables, env)

    def expected(self, records: Sequence[Dict], grids: Dict[int, Tuple[list, list]]) -> Dict[int, Expected]:
        """records[i] -> Expected; grids[i] = (image grids, video grids) of record i."""
        out, texts, todo = {}, [], []
        for i, rec in enumerate(records):
            try:
                text, spans = self.render(rec)
            except Exception as e:  # noqa: BLE001 - any template failure fails the record
                out[i] = Expected(error=f"{type(e).__name__}: {e}")
                continue
            n_img, n_vid = media_of(rec)
            if text.count(IMAGE_PAD) != n_img or text.count(VIDEO_PAD) != n_vid:
                out[i] = Expected(error=f"{text.count(IMAGE_PAD)} image / {text.count(VIDEO_PAD)} video "
                                        f"placeholders for {n_img} / {n_vid} media", text=text)
                continue
            has_generation = re.search(r"\{%-?\s*generation\s*-?%\}", self.template) is not None
            if not has_generation:
                spans = turn_spans(text)
                assistants = sum(m["role"] == "assistant" for m in rec["messages"])
                if len(spans) != assistants:
                    out[i] = Expected(error=f"{len(spans)} assistant turns for {assistants}", text=text)
                    continue
            expanded, spans = expand(text, spans, *grids.get(i, ([], [])))
            out[i] = Expected(text=text, rule="generation" if has_generation else "turns")
            texts.append(expanded)
            todo.append((i, spans, expanded))
        encs = hf_encode(self.folder / "tokenizer.json", texts)
        for (i, spans, expanded), enc in zip(todo, encs):
            ids, offsets = enc["ids"], enc["offsets"]
            mask = hf.assistant_mask_tokenizer_rule(spans, offsets, len(ids))
            blocks = [(m.start(), m.end()) for m in BLOCK.finditer(expanded)]
            labels = []
            for t, tid in enumerate(ids):
                s, e = offsets[t]
                in_block = any(b <= s and e <= be for b, be in blocks)
                labels.append(tid if mask[t] and not in_block else -100)
            out[i].ids, out[i].labels = ids, labels
        return out


def turn_spans(text: str) -> List[Tuple[int, int]]:
    spans, pos = [], 0
    while True:
        at = text.find(TURN_BEGIN, pos)
        if at < 0:
            return spans
        start = at + len(TURN_BEGIN)
        end = text.find(TURN_END, start)
        if end < 0:
            stop = len(text)
        else:
            stop = end + len(TURN_END)
            if text.startswith(TURN_AFTER, stop):
                stop += len(TURN_AFTER)
        spans.append((start, stop))
        pos = stop


def expand(text: str, spans, images: list, videos: list):
    """The processor's replacement of each pad by its grid's token count; spans moved with it."""
    out, shifts, pos, k = [], [], 0, {"i": 0, "v": 0}
    for m in re.finditer(re.escape(IMAGE_PAD) + "|" + re.escape(VIDEO_PAD), text):
        out.append(text[pos:m.start()])
        image = m.group(0) == IMAGE_PAD
        g = images[k["i"]] if image else videos[k["v"]]
        k["i" if image else "v"] += 1
        n = g[0] * g[1] * g[2] // 4
        out.append(m.group(0) * n)
        shifts.append((m.end(), len(m.group(0)) * (n - 1)))
        pos = m.end()
    out.append(text[pos:])

    def moved(p):
        return p + sum(d for end, d in shifts if end <= p)

    return "".join(out), [(moved(s), moved(e)) for s, e in spans]


def hf_encode(tokenizer_json: pathlib.Path, texts: List[str]) -> List[Dict]:
    if not texts:
        return []
    with tempfile.TemporaryDirectory() as d:
        src, dst = os.path.join(d, "in.json"), os.path.join(d, "out.json")
        with open(src, "w") as f:
            json.dump(texts, f)
        env = dict(os.environ, NODE_PATH=str(ORACLES), TOKENIZERS_PARALLELISM="false")
        subprocess.run(["node", str(ORACLE_JS), "offsets", str(tokenizer_json), src, dst],
                       check=True, env=env, timeout=300)
        with open(dst) as f:
            return json.load(f)


def smart_resize(h: int, w: int, factor: int = 28, min_pixels: int = 3136,
                 max_pixels: int = 12845056) -> Tuple[int, int]:
    """transformers' Qwen2-VL smart_resize (spec §1.1, >= 4.53: no small-size error)."""
    import math
    hb, wb = round(h / factor) * factor, round(w / factor) * factor
    if hb * wb > max_pixels:
        beta = math.sqrt(h * w / max_pixels)
        hb, wb = math.floor(h / beta / factor) * factor, math.floor(w / beta / factor) * factor
    elif hb * wb < min_pixels:
        beta = math.sqrt(min_pixels / (h * w))
        hb, wb = math.ceil(h * beta / factor) * factor, math.ceil(w * beta / factor) * factor
    return hb, wb
