#!/usr/bin/env bash
# nnvm against libtorch on this machine, in one sitting (docs/BENCHMARKS.md).
# A measuring tool, not part of nnvm's build: it fetches the libtorch of a
# pinned PyPI wheel (tools/fetch_libtorch.sh: PyTorch's C++ library with its
# headers, about 540 MB, cached in $NNVM_TORCH_DIR), builds
# bench/libtorch/torch_bench.cpp against it, builds nnvm_bench, and runs the
# paired benchmarks of both, alternating, ROUNDS times (default 3):
#
#   Torch/EagerAddTiny   BM_EagerAddTiny
#   Torch/Matmul[_transposed_b]  BM_Matmul/eager[_transposed_b] (512, 1024)
#   Torch/Add, Exp, Tanh, Erf, Gelu, Log, Sin, Cos, Tan, Softmax, Sum/{rows,columns}
#                        BM_Add/eager, ..., BM_SoftmaxOp/eager, BM_Sum/eager/... ([4096, 1024])
#   Torch/MaxPool2d/*    BM_MaxPool2d/eager/*
#   Torch/ConvLayer/*    BM_ConvLayer/*
#   Torch/RnnDynamic     BM_RnnDynamic/traced and /eager (compare us/step)
#   Torch/MlpTrainStep   BM_MlpTrainStep/traced and /eager
#   Torch/SequenceLinearStep  BM_SequenceLinearStep/traced and /eager
#   Torch/CnnTrainStep   BM_CnnTrainStep/traced and /eager
#
#   tools/libtorch_compare.sh [extra Google Benchmark arguments...]
#
# Both libraries use the hardware threads; NNVM_THREADS=N sets both.
set -euo pipefail
cd "$(dirname "$0")/.."
torch_version=2.15.0
dir="$(bash tools/fetch_libtorch.sh "$torch_version")"
rounds="${ROUNDS:-3}"

bash tools/build_against_libtorch.sh "$dir" bench/libtorch/torch_bench.cpp build-libtorch/torch_bench -lbenchmark
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DNNVM_BUILD_TESTS=ON -DNNVM_BUILD_BENCH=ON >/dev/null
cmake --build build --target nnvm_bench -j "$(nproc)" >/dev/null

nnvm_filter='^BM_EagerAddTiny$|BM_Matmul/eager(_transposed_b)?/'
nnvm_filter+='|^BM_(Add|Exp|Tanh|Erf|Gelu|Log|Sin|Cos|Tan|SoftmaxOp)/eager|BM_Sum/eager/'
nnvm_filter+='|BM_MaxPool2d/eager/|BM_ConvLayer/'
nnvm_filter+='|BM_RnnDynamic/(traced|eager)|BM_MlpTrainStep/|BM_SequenceLinearStep/|BM_CnnTrainStep/'
for ((r = 1; r <= rounds; ++r)); do
  echo "== round $r: libtorch"
  ./build-libtorch/torch_bench --benchmark_min_time=0.5 "$@"
  echo "== round $r: nnvm"
  ./build/bench/nnvm_bench --benchmark_filter="$nnvm_filter" --benchmark_min_time=0.5 "$@"
done
