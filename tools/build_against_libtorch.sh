#!/usr/bin/env bash
# Builds a measuring program of bench/libtorch/ against the libtorch in DIR
# (tools/fetch_libtorch.sh's folder), unless OUT is newer than SOURCE and the
# headers beside it. For tools/libtorch_compare.sh and tools/rnn_reference.sh.
#
#   tools/build_against_libtorch.sh DIR SOURCE OUT [more g++ arguments...]
set -euo pipefail
dir="$1" source="$2" out="$3"
shift 3
stale=0
for f in "$source" "$(dirname "$source")"/*.h; do [[ "$out" -nt "$f" ]] || stale=1; done
((stale)) || exit 0
echo "building $out against $dir" >&2
# The 1.x wheels were built with the pre-C++11 std::string: c10::Error's constructor
# from a SourceLocation and a string says which (Ss, or NSt7__cxx1112basic_string...).
# grep -c reads all of nm's output (grep -q would stop early, and pipefail fail nm).
new_abi='_ZN3c105ErrorC1ENS_14SourceLocationENSt7__cxx11'
cxx11=$(nm -D --defined-only "$dir/torch/lib/libc10.so" | grep -c "$new_abi" || true)
mkdir -p "$(dirname "$out")"
g++ -std=c++20 -O2 -D_GLIBCXX_USE_CXX11_ABI=$((cxx11 > 0 ? 1 : 0)) "$source" -o "$out" \
  -isystem "$dir/torch/include" -isystem "$dir/torch/include/torch/csrc/api/include" \
  -L "$dir/torch/lib" -ltorch_cpu -lc10 "$@" -lpthread -Wl,-rpath,"$dir/torch/lib"
