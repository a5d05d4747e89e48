"""Python's stoker.Loader takes a model folder's chat template from the same decision as the CLI
(model::chat_template_kind through pipeline::Loader): the stock template in the folder trains,
an edited one is refused with the file named (tests/python/test_model_folder_template.py covers
the rules themselves against Jinja2)."""
import json
import pathlib

import pytest

import stoker

REPO = pathlib.Path(__file__).resolve().parents[2]
TOKENIZER = REPO / "tools" / "oracles" / "node_modules" / "@lenml" / "tokenizer-qwen2_5" / "models"


def _folder(path: pathlib.Path, template: str) -> pathlib.Path:
    path.mkdir()
    (path / "config.json").write_text(json.dumps({"model_type": "qwen2_5_vl"}))
    (path / "tokenizer.json").symlink_to(TOKENIZER / "tokenizer.json")
    cfg = json.loads((TOKENIZER / "tokenizer_config.json").read_text())
    cfg.pop("chat_template", None)
    (path / "tokenizer_config.json").write_text(json.dumps(cfg))
    (path / "chat_template.json").write_text(json.dumps({"chat_template": template}))
    return path


@pytest.mark.skipif(not (TOKENIZER / "tokenizer.json").exists(), reason="npm oracles missing")
def test_loader_uses_or_refuses_the_folder_template(dataset, tmp_path):
    stock = (REPO / "data" / "templates" / "qwen2_vl.jinja").read_text()
    good = _folder(tmp_path / "stock", stock)
    batch = next(iter(stoker.Loader(dataset, model=str(good), batch_size=2, threads=2)))
    assert batch["input_ids"].shape[0] == 2
    bad = _folder(tmp_path / "edited", stock.replace("helpful assistant", "helpful pirate"))
    with pytest.raises(stoker.StokerError) as e:
        list(stoker.Loader(dataset, model=str(bad), batch_size=2, threads=2))
    assert f"chat template in {bad / 'chat_template.json'} is not one stoker renders natively" in str(e.value)
