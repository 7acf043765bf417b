#!/usr/bin/env bash
# Builds and runs one libFuzzer target of fuzz/ for a while:
#
#   tools/fuzz.sh fuzz_pytorch [SECONDS]     # or fuzz_npy; SECONDS defaults to 10
#
# Configures build-fuzz/ once with clang 14 and NNVM_BUILD_FUZZERS=ON (the
# whole library instrumented with ASan, UBSan and coverage), builds only the
# target (CMAKE_BUILD_PARALLEL_LEVEL jobs, default 1), and runs it on the seeds
# in fuzz/corpus/<name>/ plus what earlier runs found, kept in
# build-fuzz/corpus/<name>/. A failing input is written to build-fuzz/ as
# crash-*, leak-*, timeout-* or oom-*, and the script fails; rerun it with
# build-fuzz/fuzz/<target> <file>.
set -euo pipefail

target=${1:?usage: tools/fuzz.sh fuzz_pytorch|fuzz_npy|fuzz_onnx|fuzz_tensorflow|fuzz_safetensors [SECONDS]}
seconds=${2:-10}
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build-fuzz
seeds=$root/fuzz/corpus/${target#fuzz_}
[ -d "$seeds" ] || { echo "tools/fuzz.sh: no target $target (no $seeds)" >&2; exit 2; }

if [ ! -f "$build/CMakeCache.txt" ]; then
  CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DNNVM_BUILD_FUZZERS=ON -DNNVM_BUILD_TESTS=OFF -DNNVM_BUILD_BENCH=OFF -DNNVM_NATIVE=ON
fi
CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-1} nice -n 10 cmake --build "$build" --target "$target"

found=$build/corpus/${target#fuzz_}
mkdir -p "$found"
cd "$build"
NNVM_THREADS=1 "./fuzz/$target" -max_total_time="$seconds" -timeout=10 "$found" "$seeds"
