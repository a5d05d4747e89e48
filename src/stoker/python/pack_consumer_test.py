"""Packed batches through a real consumer: a tiny Qwen-shaped decoder in torch (float64, CPU).

The model takes what a Qwen2.5-VL / Qwen3-VL forward takes — input ids, pixel rows merged 2x2 into
the image-pad embeddings, mRoPE (sections over head_dim, as transformers' multimodal rotary
embedding) from the given position ids, causal attention made block-diagonal from
`cu_seq_lens_q` (the FA2 varlen path) or, like transformers' sdpa/eager path without an
attention mask, from the resets of the text row (row 0) of 4-row position ids — and gives a
per-token next-token loss. The loss of every token of a packed batch must equal the loss of the
same token when its sample runs alone, unpadded (max |Δ| ≤ 1e-9), for all three models and both
pack forms. Wrong positions must fail that check.

Why "whole-pack mRoPE" (get_rope_index over the packed row as one sequence) is tested against
the row-0 consumer: that error shifts every row of a sub-sequence by the same constant, and
rotary attention depends only on position differences, so a consumer that isolates
sub-sequences by cu_seq_lens alone computes the same loss (verified below, and documented);
the harm is that the text row no longer resets, so transformers' packed-sequence detection
(masking_utils.find_packed_sequence_indices) sees one sequence and samples attend across
boundaries — the LLaMA-Factory / TRL bug class. mRoPE skipped (1-D arange on all rows,
NVIDIA-NeMo/Automodel#2172) changes image-token positions non-uniformly and fails with either
mask.

Run: STOKER_BIN=build/stoker STOKER_PYTHON_DIR=build/python /usr/bin/python3 -m pytest -q THIS
"""
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

_py_dir = os.environ.get("STOKER_PYTHON_DIR")
if _py_dir:
    sys.path.insert(0, _py_dir)
import stoker  # noqa: E402

IMAGE_PAD, VISION_START = 151655, 151652
TOL = 1e-9


def _stoker_bin():
    here = os.path.dirname(os.path.abspath(__file__))
    return os.environ.get("STOKER_BIN") or os.path.join(here, "..", "..", "..", "build", "stoker")


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    out = tmp_path_factory.mktemp("consumer")
    subprocess.run([_stoker_bin(), "synth", "--out", str(out), "--n", "20", "--seed", "5",
                    "--max-side", "192"], check=True, capture_output=True)
    return str(out / "data.jsonl")


# ---- an independent get_rope_index (images; spec/qwen-vl.md §5.1) ------------------------------

def rope_index(ids, grids, merge=2):
    """3 x n positions: text runs advance all rows; an image run gets (t, h, w) + its start; the
    next text starts at max + 1. Images have grid_t = 1, so t_idx = 0 for every model."""
    ids = ids.tolist()
    rows = [[], [], []]
    nxt, i, img = 0, 0, 0
    while i < len(ids):
        if ids[i] == IMAGE_PAD and i > 0 and ids[i - 1] == VISION_START:
            t, h, w = (int(x) for x in grids[img])
            h, w = h // merge, w // merge
            for tt in range(t):
                for hh in range(h):
                    for ww in range(w):
                        rows[0].append(nxt + tt)
                        rows[1].append(nxt + hh)
                        rows[2].append(nxt + ww)
            nxt = max(max(r) for r in rows) + 1
            i += t * h * w
            img += 1
            continue
        for r in rows:
            r.append(nxt)
        nxt += 1
        i += 1
    return torch.tensor(rows, dtype=torch.int64)


# ---- the tiny model --------------------------------------------------------------------------

class TinyQwen:
    """2 layers, 2 heads of 16, d = 32, SwiGLU MLP, RMSNorm, mRoPE sections (2, 3, 3) over the
    8 frequencies of a head (Qwen2.5-VL's (16, 24, 24) scaled down), a 2x2 patch merger."""

    def __init__(self, patch_cols, seed=0, d=32, heads=2, hd=16, layers=2, vocab=512):
        g = torch.Generator().manual_seed(seed)

        def w(*shape, scale=0.2):
            return torch.randn(*shape, generator=g, dtype=torch.float64) * scale

        self.d, self.heads, self.hd, self.vocab = d, heads, hd, vocab
        self.emb = w(vocab, d)
        self.patch = w(patch_cols, d, scale=0.02)
        self.merger = w(4 * d, d, scale=0.1)
        self.layers = [dict(q=w(d, heads * hd), k=w(d, heads * hd), v=w(d, heads * hd),
                            o=w(heads * hd, d), up=w(d, 64), gate=w(d, 64), down=w(64, d))
                       for _ in range(layers)]
        self.head = w(d, vocab)
        self.inv_freq = 1.0 / (10000.0 ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
        self.section = [2, 3, 3]

    @staticmethod
    def _norm(x):
        return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6)

    def _rope(self, pos3):
        freqs = pos3.to(torch.float64)[..., None] * self.inv_freq  # [3, n, hd/2]
        emb = torch.cat([freqs, freqs], dim=-1)  # [3, n, hd]
        chunks = (self.section * 2)
        cos = torch.cat([c[i % 3] for i, c in enumerate(emb.cos().split(chunks, dim=-1))], -1)
        sin = torch.cat([c[i % 3] for i, c in enumerate(emb.sin().split(chunks, dim=-1))], -1)
        return cos, sin  # [n, hd]

    @staticmethod
    def _rotate(x, cos, sin):
        half = x.shape[-1] // 2
        rot = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * cos + rot * sin

    def hidden(self, ids, pixels, pos3, segment):
        x = self.emb[ids % self.vocab].clone()
        pads = ids == IMAGE_PAD
        if pixels.shape[0]:
            v = pixels.to(torch.float64) @ self.patch
            v = v.reshape(-1, 4 * self.d) @ self.merger  # 4 consecutive patch rows = one token
            assert int(pads.sum()) == v.shape[0], "pixel rows and image pads disagree"
            x[pads] = v
        cos, sin = self._rope(pos3)
        n = ids.shape[0]
        i = torch.arange(n)
        allowed = (segment[:, None] == segment[None, :]) & (i[None, :] <= i[:, None])
        for L in self.layers:
            h = self._norm(x)
            q = (h @ L["q"]).view(n, self.heads, self.hd).transpose(0, 1)
            k = (h @ L["k"]).view(n, self.heads, self.hd).transpose(0, 1)
            v = (h @ L["v"]).view(n, self.heads, self.hd).transpose(0, 1)
            q, k = self._rotate(q, cos, sin), self._rotate(k, cos, sin)
            s = (q @ k.transpose(1, 2)) / self.hd ** 0.5
            s = s.masked_fill(~allowed, float("-inf"))
            a = (s.softmax(-1) @ v).transpose(0, 1).reshape(n, -1)
            x = x + a @ L["o"]
            h = self._norm(x)
            x = x + (torch.nn.functional.silu(h @ L["gate"]) * (h @ L["up"])) @ L["down"]
        return self._norm(x) @ self.head  # logits [n, vocab]

    def token_loss(self, logits, targets):
        """Loss of each position predicting `targets` (already aligned); NaN where ignored."""
        keep = targets != -100
        loss = torch.full((logits.shape[0],), float("nan"), dtype=torch.float64)
        lp = logits.log_softmax(-1)
        loss[keep] = -lp[keep.nonzero().squeeze(1), targets[keep] % self.vocab]
        return loss


def segments_from_cu(cu, n):
    return torch.bucketize(torch.arange(n), cu[1:].to(torch.int64), right=True)


def segments_from_text_row(row0):
    return torch.cumsum((row0 == 0).to(torch.int64), 0) - 1


def shifted(labels):
    """HF computes the loss of position t against labels[t + 1]."""
    return torch.cat([labels[1:], torch.tensor([-100])])


MAX_TOKENS = 1024


def unpadded(path, model):
    """sample id → (ids, labels, positions [3, n], pixel rows, grids), one sample per batch."""
    out = {}
    for b in stoker.Loader(data=path, model=model, batch_size=1, mode="serial",
                           max_length=MAX_TOKENS):
        out[int(b["sample_ids"][0])] = (b["input_ids"][0], b["labels"][0], b["position_ids"][:, 0],
                                        b["pixel_values"], b["image_grid_thw"])
    return out


def packs(path, model, **kw):
    return list(stoker.Loader(data=path, model=model, packing=True, max_tokens=MAX_TOKENS,
                              max_length=MAX_TOKENS, pack_window=12, **kw))


_cache = {}


def reference(path, model):
    """(unpadded samples, the model, each sample's token losses alone), once per model."""
    if model not in _cache:
        ref = unpadded(path, model)
        net = TinyQwen(ref[next(iter(ref))][3].shape[1])
        _cache[model] = (ref, net, reference_losses(net, ref))
    return _cache[model]


def reference_losses(net, ref):
    """Per-sample token losses, each sample alone and unpadded."""
    out = {}
    for sid, (ids, labels, pos, pix, _) in ref.items():
        logits = net.hidden(ids, pix, pos, torch.zeros_like(ids))
        out[sid] = net.token_loss(logits, shifted(labels))
    return out


def max_delta(packed_loss, cu, sample_ids, ref_loss):
    worst, compared = 0.0, 0
    for k, sid in enumerate(sample_ids.tolist()):
        a, b = int(cu[k]), int(cu[k + 1])
        got, want = packed_loss[a:b], ref_loss[sid]
        assert torch.equal(torch.isnan(got), torch.isnan(want)), f"ignored tokens differ ({sid})"
        m = ~torch.isnan(want)
        if m.any():
            worst = max(worst, float((got[m] - want[m]).abs().max()))
            compared += int(m.sum())
    return worst, compared


MODELS = ["qwen2-vl", "qwen2.5-vl", "qwen3-vl"]


@pytest.mark.parametrize("model", MODELS)
def test_hf_packed_loss_equals_each_sample_alone(data, model):
    ref, net, ref_loss = reference(data, model)
    for sid, (ids, _, pos, _, grids) in ref.items():  # stoker's mRoPE vs this file's
        assert torch.equal(pos, rope_index(ids, grids)), f"sample {sid}"
    compared, seen = 0, set()
    for b in packs(data, model):
        ids, pos, cu = b["input_ids"][0], b["position_ids"][:, 0], b["cu_seq_lens_q"]
        assert pos.shape[0] == 4 and b["max_length_q"] == int((cu[1:] - cu[:-1]).max())
        for source in (segments_from_cu(cu, ids.shape[0]), segments_from_text_row(pos[0])):
            loss = net.token_loss(net.hidden(ids, b["pixel_values"], pos[1:], source),
                                  shifted(b["labels"][0]))
            worst, n = max_delta(loss, cu, b["sample_ids"], ref_loss)
            assert worst <= TOL, f"{model}: packed vs alone differ by {worst}"
        compared += n
        seen.update(b["sample_ids"].tolist())
    assert seen == set(ref) and compared > 500


def test_megatron_packed_loss_equals_each_sample_alone(data):
    """THD: shifted labels and loss_mask, alignment gaps, 1-D positions — the model recomputes
    mRoPE per sub-sequence from ids + grids (as Megatron-Bridge's Qwen-VL forward does)."""
    model = "qwen2.5-vl"
    ref, net, ref_loss = reference(data, model)
    compared = 0
    for b in packs(data, model, pack_format="megatron", pack_align=8):
        ids, labels, mask = b["input_ids"][0], b["labels"][0], b["loss_mask"][0]
        cu, cu_pad = b["cu_seqlens_q"], b["cu_seqlens_q_padded"]
        assert torch.equal(b["position_ids"][0], torch.cat(
            [torch.arange(int(cu_pad[k + 1] - cu_pad[k])) for k in range(len(cu) - 1)]))
        grids = b["image_grid_thw"]
        pos = torch.zeros(3, ids.shape[0], dtype=torch.int64)
        seg = torch.full((ids.shape[0],), -1, dtype=torch.int64)
        g = 0
        for k in range(len(cu) - 1):
            a, n = int(cu_pad[k]), int(cu[k + 1] - cu[k])
            imgs = int(((ids[a:a + n] == IMAGE_PAD) & (torch.roll(ids, 1)[a:a + n] == VISION_START)).sum())
            pos[:, a:a + n] = rope_index(ids[a:a + n], grids[g:g + imgs])
            seg[a:a + n] = k
            seg[a + n:int(cu_pad[k + 1])] = 1000 + k  # gaps: their own segments, masked out
            g += imgs
        loss = net.token_loss(net.hidden(ids, b["pixel_values"], pos, seg), labels)
        assert torch.equal(~torch.isnan(loss), mask.bool())
        for k, sid in enumerate(b["sample_ids"].tolist()):
            a, n = int(cu_pad[k]), int(cu[k + 1] - cu[k])
            got, want = loss[a:a + n], ref_loss[sid]
            m = ~torch.isnan(want)
            assert torch.equal(torch.isnan(got), torch.isnan(want))
            if m.any():
                assert float((got[m] - want[m]).abs().max()) <= TOL
                compared += int(m.sum())
    assert compared > 500


def whole_pack_positions(ids, grids):
    """The bug: get_rope_index over the packed row as if it were one sequence (4 rows: text row
    arange over the row, then the 3 mRoPE rows)."""
    p = rope_index(ids, grids)
    return torch.cat([torch.arange(ids.shape[0])[None], p])


def test_wrong_positions_fail_the_check(data):
    model = "qwen2.5-vl"
    ref, net, ref_loss = reference(data, model)
    worst_row0, worst_cu, worst_flat, multi = 0.0, 0.0, 0.0, 0
    for b in packs(data, model):
        ids, cu, pix = b["input_ids"][0], b["cu_seq_lens_q"], b["pixel_values"]
        labels = shifted(b["labels"][0])
        if len(cu) < 3:
            continue
        multi += 1
        wrong = whole_pack_positions(ids, b["image_grid_thw"])
        assert not torch.equal(wrong, b["position_ids"][:, 0])
        # Transformers' path without cu_seq_lens: boundaries from the text row, which never resets.
        loss = net.token_loss(net.hidden(ids, pix, wrong[1:], segments_from_text_row(wrong[0])), labels)
        worst_row0 = max(worst_row0, max_delta(loss, cu, b["sample_ids"], ref_loss)[0])
        # FA2 varlen with cu_seq_lens: a per-sub-sequence constant shift, invisible to rotary
        # attention (relative positions) — equal up to rounding.
        loss = net.token_loss(net.hidden(ids, pix, wrong[1:], segments_from_cu(cu, ids.shape[0])), labels)
        worst_cu = max(worst_cu, max_delta(loss, cu, b["sample_ids"], ref_loss)[0])
        # mRoPE skipped: arange per sub-sequence on all three rows.
        flat = b["position_ids"][0, 0].expand(3, -1)
        loss = net.token_loss(net.hidden(ids, pix, flat, segments_from_cu(cu, ids.shape[0])), labels)
        worst_flat = max(worst_flat, max_delta(loss, cu, b["sample_ids"], ref_loss)[0])
    assert multi >= 2
    print(f"whole-pack mRoPE, row-0 mask: max |d| {worst_row0:.3g}; cu_seq_lens mask: "
          f"{worst_cu:.3g}; mRoPE skipped: {worst_flat:.3g}")
    assert worst_row0 > 1e-3, "whole-pack positions must fail where boundaries come from row 0"
    assert worst_flat > 1e-3, "skipping mRoPE must fail"
    assert worst_cu <= TOL  # the invariance the module docstring explains


def test_packing_options_are_checked(data):
    """Strict like every option: types, ranges, and the packing options only with packing."""
    bad = [dict(max_tokens=4096),                                  # without packing
           dict(packing=True, token_budget=True),
           dict(packing=True, pack_align=8),                       # hf has no alignment
           dict(packing=True, pack_format="thd"),
           dict(packing=True, max_tokens=True),                    # a bool is not an int
           dict(packing=True, max_tokens=0),
           dict(packing=True, position_rows=2),
           dict(token_budget=True, pack_format="hf"),
           dict(packing="yes"),
           dict(pack_window=64)]
    for kw in bad:
        with pytest.raises(stoker.InvalidArgumentError):
            stoker.Loader(data=data, **kw)
    # The same checks in C++ (config.cc) when the package is bypassed.
    for kw in (dict(max_tokens=4096), dict(packing=True, pack_align=8),
               dict(packing=True, token_budget=True), dict(packing=True, position_rows=5)):
        with pytest.raises(stoker.InvalidArgumentError):
            stoker._stoker.RawLoader(dict(data=[data], **kw))
    loader = stoker.Loader(data=data, packing=True, max_tokens=MAX_TOKENS, max_length=MAX_TOKENS,
                           pack_window=12, mode="serial")
    it = iter(loader)
    next(it)
    sd = loader.state_dict()
    assert set(sd) == {"epoch", "position", "errors", "packs", "plan", "version", "fingerprint"}
    again = stoker.Loader(data=data, packing=True, max_tokens=MAX_TOKENS, max_length=MAX_TOKENS,
                          pack_window=12, mode="serial")
    again.load_state_dict(sd)
    other = stoker.Loader(data=data, packing=True, max_tokens=512, max_length=MAX_TOKENS,
                          pack_window=12, mode="serial")
    with pytest.raises(stoker.InvalidArgumentError):
        other.load_state_dict(sd)  # another plan
    assert next(iter(again))["sample_ids"].tolist() == next(it)["sample_ids"].tolist()
