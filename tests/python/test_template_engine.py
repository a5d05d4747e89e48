"""A model folder's own chat template through the whole engine (ctest `template_engine`): a
Qwen2.5-VL folder whose template is not a stock one — a changed system prompt and Hermes-style
tool calling; the stock template with {% generation %} blocks; TRL's Qwen3 training template
adapted to Qwen2.5-VL's media — trains through `stoker run`, stoker.Loader padded and packed, and
every sample's input_ids and labels equal template_harness.py's, computed without stoker (Python
jinja2 under HF's environment, the processor's placeholder expansion, HF's Rust tokenizers, HF's
return_assistant_tokens_mask rule or the per-turn rule). Records: synth's (images, videos,
multi-turn, system prompts) and hand-written ones with tools, tool calls and tool results, media
in system and assistant turns and several media per turn in any order, reasoning, template
kwargs. Records the template refuses (jinja2 raises, or media without placeholders) fail in stoker
too, each with its reason. `stoker run`'s batch hashes equal the Loader's batches hashed here.
"""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from conftest import REPO
import template_harness as th

ORACLES = REPO / "tools" / "oracles" / "node_modules"
TOKENIZER = ORACLES / "@lenml" / "tokenizer-qwen2_5" / "models"
STOCK = (REPO / "data" / "templates" / "qwen2_vl.jinja").read_text()
if os.environ.get("STOKER_PYTHON_DIR"):
    sys.path.insert(0, os.environ["STOKER_PYTHON_DIR"])
stoker = pytest.importorskip("stoker", reason="the _stoker extension is not built")
pytestmark = pytest.mark.skipif(
    not (TOKENIZER / "tokenizer.json").exists() or shutil.which("node") is None,
    reason="npm oracles or node missing (npm ci in tools/oracles)")

# A fine-tune's template: its own system prompt, Hermes-style tools (as Qwen2.5's text template
# writes them), tool calls and results, media in any turn (a macro renders every content).
PIRATE = r"""{%- set image_count = namespace(value=0) %}{%- set video_count = namespace(value=0) %}
{%- macro render(content) %}
{%- if content is string %}{{- content }}{%- else %}{%- for part in content %}
{%- if part.type == 'image' or 'image' in part or 'image_url' in part %}{%- set image_count.value = image_count.value + 1 %}
{%- if add_vision_id %}Picture {{ image_count.value }}: {% endif %}<|vision_start|><|image_pad|><|vision_end|>
{%- elif part.type == 'video' or 'video' in part %}{%- set video_count.value = video_count.value + 1 %}
{%- if add_vision_id %}Video {{ video_count.value }}: {% endif %}<|vision_start|><|video_pad|><|vision_end|>
{%- elif 'text' in part %}{{- part.text }}{%- endif %}{%- endfor %}{%- endif %}
{%- endmacro %}
{%- if tools %}
{{- '<|im_start|>system\n' }}{%- if messages[0].role == 'system' %}{{- render(messages[0].content) }}{%- else %}{{- 'You are a meticulous pirate who reads pictures.' }}{%- endif %}
{{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
{%- for tool in tools %}{{- "\n" }}{{- tool | tojson }}{%- endfor %}
{{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- elif messages[0].role != 'system' %}
{{- '<|im_start|>system\nYou are a meticulous pirate who reads pictures.<|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
{%- if message.role == 'system' and loop.first and tools %}
{%- elif message.role == 'tool' %}
{%- if loop.first or messages[loop.index0 - 1].role != 'tool' %}{{- '<|im_start|>user' }}{%- endif %}
{{- '\n<tool_response>\n' }}{{- render(message.content) }}{{- '\n</tool_response>' }}
{%- if loop.last or messages[loop.index0 + 1].role != 'tool' %}{{- '<|im_end|>\n' }}{%- endif %}
{%- else %}
{{- '<|im_start|>' + message.role + '\n' }}{{- render(message.content) }}
{%- if message.tool_calls %}{%- for tc in message.tool_calls %}
{%- if tc.function is defined %}{%- set tc = tc.function %}{%- endif %}
{{- '\n<tool_call>\n{"name": "' }}{{- tc.name }}{{- '", "arguments": ' }}{{- tc.arguments | tojson }}{{- '}\n</tool_call>' }}
{%- endfor %}{%- endif %}
{{- '<|im_end|>\n' }}
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}
"""

# The stock Qwen2.5-VL template with {% generation %} around each assistant answer and its end.
GENERATION = STOCK.replace(
    "<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n{% else %}",
    "<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}"
    "{% if message['role'] == 'assistant' %}{% generation %}{{ message['content'] }}<|im_end|>\n{% endgeneration %}"
    "{% else %}{{ message['content'] }}<|im_end|>\n{% endif %}{% else %}")
assert GENERATION != STOCK

# TRL's Qwen3 training template ({% generation %}), its list content rendered as Qwen2.5-VL does.
TRL = (REPO / "tests" / "jinja" / "templates" / "trl_qwen3_training.jinja").read_text().replace(
    "{%- else %}\n        {%- set content = '' %}\n    {%- endif %}",
    "{%- else %}\n        {%- set parts = namespace(text='') %}"
    "{%- for part in message.content %}"
    "{%- if part.type == 'image' or 'image' in part %}{%- set parts.text = parts.text + '<|vision_start|><|image_pad|><|vision_end|>' %}"
    "{%- elif part.type == 'video' or 'video' in part %}{%- set parts.text = parts.text + '<|vision_start|><|video_pad|><|vision_end|>' %}"
    "{%- elif 'text' in part %}{%- set parts.text = parts.text + part.text %}{%- endif %}"
    "{%- endfor %}{%- set content = parts.text %}\n    {%- endif %}")
assert "parts.text" in TRL

TOOLS = [{"type": "function", "function": {"name": "count_objects", "description": "Count objects of a kind in the picture",
                                           "parameters": {"type": "object", "properties": {"kind": {"type": "string"}, "min_size": {"type": "number"}},
                                                          "required": ["kind"]}}},
         {"type": "function", "function": {"name": "crop", "description": "Crop the picture",
                                           "parameters": {"type": "object", "properties": {"box": {"type": "array", "items": {"type": "integer"}}}}}}]


def img(p):
    return {"type": "image", "image": p}


def vid(p):
    return {"type": "video", "video": p, "fps": 1.0}


def txt(t):
    return {"type": "text", "text": t}


def own_records(images, video):
    """Hand-written records: tools, calls and results, media anywhere, several per turn."""
    a, b, c = images[:3]
    return [
        {"id": "tools-1", "tools": TOOLS, "messages": [
            {"role": "user", "content": [img(a), txt("How many boats are there? Count carefully.")]},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "count_objects", "arguments": {"kind": "boat", "min_size": 2.5}}}]},
            {"role": "tool", "tool_call_id": "c1", "name": "count_objects", "content": "{\"count\": 3}"},
            {"role": "assistant", "content": "Three boats, arr — ⛵⛵⛵."}]},
        {"id": "tools-2", "tools": TOOLS, "messages": [
            {"role": "system", "content": "Be brief. Use tools when they help."},
            {"role": "user", "content": [txt("Crop then count: "), img(b), txt(" and "), img(c)]},
            {"role": "assistant", "content": "Cropping first.", "tool_calls": [
                {"type": "function", "function": {"name": "crop", "arguments": {"box": [0, 0, 10, 10]}}},
                {"type": "function", "function": {"name": "count_objects", "arguments": {"kind": "gull"}}}]},
            {"role": "tool", "content": "cropped"},
            {"role": "tool", "content": [txt("counted: "), img(a)]},
            {"role": "assistant", "content": "\nNo gulls in the crop."}]},
        {"id": "media-anywhere", "messages": [
            {"role": "system", "content": [txt("Reference picture: "), img(a)]},
            {"role": "user", "content": [vid(video), img(b), txt("Compare the clip with both pictures."), img(c)]},
            {"role": "assistant", "content": [txt("Like this one: "), img(b), txt(" but darker.")]},
            {"role": "user", "content": "Sure?"},
            {"role": "assistant", "content": "Aye."}]},
        {"id": "kwargs", "chat_template_kwargs": {"add_vision_id": True}, "messages": [
            {"role": "user", "content": [img(a), img(b), txt("Which is brighter? e\u0301 vs \u00e9")]},
            {"role": "assistant", "content": "The second one 👍🏽."}]},
        {"id": "reasoning", "messages": [
            {"role": "user", "content": "Think first: 17 * 23?"},
            {"role": "assistant", "content": "391", "reasoning_content": "17*20=340, 17*3=51, 340+51=391."}]},
    ]


def write_folder(root: pathlib.Path, template: str) -> pathlib.Path:
    root.mkdir(parents=True)
    (root / "config.json").write_text(json.dumps({"model_type": "qwen2_5_vl"}))
    (root / "tokenizer.json").symlink_to(TOKENIZER / "tokenizer.json")
    cfg = json.loads((TOKENIZER / "tokenizer_config.json").read_text())
    cfg.pop("chat_template", None)
    (root / "tokenizer_config.json").write_text(json.dumps(cfg))
    (root / "chat_template.jinja").write_text(template)
    return root


@pytest.fixture(scope="module")
def data(stoker_bin, tmp_path_factory):
    ds = tmp_path_factory.mktemp("tmpl") / "ds"
    subprocess.run([stoker_bin, "synth", "--out", str(ds), "--n", "40", "--max-side", "200",
                    "--videos", "2", "--seed", "3", "--threads", "2"], check=True,
                   stdout=subprocess.DEVNULL, timeout=300)
    synth = [json.loads(line) for line in (ds / "data.jsonl").read_text().splitlines() if line]
    images = sorted(str(p.relative_to(ds)) for p in (ds / "images").iterdir() if p.suffix == ".png")
    video = next(r for r in synth if r["id"].startswith("video"))["messages"][0]["content"][0]["video"]
    records = synth + own_records(images, video)
    (ds / "tmpl.jsonl").write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in records) + "\n")
    return ds, records


def split_rows(b, packed):
    """(record index, ids, labels) per sample of a batch."""
    ids, labels = b["input_ids"], b["labels"]
    rows = []
    if packed:
        cu = b["cu_seq_lens_q"].tolist()
        for k, sid in enumerate(b["sample_ids"].tolist()):
            rows.append((sid, ids[0, cu[k]:cu[k + 1]].tolist(), labels[0, cu[k]:cu[k + 1]].tolist()))
    else:
        mask = b["attention_mask"]
        for k, sid in enumerate(b["sample_ids"].tolist()):
            n = int(mask[k].sum())
            rows.append((sid, ids[k, :n].tolist(), labels[k, :n].tolist()))
    return rows


def media_grids(records, batches):
    """record index -> (image grids, video grids) from the batches, in sample order."""
    out = {}
    for b in batches:
        ig = b["image_grid_thw"].tolist() if "image_grid_thw" in b else []
        vg = b["video_grid_thw"].tolist() if "video_grid_thw" in b else []
        for sid in b["sample_ids"].tolist():
            n_img, n_vid = th.media_of(records[sid])
            out[sid] = (ig[:n_img], vg[:n_vid])
            ig, vg = ig[n_img:], vg[n_vid:]
    return out


def fnv_batch(b) -> str:
    """pipeline::batch_hash: FNV-1a 64 over each tensor's shape (int64) and bytes, in order."""
    import numpy as np
    h = 0xcbf29ce484222325
    prime = 0x100000001b3
    for t in b.values():
        if not hasattr(t, "shape"):
            continue
        a = t.contiguous().numpy()
        for byte in np.array(list(t.shape), dtype="<i8").tobytes() + a.tobytes():
            h = ((h ^ byte) * prime) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


CASES = [("pirate", PIRATE, "each assistant turn"), ("generation", GENERATION, "{% generation %} spans"),
         ("trl_qwen3_training", TRL, "{% generation %} spans")]


@pytest.mark.parametrize("name,template,rule", CASES, ids=[c[0] for c in CASES])
def test_folder_template_through_run_loader_and_packing(stoker_bin, tmp_path, data, name, template, rule):
    ds, records = data
    folder = write_folder(tmp_path / name, template)
    manifest = str(ds / "tmpl.jsonl")
    common = dict(model=str(folder), threads=2, max_length=16384, max_error_rate=1.0)

    # stoker run: its summary names the template and the label rule; its batches are hashed.
    hashes, report = tmp_path / "hashes.txt", tmp_path / "report.jsonl"
    r = subprocess.run([stoker_bin, "run", manifest, "--model", str(folder), "--batch-size", "4",
                        "--threads", "2", "--max-length", "16384", "--batch-hashes", str(hashes),
                        "--error-report", str(report), "--max-error-rate", "1"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("  chat template: "))
    assert str(folder / "chat_template.jinja") in line and "Jinja engine" in line and rule in line, line
    assert "native" not in line, "not a stock template: no native fast path"
    run_failed = {json.loads(x)["sample"]: json.loads(x)["reason"] for x in report.read_text().splitlines()}

    padded = list(stoker.Loader(manifest, batch_size=4, error_report=str(tmp_path / "lr.jsonl"), **common))
    assert [fnv_batch(b) for b in padded] == hashes.read_text().split(), \
        "stoker run's batches are the Loader's"
    packed = list(stoker.Loader(manifest, packing=True, max_tokens=16384, **common))

    grids = media_grids(records, padded)
    for sid, (ig, _) in grids.items():  # the grids the harness expands: the processor's
        for g, p in zip(ig, [p["image"] for m in records[sid]["messages"] if isinstance(m["content"], list)
                             for p in m["content"] if p.get("type") == "image"]):
            from PIL import Image
            with Image.open(ds / p) as im:
                h, w = th.smart_resize(im.height, im.width)
            assert g == [1, h // 14, w // 14], (sid, p)
    want = th.Harness(template, folder).expected(records, grids)

    by_id = {r["id"]: i for i, r in enumerate(records)}
    if name == "pirate":  # what the records exercise reaches the text
        t = want[by_id["tools-1"]].text
        assert "meticulous pirate" in t and "# Tools" in t and "<tool_call>" in t and "<tool_response>" in t, t
        assert want[by_id["media-anywhere"]].text.count("<|vision_start|>") == 5
        assert "Picture 2: " in want[by_id["kwargs"]].text
    failed = {i for i, e in want.items() if e.error}
    assert set(run_failed) == failed, {i: (want[i].error, run_failed.get(i)) for i in failed ^ set(run_failed)}
    for i in failed:  # the reason: the template's error, or the placeholder count
        assert "chat template" in run_failed[i], run_failed[i]
    for mode, batches in (("padded", padded), ("packed", packed)):
        seen = set()
        for b in batches:
            for sid, ids, labels in split_rows(b, mode == "packed"):
                seen.add(sid)
                w = want[sid]
                assert not w.error, (sid, w.error)
                assert ids == w.ids, f"{mode} {records[sid]['id']}: ids differ\n{w.text}"
                assert labels == w.labels, f"{mode} {records[sid]['id']}: labels differ\n{w.text}"
        assert seen == set(range(len(records))) - failed, mode
    supervised = sum(sum(x != -100 for x in w.labels) for w in want.values() if not w.error)
    assert supervised > 0
    own = [i for i, r in enumerate(records) if not r["id"].startswith(("synth", "video"))]
    delivered_own = [records[i]["id"] for i in own if i not in failed]
    print(f"\n{name}: {len(records) - len(failed)}/{len(records)} records delivered and equal to the "
          f"harness (padded and packed; own records delivered: {', '.join(delivered_own)}); "
          f"{len(failed)} refused as jinja2/the processor refuse them; {supervised} labelled tokens")
    if name == "pirate":  # the modified template: everything it renders trains
        assert not failed, {i: want[i].error for i in failed}
