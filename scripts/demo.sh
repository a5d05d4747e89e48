#!/usr/bin/env bash
# The main job on the built-in default: set up, generate a synthetic SFT dataset, inspect its
# images with the Qwen2.5-VL preset, then stream it through the engine as a trainer would
# (`stoker run`: batches, wait ratio, per-stage time, limiter, errors).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
data=${STOKER_DEMO_DIR:-/tmp/stoker-demo}
"$root/build/stoker" synth --out "$data" --n 64 --seed 1
"$root/build/stoker" inspect "$data/data.jsonl" --model qwen2.5-vl
# A simulated 150 ms GPU step per batch, three epochs: the prefetch ring hides the data time.
"$root/build/stoker" run "$data/data.jsonl" --model qwen2.5-vl --batch-size 8 --step-ms 150 --epochs 3
echo "demo: \`stoker\` is on PATH ($("$root/scripts/link_stoker.sh" --print-dir)/stoker → $root/build/stoker): try \`stoker --help\`"
