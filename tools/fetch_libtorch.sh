#!/usr/bin/env bash
# Fetches the C++ half of a PyPI torch wheel (its headers, libtorch_cpu, c10
# and the libraries they load) into ${NNVM_TORCH_DIR:-~/.cache/nnvm-torch}/VERSION,
# once, and prints that folder. For the measuring tools that run libtorch
# beside nnvm (tools/libtorch_compare.sh, tools/rnn_reference.sh, which build
# against it with tools/build_against_libtorch.sh); nnvm's own
# build never uses it.
#
#   tools/fetch_libtorch.sh VERSION [pip download arguments...]
#
# e.g. `--python-version 3.10` for a release with no wheel for this Python
# (only the wheel's C++ files are used, whatever Python it was built for).
set -euo pipefail
version="$1"
shift
dir="${NNVM_TORCH_DIR:-$HOME/.cache/nnvm-torch}/$version"
if [[ ! -f "$dir/torch/lib/libtorch_cpu.so" ]]; then
  mkdir -p "$dir"
  python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$dir/wheel" "$@" "torch==$version" >&2
  python3 - "$dir" <<'PY'
import glob, os, sys, zipfile
dir = sys.argv[1]
# The headers, and of the libraries only what linking libtorch_cpu and c10 needs
# (older wheels bundle their CUDA runtime and OpenMP under hashed names).
wanted = ("libtorch_cpu.so", "libc10.so", "libgomp", "libcudart")
with zipfile.ZipFile(glob.glob(f"{dir}/wheel/torch-*.whl")[0]) as w:
    w.extractall(dir, [n for n in w.namelist() if n.startswith("torch/include/") or
                       (n.startswith("torch/lib/") and os.path.basename(n).startswith(wanted))])
PY
  rm -rf "$dir/wheel"
fi
echo "$dir"
