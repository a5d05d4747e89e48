#!/usr/bin/python3
"""Plot of `stoker bench scale`: samples/s per configuration, the trainer's wait as workers are
added, and each host's CPU and NIC use in the NIC-bound set.

usage: plot_scale.py scale.csv scale.png

Reads the CSV the bench writes (one row per configuration and host). Debian's /usr/bin/python3
with matplotlib, Agg backend (no display needed).
"""
import csv
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

GROUP_COLORS = {"scaling": "#1f77b4", "trainer": "#2ca02c", "nic": "#d62728"}


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    runs = {}  # run index -> {"name", "group", ..., "hosts": [rows]}
    with open(argv[1], newline="") as f:
        for row in csv.DictReader(f):
            r = runs.setdefault(int(row["run"]), {**row, "hosts": []})
            r["hosts"].append(row)
    order = sorted(runs)
    fig, axes = plt.subplots(1, 3, figsize=(17, 5.5), dpi=100,
                             gridspec_kw={"width_ratios": [1.5, 1, 1.5]})

    # 1. samples/s per configuration.
    ax = axes[0]
    labels = [runs[i]["configuration"] + ("" if runs[i]["group"] != "trainer" else " +trainer")
              for i in order]
    values = [float(runs[i]["samples_per_s"]) for i in order]
    colors = [GROUP_COLORS.get(runs[i]["group"], "0.5") for i in order]
    ax.barh(range(len(order)), values, color=colors)
    ax.set_yticks(range(len(order)), labels, fontsize=8)
    ax.invert_yaxis()
    for y, v in enumerate(values):
        ax.text(v, y, f" {v:.1f}", va="center", fontsize=7)
    ax.set_xlabel("samples/s (after the first batch)")
    ax.set_title("throughput (blue: scaling, green: with trainer, red: NIC-bound)", fontsize=9)

    # 2. the trainer's wait vs worker hosts.
    ax = axes[1]
    series = [(int(runs[i]["workers"]), float(runs[i]["wait_pct"])) for i in order
              if runs[i]["group"] == "trainer"]
    series.sort()
    if series:
        ks, waits = zip(*series)
        ax.plot(ks, waits, marker="o", color=GROUP_COLORS["trainer"])
        for k, w in series:
            ax.annotate(f"{w:.1f}%", (k, w), textcoords="offset points", xytext=(4, 4), fontsize=8)
        ax.axhline(2.0, color="0.4", linestyle="--", linewidth=1, label="2%")
        ax.set_xticks(ks)
        ax.legend(fontsize=8)
    ax.set_xlabel("worker hosts (0 = the GPU host alone)")
    ax.set_ylabel("trainer wait, % of its time")
    ax.set_title("trainer wait as worker hosts are added", fontsize=9)

    # 3. NIC-bound set: each host's CPU (% of its share) and NIC (% of its rate).
    ax = axes[2]
    nic_runs = [i for i in order if runs[i]["group"] == "nic"]
    xt, xl, x = [], [], 0.0
    for i in nic_runs:
        hosts = runs[i]["hosts"]
        for j, h in enumerate(hosts):
            share = float(h["share"])
            cpu = 100 * float(h["cpu_cores"]) / share if share > 0 else 0
            rate = float(h["rate_MBps"])
            net = 100 * max(float(h["tx_MBps"]), float(h["rx_MBps"])) / rate if rate > 0 else 0
            ax.bar(x, cpu, width=0.4, color="#9467bd", label="CPU % of share" if x == 0 else None)
            ax.bar(x + 0.4, net, width=0.4, color="#ff7f0e",
                   label="NIC % of rate" if x == 0 else None)
            xt.append(x + 0.2)
            xl.append(("gpu" if h["role"] == "gpu" else "w" + h["host"].rsplit("-h", 1)[-1]))
            x += 1
        x += 0.8
        ax.text(x - 0.8 - len(hosts) / 2, 106, runs[i]["configuration"], ha="center", fontsize=7)
    ax.set_xticks(xt, xl, fontsize=7)
    ax.set_ylim(0, 130)
    ax.set_yticks(range(0, 101, 20))
    ax.set_ylabel("% (unshaped NIC: 0)")
    ax.set_title("NIC-bound set: per host CPU and NIC use", fontsize=9)
    ax.legend(fontsize=8, loc="upper center", ncol=2, frameon=False)

    fig.tight_layout()
    fig.savefig(argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
