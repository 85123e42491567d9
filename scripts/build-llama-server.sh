#!/usr/bin/env bash
# Builds llama.cpp's own OpenAI-compatible server, `llama-server`, once into a local cache and
# prints the binary's path on stdout (progress goes to stderr).
#
# Why: the server is the same llama.cpp the Python binding runs, reachable over HTTP (an
# OpenAI-compatible `base_url`). It is built from the llama.cpp vendored in the very
# llama-cpp-python sdist that scripts/build-llama-wheel.sh compiles, with the same CPU-safe flags
# (GGML_NATIVE=OFF, AMX off, the SIMD levels the CPU reports, no curl), ggml and llama linked
# statically so the binary stands alone. Only source is downloaded, never a binary: the web UI's
# prebuilt assets (a download from Hugging Face) are turned off. The binary is cached under a key
# made of the version and the flags, and published atomically.
#
# ATOM_LLAMA_SERVER=/path/to/llama-server skips the build and uses that binary.
set -euo pipefail

if [[ -n "${ATOM_LLAMA_SERVER:-}" ]]; then
  if [[ -x "$ATOM_LLAMA_SERVER" && -f "$ATOM_LLAMA_SERVER" ]]; then
    echo "$ATOM_LLAMA_SERVER"
    exit 0
  fi
  echo "error: ATOM_LLAMA_SERVER=$ATOM_LLAMA_SERVER is not an executable file" >&2
  exit 1
fi

version="${LLAMA_CPP_VERSION:-0.3.36}"
cache="${ATOM_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/atom-agent}"
pip="${PIP:-pip}"

# The CPU flags of scripts/build-llama-wheel.sh, then what a standalone server build needs.
flags="-DGGML_NATIVE=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
cpu="$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null || true)"
has() { [[ " $cpu " == *" $1 "* ]]; }
has avx2 && flags+=" -DGGML_AVX=ON -DGGML_AVX2=ON"
has fma && flags+=" -DGGML_FMA=ON"
has f16c && flags+=" -DGGML_F16C=ON"
has avx512f && flags+=" -DGGML_AVX512=ON"
has avx512_vnni && flags+=" -DGGML_AVX512_VNNI=ON"
has avx512_bf16 && flags+=" -DGGML_AVX512_BF16=ON"
flags+=" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF"
flags+=" -DLLAMA_BUILD_COMMON=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON"
flags+=" -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF"
flags+=" -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF"

key="$(printf '%s %s' "$version" "$flags" | sha256sum | cut -c1-12)"
dir="$cache/llama-server-$version-$key"
if [[ -x "$dir/llama-server" ]]; then
  echo "$dir/llama-server"
  exit 0
fi
# A compile that failed once fails again: say so at once rather than retry on every install.
failed="$dir.failed"
if [[ -f "$failed" ]]; then
  echo "error: llama-server failed to build here before ($(head -n1 "$failed")); rm $failed to retry" >&2
  exit 1
fi

# The tools, checked up front: one clear line instead of a cmake trace.
missing=()
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v "${CXX:-c++}" >/dev/null 2>&1 || missing+=("a C++ compiler (${CXX:-c++})")
command -v "${CC:-cc}" >/dev/null 2>&1 || missing+=("a C compiler (${CC:-cc})")
command -v make >/dev/null 2>&1 || command -v ninja >/dev/null 2>&1 || missing+=("make or ninja")
command -v "$pip" >/dev/null 2>&1 || missing+=("pip ($pip)")
if ((${#missing[@]})); then
  echo "error: cannot build llama-server: missing $(IFS=,; echo "${missing[*]}" | sed 's/,/, /g')" >&2
  exit 1
fi

mkdir -p "$cache"
tmp="$(mktemp -d "$cache/.build-server-XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
start=$SECONDS
echo "building llama-server from llama-cpp-python $version (one time, ~10 min on 2 cores): $flags" >&2

"$pip" download --quiet --no-deps --no-binary :all: \
  "llama-cpp-python==$version" -d "$tmp/sdist" >&2
sdist="$(ls "$tmp"/sdist/llama_cpp_python-*.tar.gz 2>/dev/null | head -n1)"
if [[ -z "$sdist" ]]; then
  echo "error: pip did not download the llama-cpp-python==$version sdist" >&2
  exit 1
fi
tar -xzf "$sdist" -C "$tmp"
src="$(ls -d "$tmp"/llama_cpp_python-*/vendor/llama.cpp 2>/dev/null | head -n1)"
if [[ -z "$src" || ! (-f "$src/tools/server/server.cpp" || -f "$src/examples/server/server.cpp") ]]; then
  echo "error: the llama-cpp-python $version sdist has no llama.cpp server sources" >&2
  exit 1
fi

set +e
# shellcheck disable=SC2086  # $flags is a list of -D options
{ cmake -S "$src" -B "$tmp/build" $flags && \
  cmake --build "$tmp/build" --target llama-server -j "$(nproc)"; } >&2
rc=$?
set -e
if ((rc)); then
  # Not when killed by a signal (an interrupted build is no reason to stop trying).
  ((rc < 128)) && echo "cmake exited $rc at $(date -u +%FT%TZ)" >"$failed"
  echo "error: llama-server build failed (cmake exited $rc; output above)" >&2
  exit "$rc"
fi

mkdir "$tmp/out"
cp "$tmp/build/bin/llama-server" "$tmp/out/llama-server"
printf 'llama-cpp-python %s\n%s\n' "$version" "$flags" >"$tmp/out/BUILD_FLAGS"
# Publish atomically: a killed build never leaves a half-written cache entry; when another
# build published the same key first, keep theirs.
if ! mv -T "$tmp/out" "$dir" 2>/dev/null && [[ ! -x "$dir/llama-server" ]]; then
  echo "error: could not publish llama-server to $dir" >&2
  exit 1
fi
echo "built llama-server in $((SECONDS - start)) s: $dir/llama-server" >&2
echo "$dir/llama-server"
