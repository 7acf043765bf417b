// float32 GEMM, C = op(A)·op(B) with C row-major, over the same shapes in
// nnvm and two references, side by side:
//   BM_Gemm/nnvm/<shape>/threads:t       nnvm::matmul on tensors (eager: the
//                                        op as a program calls it, the result
//                                        allocated by the caching allocator)
//   BM_Gemm/nnvm_gemm/<shape>/threads:t  the kernel under it, cpu::gemm, into a
//                                        preallocated C (the JIT GEMM where the
//                                        CPU has one: jit/gemm_jit.h)
//   BM_Gemm/nnvm_cpp/<shape>/threads:t   cpu::gemm's C++ kernels, the fallback
//   BM_Gemm/onednn/<shape>/threads:t     oneDNN's matmul primitive, made once
//                                        outside the timed loop
//   BM_Gemm/openblas/<shape>/threads:t   cblas_sgemm
// The references get the same plain row-major operands as nnvm (the transposed
// ones as strides, no copy): no prepacked weights. <shape> is MxNxK, with _at
// when A is stored K x M and read transposed and _bt when B is stored N x K:
//   1024x1024x1024               square
//   256x4096x1024, 256x1024x4096 the MLP's layers at batch 256 (train_bench.cpp)
//   256x1024x4096_bt             fc1's input gradient dX = dY·W1ᵀ (W1 stored N x K)
//   256x4096x1024_bt             fc2's input gradient dH = dY·W2ᵀ
//   1024x4096x256_at             fc1's weight gradient dW1 = Xᵀ·dY (X stored K x M)
//   4096x1024x256_at             fc2's weight gradient dW2 = Hᵀ·dY
//   1x4096x1024                  a batch-1 step
//   1x4096x1024_bt, 4x..., 16x...  a linear layer at batch 1, 4 and 16, y = x·Wᵀ (W stored N x K)
//   1024x1024x64                 small K
// Counters: GFLOP/s (2·M·N·K per product) and peak_frac, that rate over the
// measured FMA peak of as many threads (fma_peak.h); cpus_used, the process's
// CPU seconds per second (references.h). Each reference's result is checked
// once against nnvm's before timing.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "nnvm/kernels/cpu/gemm.h"
#include "nnvm/nnvm.h"
#include "references.h"

namespace nnvm::bench {

namespace {

struct GemmShape {
  int64_t m, n, k;
  bool transposed_a, transposed_b;

  std::string name() const {
    return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) + (transposed_a ? "_at" : "") +
           (transposed_b ? "_bt" : "");
  }
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }
  // Row strides of the stored operands (row-major).
  int64_t lda() const { return transposed_a ? m : k; }
  int64_t ldb() const { return transposed_b ? k : n; }
};

enum class GemmImpl { kNnvm, kNnvmGemm, kNnvmCpp, kOneDnn, kOpenBlas };

// The operands as stored (A: M x K or K x M, B: K x N or N x K) and nnvm's
// product, the result every implementation is checked against.
struct GemmOperands {
  Tensor a, b;

  explicit GemmOperands(const GemmShape& s)
      : a(randn(s.transposed_a ? DimVector{s.k, s.m} : DimVector{s.m, s.k})),
        b(randn(s.transposed_b ? DimVector{s.n, s.k} : DimVector{s.k, s.n})) {}
  Tensor lhs(const GemmShape& s) const { return s.transposed_a ? a.t() : a; }
  Tensor rhs(const GemmShape& s) const { return s.transposed_b ? b.t() : b; }
  const float* a_data() const { return a.data_ptr<float>(); }
  const float* b_data() const { return b.data_ptr<float>(); }
};

void run_nnvm(benchmark::State& state, const GemmShape& s, const GemmOperands& ops) {
  const Tensor lhs = ops.lhs(s), rhs = ops.rhs(s);
  Tensor c;
  time_product(state, [&] { c = lhs.matmul(rhs); }, nullptr, nullptr, 0);
}

void run_nnvm_gemm(benchmark::State& state, const GemmShape& s, const GemmOperands& ops, const float* want) {
  std::vector<float> c(size_t(s.m * s.n));
  const cpu::MatrixRef<float> a = s.transposed_a ? cpu::MatrixRef<float>{ops.a_data(), 1, s.m}
                                                 : cpu::MatrixRef<float>{ops.a_data(), s.k, 1};
  const cpu::MatrixRef<float> b = s.transposed_b ? cpu::MatrixRef<float>{ops.b_data(), 1, s.k}
                                                 : cpu::MatrixRef<float>{ops.b_data(), s.n, 1};
  time_product(state, [&] { cpu::gemm(s.m, s.n, s.k, a, b, 0.0f, c.data(), s.n); }, c.data(), want, s.m * s.n);
}

#ifdef NNVM_BENCH_HAVE_DNNL
void run_onednn(benchmark::State& state, const GemmShape& s, const GemmOperands& ops, const float* want) {
  using dnnl::memory;
  using tag = memory::format_tag;
  // ba is the transposed view of a row-major matrix: the operand as stored.
  const memory::desc a_md({s.m, s.k}, memory::data_type::f32, s.transposed_a ? tag::ba : tag::ab);
  const memory::desc b_md({s.k, s.n}, memory::data_type::f32, s.transposed_b ? tag::ba : tag::ab);
  const memory::desc c_md({s.m, s.n}, memory::data_type::f32, tag::ab);
  const dnnl::matmul product(dnnl::matmul::primitive_desc(dnnl::matmul::desc(a_md, b_md, c_md), dnnl_engine()));
  std::vector<float> c(size_t(s.m * s.n));
  // oneDNN's memory objects only borrow the buffers; it writes no input.
  const std::unordered_map<int, memory> args = {
      {DNNL_ARG_SRC, memory(a_md, dnnl_engine(), const_cast<float*>(ops.a_data()))},
      {DNNL_ARG_WEIGHTS, memory(b_md, dnnl_engine(), const_cast<float*>(ops.b_data()))},
      {DNNL_ARG_DST, memory(c_md, dnnl_engine(), c.data())}};
  time_product(
      state,
      [&] {
        product.execute(dnnl_stream(), args);
        dnnl_stream().wait();
      },
      c.data(), want, s.m * s.n);
}
#endif

#ifdef NNVM_BENCH_HAVE_OPENBLAS
void run_openblas(benchmark::State& state, const GemmShape& s, const GemmOperands& ops, const float* want) {
  // OpenBLAS picks its kernels from the CPU model when it loads, and takes a
  // model it does not know (a virtual machine's) for an SSE3 Prescott unless
  // OPENBLAS_CORETYPE names one (tools/run.sh's bench job does): the label
  // says which ran.
  state.SetLabel(std::string("openblas core ") + openblas_get_corename());
  std::vector<float> c(size_t(s.m * s.n));
  time_product(
      state,
      [&] {
        cblas_sgemm(CblasRowMajor, s.transposed_a ? CblasTrans : CblasNoTrans,
                    s.transposed_b ? CblasTrans : CblasNoTrans, int(s.m), int(s.n), int(s.k), 1.0f, ops.a_data(),
                    int(s.lda()), ops.b_data(), int(s.ldb()), 0.0f, c.data(), int(s.n));
      },
      c.data(), want, s.m * s.n);
}
#endif

void BM_Gemm(benchmark::State& state, GemmImpl impl, GemmShape s, int threads) {
  const EagerGuard eager;
  const ReferenceThreads thread_count(threads);
  const GemmOperands ops(s);
  const Tensor want = ops.lhs(s).matmul(ops.rhs(s));
  const float* want_data = want.data_ptr<float>();
  switch (impl) {
    case GemmImpl::kNnvm: run_nnvm(state, s, ops); break;
    case GemmImpl::kNnvmGemm: run_nnvm_gemm(state, s, ops, want_data); break;
    case GemmImpl::kNnvmCpp: {
      const cpu::GemmProvider jit = cpu::gemm_provider();
      cpu::set_gemm_provider(nullptr);
      run_nnvm_gemm(state, s, ops, want_data);
      cpu::set_gemm_provider(jit);
      break;
    }
#ifdef NNVM_BENCH_HAVE_DNNL
    case GemmImpl::kOneDnn: run_onednn(state, s, ops, want_data); break;
#endif
#ifdef NNVM_BENCH_HAVE_OPENBLAS
    case GemmImpl::kOpenBlas: run_openblas(state, s, ops, want_data); break;
#endif
    default: state.SkipWithError("reference not built"); return;
  }
  set_flop_counters(state, s.flops(), threads);
}

// Each library's rows run together, threads:1 before threads:2: a library's
// idle workers spin a while after a call (libgomp, OpenBLAS), and would take
// a core from another library's run that follows at once.
[[maybe_unused]] const bool kGemmRegistered = [] {
  const GemmShape shapes[] = {
      {1024, 1024, 1024, false, false}, {256, 4096, 1024, false, false}, {256, 1024, 4096, false, false},
      {256, 1024, 4096, false, true},   {256, 4096, 1024, false, true},  {1024, 4096, 256, true, false},
      {4096, 1024, 256, true, false},   {1, 4096, 1024, false, false},   {1, 4096, 1024, false, true},
      {4, 4096, 1024, false, true},     {16, 4096, 1024, false, true},   {1024, 1024, 64, false, false},
  };
  std::vector<std::pair<const char*, GemmImpl>> impls = {{"nnvm", GemmImpl::kNnvm},
                                                         {"nnvm_gemm", GemmImpl::kNnvmGemm},
                                                         {"nnvm_cpp", GemmImpl::kNnvmCpp}};
#ifdef NNVM_BENCH_HAVE_DNNL
  impls.emplace_back("onednn", GemmImpl::kOneDnn);
#endif
#ifdef NNVM_BENCH_HAVE_OPENBLAS
  impls.emplace_back("openblas", GemmImpl::kOpenBlas);
#endif
  for (const auto& [impl_name, impl] : impls)
    for (int threads : {1, 2})
      for (const GemmShape& s : shapes)
        register_reference_row(
            "BM_Gemm/" + std::string(impl_name) + "/" + s.name() + "/threads:" + std::to_string(threads), BM_Gemm,
            impl, s, threads);
  return true;
}();

}  // namespace

}  // namespace nnvm::bench
