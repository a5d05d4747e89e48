"""A Qwen3-Omni model folder made for tests (stoker ships no Qwen3-Omni files), shared by
tests/python/test_audio_cli.py and tests/python_api/test_audio_loader.py (+ test_audio_qwen3_omni).

config.json's model type and position_id_per_seconds, the installed Qwen3 tokenizer with the
audio tokens added at the ids the hub config names (audio_start 151669, audio_end 151670,
audio_pad 151675: from memory of Qwen/Qwen3-Omni-30B-A3B-Instruct's config, UNCONFIRMED here —
the tests only need them to be the ids the folder says), and a chat template of the Omni shape
(tests/jinja/templates/qwen2_5_omni.jinja) with the Qwen3-Omni placeholder names (test data, not
the hub's template text)."""
from __future__ import annotations

import json
import pathlib

TEMPLATES = pathlib.Path(__file__).resolve().parents[1] / "jinja" / "templates"
Q3_TOKENS = {151669: "<|audio_start|>", 151670: "<|audio_end|>", 151671: "<tts_pad>",
             151672: "<tts_text_bos>", 151673: "<tts_text_eod>", 151674: "<tts_text_bos_single>",
             151675: "<|audio_pad|>"}
# The rope oracle's ids and rate for such a folder (omni_rope_reference).
Q3_CFG = dict(image=151655, video=151656, audio=151675, vision_start=151652, audio_start=151669,
              pps=13.0, merge=2)
Q3_NAMES = (("<|vision_bos|>", "<|vision_start|>"), ("<|vision_eos|>", "<|vision_end|>"),
            ("<|IMAGE|>", "<|image_pad|>"), ("<|VIDEO|>", "<|video_pad|>"),
            ("<|audio_bos|>", "<|audio_start|>"), ("<|audio_eos|>", "<|audio_end|>"),
            ("<|AUDIO|>", "<|audio_pad|>"))


def q3_template() -> str:
    t = (TEMPLATES / "qwen2_5_omni.jinja").read_text()
    for a, b in Q3_NAMES:
        t = t.replace(a, b)
    return t


def qwen3_omni_folder(stoker_bin, root) -> pathlib.Path:
    """root/qwen3-omni, from the Qwen3 tokenizer installed next to `stoker_bin`."""
    binary = pathlib.Path(stoker_bin).resolve().parent
    src = next(d / "share/stoker/tokenizers/qwen3" for d in (binary, binary.parent)
               if (d / "share/stoker/tokenizers/qwen3/tokenizer.json").exists())
    folder = pathlib.Path(root) / "qwen3-omni"
    folder.mkdir(exist_ok=True)
    tok = json.loads((src / "tokenizer.json").read_text())
    for i, name in Q3_TOKENS.items():
        tok["added_tokens"].append({"id": i, "content": name, "single_word": False, "lstrip": False,
                                    "rstrip": False, "normalized": False, "special": True})
    (folder / "tokenizer.json").write_text(json.dumps(tok))
    cfg = json.loads((src / "tokenizer_config.json").read_text())
    cfg.pop("chat_template", None)
    for i, name in Q3_TOKENS.items():
        cfg.setdefault("added_tokens_decoder", {})[str(i)] = {"content": name, "special": True}
    (folder / "tokenizer_config.json").write_text(json.dumps(cfg))
    (folder / "config.json").write_text(json.dumps({
        "model_type": "qwen3_omni_moe", "thinker_config": {"position_id_per_seconds": 13}}))
    (folder / "chat_template.jinja").write_text(q3_template())
    return folder
