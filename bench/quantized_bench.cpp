// INT8 against float32 for one linear layer, y = x Wᵀ + b, in nnvm and in
// oneDNN, side by side (docs/QUANTIZATION.md):
//   BM_Int8Linear/nnvm_int8/<shape>/threads:t       quantized::linear_dynamic:
//                                                   x quantized from its range,
//                                                   the INT8 GEMM, dequantized
//   BM_Int8Linear/nnvm_int8_gemm/<shape>/threads:t  cpu::gemm_u8s8 alone on an x
//                                                   quantized beforehand
//   BM_Int8Linear/nnvm_f32/<shape>/threads:t        nnvm::linear in float32
//   BM_Int8Linear/onednn_int8/<shape>/threads:t     oneDNN's matmul, uint8 x
//                                                   (quantized beforehand, with
//                                                   a zero point) by int8 W,
//                                                   per-channel scales, float
//                                                   bias and output
//   BM_Int8Linear/onednn_f32/<shape>/threads:t      oneDNN's float32 matmul
// Both libraries get their weights packed once outside the timed loop (the
// layer's weights are constant): oneDNN's in the layout it picks. <shape> is
// MxNxK: M rows of x, N output features, K input features. Counter
// GOP/s: 2·M·N·K per call.
//
// ONNX's QLinearMatMul through the Model API (docs/MODELS.md), uint8 A
// [M, K] by an int8 initializer B [K, N], per-column b zero points and
// scales, uint8 out:
//   BM_QLinearMatMul/int8_gemm/<shape>/threads:t      the op: the INT8 GEMM
//   BM_QLinearMatMul/float64_graph/<shape>/threads:t  the arithmetic it ran
//                                                     before, as a graph: both
//                                                     operands less their zero
//                                                     points in float64, MatMul,
//                                                     the ratio, Round, Clip
// Each row checks once that both give the same bytes.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "nnvm/kernels/cpu/gemm_int8.h"
#include "nnvm/nnvm.h"
#include "references.h"

namespace nnvm::bench {

namespace {

enum class Impl { kNnvmInt8, kNnvmInt8Gemm, kNnvmF32, kOneDnnInt8, kOneDnnF32 };

struct Shape {
  int64_t m, n, k;
  std::string name() const { return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k); }
};

#ifdef NNVM_BENCH_HAVE_DNNL
void run_onednn(benchmark::State& state, const Shape& s, bool int8) {
  using dnnl::memory;
  using dt = memory::data_type;
  using tag = memory::format_tag;
  const memory::desc src_md({s.m, s.k}, int8 ? dt::u8 : dt::f32, tag::ab);
  const memory::desc any_w_md({s.k, s.n}, int8 ? dt::s8 : dt::f32, tag::any);
  const memory::desc plain_w_md({s.k, s.n}, int8 ? dt::s8 : dt::f32, tag::ba);  // W [N, K] row-major: Wᵀ
  const memory::desc bias_md({1, s.n}, dt::f32, tag::ab), dst_md({s.m, s.n}, dt::f32, tag::ab);
  dnnl::primitive_attr attr;
  if (int8) {
    attr.set_output_scales(1 << 1, std::vector<float>(size_t(s.n), 1e-4f));
    attr.set_zero_points(DNNL_ARG_SRC, 0, {64});
  }
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, any_w_md, bias_md, dst_md), attr, dnnl_engine());
  const dnnl::matmul product(pd);
  std::vector<uint8_t> src(size_t(s.m * s.k) * (int8 ? 1 : 4), 3), w(size_t(s.k * s.n) * (int8 ? 1 : 4), 1);
  std::vector<float> bias(size_t(s.n), 0.5f), dst(size_t(s.m * s.n));
  memory plain_w(plain_w_md, dnnl_engine(), w.data()), packed_w(pd.weights_desc(), dnnl_engine());
  dnnl::reorder(plain_w, packed_w).execute(dnnl_stream(), plain_w, packed_w);
  dnnl_stream().wait();
  const std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, memory(src_md, dnnl_engine(), src.data())},
                                                {DNNL_ARG_WEIGHTS, packed_w},
                                                {DNNL_ARG_BIAS, memory(bias_md, dnnl_engine(), bias.data())},
                                                {DNNL_ARG_DST, memory(dst_md, dnnl_engine(), dst.data())}};
  state.SetLabel(pd.impl_info_str());
  time_product(
      state,
      [&] {
        product.execute(dnnl_stream(), args);
        dnnl_stream().wait();
      },
      nullptr, nullptr, 0);
}
#endif

void BM_Int8Linear(benchmark::State& state, Impl impl, Shape s, int threads) {
  const EagerGuard eager;
  const ReferenceThreads thread_count(threads);
  const Tensor x = randn({s.m, s.k}), w = randn({s.n, s.k}) * 0.05, b = randn({s.n});
  const quantized::LinearPackedParams p = quantized::linear_prepack(w, b);
  Tensor y;
  switch (impl) {
    case Impl::kNnvmInt8: time_product(state, [&] { y = quantized::linear_dynamic(x, p); }, nullptr, nullptr, 0); break;
    case Impl::kNnvmF32: time_product(state, [&] { y = linear(x, w, b); }, nullptr, nullptr, 0); break;
    case Impl::kNnvmInt8Gemm: {
      const int64_t lda = ((s.k + 63) / 64 | 1) * 64;
      std::vector<uint8_t> a(size_t(s.m * lda), 100);
      std::vector<int32_t> offset(size_t(s.n), 7);
      std::vector<float> scale(size_t(s.n), 1e-4f), out(size_t(s.m * s.n));
      const cpu::Int8Dequant dq{offset.data(), scale.data(), p.bias.data_ptr<float>()};
      time_product(
          state,
          [&] { cpu::gemm_u8s8(s.m, s.n, s.k, a.data(), lda, p.packed.data_ptr<int8_t>(), out.data(), s.n, &dq); },
          nullptr, nullptr, 0);
      break;
    }
#ifdef NNVM_BENCH_HAVE_DNNL
    case Impl::kOneDnnInt8: run_onednn(state, s, true); break;
    case Impl::kOneDnnF32: run_onednn(state, s, false); break;
#endif
    default: state.SkipWithError("reference not built"); return;
  }
  state.counters["GOP/s"] =
      benchmark::Counter(2.0 * double(s.m) * double(s.n) * double(s.k) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

// QLinearMatMul of A [m, k] by B [k, n], or the same in float64 ops.
Model qlinear_matmul_model(const Shape& s, bool float64) {
  GraphBuilder g;
  const auto a = g.input("a", kUInt8, {s.m, s.k});
  const auto b = g.initializer("b", (randn({s.k, s.n}) * 40).clamp(-128, 127).to(kInt8));
  const auto a_zp = g.initializer("a_zp", scalar_tensor(120, kUInt8));
  const auto b_zp = g.initializer("b_zp", (randn({s.n}) * 3).to(kInt8));
  const Tensor a_scale = scalar_tensor(0.02, kFloat32), b_scale = rand({s.n}) * 1e-3 + 1e-4;
  const Tensor y_scale = scalar_tensor(4.0, kFloat32);
  if (!float64) {
    const auto y_zp = g.initializer("y_zp", scalar_tensor(128, kUInt8));
    g.output(g.op("QLinearMatMul", {a, g.initializer("a_scale", a_scale), a_zp, b, g.initializer("b_scale", b_scale),
                                    b_zp, g.initializer("y_scale", y_scale), y_zp}));
    return g.build();
  }
  const auto as_double = [&](const std::string& x) { return g.op("Cast", {x}, {{"to", int64_t(11)}}); };
  const auto centered_a = g.op("Sub", {as_double(a), as_double(a_zp)});
  const auto centered_b = g.op("Sub", {as_double(b), as_double(b_zp)});
  const auto ratio = g.initializer("ratio", (a_scale * b_scale / y_scale).to(kFloat64));
  const auto sum = g.op("Round", {g.op("Mul", {g.op("MatMul", {centered_a, centered_b}), ratio})});
  const auto shifted = g.op("Add", {sum, g.initializer("y_zp", scalar_tensor(128.0, kFloat64))});
  const auto clipped = g.op("Clip", {shifted, g.initializer("lo", scalar_tensor(0.0, kFloat64)),
                                     g.initializer("hi", scalar_tensor(255.0, kFloat64))});
  g.output(g.op("Cast", {clipped}, {{"to", int64_t(2)}}));
  return g.build();
}

void BM_QLinearMatMul(benchmark::State& state, bool float64, Shape s, int threads) {
  const ReferenceThreads thread_count(threads);
  manual_seed(7);
  Model model = qlinear_matmul_model(s, float64);
  manual_seed(7);
  Model gemm = qlinear_matmul_model(s, false);
  const Tensor a = (rand({s.m, s.k}) * 255).to(kUInt8);
  if (!model({a})[0].to(kFloat32).allclose(gemm({a})[0].to(kFloat32), 0, 0)) {
    state.SkipWithError("QLinearMatMul and its float64 graph differ");
    return;
  }
  Tensor y;
  time_product(state, [&] { y = model({a})[0]; benchmark::DoNotOptimize(y.data_ptr()); }, nullptr, nullptr, 0);
  state.counters["GOP/s"] =
      benchmark::Counter(2.0 * double(s.m) * double(s.n) * double(s.k) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}

[[maybe_unused]] const bool kQLinearMatMulRegistered = [] {
  const Shape s{256, 1024, 4096};
  for (int threads : {1, 2}) {
    register_reference_row("BM_QLinearMatMul/int8_gemm/" + s.name() + "/threads:" + std::to_string(threads),
                           BM_QLinearMatMul, false, s, threads);
    register_reference_row("BM_QLinearMatMul/float64_graph/" + s.name() + "/threads:" + std::to_string(threads),
                           BM_QLinearMatMul, true, s, threads);
  }
  return true;
}();

[[maybe_unused]] const bool kInt8Registered = [] {
  const Shape shapes[] = {{256, 4096, 1024}, {256, 1024, 4096}, {1, 4096, 1024}, {64, 512, 784}};
  std::vector<std::pair<const char*, Impl>> impls = {
      {"nnvm_int8", Impl::kNnvmInt8}, {"nnvm_int8_gemm", Impl::kNnvmInt8Gemm}, {"nnvm_f32", Impl::kNnvmF32}};
#ifdef NNVM_BENCH_HAVE_DNNL
  impls.emplace_back("onednn_int8", Impl::kOneDnnInt8);
  impls.emplace_back("onednn_f32", Impl::kOneDnnF32);
#endif
  for (const auto& [name, impl] : impls)
    for (int threads : {1, 2})
      for (const Shape& s : shapes)
        register_reference_row("BM_Int8Linear/" + std::string(name) + "/" + s.name() + "/threads:" +
                                   std::to_string(threads),
                               BM_Int8Linear, impl, s, threads);
  return true;
}();

}  // namespace

}  // namespace nnvm::bench
