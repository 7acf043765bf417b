#!/usr/bin/env bash
# The RNN step's target, brought to this machine (docs/BENCHMARKS.md).
# The tracing issue sets BM_RnnDynamic/traced <= 1 us a step on its machine,
# where, it says, libtorch 1.13 eager takes ~4.5 us a step and a plain C++
# loop ~0.35 us. This runs both of those references here, alternating with
# nnvm's traced step ROUNDS times (default 3):
#   bench/libtorch/rnn_reference.cpp against libtorch 1.13.1 (the C++ half of
#     its PyPI wheel, tools/fetch_libtorch.sh, about 890 MB fetched once);
#   BM_RnnDynamic/handwritten, the plain loop, in a process of its own;
#   BM_RnnDynamic/traced;
# and prints the medians and the 1 us target scaled by each reference's
# time here against the issue's.
#
#   tools/rnn_reference.sh
set -euo pipefail
cd "$(dirname "$0")/.."
torch_version=1.13.1
dir="$(bash tools/fetch_libtorch.sh "$torch_version" --python-version 3.10)"
rounds="${ROUNDS:-3}"

ref=build-libtorch/rnn_reference-$torch_version
bash tools/build_against_libtorch.sh "$dir" bench/libtorch/rnn_reference.cpp "$ref"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DNNVM_BUILD_TESTS=ON -DNNVM_BUILD_BENCH=ON >/dev/null
cmake --build build --target nnvm_bench -j "$(nproc)" >/dev/null

log=$(mktemp)
nnvm() {
  ./build/bench/nnvm_bench --benchmark_filter="$1" --benchmark_repetitions=5 \
    --benchmark_report_aggregates_only=true 2>/dev/null | grep _median
}
for ((r = 1; r <= rounds; ++r)); do
  echo "== round $r"
  "./$ref" | tee -a "$log"
  nnvm 'BM_RnnDynamic/handwritten' | tee -a "$log"
  nnvm 'BM_RnnDynamic/traced' | tee -a "$log"
done
python3 - "$log" <<'PY'
import re, statistics, sys
text = open(sys.argv[1]).read()
torch = [float(x) for x in re.findall(r"RnnDynamic: median ([0-9.]+) us/step", text)]
def nnvm(name):
    return [float(x) for x in re.findall(rf"BM_RnnDynamic/{name}/real_time_median.*us/step=([0-9.]+)", text)]
loop, traced = nnvm("handwritten"), nnvm("traced")
med = statistics.median
print(f"\nmedians over {len(traced)} rounds: libtorch 1.13 eager {med(torch):.2f} us a step, "
      f"plain loop {med(loop):.3f}, nnvm traced {med(traced):.3f}")
print("the issue's machine: libtorch 1.13 eager 4.5 us, plain loop 0.35 us, target traced <= 1 us")
for name, here, there in (("libtorch 1.13 eager", med(torch), 4.5), ("the plain loop", med(loop), 0.35)):
    print(f"scaled by {name}: the target is {here / there:.2f} us here; nnvm traced "
          f"{med(traced):.3f} us is {med(traced) * there / here:.2f} us on the issue's machine")
PY
rm -f "$log"
