#!/usr/bin/env bash
# Puts `stoker` on PATH: a symlink to the built binary in a bin folder on the default PATH —
# /usr/local/bin as root (or when writable), else ~/.local/bin — so the README's commands work
# bare from any folder after scripts/setup.sh (which runs this). Idempotent: an existing link to
# the same binary is left alone; a link elsewhere is replaced; a regular file of that name (e.g.
# from `cmake --install`) is never touched (it says so).
# Usage: scripts/link_stoker.sh [BINARY]  (default: build/stoker of this checkout)
#        scripts/link_stoker.sh --print-dir  (where the link goes)
# $STOKER_LINK_DIR overrides the folder.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ -n "${STOKER_LINK_DIR:-}" ]; then
  dir=$STOKER_LINK_DIR
elif [ "$(id -u)" -eq 0 ] || [ -w /usr/local/bin ]; then
  dir=/usr/local/bin
else
  dir=$HOME/.local/bin
fi
if [ "${1:-}" = "--print-dir" ]; then
  echo "$dir"
  exit 0
fi
bin=$(readlink -f "${1:-$root/build/stoker}")
[ -x "$bin" ] || { echo "link_stoker: $bin is not an executable (build it first)" >&2; exit 1; }
mkdir -p "$dir"
link="$dir/stoker"
if [ -e "$link" ] && [ ! -L "$link" ]; then
  echo "link_stoker: $link exists and is not a link (an installed stoker?): left as it is" >&2
elif [ "$(readlink "$link" 2>/dev/null)" != "$bin" ]; then
  ln -sfn "$bin" "$link"
  echo "setup: $link → $bin"
fi
case ":$PATH:" in
  *":$dir:"*) ;;
  *) echo "setup: $dir is not on this shell's PATH; add it (export PATH=\"$dir:\$PATH\") or call $bin" ;;
esac
