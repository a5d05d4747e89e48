"""The run explains itself (issue 15 §2): `--trace` (Chrome/Perfetto trace-event JSON), the
Prometheus endpoint (`--metrics-port`, scraped during `stoker run` and `stoker serve`) and the
run report (`stoker run --report DIR`, `stoker report DIR`).

Independent checks: the trace is read with Python's json and checked structurally (tracks, stage
spans, counters, monotone time per track, nesting, the event cap) and against the dataset (each
record read once); the metrics text with a strict parser written here from the exposition format
(0.0.4: HELP/TYPE once per family and before its samples, a family's samples together, escapes,
histogram buckets cumulative up to le="+Inf" = _count) and again with prometheus_client's parser
(Debian python3-prometheus-client) when installed; PNGs with their header read here and with
Pillow; the HTML with html.parser. Small data (synth, ≤ 96 px images): a few CPU seconds."""

import html.parser
import json
import math
import os
import pathlib
import re
import struct
import subprocess
import sys
import time
import urllib.request

import pytest

import stoker_cli

STOKER = os.environ.get("STOKER_BIN", "stoker")
STAGES = {"read", "fetch", "prepare", "plan", "tokenize", "rope", "emit", "decode", "resize",
          "normalise", "batch", "arena wait", "assemble", "next"}
COUNTERS = {"fetch bytes in flight", "arena bytes in use", "ready batches", "samples in flight",
            "prepared samples waiting"}
N = 32


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("obs")
    stoker_cli.synth(STOKER, d, ["--n", str(N), "--seed", "3", "--max-side", "96"])
    return d / "data.jsonl"


@pytest.fixture(scope="module")
def bad_dataset(tmp_path_factory):
    d = tmp_path_factory.mktemp("obs_bad")
    stoker_cli.synth(STOKER, d, ["--n", "40", "--seed", "5", "--max-side", "96",
                                 "--bad-fraction", "0.15"])
    return d / "data.jsonl"


def run(*args, timeout=120):
    return stoker_cli.run([STOKER, "run", *map(str, args), "--quiet", "--threads", "2",
                           "--io-threads", "2", "--arena-mb", "64"], timeout=timeout)


# ---- trace ---------------------------------------------------------------------------------

def load_trace(path):
    doc = json.loads(pathlib.Path(path).read_text())
    assert isinstance(doc["traceEvents"], list)
    return doc


def tracks(doc):
    """{tid: (thread name, [X events in file order])}."""
    names = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    out = {}
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            out.setdefault(e["tid"], (names.get(e["tid"]), []))[1].append(e)
    return out


def check_track(spans):
    """Start times never go back; every span lies inside the span it started in."""
    last, open_ends = -1, []
    for e in spans:
        ts = round(float(e["ts"]) * 1000)  # integer ns: the file has µs with 3 decimals
        end = ts + round(float(e["dur"]) * 1000)
        assert ts >= last, f"time goes back: {e}"
        last = ts
        while open_ends and ts >= open_ends[-1]:
            open_ends.pop()
        assert not open_ends or end <= open_ends[-1], f"{e} crosses its parent's end"
        open_ends.append(end)


def read_samples(doc):
    return [e["args"]["sample"] for e in doc["traceEvents"] if e["ph"] == "X" and e["name"] == "read"]


def test_trace_has_tracks_stages_counters_and_nests(dataset, tmp_path):
    trace = tmp_path / "t.json"
    run(dataset, "--batch-size", "4", "--trace", trace)
    doc = load_trace(trace)
    tr = tracks(doc)
    names = {name for name, _ in tr.values()}
    assert all(name for name in names), "a track without thread_name metadata"
    # (stoker-emit helpers may find every image of a small batch claimed by the producer.)
    for want in ("stoker-cpu", "stoker-io", "stoker-produce", "stoker run: main"):
        assert any(n.startswith(want) for n in names), f"no {want} track in {sorted(names)}"
    # A fetch through the object store's asynchronous reads is an async span (b/e), its own row.
    spans = {e["name"] for _, evs in tr.values() for e in evs}
    spans |= {e["name"] for e in doc["traceEvents"] if e["ph"] == "b"}
    assert STAGES <= spans, f"missing stages: {STAGES - spans}"
    counters = {e["name"] for e in doc["traceEvents"] if e["ph"] == "C"}
    assert COUNTERS <= counters, f"missing counters: {COUNTERS - counters}"
    for _, evs in tr.values():
        check_track(evs)
    for name in COUNTERS:
        ts = [float(e["ts"]) for e in doc["traceEvents"] if e["ph"] == "C" and e["name"] == name]
        assert ts == sorted(ts)
        values = [e["args"]["value"] for e in doc["traceEvents"] if e["ph"] == "C" and e["name"] == name]
        assert min(values) >= 0
    # Every record read once (the data has N lines, one epoch); one next() span per batch + the
    # call that found the end, all on the main thread.
    lines = dataset.read_text().splitlines()
    assert sorted(read_samples(doc)) == list(range(len(lines)))
    main = [evs for name, evs in tr.values() if name == "stoker run: main"][0]
    assert sum(e["name"] == "next" for e in main) == math.ceil(N / 4) + 1
    # The fetch counter goes back to 0 at the end (every lease returned).
    fetch = [e for e in doc["traceEvents"] if e["ph"] == "C" and e["name"] == "fetch bytes in flight"]
    assert fetch[-1]["args"]["value"] == 0
    assert doc["otherData"]["dropped_events"] == 0


def test_serial_trace_nests_stages_inside_next(dataset, tmp_path):
    trace = tmp_path / "serial.json"
    run(dataset, "--batch-size", "4", "--mode", "serial", "--trace", trace)
    doc = load_trace(trace)
    (name, evs), = [t for t in tracks(doc).values() if any(e["name"] == "next" for e in t[1])]
    check_track(evs)
    nexts = [(e["ts"], e["ts"] + e["dur"]) for e in evs if e["name"] == "next"]
    for e in evs:
        if e["name"] in ("read", "prepare", "tokenize", "emit", "decode", "assemble"):
            assert any(a <= e["ts"] and e["ts"] + e["dur"] <= b + 1e-6 for a, b in nexts), e


def test_trace_cap_and_sampling(dataset, tmp_path):
    capped = tmp_path / "capped.json"
    run(dataset, "--batch-size", "4", "--trace", capped, "--trace-max-events", "150")
    doc = load_trace(capped)
    events = [e for e in doc["traceEvents"] if e["ph"] in ("X", "C", "b")]
    assert 0 < len(events) <= 150
    assert doc["otherData"]["dropped_events"] > 0
    for _, evs in tracks(doc).values():
        check_track(evs)
    sampled = tmp_path / "sampled.json"
    run(dataset, "--batch-size", "4", "--trace", sampled, "--trace-sample", "4")
    doc = load_trace(sampled)
    # Every 4th sample of the stream (sequence numbers 0, 4, 8, ...): N/4 reads.
    assert len(read_samples(doc)) == N // 4
    assert sum(e["name"] == "next" for e in doc["traceEvents"] if e["ph"] == "X") == N // 4 + 1


def test_trace_flags_are_checked(dataset, tmp_path):
    for args, message in ((["--trace-sample", "2"], "--trace-sample needs --trace"),
                          (["--trace", tmp_path / "t.json", "--trace-sample", "0"], "trace-sample"),
                          (["--trace", tmp_path / "no/such/t.json"],
                           "no/such/t.json: cannot be written (checking the folder"),
                          (["--metrics-addr", "127.0.0.1"], "--metrics-addr needs --metrics-port"),
                          (["--metrics-port", "70000"], "metrics-port")):
        p = stoker_cli.run([STOKER, "run", str(dataset), "--quiet", *map(str, args)], check=False)
        assert p.returncode in (1, 2), p.stderr  # 2: usage, 1: the named folder is missing
        assert message in p.stderr.decode(), p.stderr


# ---- Prometheus ------------------------------------------------------------------------------

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


def parse_value(text):
    if text in ("NaN", "+Inf", "-Inf"):
        return float(text.replace("Inf", "inf").replace("NaN", "nan"))
    assert re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text), f"bad value {text!r}"
    return float(text)


def parse_labels(text):
    """`a="x",b="y\\""` → list of (name, value); strict about quoting and escapes."""
    out, i = [], 0
    while i < len(text):
        m = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)=\"").match(text, i)
        assert m, f"bad label at {text[i:]!r}"
        i = m.end()
        value = []
        while True:
            assert i < len(text), f"unterminated label value in {text!r}"
            c = text[i]
            if c == "\\":
                nxt = text[i + 1]
                assert nxt in ('\\', '"', 'n'), f"bad escape \\{nxt} in {text!r}"
                value.append("\n" if nxt == "n" else nxt)
                i += 2
            elif c == '"':
                i += 1
                break
            else:
                assert c != "\n"
                value.append(c)
                i += 1
        out.append((m.group(1), "".join(value)))
        if i < len(text):
            assert text[i] == ",", f"expected ',' in {text!r}"
            i += 1
    names = [n for n, _ in out]
    assert len(names) == len(set(names)), f"duplicate label in {text!r}"
    return out


def family_of(sample_name, types):
    for suffix in ("_bucket", "_sum", "_count"):
        base = sample_name[:-len(suffix)] if sample_name.endswith(suffix) else None
        if base and types.get(base) == "histogram":
            return base
    return sample_name


def parse_exposition(text):
    """Strict text format 0.0.4 → {family: {"type", "help", "samples": [(name, labels, value)]}}."""
    assert text.endswith("\n"), "the exposition ends with a newline"
    families, types, seen_done, current = {}, {}, set(), None
    for line in text.split("\n")[:-1]:
        assert line.strip() == line or line == "", f"stray whitespace: {line!r}"
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                name = parts[2]
                assert NAME.match(name), name
                fam = families.setdefault(name, {"type": None, "help": None, "samples": []})
                assert not fam["samples"], f"{parts[1]} for {name} after its samples"
                if parts[1] == "TYPE":
                    assert fam["type"] is None, f"two TYPE lines for {name}"
                    assert len(parts) == 4 and parts[3] in TYPES, line
                    fam["type"] = types[name] = parts[3]
                else:
                    assert fam["help"] is None, f"two HELP lines for {name}"
                    fam["help"] = parts[3] if len(parts) == 4 else ""
                    assert re.fullmatch(r"([^\\\n]|\\\\|\\n)*", fam["help"]), line
            continue
        m = re.fullmatch(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: (-?\d+))?", line)
        assert m, f"bad sample line {line!r}"
        name, labels, value = m.group(1), parse_labels(m.group(2) or ""), parse_value(m.group(3))
        fam_name = family_of(name, types)
        if fam_name != current:
            assert fam_name not in seen_done, f"samples of {fam_name} are not together"
            if current is not None:
                seen_done.add(current)
            current = fam_name
        fam = families.setdefault(fam_name, {"type": None, "help": None, "samples": []})
        fam["samples"].append((name, tuple(labels), value))
    for name, fam in families.items():
        keys = [(n, l) for n, l, _ in fam["samples"]]
        assert len(keys) == len(set(keys)), f"a series twice in {name}"
        if fam["type"] == "counter":
            assert name.endswith("_total"), name
            assert all(v >= 0 for _, _, v in fam["samples"]), name
        if fam["type"] == "histogram":
            check_histogram(name, fam["samples"])
    return families


def check_histogram(name, samples):
    series = {}
    for n, labels, v in samples:
        key = tuple(l for l in labels if l[0] != "le")
        series.setdefault(key, {"buckets": [], "sum": None, "count": None})
        if n == name + "_bucket":
            le = dict(labels)["le"]
            series[key]["buckets"].append((parse_value(le), v))
        elif n == name + "_sum":
            series[key]["sum"] = v
        elif n == name + "_count":
            series[key]["count"] = v
        else:
            raise AssertionError(f"{n} in histogram {name}")
    for key, s in series.items():
        les = [le for le, _ in s["buckets"]]
        assert les == sorted(les) and les[-1] == math.inf, f"{name}{key}: buckets {les}"
        counts = [c for _, c in s["buckets"]]
        assert counts == sorted(counts), f"{name}{key}: buckets not cumulative"
        assert s["count"] == counts[-1] and s["sum"] is not None, f"{name}{key}"


def value(families, name, **labels):
    fam = name
    if fam not in families:
        fam = re.sub(r"_(bucket|sum|count)$", "", name)
    for n, ls, v in families[fam]["samples"]:
        if n == name and all(dict(ls).get(k) == str(w) for k, w in labels.items()):
            return v
    raise KeyError(f"{name}{labels}")


def check_with_prometheus_client(text):
    try:
        from prometheus_client.parser import text_string_to_metric_families
    except ImportError:
        return 0
    return sum(1 for _ in text_string_to_metric_families(text))


def metrics_url(proc, what):
    """The URL the command prints to stderr once the endpoint listens."""
    deadline = time.time() + 60
    while time.time() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        m = re.search(r"metrics at (http://\S+)", line)
        if m:
            return m.group(1)
    raise AssertionError(f"{what}: no metrics URL printed")


def scrape(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return r.read().decode()


def test_parser_rejects_what_the_format_forbids():
    for bad in ("a 1\n# TYPE a gauge\n",                     # TYPE after samples
                "# TYPE a gauge\na 1\nb 2\na 3\n",            # a family split
                "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\n"
                "h_sum 1\nh_count 1\n",                       # not cumulative
                "a{x=\"\\q\"} 1\n",                           # bad escape
                "a 1",                                        # no final newline
                "# TYPE c counter\nc -1\n"):                  # counter name and value
        with pytest.raises(AssertionError):
            parse_exposition(bad)


def test_metrics_scraped_during_a_run(bad_dataset, tmp_path):
    report = tmp_path / "errors.jsonl"
    proc = subprocess.Popen([STOKER, "run", str(bad_dataset), "--quiet", "--threads", "2",
                             "--io-threads", "2", "--arena-mb", "64", "--batch-size", "4",
                             "--step-ms", "60", "--max-error-rate", "0.5", "--metrics-port", "0",
                             "--error-report", str(report)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        url = metrics_url(proc, "stoker run")
        assert url.startswith("http://127.0.0.1:")
        scrapes = []
        while proc.poll() is None and len(scrapes) < 6:
            try:
                scrapes.append(parse_exposition(text := scrape(url)))
            except OSError:
                break  # the run ended between poll() and the request
            assert check_with_prometheus_client(text) in (0, len(scrapes[-1]))
            time.sleep(0.15)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    finally:
        if proc.poll() is None:
            proc.kill()
    assert len(scrapes) >= 3, "the run ended before three scrapes"
    last = scrapes[-1]
    for fam in ("stoker_wait_ratio", "stoker_samples_per_second", "stoker_stage_busy_seconds_total",
                "stoker_stage_latency_seconds", "stoker_next_wait_seconds",
                "stoker_samples_failed_total", "stoker_arena_bytes_in_use",
                "stoker_fetch_bytes_in_flight", "stoker_ready_batches"):
        assert fam in last and last[fam]["help"] and last[fam]["type"], fam
    # Counters never go back between scrapes; the run moved on while we watched.
    samples = [value(f, "stoker_samples_total") for f in scrapes]
    assert samples == sorted(samples) and samples[-1] > samples[0]
    for stage in ("read", "prepare", "emit"):
        busy = [value(f, "stoker_stage_busy_seconds_total", stage=stage) for f in scrapes]
        assert busy == sorted(busy)
    assert 0 <= value(last, "stoker_wait_ratio") <= 1
    # Failures by code add up to the total, and to the error report's lines when all were in.
    failed = value(last, "stoker_samples_failed_total")
    by_code = sum(v for n, _, v in last.get("stoker_samples_failed_by_code_total",
                                            {"samples": []})["samples"])
    assert by_code == failed
    reported = [json.loads(l) for l in report.read_text().splitlines()]
    assert failed <= len(reported) and len(reported) > 0
    codes = {(r["stage"], r["code"]) for r in reported}
    seen = {(dict(l)["stage"], dict(l)["code"]) for _, l, _ in
            last.get("stoker_samples_failed_by_code_total", {"samples": []})["samples"]}
    assert seen <= codes
    # Latency histograms count what the stage did: emit counts images, read counts samples.
    assert value(last, "stoker_stage_latency_seconds_count", stage="read") == \
        value(last, "stoker_stage_items_total", stage="read")


@pytest.mark.skipif(not os.environ.get("STOKER_PYTHON_DIR"), reason="needs the _stoker extension")
def test_serve_metrics_per_rank_and_trace(dataset, tmp_path):
    sock = str(tmp_path / "s.sock")
    trace = tmp_path / "serve.json"
    server = subprocess.Popen([STOKER, "serve", str(dataset), "--socket", sock, "--world-size", "2",
                               "--threads", "2", "--batch-size", "2", "--arena-mb", "64",
                               "--progress-s", "0", "--metrics-port", "0", "--trace", str(trace)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    procs = []
    try:
        url = metrics_url(server, "stoker serve")
        before = parse_exposition(scrape(url))
        assert value(before, "stoker_serve_rank_attached", rank=0) == 0
        consumer = ("import sys, time, stoker\n"
                    "l = stoker.Loader(connect=sys.argv[1], rank=int(sys.argv[2]), world_size=2)\n"
                    "n = 0\n"
                    "for b in l:\n"
                    "    n += 1\n"
                    "    time.sleep(0.15)\n"
                    "print(n)\n")
        env = stoker_cli.python_child_env()
        procs = [subprocess.Popen([sys.executable, "-c", consumer, sock, str(r)], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for r in range(2)]
        during = None
        deadline = time.time() + 120
        while time.time() < deadline:
            f = parse_exposition(scrape(url))
            if all(value(f, "stoker_serve_batches_sent_total", rank=r) >= 2 for r in range(2)):
                during = f
                break
            time.sleep(0.1)
        assert during is not None, "ranks never got two batches each"
        for r in range(2):
            # (a rank's process may already have finished and gone: attached is 0 or 1)
            assert value(during, "stoker_serve_rank_attached", rank=r) in (0, 1)
            assert value(during, "stoker_batches_total", rank=r) >= 2  # the rank's Loader
            assert value(during, "stoker_serve_attaches_total", rank=r) == 1
        got = []
        for p in procs:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
            got.append(int(out.strip().splitlines()[-1]))
        assert sum(got) == N // 2  # batch size 2, 16 records per rank
        server.wait(timeout=60)
        assert server.returncode == 0, server.stderr.read()
    finally:
        for p in [server, *procs]:
            if p.poll() is None:
                p.kill()
    doc = load_trace(trace)
    names = {name for name, _ in tracks(doc).values()}
    assert {"rank 0 (serve)", "rank 1 (serve)"} <= names
    counters = {e["name"] for e in doc["traceEvents"] if e["ph"] == "C"}
    assert {"arena bytes in use (rank 0)", "arena bytes in use (rank 1)"} <= counters
    for _, evs in tracks(doc).values():
        check_track(evs)


# ---- report ----------------------------------------------------------------------------------

def png_size(path):
    data = pathlib.Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: not a PNG"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    return struct.unpack(">II", data[16:24])


class Page(html.parser.HTMLParser):
    VOID = {"meta", "img", "br", "hr", "link", "input"}

    def __init__(self):
        super().__init__()
        self.stack, self.images, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        if tag == "img":
            self.images.append(dict(attrs)["src"])
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag):
        assert self.stack and self.stack[-1] == tag, f"</{tag}> closes {self.stack[-1:]}"
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)


def test_report_folder_plots_and_page(bad_dataset, tmp_path):
    from PIL import Image

    out = tmp_path / "run1"
    run(bad_dataset, "--batch-size", "4", "--step-ms", "20", "--max-error-rate", "0.5",
        "--report", out)
    for name in ("steps.csv", "timeline.csv", "metrics.prom", "summary.json", "trace.json",
                 "index.html"):
        assert (out / name).stat().st_size > 0, name
    parse_exposition((out / "metrics.prom").read_text())
    summary = json.loads((out / "summary.json").read_text())
    steps = (out / "steps.csv").read_text().splitlines()
    assert len(steps) - 1 == summary["batches"] > 0
    load_trace(out / "trace.json")
    page = Page()
    page.feed((out / "index.html").read_text())
    page.close()
    assert page.stack == [], f"unclosed tags {page.stack}"
    assert sorted(page.images) == ["latency_histograms.png", "queue_depths.png",
                                   "stage_utilisation.png", "wait_per_step.png"]
    assert "limiter" in "".join(page.text)
    for img in page.images:
        w, h = png_size(out / img)
        assert w >= 400 and h >= 200, img
        with Image.open(out / img) as im:
            assert im.size == (w, h)
            im.verify()
    # `stoker report` renders the same folder again (here after the plots were removed).
    for img in page.images:
        (out / img).unlink()
    (out / "index.html").unlink()
    stoker_cli.run([STOKER, "report", str(out)])
    for img in page.images:
        assert png_size(out / img)[0] >= 400
    assert (out / "index.html").exists()
    p = stoker_cli.run([STOKER, "report", str(tmp_path / "nothing")], check=False)
    assert p.returncode != 0 and b"nothing" in p.stderr
