"""`stoker cluster` under mpirun delivers the bytes a single-process `stoker run` delivers: batch
hashes (every tensor's shape and bytes, sample ids included), delivered sample ids and the error
report are equal for 1, 2 and 4 workers, spread (--map-by node) and packed (--map-by slot), on
every wire (float rows, uint8 pixels normalised on the receiver, encoded media decoded on the
receiver), with media on local disk and over HTTP (loopback server), with packing, and with two
receivers (each equal to `stoker run --rank r --world-size 2`), and with videos — video files,
frame-list videos and a record holding an image and a video — on each wire, spread and packed,
and with packing (issue 21: the wire used to drop a prepared sample's videos). The reference is the local
engine, whose pixels the parity tests check against the HF processor; so uint8 equal here means
the receiver's normalise + patchify is bit-identical — also for the samples (images and videos)
the receiver prepares on its own lane (default) mixed with the workers'. Also: the summary's wire
bytes per sample
(uint8 at least 4x below float; encoded below uint8), a receiver alone (no workers), and flag
mismatches between ranks refused naming the rank. A mixture spec (issue 23: JSONL + WebDataset
shards + an Energon folder in one MetadatasetV2 blend) delivers `stoker run`'s bytes, padded and
packed, and with two receivers `stoker run --rank r --world-size 2`'s. With --finish device (issue 26) every wire
delivers `stoker run --finish device`'s bytes (resized uint8 pixels, finished on the trainer's device).

Run by ctest (labels integration, mpi) with STOKER_BIN set; standalone:
    STOKER_BIN=build/stoker /usr/bin/python3 -m pytest -q tests/cluster/test_cluster.py
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "io"))
import servers  # noqa: E402  (the loopback HTTP server)

STOKER = os.environ.get("STOKER_BIN", os.path.join(HERE, "..", "..", "build", "stoker"))
# TCP over loopback only (what separate hosts would use), one machine, oversubscribed.
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,tcp",
          "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo"]
COMMON = ["--batch-size", "4", "--threads", "1", "--io-threads", "2", "--prefetch", "2",
          "--epochs", "2", "--seed", "7", "--quiet", "--max-error-rate", "1", "--arena-mb", "64"]
N = 36

pytestmark = pytest.mark.skipif(shutil.which("mpirun") is None, reason="mpirun not installed")


def outputs(work, suffix=""):
    """(batch hashes, delivered log, error report) of one receiver's files."""
    def text(name):
        p = work / (name + suffix)
        return p.read_text() if p.exists() else ""
    return text("hashes.txt"), text("delivered.log"), text("errors.jsonl")


def files(work):
    return ["--batch-hashes", str(work / "hashes.txt"), "--delivered-log",
            str(work / "delivered.log"), "--error-report", str(work / "errors.jsonl")]


def stoker_run(data, work, extra=(), env=None):
    work.mkdir(parents=True, exist_ok=True)
    r = subprocess.run([STOKER, "run", data, *COMMON, *files(work), *extra],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    return work


def cluster(data, work, np_, map_by, extra=(), env=None):
    work.mkdir(parents=True, exist_ok=True)
    cmd = [*MPIRUN, "--map-by", map_by, "-np", str(np_), STOKER, "cluster", data, *COMMON,
           *files(work), "--summary-json", str(work / "summary.json"), *extra]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return work, json.loads((work / "summary.json").read_text()), r.stdout


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("ds")
    subprocess.run([STOKER, "synth", "--out", str(d), "--n", str(N), "--seed", "3",
                    "--max-side", "160", "--bad-fraction", "0.08"], check=True,
                   capture_output=True)
    return d


@pytest.fixture(scope="module")
def reference(dataset, tmp_path_factory):
    work = stoker_run(str(dataset / "data.jsonl"), tmp_path_factory.mktemp("ref"))
    hashes, log, errors = outputs(work)
    bad = len(open(dataset / "bad.jsonl").readlines())
    assert bad > 0 and len(errors.splitlines()) == 2 * bad  # failures are part of what must agree
    assert len(hashes.splitlines()) >= 2 * (N - bad) // 4
    return outputs(work)


# (workers, mapping, wire): 1, 2 and 4 workers, each spread and packed, the wires rotated. The
# receiver prepares samples on its own lane too (the default), except in the packed 4-worker
# layout (--receiver-prepare 0: it only receives).
LAYOUTS = [(1, "node", "float"), (1, "slot", "uint8"), (2, "node", "uint8"),
           (2, "slot", "encoded"), (4, "node", "encoded"), (4, "slot", "float")]
ONLY_RECEIVES = (4, "slot", "float")


@pytest.fixture(scope="module")
def layouts(dataset, tmp_path_factory):
    """Each layout's (workdir, summary, stdout)."""
    runs = {}
    for workers, map_by, wire in LAYOUTS:
        work = tmp_path_factory.mktemp(f"k{workers}{map_by}{wire}")
        extra = ["--wire", wire]
        if (workers, map_by, wire) == ONLY_RECEIVES:
            extra += ["--receiver-prepare", "0"]
        runs[(workers, map_by, wire)] = cluster(str(dataset / "data.jsonl"), work, 1 + workers,
                                                map_by, extra)
    return runs


@pytest.mark.parametrize("workers,map_by,wire", LAYOUTS)
def test_layouts_deliver_the_local_bytes(layouts, reference, workers, map_by, wire):
    work, summary, out = layouts[(workers, map_by, wire)]
    assert outputs(work) == reference
    assert summary["workers"] == workers and summary["receivers"] == 1
    assert summary["wire"] == wire
    ranks = summary["ranks"]
    assert [r["role"] for r in ranks] == ["receiver"] + ["worker"] * workers
    assert all(r["cpu_s"] > 0 and r["host"] for r in ranks)
    # Every worker answered requests; with the receiver's own lane they made every sample;
    # together the workers sent what the receiver received.
    assert all(r["samples"] > 0 for r in ranks[1:])
    local = summary["local_samples"]
    if (workers, map_by, wire) == ONLY_RECEIVES:
        assert local == 0
    else:  # the first requests go to every lane before any is measured
        assert local > 0 and ranks[0]["local_samples"] == local
    assert sum(r["samples"] for r in ranks[1:]) + local >= summary["samples"]
    assert "prepared on its own lane" in out and "MPI progress thread" in out
    assert all(0 < r["progress_cpu_s"] < r["wall_s"] for r in ranks)
    assert sum(r["bytes_sent"] for r in ranks[1:]) == ranks[0]["bytes_received"]
    assert "stoker cluster: receiver 0 of 1:" in out and f"K={workers} wire={wire}" in out


def test_wire_bytes_per_sample(layouts):
    # Samples the receiver prepared itself count at what they would have cost on the wire, so
    # the figure describes the wire whatever share each lane took.
    per = {}
    for (workers, map_by, wire), (_, summary, _) in layouts.items():
        per.setdefault(wire, summary["wire_bytes_per_sample"])
        assert summary["wire_bytes_per_sample"] == per[wire]  # the layout does not change it
    # uint8 ships H·W·3 bytes where float ships 2 frames × 4 bytes per value (8x, less headers).
    assert per["float"] >= 4 * per["uint8"], per
    assert per["uint8"] > per["encoded"] > 0, per


def test_remote_media_over_http(dataset, reference, tmp_path):
    http = servers.ThreadServer("range", root=str(dataset))
    try:
        env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"))
        url = f"http://127.0.0.1:{http.port}/data.jsonl"
        work, _, _ = cluster(url, tmp_path / "c", 3, "node", ["--wire", "uint8"], env=env)
    finally:
        http.stop()
    hashes, log, errors = outputs(work)
    ref_hashes, ref_log, ref_errors = reference
    assert (hashes, log) == (ref_hashes, ref_log)  # remote media: the local bytes
    # The same failures (the reasons name the URL instead of the path).
    def key(text):
        return [(e["sample"], e["line"], e["stage"], e["code"])
                for e in map(json.loads, text.splitlines())]
    assert key(errors) == key(ref_errors)


def test_packing(dataset, tmp_path):
    pack = ["--packing", "--max-tokens", "2048", "--pack-window", "16"]
    ref = outputs(stoker_run(str(dataset / "data.jsonl"), tmp_path / "ref", pack))
    assert ref[0]
    work, _, _ = cluster(str(dataset / "data.jsonl"), tmp_path / "c", 3, "slot",
                         ["--wire", "uint8", *pack])
    assert outputs(work) == ref


def test_two_receivers_are_ranks_of_two(dataset, tmp_path):
    data = str(dataset / "data.jsonl")
    work, summary, _ = cluster(data, tmp_path / "c", 5, "node", ["--receivers", "2"])
    assert summary["receivers"] == 2 and summary["workers"] == 3
    for r in (0, 1):
        ref = stoker_run(data, tmp_path / f"ref{r}", ["--rank", str(r), "--world-size", "2"])
        assert outputs(work, f".r{r}") == outputs(ref)


MIX = """__module__: megatron.energon
__class__: MetadatasetV2
splits:
  train:
    blend_epochized:
      - repetitions: 1
        path: a/data.jsonl
        subflavors: {src: a}
      - repetitions: 2
        path: b/shards/data-{000..002}.tar
      - repetitions: 0.5
        path: c/energon
"""


@pytest.fixture(scope="module")
def mixture(tmp_path_factory):
    """Issue 23: a 3-source blend (JSONL with bad records, WebDataset shards, an Energon folder)."""
    d = tmp_path_factory.mktemp("mix")
    for name, n, seed, shards in (("a", 24, 1, 1), ("b", 16, 2, 3), ("c", 12, 3, 2)):
        subprocess.run([STOKER, "synth", "--out", str(d / name), "--n", str(n), "--seed", str(seed),
                        "--max-side", "128", "--bad-fraction", "0.1", "--shards", str(shards)],
                       check=True, capture_output=True)
    (d / "mix.yaml").write_text(MIX)
    return d


@pytest.mark.parametrize("extra", [[], ["--packing", "--max-tokens", "2048", "--pack-window", "16"]],
                         ids=["padded", "packed"])
def test_mixture_equals_run(mixture, tmp_path, extra):
    """A mixture spec under `stoker cluster` (2 workers reading the plan's records; the receiver
    keeps the plan) delivers `stoker run`'s bytes, failures and order for the same mix.yaml."""
    spec = str(mixture / "mix.yaml")
    env = dict(os.environ, STOKER_CACHE_DIR=str(tmp_path / "cache"))
    ref = outputs(stoker_run(spec, tmp_path / "ref", extra, env=env))
    assert ref[0] and ref[2]  # batches, and failed samples among them
    work, summary, _ = cluster(spec, tmp_path / "c", 3, "slot", ["--wire", "uint8", *extra], env=env)
    assert summary["workers"] == 2
    assert outputs(work) == ref


def test_mixture_two_receivers_are_ranks_of_two(mixture, tmp_path):
    spec = str(mixture / "mix.yaml")
    env = dict(os.environ, STOKER_CACHE_DIR=str(tmp_path / "cache"))
    work, summary, _ = cluster(spec, tmp_path / "c", 4, "node", ["--receivers", "2"], env=env)
    assert summary["receivers"] == 2
    for r in (0, 1):
        ref = stoker_run(spec, tmp_path / f"ref{r}", ["--rank", str(r), "--world-size", "2"], env=env)
        assert outputs(work, f".r{r}") == outputs(ref)


def test_receiver_alone_prepares_locally(dataset, reference, tmp_path):
    work, summary, _ = cluster(str(dataset / "data.jsonl"), tmp_path, 1, "slot")
    assert outputs(work) == reference
    assert summary["workers"] == 0 and summary["wire"] == "local"
    assert summary["wire_bytes"] == 0


def test_mismatched_flags_end_the_job_naming_the_rank(dataset, tmp_path):
    data = str(dataset / "data.jsonl")
    other = list(COMMON)
    other[other.index("--seed") + 1] = "8"  # another order: another plan
    cmd = [*MPIRUN, "-np", "1", STOKER, "cluster", data, *COMMON, "--role", "receiver", ":",
           "-np", "1", STOKER, "cluster", data, *other, "--role", "worker"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert "rank 1 was given other flags than rank 0" in r.stderr, r.stderr[-2000:]


# Videos (issue 21): video files (synth --videos: H.264 with B-frames, MPEG-4, VFR, 60 fps with
# audio, a rotation tag, VP9/AV1 when encodable), frame-list videos (each frame an image) and a
# record holding an image AND a video, mixed with image records and broken ones. Every wire
# carries every kind: float rows, uint8 (resized frames, patchified on the receiver) and encoded
# (the file or the frames' bytes, decoded on the receiver).
VIDEO_COMMON = ["--max-length", "16384"]


def frame_list_records(d):
    """Two frame-list videos (4 and 3 same-size PNG frames, drawn with Pillow) and one record
    with an image and a frame-list video; appended to d/data.jsonl."""
    from PIL import Image
    (d / "frames").mkdir()
    records = []
    for v, (n, size) in enumerate([(4, (96, 64)), (3, (70, 120))]):
        names = []
        for k in range(n):
            img = Image.new("RGB", size, (40 * k % 256, 90 + 30 * v, 200 - 20 * k))
            for x in range(0, size[0], 7):  # a moving bar, so frames differ
                for y in range(size[1]):
                    if (x // 7 + k) % 3 == 0:
                        img.putpixel((x, y), (250, 250 - 40 * k, 10 * v))
            name = f"frames/v{v}_{k}.png"
            img.save(d / name)
            names.append(name)
        records.append({"id": f"frames-{v}", "messages": [
            {"role": "user", "content": [{"type": "video", "video": names},
                                         {"type": "text", "text": "What changes between frames?"}]},
            {"role": "assistant", "content": "A bar moves to the right."}]})
    image = sorted((d / "images").glob("*.jpg"))[0].relative_to(d)
    records.append({"id": "image-and-video", "messages": [
        {"role": "user", "content": [{"type": "image", "image": str(image)},
                                     {"type": "video", "video": records[0]["messages"][0]["content"][0]["video"],
                                      "sample_fps": 1},
                                     {"type": "text", "text": "Does the image show a frame?"}]},
        {"role": "assistant", "content": "No."}]})
    with open(d / "data.jsonl", "a") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")


@pytest.fixture(scope="module")
def video_dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("vds")
    subprocess.run([STOKER, "synth", "--out", str(d), "--n", "10", "--seed", "5", "--max-side", "128",
                    "--videos", "5", "--threads", "1", "--bad-fraction", "0.1"], check=True,
                   capture_output=True)
    frame_list_records(d)
    return d


@pytest.fixture(scope="module")
def video_reference(video_dataset, tmp_path_factory):
    work = stoker_run(str(video_dataset / "data.jsonl"), tmp_path_factory.mktemp("vref"), VIDEO_COMMON)
    hashes, log, errors = outputs(work)
    delivered = {int(x) for l in log.splitlines() for x in l.split()[2:] if x.isdigit()}
    ids = {}
    for i, line in enumerate(open(video_dataset / "data.jsonl")):
        try:
            ids[json.loads(line).get("id")] = i
        except (ValueError, AttributeError):
            pass  # the deliberately malformed lines
    # Every kind is delivered, not failed: video files, frame lists, an image with a video.
    for rid in ("video-0", "video-1", "frames-0", "frames-1", "image-and-video"):
        assert ids[rid] in delivered, rid
    assert len(hashes.splitlines()) >= 6
    return hashes, log, errors


# Each wire, spread (--map-by node) and packed (--map-by slot).
VIDEO_LAYOUTS = [(wire, map_by) for wire in ("float", "uint8", "encoded") for map_by in ("node", "slot")]


@pytest.mark.parametrize("wire,map_by", VIDEO_LAYOUTS)
def test_videos_on_every_wire(video_dataset, video_reference, tmp_path, wire, map_by):
    work, summary, _ = cluster(str(video_dataset / "data.jsonl"), tmp_path / "c", 3, map_by,
                               ["--wire", wire, *VIDEO_COMMON])
    assert outputs(work) == video_reference
    assert all(r["samples"] > 0 for r in summary["ranks"][1:])
    # The receiver's own lane made some of them too, round-tripped through the wire's encoding.
    assert summary["local_samples"] > 0


@pytest.mark.parametrize("wire", ["float", "uint8", "encoded"])
def test_videos_with_packing(video_dataset, tmp_path, wire):
    pack = [*VIDEO_COMMON, "--packing", "--max-tokens", "16384", "--pack-window", "8"]
    ref = outputs(stoker_run(str(video_dataset / "data.jsonl"), tmp_path / "ref", pack))
    assert ref[0]
    work, summary, _ = cluster(str(video_dataset / "data.jsonl"), tmp_path / "c", 3,
                               "slot" if wire == "uint8" else "node", ["--wire", wire, *pack])
    assert outputs(work) == ref
    assert summary["local_samples"] > 0


# Issue 26: --finish device. The receiver's batches carry each medium's resized uint8 pixels (and
# the value tables) instead of pixel rows, whatever the wire: float ships those pixels as the
# workers wrote them, uint8 ships the same resized frames and the receiver copies them as they are
# (no arithmetic), encoded is decoded and resized on the receiver. Each equals `stoker run --finish
# device` (whose batches tests/python_api/test_finish.py finishes to the CPU path's bit for bit);
# on that path the float and uint8 wires cost the same bytes.
@pytest.fixture(scope="module")
def finish_runs(video_dataset, tmp_path_factory):
    data = str(video_dataset / "data.jsonl")
    extra = [*VIDEO_COMMON, "--finish", "device"]
    ref = outputs(stoker_run(data, tmp_path_factory.mktemp("fref"), extra))
    runs = {wire: cluster(data, tmp_path_factory.mktemp(f"f{wire}"), 3, "node",
                          ["--wire", wire, *extra]) for wire in ("float", "uint8", "encoded")}
    return ref, runs


@pytest.mark.parametrize("wire", ["float", "uint8", "encoded"])
def test_finish_device_on_every_wire(finish_runs, video_reference, wire):
    ref, runs = finish_runs
    work, summary, _ = runs[wire]
    assert ref[0] and ref[0] != video_reference[0]  # other tensors than the CPU path's batches
    assert (ref[1], ref[2]) == video_reference[1:]   # the same samples delivered and failed
    assert outputs(work) == ref
    assert summary["local_samples"] > 0 and all(r["samples"] > 0 for r in summary["ranks"][1:])


def test_finish_device_wire_bytes(finish_runs):
    _, runs = finish_runs
    per = {wire: runs[wire][1]["wire_bytes_per_sample"] for wire in runs}
    assert per["float"] == per["uint8"] > per["encoded"] > 0, per


# A trainer rank of --serve: iterates its shard through stoker.Loader(connect=...) (or, as the
# independent reference, an in-process Loader) and prints one line per batch: every tensor's
# name and sha256.
TRAINER = r"""
import hashlib, json, sys
import stoker
sock, data, ranks = sys.argv[1], sys.argv[2], [int(r) for r in sys.argv[3].split(",")]
for rank in ranks:
    if sock:
        loader = stoker.Loader(connect=sock, connect_timeout_s=60, rank=rank, world_size=2)
    else:
        loader = stoker.Loader(data, batch_size=4, threads=1, rank=rank, world_size=2, seed=7,
                               max_error_rate=1.0, arena_bytes=64 << 20)
    for b in loader:
        print(json.dumps({k: hashlib.sha256(t.numpy().tobytes()).hexdigest()
                          for k, t in b.items()}))
    print("end of rank", rank)
"""


@pytest.mark.skipif(not os.environ.get("STOKER_PYTHON_DIR"), reason="no _stoker in this tree")
def test_serve_hands_batches_to_trainer_ranks(dataset, tmp_path):
    data = str(dataset / "data.jsonl")
    env = dict(os.environ, PYTHONPATH=os.environ["STOKER_PYTHON_DIR"])
    env.pop("STOKER_SERVER", None)
    sock = str(tmp_path / "node.sock")
    one_epoch = list(COMMON)
    one_epoch[one_epoch.index("--epochs") + 1] = "1"  # a Loader(connect=...) iterates one epoch
    job = subprocess.Popen([*MPIRUN, "-np", "3", STOKER, "cluster", data, *one_epoch, "--serve",
                            "--world-size", "2", "--socket", sock, "--wire", "uint8",
                            "--progress-s", "0", "--summary-json", str(tmp_path / "s.json")],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        trainers = [subprocess.Popen([sys.executable, "-c", TRAINER, sock, data, str(r)], env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                    for r in (0, 1)]
        got = []
        for t in trainers:
            out, err = t.communicate(timeout=120)
            assert t.returncode == 0, err
            got.append(out)
        out, err = job.communicate(timeout=120)
        assert job.returncode == 0, out[-2000:] + err[-3000:]
    finally:
        if job.poll() is None:
            job.kill()
    assert "every rank finished" in out
    ref = subprocess.run([sys.executable, "-c", TRAINER, "", data, "0,1"], env=env,
                         capture_output=True, text=True, timeout=120, check=True).stdout
    assert got[0] + got[1] == ref and len(ref.splitlines()) > 6
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["workers"] == 2 and summary["ranks"][0]["bytes_received"] > 0
