#!/usr/bin/python3
"""Renders a stoker run folder into PNG plots and a one-page HTML summary beside them.

    python3 stoker_report.py RUN_DIR        (what `stoker report RUN_DIR` and `stoker run --report` run)

Reads what `stoker run --report RUN_DIR` writes there:
  steps.csv     step, t_s, wait_ms, samples: one row per delivered batch (how long next() blocked)
  timeline.csv  the loader's stats every 100 ms (sparser on long runs): cumulative busy seconds
                per stage and its threads, queue depths, arena and fetch bytes
  metrics.prom  the final Prometheus text (latency histograms per stage, next() waits)
  summary.json  settings, totals, limiter, stages
and writes wait_per_step.png, stage_utilisation.png, queue_depths.png, latency_histograms.png
and index.html. Utilisation per interval is the growth of a stage's busy seconds over what its
threads could do in it (threads x wall). The engine credits busy seconds when an item finishes,
so one long image used to lift a single interval far above 100 % (175 % seen, issue 30 §17):
credit beyond an interval's capacity is moved back to the intervals before it, where that work
ran — every point is at most 100 % and the area (total busy seconds) is kept. index.html also
lists the most frequent failure reasons (summary.json "failures"). Needs matplotlib (Debian:
python3-matplotlib); exits 3 naming it when absent."""

import csv
import html
import json
import math
import os
import re
import sys

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError as e:  # pragma: no cover - depends on the machine
    sys.stderr.write(f"stoker report: matplotlib is missing ({e}); on Debian: "
                     "apt-get install python3-matplotlib, or set STOKER_REPORT_PYTHON to a "
                     "python with matplotlib\n")
    sys.exit(3)

DPI = 100
SIZE = (9, 4.2)


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def parse_prometheus(path):
    """{(name, frozenset(labels.items())): value} from the text format (what stoker writes)."""
    out = {}
    if not os.path.exists(path):
        return out
    sample = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
    label = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            m = sample.match(line)
            if not m:
                continue
            labels = dict(label.findall(m.group(3) or ""))
            out[(m.group(1), frozenset(labels.items()))] = float(m.group(4))
    return out


def histograms(metrics, name):
    """{label value of 'stage' (or ''): [(le, count in bucket)]} from cumulative buckets."""
    by = {}
    for (n, labels), v in metrics.items():
        if n != name + "_bucket":
            continue
        d = dict(labels)
        le = math.inf if d["le"] == "+Inf" else float(d["le"])
        by.setdefault(d.get("stage", ""), []).append((le, v))
    out = {}
    for key, buckets in by.items():
        buckets.sort()
        prev, per = 0.0, []
        for le, cum in buckets:
            per.append((le, cum - prev))
            prev = cum
        out[key] = per
    return out


def no_data(ax, what):
    ax.text(0.5, 0.5, f"no {what} recorded", ha="center", va="center", transform=ax.transAxes)


def plot_wait(steps, out):
    fig, ax = plt.subplots(figsize=SIZE)
    if steps:
        x = [int(r["step"]) for r in steps]
        y = [float(r["wait_ms"]) for r in steps]
        ax.plot(x, y, ".-", lw=0.8, ms=3, label="next() wait")
        ys = sorted(y)
        med = ys[len(ys) // 2]
        ax.axhline(med, color="tab:red", lw=0.8, ls="--", label=f"median {med:.2f} ms")
        ax.set_xlabel("step (batch)")
        ax.set_ylabel("wait in next() [ms]")
        if max(y) > 0 and max(y) > 50 * max(med, 1e-3):
            ax.set_yscale("symlog", linthresh=max(med, 0.01))
        ax.legend()
    else:
        no_data(ax, "steps")
    ax.set_title("Trainer wait per step (time blocked in next())")
    fig.tight_layout()
    fig.savefig(out, dpi=DPI)
    plt.close(fig)


def stage_names(timeline):
    if not timeline:
        return []
    return [k[len("busy_"):] for k in timeline[0] if k.startswith("busy_")]


def utilisation(timeline, stage):
    """[(t, percent)] of one stage: per interval, busy seconds over threads x wall, at most 100 %.
    Busy seconds are credited when an item finishes; what exceeds an interval's capacity ran in
    the intervals before it, so it is moved back there (latest first). The total is kept unless
    it exceeds the whole run's capacity (it cannot, with a constant thread count)."""
    points = []
    for a, b in zip(timeline, timeline[1:]):
        dt = float(b["t_s"]) - float(a["t_s"])
        if dt <= 0:
            continue
        threads = max(1, int(b[f"threads_{stage}"]))
        busy = max(0.0, float(b[f"busy_{stage}"]) - float(a[f"busy_{stage}"]))
        points.append([float(b["t_s"]), busy, threads * dt])
    carry = 0.0
    for p in reversed(points):
        total = p[1] + carry
        p[1] = min(total, p[2])
        carry = total - p[1]
    return [(t, 100.0 * busy / cap) for t, busy, cap in points]


def plot_utilisation(timeline, out):
    fig, ax = plt.subplots(figsize=SIZE)
    stages = stage_names(timeline)
    if len(timeline) >= 2 and stages:
        t = [float(r["t_s"]) for r in timeline]
        for s in stages:
            pts = utilisation(timeline, s)
            ax.plot([x for x, _ in pts], [y for _, y in pts], lw=1, label=s)
        ax.set_xlim(t[0], t[-1])
        ax.set_ylim(0, 105)
        ax.set_xlabel("time [s]")
        ax.set_ylabel("busy / (threads x wall) [%]")
        ax.legend(ncol=len(stages), fontsize="small")
    else:
        no_data(ax, "timeline")
    ax.set_title("Stage utilisation over time")
    fig.tight_layout()
    fig.savefig(out, dpi=DPI)
    plt.close(fig)


def plot_queues(timeline, out):
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(SIZE[0], SIZE[1] * 1.5), sharex=True)
    if timeline:
        t = [float(r["t_s"]) for r in timeline]
        for key, label in (("ready_batches", "ready batches (prefetch ring)"),
                           ("samples_in_flight", "samples in flight"),
                           ("prepared_waiting", "prepared, waiting (reorder)")):
            ax.step(t, [int(r[key]) for r in timeline], where="post", lw=1, label=label)
        ax.set_ylabel("count")
        ax.legend(fontsize="small")
        mib = 1 << 20
        ax2.step(t, [int(r["arena_in_use"]) / mib for r in timeline], where="post", lw=1,
                 label="arena in use")
        ax2.step(t, [int(r["fetch_in_flight"]) / mib for r in timeline], where="post", lw=1,
                 label="fetch bytes in flight")
        ax2.set_ylabel("MiB")
        ax2.set_xlabel("time [s]")
        ax2.legend(fontsize="small")
    else:
        no_data(ax, "timeline")
    ax.set_title("Queue depths and memory in use")
    fig.tight_layout()
    fig.savefig(out, dpi=DPI)
    plt.close(fig)


def bound_label(le):
    if math.isinf(le):
        return "+Inf"
    if le < 1e-3:
        return f"{le * 1e6:g}µs"
    if le < 1:
        return f"{le * 1e3:g}ms"
    return f"{le:g}s"


def plot_latency(metrics, out):
    panels = [(f"stage {k}", v) for k, v in
              sorted(histograms(metrics, "stoker_stage_latency_seconds").items())]
    panels += [("next() wait", v) for v in
               histograms(metrics, "stoker_next_wait_seconds").values()]
    cols = 3
    rows = max(1, math.ceil(len(panels) / cols))
    fig, axes = plt.subplots(rows, cols, figsize=(11, 2.6 * rows), squeeze=False)
    for i, ax in enumerate(axes.flat):
        if i >= len(panels):
            ax.axis("off")
            continue
        title, buckets = panels[i]
        counts = [c for _, c in buckets]
        ax.bar(range(len(buckets)), counts, color="tab:blue")
        ax.set_xticks(range(len(buckets)))
        ax.set_xticklabels([bound_label(le) for le, _ in buckets], rotation=70, fontsize=6)
        ax.set_title(f"{title} (n={int(sum(counts))})", fontsize=9)
    if not panels:
        no_data(axes[0][0], "histograms")
    fig.suptitle("Latency histograms (bucket upper bounds)")
    fig.tight_layout()
    fig.savefig(out, dpi=DPI)
    plt.close(fig)


PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>stoker run report</title>
<style>
body {{ font-family: sans-serif; max-width: 1100px; margin: 1em auto; color: #222; }}
table {{ border-collapse: collapse; margin: 0.5em 0; }}
td, th {{ border: 1px solid #ccc; padding: 2px 8px; text-align: left; font-size: 90%; }}
img {{ max-width: 100%; }}
</style>
</head>
<body>
<h1>stoker run report</h1>
<p>{headline}</p>
<table>
{totals}
</table>
<h2>Failed samples by reason</h2>
{failures}
<h2>Stages</h2>
<table>
<tr><th>stage</th><th>threads</th><th>items</th><th>busy s</th><th>busy share</th><th>p50 &le;</th><th>p99 &le;</th></tr>
{stages}
</table>
{figures}
<h2>Files</h2>
<p>{files}</p>
</body>
</html>
"""


def fmt_s(v):
    return bound_label(v) if v else "-"


def failure_table(s):
    """The most frequent failure kinds (summary.json "failures"), one example each."""
    kinds = s.get("failures") or []
    if not kinds:
        n = s.get("failed")
        return "<p>none</p>" if not n else f"<p>{html.escape(str(n))} failed (no reasons recorded)</p>"
    rows = ["<table>", "<tr><th>count</th><th>stage</th><th>code</th><th>reason</th>"
            "<th>example</th></tr>"]
    for k in kinds:
        ex = k.get("example", {})
        where = f"sample {ex.get('sample')} ({ex.get('file')}:{ex.get('line')}): {ex.get('reason')}"
        rows.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in (
            k.get("count"), k.get("stage"), k.get("code"), k.get("pattern"), where)) + "</tr>")
    rows.append("</table>")
    total = sum(int(k.get("count", 0)) for k in kinds)
    if s.get("failed") and int(s["failed"]) > total:
        rows.append(f"<p>{int(s['failed']) - total} more in other kinds (the error report lists "
                    "every one)</p>")
    return "\n".join(rows)


def write_html(run_dir, summary, images):
    s = summary
    elapsed = s.get("elapsed_s", 0) or 0
    headline = html.escape(f"limiter: {s.get('limiter', 'unknown')}")
    rows = [("batches", s.get("batches")), ("samples", s.get("samples")),
            ("failed samples", s.get("failed")), ("elapsed", f"{elapsed:.2f} s"),
            ("samples/s", f"{s.get('samples_per_s', 0):.1f}"),
            ("wait ratio", f"{100 * s.get('wait_ratio', 0):.2f} %"),
            ("time to first batch", f"{s.get('first_batch_s', 0):.3f} s"),
            ("arena peak", f"{s.get('arena_peak_bytes', 0) / (1 << 20):.1f} MiB of "
                           f"{s.get('arena_capacity_bytes', 0) / (1 << 20):.0f} MiB"),
            ("fetch bytes in flight, peak", f"{s.get('fetch_peak_bytes', 0) / (1 << 20):.1f} MiB")]
    rows += [(f"setting: {k}", v) for k, v in s.get("settings", {}).items()]
    totals = "\n".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
                       for k, v in rows)
    stages = []
    for st in s.get("stages", []):
        share = st["busy_s"] / (max(1, st["threads"]) * elapsed) if elapsed > 0 else 0
        stages.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in (
            st["name"], st["threads"], st["items"], f"{st['busy_s']:.3f}", f"{100 * share:.1f} %",
            fmt_s(st.get("p50_le_s")), fmt_s(st.get("p99_le_s")))) + "</tr>")
    failures = failure_table(s)
    figures = "\n".join(f'<h2>{html.escape(title)}</h2>\n<img src="{html.escape(name)}" '
                        f'alt="{html.escape(title)}">' for title, name in images)
    names = sorted(n for n in os.listdir(run_dir) if not n.startswith("."))
    files = ", ".join(f'<a href="{html.escape(n)}">{html.escape(n)}</a>' for n in names)
    if "trace.json" in names:
        files += (" — open trace.json in <a href=\"https://ui.perfetto.dev\">ui.perfetto.dev</a> "
                  "(Open trace file) for the per-thread timeline")
    with open(os.path.join(run_dir, "index.html"), "w", encoding="utf-8") as f:
        f.write(PAGE.format(headline=headline, totals=totals, stages="\n".join(stages),
                            failures=failures, figures=figures, files=files))


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: stoker_report.py RUN_DIR\n")
        return 2
    run_dir = argv[1]
    if not os.path.isdir(run_dir):
        sys.stderr.write(f"stoker report: {run_dir} is not a folder\n")
        return 2
    present = [n for n in ("steps.csv", "timeline.csv", "metrics.prom", "summary.json")
               if os.path.exists(os.path.join(run_dir, n))]
    if not present:
        sys.stderr.write(f"stoker report: {run_dir} has none of steps.csv, timeline.csv, "
                         "metrics.prom, summary.json (write it with stoker run --report DIR)\n")
        return 2
    steps = read_csv(os.path.join(run_dir, "steps.csv"))
    timeline = read_csv(os.path.join(run_dir, "timeline.csv"))
    metrics = parse_prometheus(os.path.join(run_dir, "metrics.prom"))
    summary = {}
    if os.path.exists(os.path.join(run_dir, "summary.json")):
        with open(os.path.join(run_dir, "summary.json")) as f:
            summary = json.load(f)
    images = [("Trainer wait per step", "wait_per_step.png"),
              ("Stage utilisation over time", "stage_utilisation.png"),
              ("Queue depths and memory", "queue_depths.png"),
              ("Latency histograms", "latency_histograms.png")]
    plot_wait(steps, os.path.join(run_dir, images[0][1]))
    plot_utilisation(timeline, os.path.join(run_dir, images[1][1]))
    plot_queues(timeline, os.path.join(run_dir, images[2][1]))
    plot_latency(metrics, os.path.join(run_dir, images[3][1]))
    write_html(run_dir, summary, images)
    print(f"stoker report: {os.path.join(run_dir, 'index.html')} "
          f"({', '.join(n for _, n in images)})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
