#!/usr/bin/env bash
# The main job on the built-in default: set up, generate a synthetic SFT dataset, and run stoker
# over it with the Qwen2.5-VL preset, printing what a user wants to know about their data.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
data=${STOKER_DEMO_DIR:-/tmp/stoker-demo}
"$root/build/stoker" synth --out "$data" --n 64 --seed 1
"$root/build/stoker" inspect "$data/data.jsonl" --model qwen2.5-vl
