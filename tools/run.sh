#!/usr/bin/env bash
# Sets up a fresh Debian 12 machine for nnvm (installs what is missing),
# builds, and runs one job:
#   tools/run.sh demo    build and run the demo
#   tools/run.sh test    build and run the whole test suite (CTest)
#   tools/run.sh asan    the test suite under AddressSanitizer + UBSan (build-asan/)
#   tools/run.sh tsan    the tests that run threads, under ThreadSanitizer, in both modes (build-tsan/)
#   tools/run.sh bench   build and run the benchmarks (extra arguments go to nnvm_bench)
#   tools/run.sh clang   build the library, the command line and the demo with clang 14 (build-clang/)
set -euo pipefail
cd "$(dirname "$0")/.."
job="${1:-test}"
shift || true

packages=(cmake ninja-build g++ ccache libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev
          libxbyak-dev zlib1g-dev dataset-fashion-mnist libonnx-dev libprotobuf-dev protobuf-compiler
          libonnx-testdata nlohmann-json3-dev chromium-headless-shell)
# A job's own packages: the bench job's outside references (oneDNN, OpenBLAS;
# bench/CMakeLists.txt finds them), which no other job needs.
case "$job" in
  bench) packages+=(libdnnl-dev libopenblas-dev) ;;
  clang) packages+=(clang-14) ;;
esac
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  echo "installing: ${missing[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=300 install -y -q --no-install-recommends "${missing[@]}"
fi

jobs=$(nproc)
# Every job names both options: the jobs share build/, and CMake keeps an
# option's last value (a demo's tests OFF would leave the test job no tests).
# $target, when set, is the one target built (default: all).
configure() {  # build-dir, extra cmake args...
  local dir="$1"
  shift
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER_LAUNCHER=ccache "$@" >/dev/null
  cmake --build "$dir" -j "$jobs" ${target:+--target "$target"}
}

case "$job" in
  demo)
    configure build -DNNVM_BUILD_TESTS=OFF -DNNVM_BUILD_BENCH=OFF
    ./build/tools/nnvm_demo "$@"
    ;;
  test)
    configure build -DNNVM_BUILD_TESTS=ON -DNNVM_BUILD_BENCH=ON
    ctest --test-dir build --output-on-failure --no-tests=error -j "$jobs" "$@"
    ;;
  asan)
    configure build-asan -DNNVM_SANITIZE=ON -DNNVM_BUILD_TESTS=ON -DNNVM_BUILD_BENCH=OFF
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
      ctest --test-dir build-asan --output-on-failure --no-tests=error -j "$jobs" "$@"
    ;;
  tsan)
    # The tests whose names say they run threads side by side (a thread
    # pool's, two recorders', concurrent cache lookups), not the whole suite,
    # about 30 s a mode. A report fails the run. Left out: the kernel cache's
    # retry after a failed compile, whose exception leaves std::call_once;
    # TSan's pthread_once does not release its guard then, and the retry
    # waits for ever (plain builds retry: tests/trace/kernel_cache_test.cpp).
    target=nnvm_tests configure build-tsan -DNNVM_SANITIZE_THREAD=ON -DNNVM_BUILD_TESTS=ON -DNNVM_BUILD_BENCH=OFF
    for mode in traced eager; do
      echo "tsan: NNVM_MODE=$mode"
      NNVM_MODE=$mode NNVM_THREADS=2 TSAN_OPTIONS="halt_on_error=1 ${TSAN_OPTIONS:-}" \
        ./build-tsan/tests/nnvm_tests --gtest_brief=1 \
        --gtest_filter='*Thread*:*Concurrent*:-KernelCache.ConcurrentLookupsCompileOnceAndFailuresRetry' "$@"
    done
    ;;
  clang)
    # The README's promise that clang 14 builds the library, kept by CI
    # (the suite runs on the GCC builds).
    CC=clang-14 CXX=clang++-14 configure build-clang -DNNVM_BUILD_TESTS=OFF -DNNVM_BUILD_BENCH=OFF
    ;;
  bench)
    configure build -DNNVM_BUILD_TESTS=OFF -DNNVM_BUILD_BENCH=ON
    # OpenBLAS picks its kernels from the CPU model when it loads and takes a
    # model it does not know (a virtual machine's) for an SSE3 Prescott: name
    # the kernels by the vector width the CPU has, unless the caller did.
    if [[ -z "${OPENBLAS_CORETYPE:-}" ]]; then
      if grep -qw avx512f /proc/cpuinfo; then export OPENBLAS_CORETYPE=SkylakeX
      elif grep -qw avx2 /proc/cpuinfo; then export OPENBLAS_CORETYPE=Haswell
      fi
    fi
    ./build/bench/nnvm_bench "$@"
    ;;
  *)
    echo "usage: tools/run.sh demo|test|asan|tsan|bench|clang [args...]" >&2
    exit 2
    ;;
esac
