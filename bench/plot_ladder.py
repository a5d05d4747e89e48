#!/usr/bin/python3
"""Plot of `stoker bench ladder`: trainer wait per step, one line per mode.

usage: plot_ladder.py ladder.csv ladder.png [step_ms [fill_steps]]

Reads the CSV (mode,step,wait_ms,step_ms) that the bench writes and draws wait_ms per step for
serial / concurrent / prefetch / zero-copy / finish=dev (prefetch, uint8 pixels) on a symlog axis (waits range from ~0 to hundreds of
ms). Steps 0..fill_steps (start-up, then the prefetch ring filling; default 0) are drawn but
shaded: the bench's steady-state numbers exclude them, as the legend's numbers do.
Debian's /usr/bin/python3 with matplotlib, Agg backend (no display needed).
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ORDER = ["serial", "concurrent", "prefetch", "zero-copy", "finish=dev"]
COLORS = {"serial": "#d62728", "concurrent": "#ff7f0e", "prefetch": "#2ca02c",
          "zero-copy": "#1f77b4", "finish=dev": "#9467bd"}


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    series = {}
    with open(argv[1], newline="") as f:
        for row in csv.DictReader(f):
            steps, waits, totals = series.setdefault(row["mode"], ([], [], []))
            steps.append(int(row["step"]))
            waits.append(float(row["wait_ms"]))
            totals.append(float(row["step_ms"]))
    step_ms = float(argv[3]) if len(argv) > 3 else None
    fill = int(argv[4]) if len(argv) > 4 else 0

    fig, ax = plt.subplots(figsize=(10, 5.5), dpi=110)
    for mode in ORDER + [m for m in series if m not in ORDER]:
        if mode not in series:
            continue
        steps, waits, totals = series[mode]
        steady = [i for i, s in enumerate(steps) if s > fill]
        steady_wait = sum(waits[i] for i in steady)
        steady_total = sum(totals[i] for i in steady) or 1.0
        label = f"{mode}  (steady wait {100 * steady_wait / steady_total:.2f}%)"
        ax.plot(steps, waits, marker=".", linewidth=1.2, label=label, color=COLORS.get(mode))
    span = "step 0: start-up" if fill == 0 else f"steps 0-{fill}: start-up, ring filling"
    ax.axvspan(-0.5, fill + 0.5, color="0.85", zorder=0, label=span + " (excluded)")
    if step_ms:
        ax.axhline(step_ms, color="0.4", linestyle="--", linewidth=0.8,
                   label=f"simulated GPU step {step_ms:.0f} ms")
    ax.set_yscale("symlog", linthresh=1.0)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("step")
    ax.set_ylabel("trainer wait in next() [ms] (symlog)")
    ax.set_title("stoker bench ladder: time the trainer waits for data, per step")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
