#!/usr/bin/env bash
# Builds llama-cpp-python once into a local wheel cache, with flags that are safe on this CPU.
#
# Why: PyPI ships only the sdist (a ~6 min build on 2 cores), and the default -march=native
# build segfaults on first decode on CPUs with AMX (docs/architecture.md, "Facts of this machine that shaped the design"). We build with GGML_NATIVE=OFF,
# the SIMD levels the CPU reports, and AMX off; the wheel is cached under a key made of the
# version and the flags, so later installs (and CI runs on this machine) reuse it.
set -euo pipefail

version="${LLAMA_CPP_VERSION:-0.3.36}"
cache="${ATOM_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/atom-agent/wheels}"
pip="${PIP:-pip}"

flags="-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
flags+=" -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_CURL=OFF"
cpu="$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)"
has() { [[ " $cpu " == *" $1 "* ]]; }
has avx2 && flags+=" -DGGML_AVX=ON -DGGML_AVX2=ON"
has fma && flags+=" -DGGML_FMA=ON"
has f16c && flags+=" -DGGML_F16C=ON"
has avx512f && flags+=" -DGGML_AVX512=ON"
has avx512_vnni && flags+=" -DGGML_AVX512_VNNI=ON"
has avx512_bf16 && flags+=" -DGGML_AVX512_BF16=ON"

key="$(printf '%s %s' "$version" "$flags" | sha256sum | cut -c1-12)"
dir="$cache/llama-cpp-python-$version-$key"
if ls "$dir"/llama_cpp_python-*.whl >/dev/null 2>&1; then
  echo "$dir"
  exit 0
fi

mkdir -p "$cache"
tmp="$(mktemp -d "$cache/.build-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
echo "building llama-cpp-python $version (one time, ~6 min on 2 cores): $flags" >&2
# With ATOM_STEP_LOG set (scripts/step.sh, `make`), pip's verbose output goes to that file, so
# the step's heartbeat can show the compiler's "[ NN%]" progress instead of ~10 silent minutes.
log="${ATOM_STEP_LOG:-}"
if [[ -n "$log" ]]; then
  if ! CMAKE_ARGS="$flags" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
      "$pip" wheel -v --no-cache-dir --no-deps "llama-cpp-python==$version" -w "$tmp" >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "error: the llama-cpp-python wheel did not build (full output: $log)" >&2
    exit 1
  fi
else
  CMAKE_ARGS="$flags" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    "$pip" wheel --no-cache-dir --no-deps "llama-cpp-python==$version" -w "$tmp" >&2
fi
# Publish atomically: a killed build never leaves a half-written cache entry.
mv "$tmp" "$dir"
trap - EXIT
echo "$dir"
