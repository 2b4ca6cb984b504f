#!/usr/bin/env bash
# Set up MAD Lab on a fresh machine: a virtual environment in .venv with every pinned
# package, llama-cpp-python built with flags that run on CPUs without AMX (the default
# -march=native build segfaults on these machines), and, with --browser, Debian's
# Chromium for the end-to-end tests.
#
# The llama-cpp-python wheel is cached outside the repo, keyed by version and build flags,
# so a second install on the same machine takes seconds; a fresh machine builds it (~7 min).
set -euo pipefail
cd "$(dirname "$0")/.."

LLAMA_VERSION=0.3.36
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DLLAVA_BUILD=OFF"
if [ "${MADLAB_CUDA:-0}" = "1" ]; then LLAMA_CMAKE_ARGS="$LLAMA_CMAKE_ARGS -DGGML_CUDA=ON"; fi
PY=${PYTHON:-python3}

want_browser=0
for arg in "$@"; do
  case "$arg" in
    --browser) want_browser=1 ;;
    *) echo "setup.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
VPY=.venv/bin/python
stamp=.venv/.madlab-installed
req_hash=$(cat requirements.txt requirements-dev.txt requirements-nodeps.txt scripts/setup.sh | sha256sum | cut -c1-16)

if [ "$(cat "$stamp" 2>/dev/null)" != "$req_hash" ]; then
  "$VPY" -m pip install -q --upgrade pip
  # torch first, pinned: an unpinned torch would pull a multi-GB CUDA build.
  "$VPY" -m pip install -q -r requirements.txt -r requirements-dev.txt
  "$VPY" -m pip install -q --no-deps -r requirements-nodeps.txt

  key=$(printf '%s %s' "$LLAMA_VERSION" "$LLAMA_CMAKE_ARGS" | sha256sum | cut -c1-12)
  cache="${MADLAB_WHEEL_CACHE:-$HOME/.cache/madlab/wheels}/llama-$LLAMA_VERSION-$key"
  if ! ls "$cache"/llama_cpp_python-*.whl >/dev/null 2>&1; then
    echo "Building llama-cpp-python $LLAMA_VERSION (a few minutes, once per machine)..."
    mkdir -p "$cache.tmp"
    CMAKE_ARGS="$LLAMA_CMAKE_ARGS" "$VPY" -m pip wheel -q --no-deps --no-cache-dir \
      -w "$cache.tmp" "llama-cpp-python==$LLAMA_VERSION"
    rm -rf "$cache"; mv "$cache.tmp" "$cache"
  fi
  "$VPY" -m pip install -q --no-deps --force-reinstall "$cache"/llama_cpp_python-*.whl
  echo "$req_hash" > "$stamp"
fi

if [ "$want_browser" = "1" ] && ! command -v chromium >/dev/null 2>&1; then
  echo "Installing Debian's Chromium for the browser tests..."
  if [ "$(id -u)" = "0" ]; then SUDO=; else SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
