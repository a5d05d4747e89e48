"""Python's stoker.Loader takes a model folder's chat template from the same decision as the CLI
(model::chat_template through pipeline::Loader): the stock template and an edited one both train
(the edit rendered by the Jinja engine, the summary saying which), a template that does not parse
is refused when the Loader is made with the file, line and column; chat_template= picks a named
template and chat_template_kwargs= takes a dict (tests/python/test_model_folder_template.py and
test_template_engine.py check texts, ids and labels against Jinja2 and HF's tokenizers)."""
import json
import pathlib

import pytest

import stoker

REPO = pathlib.Path(__file__).resolve().parents[2]
TOKENIZER = REPO / "tools" / "oracles" / "node_modules" / "@lenml" / "tokenizer-qwen2_5" / "models"


def _folder(path: pathlib.Path, template) -> pathlib.Path:
    path.mkdir()
    (path / "config.json").write_text(json.dumps({"model_type": "qwen2_5_vl"}))
    (path / "tokenizer.json").symlink_to(TOKENIZER / "tokenizer.json")
    cfg = json.loads((TOKENIZER / "tokenizer_config.json").read_text())
    cfg["chat_template"] = template
    (path / "tokenizer_config.json").write_text(json.dumps(cfg))
    return path


@pytest.mark.skipif(not (TOKENIZER / "tokenizer.json").exists(), reason="npm oracles missing")
def test_loader_renders_any_folder_template_and_refuses_one_that_does_not_parse(dataset, tmp_path):
    stock = (REPO / "data" / "templates" / "qwen2_vl.jinja").read_text()
    good = _folder(tmp_path / "stock", stock)
    loader = stoker.Loader(dataset, model=str(good), batch_size=2, threads=2)
    assert next(iter(loader))["input_ids"].shape[0] == 2
    assert "native qwen2_vl fast path" in loader.stats()["chat_template"]

    edited = stock.replace("helpful assistant", "helpful pirate")
    pirate = _folder(tmp_path / "edited", [{"name": "default", "template": stock},
                                           {"name": "pirate", "template": edited}])
    for name, want in ((None, "helpful assistant"), ("pirate", "helpful pirate")):
        loader = stoker.Loader(dataset, model=str(pirate), chat_template=name, batch_size=2,
                               threads=2, chat_template_kwargs={"add_vision_id": True})
        b = next(iter(loader))
        stats = loader.stats()
        assert stats["samples_built"] >= 2 and stats["sample_build_s"] > 0
        assert "rendered by the Jinja engine" in stats["chat_template"]
        assert "native" not in stats["chat_template"], "a kwargs option renders every record with Jinja"
        assert b["input_ids"].shape[0] == 2

    broken = _folder(tmp_path / "broken", stock.replace("{% endfor %}", "{% endfor", 1))
    with pytest.raises(stoker.StokerError) as e:
        stoker.Loader(dataset, model=str(broken), batch_size=2, threads=2)
    assert f"chat template in {broken / 'tokenizer_config.json'}: template syntax error at " in str(e.value)
    with pytest.raises(stoker.StokerError) as e:
        stoker.Loader(dataset, model=str(pirate), chat_template="rag", batch_size=2, threads=2)
    assert "no chat template named 'rag'" in str(e.value)
    with pytest.raises((stoker.StokerError, TypeError, ValueError)) as e:
        stoker.Loader(dataset, model=str(good), chat_template_kwargs=[1, 2], batch_size=2)
    assert "chat_template_kwargs" in str(e.value)
