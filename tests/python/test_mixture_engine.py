"""A mixture spec as the data argument of `stoker run` (ctest `mixture_engine`, issue 23): three
sources of three kinds (JSONL, WebDataset shards, an Energon folder) blended by a MetadatasetV2
YAML, in both modes.
- The global plan is the only order: the streams of world sizes 1, 2 and 8 (global batch 8,
  each rank's batches concatenated in rank order per step) are identical.
- Epochized: over the first epoch every sample of source s is delivered exactly floor(r_s·N_s)
  times (counted here from the delivered ids; the fractional source: that many distinct ones).
- 20+ SIGKILLs at random moments, each segment run at a random world size (1, 2, 4 or 8 ranks
  started together, resumed from the state all of them had saved): the concatenated stream equals
  the uninterrupted world-1 run's.
- A changed spec is refused naming the change; --allow-spec-change resumes at the position.
- The JSON form mixes JSONL files the same way.
- Per-source counts (summary, stats()) counted from the delivered ids; stoker.Loader's
  state_dict() resumes at another world size; `stoker serve` ranks get `stoker run --rank`'s slices.
Run: STOKER_BIN=build/stoker /usr/bin/python3 -m pytest -q tests/python/test_mixture_engine.py
"""
from __future__ import annotations

import collections
import os
import random
import re
import shutil
import signal
import subprocess
import time

import pytest

from mixture_sets import EPOCHIZED, SIZES, make_mix

G = 8


@pytest.fixture(scope="module")
def mix(stoker_bin, tmp_path_factory):
    return make_mix(stoker_bin, tmp_path_factory.mktemp("mix"))


def args(stoker_bin, spec, work, rank=0, world=1, epochs=1, extra=()):
    return [stoker_bin, "run", str(spec), "--model", "qwen2-vl", "--batch-size", str(G // world),
            "--rank", str(rank), "--world-size", str(world), "--seed", "7", "--epochs", str(epochs),
            "--threads", "1", "--io-threads", "2", "--prefetch", "2", "--quiet", "--arena-mb", "128",
            "--delivered-log", str(work / f"dl_{rank}.txt"), *extra]


def env_for(work):
    return dict(os.environ, STOKER_CACHE_DIR=str(work.parent / "cache"))


def ids(path, skip=0):
    return [[int(x) for x in line.split()[2:]] for line in open(path).read().splitlines()[skip:]]


def world_stream(stoker_bin, spec, work, world, epochs):
    work.mkdir(parents=True, exist_ok=True)
    for r in range(world):
        p = subprocess.run(args(stoker_bin, spec, work, r, world, epochs), env=env_for(work),
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
    per_rank = [ids(work / f"dl_{r}.txt") for r in range(world)]
    assert len({len(x) for x in per_rank}) == 1, "every rank has a batch in every step"
    return [sum((per_rank[r][t] for r in range(world)), []) for t in range(len(per_rank[0]))]


@pytest.mark.parametrize("mode", ["epochized", "weighted"])
def test_world_sizes_give_one_stream(stoker_bin, mix, tmp_path, mode):
    spec = mix / f"{mode}.yaml"
    one = world_stream(stoker_bin, spec, tmp_path / "w1", 1, 2)
    assert all(len(step) == G for step in one)
    for world in (2, 8):
        assert world_stream(stoker_bin, spec, tmp_path / f"w{world}", world, 2) == one, world
    flat = [i for step in one for i in step]
    first = [0, SIZES[0], SIZES[0] + SIZES[1], sum(SIZES)]
    source = [next(s for s in range(3) if first[s] <= i < first[s + 1]) for i in flat]
    if mode == "epochized":
        T = 40 * 1 + 30 * 2 + 10  # floor(r·N) per source
        epoch0 = collections.Counter(flat[:T])
        assert {epoch0[i] for i in range(0, 40)} == {1}
        assert {epoch0[i] for i in range(40, 70)} == {2}
        assert sum(1 for i in range(70, 90) if epoch0[i]) == 10
        assert all(epoch0[i] <= 1 for i in range(70, 90))
        assert len(flat) == -(-2 * T // G) * G
    else:
        n = len(flat)
        counts = collections.Counter(source)
        for s, w in enumerate((5 / 8, 2 / 8, 1 / 8)):
            sigma = (n * w * (1 - w)) ** 0.5
            assert abs(counts[s] - n * w) <= 4 * sigma, (s, counts)


def _steps_saved(state_file):
    if not state_file.exists():
        return None
    text = state_file.read_text()
    m = re.search(r"position=(\d+)", text)
    return int(m.group(1)) // G if m else None


def test_sigkill_resume_at_random_world_sizes(stoker_bin, mix, tmp_path):
    spec = mix / "epochized.yaml"
    epochs = 12  # 165 steps of 8
    ref = world_stream(stoker_bin, spec, tmp_path / "ref", 1, epochs)
    rng = random.Random(2323)
    stream, state, done_steps = [], None, 0
    kills = segments = 0
    worlds_used = set()
    while True:
        segments += 1
        assert segments < 120, "the run never finished"
        world = rng.choice((1, 2, 4, 8))
        worlds_used.add(world)
        seg = tmp_path / f"seg{segments}"
        seg.mkdir()
        procs = []
        for r in range(world):
            extra = ["--state-file", str(seg / f"st_{r}.txt"), "--step-ms", "60"]
            if state is not None:
                extra += ["--resume", str(state)]
                # run cuts its delivered log back to the state's batches: give it those lines
                (seg / f"dl_{r}.txt").write_text("x\n" * int(re.search(r"batches=(\d+)", state.read_text()).group(1)))
            procs.append(subprocess.Popen(args(stoker_bin, spec, seg, r, world, epochs, extra),
                                          env=env_for(seg), stdout=subprocess.DEVNULL,
                                          stderr=subprocess.PIPE))
        killed = False
        if kills < 22:
            time.sleep(rng.uniform(0.3, 1.2))
            if any(p.poll() is None for p in procs):
                for p in procs:
                    if p.poll() is None:
                        p.send_signal(signal.SIGKILL)
                killed = True
                kills += 1
        for p in procs:
            _, err = p.communicate(timeout=300)
            if not killed:
                assert p.returncode == 0, err.decode()
        # The step every rank had saved; that rank's state file is the job's checkpoint.
        saved = [_steps_saved(seg / f"st_{r}.txt") for r in range(world)]
        if not killed:
            assert saved == [len(ref)] * world, saved
        if any(s is None for s in saved):
            continue  # a rank saved nothing: resume again from the previous checkpoint
        common = min(saved)
        if common <= done_steps:
            continue
        prefill = int(re.search(r"batches=(\d+)", state.read_text()).group(1)) if state else 0
        per_rank = [ids(seg / f"dl_{r}.txt", skip=prefill) for r in range(world)]
        for t in range(common - done_steps):
            stream.append(sum((per_rank[r][t] for r in range(world)), []))
        done_steps = common
        state = seg / f"st_{saved.index(common)}.txt"
        if not killed or done_steps == len(ref):
            break
    print(f"kills {kills}, segments {segments}, world sizes {sorted(worlds_used)}")
    assert stream == ref
    assert kills >= 20
    assert len(worlds_used) >= 3


def test_changed_spec_refused_unless_allowed(stoker_bin, mix, tmp_path):
    spec = tmp_path / "m.yaml"
    spec.write_text(EPOCHIZED.replace("a/", str(mix / "a") + "/").replace("b/", str(mix / "b") + "/")
                    .replace("c/", str(mix / "c") + "/"))
    w = tmp_path / "w"
    w.mkdir()
    st = w / "st.txt"
    r = subprocess.run(args(stoker_bin, spec, w, extra=["--state-file", str(st)]),
                       env=env_for(w), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    spec.write_text(spec.read_text().replace("repetitions: 2", "repetitions: 3"))
    r = subprocess.run(args(stoker_bin, spec, w, epochs=2, extra=["--resume", str(st)]), env=env_for(w),
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert "mixture changed" in r.stderr and "--allow-spec-change" in r.stderr, r.stderr
    r = subprocess.run(args(stoker_bin, spec, w, epochs=2, extra=["--resume", str(st), "--allow-spec-change"]),
                       env=env_for(w), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert len(ids(w / "dl_0.txt")) > 14  # it went on into the second epoch
    assert "mixture changed" in r.stderr  # said as a warning


def test_json_form(stoker_bin, mix, tmp_path):
    spec = tmp_path / "m.json"
    spec.write_text('[{"path": "%s", "repeat": 1}, {"path": "%s", "repeat": 2}]'
                    % (mix / "a" / "data.jsonl", mix / "c" / "data.jsonl"))
    one = world_stream(stoker_bin, spec, tmp_path / "w1", 1, 1)
    two = world_stream(stoker_bin, spec, tmp_path / "w2", 2, 1)
    assert one == two
    flat = collections.Counter(i for s in one for i in s)
    assert {flat[i] for i in range(40)} == {1} and {flat[i] for i in range(40, 60)} == {2}


def test_per_source_counts_in_summary_and_stats(stoker_bin, mix, tmp_path):
    """Planned (the whole job, from the plan) vs this rank's delivered, counted independently
    from the delivered ids; the same numbers in stats()['sources'] and the metrics text."""
    spec = mix / "epochized.yaml"
    w = tmp_path / "r"
    w.mkdir()
    r = subprocess.run(args(stoker_bin, spec, w, rank=1, world=2), env=env_for(w), capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = [x for x in r.stdout.splitlines() if x.strip().startswith("source ")]
    assert len(lines) == 3, r.stdout
    first = [0, SIZES[0], SIZES[0] + SIZES[1], sum(SIZES)]
    mine = collections.Counter(next(s for s in range(3) if first[s] <= i < first[s + 1])
                               for b in ids(w / "dl_1.txt") for i in b)
    steps = len(ids(w / "dl_1.txt"))
    # the job's plan over `steps` steps of 8 = both ranks' samples: this rank's + rank 0's
    w0 = tmp_path / "r0"
    w0.mkdir()
    subprocess.run(args(stoker_bin, spec, w0, rank=0, world=2), env=env_for(w0), check=True,
                   capture_output=True)
    theirs = collections.Counter(next(s for s in range(3) if first[s] <= i < first[s + 1])
                                 for b in ids(w0 / "dl_0.txt") for i in b)
    for s, line in enumerate(lines):
        m = re.search(r"(\d+) planned \(job\), (\d+) delivered, (\d+) failed", line)
        assert m, line
        assert int(m.group(2)) == mine[s] and int(m.group(3)) == 0, line
        assert int(m.group(1)) == mine[s] + theirs[s], line
    assert sum(mine.values()) == steps * G // 2
    py = os.environ.get("STOKER_PYTHON_DIR")
    if not py:
        return
    code = ("import json,sys,stoker\n"
            "l=stoker.Loader(data=[sys.argv[1]], model='qwen2-vl', batch_size=4, rank=1, world_size=2, seed=7,"
            " threads=1)\n"
            "n=sum(1 for _ in l)\nprint(json.dumps(l.stats()['sources']))\n")
    p = subprocess.run(["/usr/bin/python3", "-c", code, str(spec)], capture_output=True, text=True,
                       env=dict(env_for(w), PYTHONPATH=py), timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    import json
    got = json.loads(p.stdout.strip().splitlines()[-1])
    assert [g["delivered"] for g in got] == [mine[s] for s in range(3)]
    assert [g["planned"] for g in got] == [mine[s] + theirs[s] for s in range(3)]


LOADER_RESUME = r"""
import json, sys, stoker
spec, world, rank, batch, take, state = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
l = stoker.Loader(data=[spec], model="qwen2-vl", batch_size=batch, rank=rank, world_size=world, seed=7, threads=1)
if state != "-":
    l.load_state_dict(json.loads(state))
out = []
for i, b in enumerate(l):
    out.append(b["sample_ids"].tolist())
    if take and len(out) == take:
        break
print(json.dumps({"ids": out, "state": l.state_dict()}))
"""


def test_loader_state_dict_resumes_at_another_world_size(mix, tmp_path):
    """stoker.Loader: 5 steps at world 1, state_dict(), the rest at world 2 (both ranks from
    that dict) = the uninterrupted world-1 stream; the dict carries the plan (mix)."""
    py = os.environ.get("STOKER_PYTHON_DIR")
    if not py:
        pytest.skip("STOKER_PYTHON_DIR not set")
    spec = str(mix / "epochized.yaml")
    env = dict(os.environ, PYTHONPATH=py, STOKER_CACHE_DIR=str(tmp_path / "cache"))

    def child(world, rank, batch, take, state):
        import json
        p = subprocess.run(["/usr/bin/python3", "-c", LOADER_RESUME, spec, str(world), str(rank), str(batch),
                            str(take), json.dumps(state) if state else "-"], env=env, capture_output=True,
                           text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-2000:]
        return json.loads(p.stdout.strip().splitlines()[-1])

    full = child(1, 0, G, 0, None)["ids"]
    head = child(1, 0, G, 5, None)
    assert "mix" in head["state"], head["state"]
    tails = [child(2, r, G // 2, 0, head["state"])["ids"] for r in range(2)]
    assert len(tails[0]) == len(tails[1]) == len(full) - 5
    assert head["ids"] + [a + b for a, b in zip(*tails)] == full


SERVED_CLIENT = r"""
import json, sys, stoker
l = stoker.Loader(connect=sys.argv[1], rank=int(sys.argv[2]), world_size=2)
print(json.dumps([b["sample_ids"].tolist() for b in l]))
"""


def serve_two_ranks(stoker_bin, spec, sock, env, *extra):
    """`stoker serve SPEC --world-size 2` (B = G/2, seed 7, one thread, `extra` flags) with both
    ranks attached as SERVED_CLIENT processes: each rank's batches' sample ids, in rank order;
    every process must exit 0."""
    import json
    server = subprocess.Popen([stoker_bin, "serve", str(spec), "--world-size", "2", "--socket", str(sock),
                               "--model", "qwen2-vl", "--batch-size", str(G // 2), "--seed", "7",
                               "--threads", "1", *extra], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE)
    try:
        for _ in range(200):
            if sock.exists():
                break
            time.sleep(0.05)
        clients = [subprocess.Popen(["/usr/bin/python3", "-c", SERVED_CLIENT, str(sock), str(r)], env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in range(2)]
        served = []
        for c in clients:
            out, err = c.communicate(timeout=300)
            assert c.returncode == 0, err[-2000:]
            served.append(json.loads(out.strip().splitlines()[-1]))
        assert server.wait(timeout=60) == 0, server.stderr.read().decode()[-2000:]
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    return served


def test_served_ranks_follow_the_plan(stoker_bin, mix, tmp_path):
    """`stoker serve mix.yaml --world-size 2`: each attached rank gets the same batches as
    `stoker run --rank r --world-size 2` (the plan's contiguous slices)."""
    py = os.environ.get("STOKER_PYTHON_DIR")
    if not py:
        pytest.skip("STOKER_PYTHON_DIR not set")
    spec = mix / "epochized.yaml"
    sock = tmp_path / "s.sock"
    env = dict(os.environ, PYTHONPATH=py, STOKER_CACHE_DIR=str(tmp_path / "cache"))
    served = serve_two_ranks(stoker_bin, spec, sock, env)
    for r in range(2):
        w = tmp_path / f"run{r}"
        w.mkdir()
        subprocess.run(args(stoker_bin, spec, w, rank=r, world=2), env=env_for(w), check=True, capture_output=True)
        assert served[r] == ids(w / f"dl_{r}.txt"), r


def test_packing_takes_windows_of_the_plan(stoker_bin, mix, tmp_path):
    """--packing over the epochized blend: the packs of an epoch hold exactly floor(r·N) draws of
    each source (counted from the delivered ids), world 2 delivers the same samples, and a
    weighted blend is refused for packing with the reason."""
    spec = mix / "epochized.yaml"
    pack = ["--packing", "--max-tokens", "4096", "--pack-window", "32"]
    w1 = tmp_path / "w1"
    w1.mkdir()
    r = subprocess.run(args(stoker_bin, spec, w1, extra=pack), env=env_for(w1), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    c = collections.Counter(i for b in ids(w1 / "dl_0.txt") for i in b)
    assert {c[i] for i in range(40)} == {1} and {c[i] for i in range(40, 70)} == {2}
    assert sum(1 for i in range(70, 90) if c[i]) == 10 and all(c[i] <= 1 for i in range(70, 90))
    assert "110 planned" not in r.stdout  # per-source lines: 40 / 60 / 10 planned
    assert re.search(r"source 1 .*: 60 planned \(job\), 60 delivered", r.stdout), r.stdout
    both = collections.Counter()
    for rank in range(2):
        w = tmp_path / f"w2_{rank}"
        w.mkdir()
        r = subprocess.run(args(stoker_bin, spec, w, rank=rank, world=2, extra=pack), env=env_for(w),
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        both.update(i for b in ids(w / f"dl_{rank}.txt") for i in b)
    assert set(both) == set(c)
    w = tmp_path / "weighted"
    w.mkdir()
    r = subprocess.run(args(stoker_bin, mix / "weighted.yaml", w, extra=pack), env=env_for(w), capture_output=True,
                       text=True)
    assert r.returncode != 0 and "weighted blend reads in fixed batches" in r.stderr, r.stderr


def test_a_step_whose_every_sample_failed_on_one_rank_is_an_empty_batch(stoker_bin, mix, tmp_path):
    """#23 (c): rank 1's whole slice of a middle step and of the last step is broken (records
    that fail at read): rank 1 still yields a batch for each — empty, 0 samples — so both ranks
    yield the same number of batches (DDP would hang otherwise), every other step unchanged;
    the same through stoker.Loader (0-row tensors) and stoker serve."""
    src = tmp_path / "src"
    src.mkdir()
    lines = (mix / "a" / "data.jsonl").read_text().splitlines()
    for p in (mix / "a").iterdir():
        if p.is_dir():
            shutil.copytree(p, src / p.name)
    (src / "data.jsonl").write_text("\n".join(lines) + "\n")
    spec = tmp_path / "m.json"
    spec.write_text('[{"path": "%s", "repeat": 1}]' % (src / "data.jsonl"))
    one = world_stream(stoker_bin, spec, tmp_path / "w1", 1, 1)
    assert len(one) == 5 and all(len(s) == G for s in one)
    steps = (2, 4)  # a middle step and the last one (the end of the data right after it)
    broken = {i for t in steps for i in one[t][G // 2:]}  # rank 1's slices (ids = line numbers)
    for i in broken:
        lines[i] = '{"id": "broken-%d", "messages": 7}' % i  # fails at read, the line count kept
    (src / "data.jsonl").write_text("\n".join(lines) + "\n")
    work = tmp_path / "w2"
    work.mkdir()
    per_rank = []
    for r in range(2):
        extra = ("--max-error-rate", "1", "--error-report", str(work / f"err_{r}.jsonl"))
        p = subprocess.run(args(stoker_bin, spec, work, r, 2, 1, extra), env=env_for(work),
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        per_rank.append(open(work / f"dl_{r}.txt").read().splitlines())
    assert len(per_rank[0]) == len(per_rank[1]) == len(one)
    got = [[[int(x) for x in per_rank[r][t].split()[2:]] for r in range(2)] for t in range(len(one))]
    for t in range(len(one)):
        want1 = [] if t in steps else one[t][G // 2:]
        assert got[t] == [one[t][:G // 2], want1], t
    for t in steps:
        assert per_rank[1][t].split()[1] == str(t)  # the empty batch holds the step's place
    import json
    reported = [json.loads(x) for x in open(work / "err_1.jsonl").read().splitlines()]
    assert sorted(r["sample"] for r in reported) == sorted(broken)
    # The Python Loader: the same batches, the empty one with 0-row tensors and its step.
    py = os.environ.get("STOKER_PYTHON_DIR")
    if py:
        env = dict(env_for(work), PYTHONPATH=py)
        p = subprocess.run(["/usr/bin/python3", "-c", EMPTY_STEP, str(spec)], env=env,
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr[-2000:]
        out = json.loads(p.stdout.strip().splitlines()[-1])
        assert out["ids"] == [g[1] for g in got]
        assert out["empty"] == [[t, [0, 0], 0] for t in steps]
        # `stoker serve`: both attached ranks get the same number of batches, rank 1 the empty one.
        sock = tmp_path / "s.sock"
        served = serve_two_ranks(stoker_bin, spec, sock, env, "--max-error-rate", "1")
        assert served == [[g[0] for g in got], [g[1] for g in got]]


EMPTY_STEP = r"""
import json, sys, stoker
l = stoker.Loader(data=[sys.argv[1]], model="qwen2-vl", batch_size=4, rank=1, world_size=2, seed=7,
                  threads=1, max_error_rate=1.0)
out, empty = [], []
for b in l:
    out.append(b["sample_ids"].tolist())
    if not out[-1]:
        empty.append([len(out) - 1, list(b["input_ids"].shape), int(b["pixel_values"].shape[0])])
print(json.dumps({"ids": out, "empty": empty}))
"""


SUBFLAVORS = """__module__: megatron.energon
__class__: MetadatasetV2
splits:
  train:
    blend:
      - weight: 2
        path: inner.yaml
        subflavors: {task: vqa, lang: en}
      - weight: 1
        path: c/energon
"""
SUBFLAVORS_INNER = """__module__: megatron.energon
__class__: MetadatasetV2
splits:
  train:
    blend:
      - weight: 1
        path: a/data.jsonl
        subflavors: {task: caption, level: 3, tags: [x, y]}
      - weight: 1
        path: b/shards/data-{000..002}.tar
"""


def test_subflavors_reach_the_sources_stats(stoker_bin, mix, tmp_path):
    """#23 (b): MetadatasetV2 subflavors are attached to every sample of their leaf — outer
    levels' keys winning over inner ones — and visible per source in stats()['sources'] with the
    leaf's sample-id range (first_id, records), so a batch's sample_ids map to their subflavors."""
    py = os.environ.get("STOKER_PYTHON_DIR")
    if not py:
        pytest.skip("STOKER_PYTHON_DIR not set")
    import json
    (mix / "subflavors.yaml").write_text(SUBFLAVORS)
    (mix / "inner.yaml").write_text(SUBFLAVORS_INNER)
    code = r"""
import json, sys, stoker
l = stoker.Loader(data=[sys.argv[1]], model="qwen2-vl", batch_size=8, seed=7, threads=1)
ids = []
for b in l:
    ids += b["sample_ids"].tolist()
    if len(ids) >= 40:
        break
print(json.dumps({"ids": ids, "sources": l.stats()["sources"]}))
"""
    env = dict(os.environ, PYTHONPATH=py, STOKER_CACHE_DIR=str(tmp_path / "cache"))
    p = subprocess.run(["/usr/bin/python3", "-c", code, str(mix / "subflavors.yaml")], env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    src = out["sources"]
    assert [s["name"].split("/")[-1] for s in src] == ["data.jsonl", "data-{000..002}.tar", "energon"]
    assert [s["subflavors"] for s in src] == [
        {"task": "vqa", "level": 3, "tags": ["x", "y"], "lang": "en"},  # outer 'task' wins
        {"task": "vqa", "lang": "en"},
        {}]
    assert [(s["first_id"], s["records"]) for s in src] == [(0, 40), (40, 30), (70, 20)]
    flavors = [next(s["subflavors"] for s in src if s["first_id"] <= i < s["first_id"] + s["records"])
               for i in out["ids"]]
    assert len(flavors) >= 40 and {f.get("task") for f in flavors} <= {"vqa", None}
    # stoker run's summary names them per source.
    w = tmp_path / "run"
    w.mkdir()
    r = subprocess.run(args(stoker_bin, mix / "subflavors.yaml", w, epochs=1), env=env_for(w),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    lines = [x.strip() for x in r.stdout.splitlines() if x.strip().startswith("source ")]
    assert len(lines) == 3, r.stdout
    assert [json.loads(x.split("; subflavors ")[1]) if "; subflavors " in x else {} for x in lines] == \
        [s["subflavors"] for s in src]


SOURCE_INDEX = r"""
import json, sys, stoker
kw = json.loads(sys.argv[2])
l = stoker.Loader(data=[sys.argv[1]], model="qwen2-vl", seed=7, threads=1, **kw)
rows = []
for b in l:
    ids = b["sample_ids"].tolist()
    si = b["source_index"]
    assert si.dtype.is_floating_point is False and str(si.dtype) == "torch.int32", si.dtype
    assert list(si.shape) == list(b["sample_ids"].shape), (si.shape, b["sample_ids"].shape)
    if "cu_seq_lens_q" in b:  # packed: one per sequence, in the row's order
        cu = b["cu_seq_lens_q"].tolist()
        lengths = [cu[k + 1] - cu[k] for k in range(len(cu) - 1)]
    else:  # padded: one per row
        lengths = b["attention_mask"].sum(1).tolist()
    rows += [[i, s, n] for i, s, n in zip(ids, si.tolist(), lengths)]
print(json.dumps({"rows": rows, "sources": l.sources()}))
"""


@pytest.mark.parametrize("layout", ["padded", "packed"])
def test_source_index_per_sample_names_its_subflavors(mix, tmp_path, layout):
    """#23: MetadatasetV2 subflavors reach every sample: each batch carries `source_index`
    (int32, one per sample_ids entry: a padded row, a packed sequence) into loader.sources(),
    which holds each source's subflavors. Checked independently of the plan: source a's records
    are short and source b's long (the tokens a sample takes, from attention_mask / cu_seq_lens,
    say which file it came from), with different subflavors."""
    py = os.environ.get("STOKER_PYTHON_DIR")
    if not py:
        pytest.skip("STOKER_PYTHON_DIR not set")
    import json
    d = tmp_path / "data"
    d.mkdir()
    (d / "a.jsonl").write_text("".join(json.dumps({"id": f"a{i}", "messages": [
        {"role": "user", "content": f"hi {i}"}, {"role": "assistant", "content": "ok"}]}) + "\n"
        for i in range(30)))
    (d / "b.jsonl").write_text("".join(json.dumps({"id": f"b{i}", "messages": [
        {"role": "user", "content": " ".join(["word"] * 300) + f" {i}"},
        {"role": "assistant", "content": "fine"}]}) + "\n" for i in range(20)))
    (d / "mix.yaml").write_text("""__module__: megatron.energon
__class__: MetadatasetV2
splits:
  train:
    blend_epochized:
      - repetitions: 1
        path: a.jsonl
        subflavors: {src: a, level: 1}
      - repetitions: 2
        path: b.jsonl
        subflavors: {src: b, tags: [x, y]}
""")
    kw = {"batch_size": 4} if layout == "padded" else \
        {"batch_size": 1, "packing": True, "max_tokens": 1024, "pack_window": 16}
    env = dict(os.environ, PYTHONPATH=py, STOKER_CACHE_DIR=str(tmp_path / "cache"))
    p = subprocess.run(["/usr/bin/python3", "-c", SOURCE_INDEX, str(d / "mix.yaml"), json.dumps(kw)], env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    src = out["sources"]
    assert [(s["index"], s["name"].split("/")[-1], s["first_id"], s["records"], s["subflavors"]) for s in src] == [
        (0, "a.jsonl", 0, 30, {"src": "a", "level": 1}), (1, "b.jsonl", 30, 20, {"src": "b", "tags": ["x", "y"]})]
    rows = out["rows"]
    T = 30 + 2 * 20  # an epoch: floor(r·N) of each (the last step may reach into the next)
    assert T <= len(rows) < T + 4 * 4, len(rows)
    for sample, si, tokens in rows:
        by_content = "a" if tokens < 100 else "b"  # ~20 tokens vs ~320
        assert src[si]["subflavors"]["src"] == by_content, (sample, si, tokens)
        assert (sample < 30) == (by_content == "a"), (sample, tokens)
    assert collections.Counter(si for _, si, _ in rows[:T]) == {0: 30, 1: 40}


def test_packed_sigkill_resume_is_exact(stoker_bin, mix, tmp_path):
    """#23: the epochized blend with --packing, SIGKILLed 15+ times at random moments and resumed
    from its state file each time: the packs delivered (each batch's sample ids, in row order)
    equal the uninterrupted run's, and the last segment's batch hashes (every tensor) equal the
    uninterrupted run's tail."""
    spec = mix / "epochized.yaml"
    epochs = 20  # ~170 packs: 10 s at --step-ms 60
    pack = ["--packing", "--max-tokens", "4096", "--pack-window", "32"]
    ref_dir = tmp_path / "ref"
    ref_dir.mkdir()
    r = subprocess.run(args(stoker_bin, spec, ref_dir, epochs=epochs,
                            extra=pack + ["--batch-hashes", str(ref_dir / "h.txt")]),
                       env=env_for(ref_dir), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    ref = ids(ref_dir / "dl_0.txt")
    ref_hashes = (ref_dir / "h.txt").read_text().split()
    assert len(ref) == len(ref_hashes) > 60

    def saved_batches(p):
        m = re.search(r"batches=(\d+)", p.read_text()) if p.exists() else None
        return int(m.group(1)) if m else None

    rng = random.Random(4242)
    stream, state, done = [], None, 0
    kills = segments = 0
    while True:
        segments += 1
        assert segments < 80, "the run never finished"
        seg = tmp_path / f"seg{segments}"
        seg.mkdir()
        extra = pack + ["--state-file", str(seg / "st_0.txt"), "--step-ms", "60",
                        "--batch-hashes", str(seg / "h.txt")]
        if state is not None:
            extra += ["--resume", str(state)]
            (seg / "dl_0.txt").write_text("x\n" * done)  # run cuts its log back to the state's batches
        p = subprocess.Popen(args(stoker_bin, spec, seg, epochs=epochs, extra=extra), env=env_for(seg),
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        killed = False
        if kills < 16:
            time.sleep(rng.uniform(0.3, 1.0))
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                killed = True
                kills += 1
        _, err = p.communicate(timeout=300)
        if not killed:
            assert p.returncode == 0, err.decode()
        saved = saved_batches(seg / "st_0.txt")
        if saved is None or saved <= done:
            continue  # nothing new saved: resume again from the previous state
        got = ids(seg / "dl_0.txt", skip=done)
        stream += got[:saved - done]
        if not killed:
            assert saved == len(ref)
            assert (seg / "h.txt").read_text().split() == ref_hashes[done:]
        done = saved
        state = seg / "st_0.txt"
        if not killed:
            break
    print(f"kills {kills}, segments {segments}")
    assert stream == ref
    assert kills >= 15
