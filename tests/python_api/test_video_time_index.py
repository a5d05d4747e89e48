"""The Qwen2.5-VL video time index is a choice (issue 21 item 7a): `video_time_index="float"`
(t · second_per_grid_t · tokens_per_second in float32, then truncated: transformers 4.49, Qwen's
fine-tuning code, vLLM) or `"int"` (second_per_grid_t cast to an integer first: later 4.5x
releases to 4.57). Frame-list videos at sample_fps 3, 4 and 1.5 give fractional seconds per grid
(2/3, 1/2, 4/3), where the two differ; sample_fps 1 gives 2.0, where they agree.

Each mode's position_ids are checked against an independent Python transcription of transformers'
Qwen2_5_VLModel.get_rope_index in the matching version (torch, written here from its source), on
the whole padded batch; the option reaches the engine from Python, the CLI and a model folder's
stoker.json."""
import json
import os
import subprocess

import pytest
import torch

from conftest import _stoker_bin

VISION_START, IMAGE_PAD, VIDEO_PAD = 151652, 151655, 151656
FPS = [3, 4, 1.5, 1]  # seconds per grid 2/fps: 0.667, 0.5, 1.333, 2.0


def hf_get_rope_index(input_ids, image_grid_thw, video_grid_thw, second_per_grid_ts,
                      attention_mask, cast_first, merge=2, tokens_per_second=2):
    """transformers' Qwen2_5_VLModel.get_rope_index, batch form (3 × B × L, masked positions 1).
    cast_first=False: v4.49.0 (`expanded_range * second_per_grid_t * tps`, second_per_grid_t a
    float32 element); True: the later "normalize type" block
    (`torch.as_tensor(second_per_grid_t, dtype=range_tensor.dtype)` before multiplying)."""
    position_ids = torch.ones(3, input_ids.shape[0], input_ids.shape[1], dtype=torch.int64)
    image_index = video_index = 0
    for i, ids in enumerate(input_ids):
        ids = ids[attention_mask[i] == 1]
        starts = torch.argwhere(ids == VISION_START).squeeze(1)
        kinds = ids[starts + 1]
        image_nums, video_nums = int((kinds == IMAGE_PAD).sum()), int((kinds == VIDEO_PAD).sum())
        tokens = ids.tolist()
        pos, st = [], 0
        remain_images, remain_videos = image_nums, video_nums
        for _ in range(image_nums + video_nums):
            ed_image = tokens.index(IMAGE_PAD, st) if IMAGE_PAD in tokens and remain_images > 0 \
                else len(tokens) + 1
            ed_video = tokens.index(VIDEO_PAD, st) if VIDEO_PAD in tokens and remain_videos > 0 \
                else len(tokens) + 1
            if ed_image < ed_video:
                t, h, w = image_grid_thw[image_index]
                second_per_grid_t = 0
                image_index += 1
                remain_images -= 1
                ed = ed_image
            else:
                t, h, w = video_grid_thw[video_index]
                second_per_grid_t = second_per_grid_ts[video_index]
                video_index += 1
                remain_videos -= 1
                ed = ed_video
            gt, gh, gw = int(t), int(h) // merge, int(w) // merge
            text_len = ed - st
            st_idx = pos[-1].max() + 1 if pos else 0
            pos.append(torch.arange(text_len).view(1, -1).expand(3, -1) + st_idx)
            range_tensor = torch.arange(gt).view(-1, 1)
            expanded_range = range_tensor.expand(-1, gh * gw)
            if cast_first:
                second_per_grid_t = torch.as_tensor(second_per_grid_t, dtype=range_tensor.dtype)
            time_tensor = expanded_range * second_per_grid_t * tokens_per_second
            t_index = time_tensor.long().flatten()
            h_index = torch.arange(gh).view(1, -1, 1).expand(gt, -1, gw).flatten()
            w_index = torch.arange(gw).view(1, 1, -1).expand(gt, gh, -1).flatten()
            pos.append(torch.stack([t_index, h_index, w_index]) + text_len + st_idx)
            st = ed + gt * gh * gw
        if st < len(tokens):
            st_idx = pos[-1].max() + 1 if pos else 0
            pos.append(torch.arange(len(tokens) - st).view(1, -1).expand(3, -1) + st_idx)
        position_ids[..., i, attention_mask[i] == 1] = torch.cat(pos, dim=1).reshape(3, -1)
    return position_ids


@pytest.fixture(scope="module")
def frames_data(tmp_path_factory):
    from PIL import Image

    d = tmp_path_factory.mktemp("time_index")
    with open(d / "data.jsonl", "w") as f:
        for k, fps in enumerate(FPS):
            names = []
            for j in range(8):  # 8 frames: grid_t 4
                name = f"v{k}_{j}.jpg"
                Image.new("RGB", (112, 84), (30 * j, 60 + 20 * k, 200 - 20 * j)).save(d / name)
                names.append(name)
            f.write(json.dumps({"id": f"fps{fps}", "messages": [
                {"role": "user", "content": [{"type": "video", "video": names, "sample_fps": fps},
                                             {"type": "text", "text": "What changes?"}]},
                {"role": "assistant", "content": "The colours."}]}) + "\n")
    return d


def one_batch(stoker, data, **kw):
    loader = stoker.Loader(str(data), batch_size=len(FPS), threads=1, max_length=0, seed=0,
                           **kw)
    batches = list(loader)
    assert len(batches) == 1
    return batches[0]


def check_against_reference(b, cast_first):
    want = hf_get_rope_index(b["input_ids"], b.get("image_grid_thw"), b["video_grid_thw"],
                             b["second_per_grid_ts"], b["attention_mask"], cast_first)
    mask = b["attention_mask"].bool()
    for r in range(b["input_ids"].shape[0]):
        got = b["position_ids"][:, r, :][:, mask[r]]
        assert torch.equal(got, want[:, r, :][:, mask[r]]), (cast_first, r)


def test_both_modes_match_their_transformers_version(stoker, frames_data):
    float_b = one_batch(stoker, frames_data / "data.jsonl")  # the default
    check_against_reference(float_b, cast_first=False)
    int_b = one_batch(stoker, frames_data / "data.jsonl", video_time_index="int")
    check_against_reference(int_b, cast_first=True)
    spg = float_b["second_per_grid_ts"].tolist()
    assert sorted(spg) == pytest.approx(sorted(2 / f for f in FPS), rel=1e-6), spg
    # The two differ exactly where seconds per grid is fractional, and agree elsewhere.
    ids = float_b["sample_ids"].tolist()
    assert ids == int_b["sample_ids"].tolist()
    for r, sample in enumerate(ids):
        differ = not torch.equal(float_b["position_ids"][:, r], int_b["position_ids"][:, r])
        assert differ == (FPS[sample] != 1), (FPS[sample], differ)
    with pytest.raises(stoker.InvalidArgumentError,
                       match=r"video_time_index must be one of 'float', 'int', got 'round'"):
        stoker.Loader(str(frames_data / "data.jsonl"), video_time_index="round")


def test_the_cli_and_a_model_folder_choose_it_too(stoker, frames_data, tmp_path):
    def hashes(*extra):
        out = tmp_path / ("h" + "_".join(extra).replace("-", "").replace("/", "_") + ".txt")
        r = subprocess.run([_stoker_bin(), "run", str(frames_data / "data.jsonl"), "--quiet",
                            "--threads", "1", "--batch-size", str(len(FPS)), "--max-length", "0",
                            "--batch-hashes", str(out), *extra],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        return out.read_text()
    default, flt, cast = hashes(), hashes("--video-time-index", "float"), \
        hashes("--video-time-index", "int")
    assert default == flt != cast
    # A model folder's stoker.json carries the choice the checkpoint was trained with; the
    # keyword still wins over it.
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(
        {"model_type": "qwen2_5_vl", "vision_config": {"tokens_per_second": 2}}))
    (folder / "stoker.json").write_text(json.dumps({"video_time_index": "int"}))
    tokenizer = os.path.join(os.path.dirname(_stoker_bin()), "share", "stoker", "tokenizers",
                             "qwen2_5")
    b = one_batch(stoker, frames_data / "data.jsonl", model=str(folder), tokenizer=tokenizer)
    check_against_reference(b, cast_first=True)
    b = one_batch(stoker, frames_data / "data.jsonl", model=str(folder), tokenizer=tokenizer,
                  video_time_index="float")
    check_against_reference(b, cast_first=False)
