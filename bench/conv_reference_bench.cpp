// float32 2-D convolutions, 3x3, stride 1, padding 1, no bias: the forward,
// the input gradient and the weight gradient in nnvm and in oneDNN:
//   BM_Conv/nnvm/<pass>/<layer>/threads:t    eager NCHW ops, as autograd calls
//                                            them (core/ops/conv.cpp: the input
//                                            gradient is conv_transpose2d, the
//                                            weight gradient conv2d_backward_weight)
//   BM_Conv/onednn/<pass>/<layer>/threads:t  convolution_forward (forward_training),
//                                            convolution_backward_data and
//                                            convolution_backward_weights
// with <pass> forward, input_grad or weight_grad and <layer>:
//   cnn_conv1_b64        the demo CNN's first conv, 1 -> 32 channels at 28x28
//   cnn_conv2_b64        its second, 32 -> 64 at 14x14 (tools/fashion_cnn.h;
//                        batch 64, the demo's and BM_CnnTrainStep's)
//   resnet_64c_56_b1/b8  a ResNet stage-1 conv, 64 -> 64 at 56x56, batch 1 and 8
//   resnet_256c_14_b1    ResNet-18's stage-3 conv, 256 -> 256 at 14x14, batch 1
//   resnet_512c_7_b1     its stage-4 conv, 512 -> 512 at 7x7 (9.4 MB of weights)
// Counters as in gemm_reference_bench.cpp: GFLOP/s (2 flops per multiply-add
// of the convolution, the same count for the three passes), peak_frac,
// cpus_used; oneDNN's result is checked once against nnvm's.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "nnvm/nnvm.h"
#include "references.h"

namespace nnvm::bench {

namespace {

constexpr int64_t kKernel = 3, kPadding = 1;  // every layer here: 3x3, stride 1, same-size output

struct ConvLayerShape {
  int64_t batch, channels, out_channels, side;

  double flops() const {
    return 2.0 * double(batch * out_channels * channels * kKernel * kKernel) * double(side * side);
  }
};

enum class ConvPass { kForward, kInputGrad, kWeightGrad };

// The operands in NCHW / OIHW and nnvm's result of the pass, which oneDNN's
// is checked against.
struct ConvOperands {
  Tensor x, w, grad_y;

  explicit ConvOperands(const ConvLayerShape& l)
      : x(randn({l.batch, l.channels, l.side, l.side})),
        w(randn({l.out_channels, l.channels, kKernel, kKernel})),
        grad_y(randn({l.batch, l.out_channels, l.side, l.side})) {}
};

Tensor nnvm_conv_pass(ConvPass pass, const ConvOperands& ops) {
  static const OpDef& weight_grad = find_op("conv2d_backward_weight");
  switch (pass) {
    case ConvPass::kForward: return conv2d(ops.x, ops.w, Tensor(), {1, 1}, {kPadding, kPadding});
    case ConvPass::kInputGrad: return conv_transpose2d(ops.grad_y, ops.w, Tensor(), {1, 1}, {kPadding, kPadding});
    case ConvPass::kWeightGrad:
      return call1(weight_grad, {ops.x, ops.grad_y},
                   {DimVector{kKernel, kKernel}, DimVector{1, 1}, DimVector{kPadding, kPadding}, DimVector{1, 1},
                    int64_t(1)});
  }
  return {};
}

void run_nnvm(benchmark::State& state, ConvPass pass, const ConvOperands& ops) {
  Tensor result;
  time_product(state, [&] { result = nnvm_conv_pass(pass, ops); }, nullptr, nullptr, 0);
}

#ifdef NNVM_BENCH_HAVE_DNNL
// oneDNN picks the layouts of its operands (format_tag::any: blocked ones
// such as nChw16c on AVX-512) and the NCHW data is reordered into them before
// the timed loop, as a network kept in oneDNN's layouts from layer to layer
// would hold it; the result is reordered back to NCHW, untimed, for the check.
// The backward passes' descriptors take the forward's as the hint oneDNN
// requires, so all three agree on layouts.
void run_onednn(benchmark::State& state, const ConvLayerShape& l, ConvPass pass, const ConvOperands& ops,
                const Tensor& want) {
  using dnnl::memory;
  using tag = memory::format_tag;
  const auto f32 = memory::data_type::f32;
  const memory::dims x_dims = {l.batch, l.channels, l.side, l.side};
  const memory::dims w_dims = {l.out_channels, l.channels, kKernel, kKernel};
  const memory::dims y_dims = {l.batch, l.out_channels, l.side, l.side};
  const memory::dims strides = {1, 1}, padding = {kPadding, kPadding};
  const memory::desc x_any(x_dims, f32, tag::any), w_any(w_dims, f32, tag::any), y_any(y_dims, f32, tag::any);
  dnnl::engine& engine = dnnl_engine();
  const dnnl::convolution_forward::primitive_desc forward_pd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct, x_any,
                                      w_any, y_any, strides, padding, padding),
      engine);

  // An NCHW / OIHW buffer as oneDNN memory, and a copy of it in `layout`.
  auto plain = [&](const memory::dims& dims, tag t, const float* data) {
    return memory(memory::desc(dims, f32, t), engine, const_cast<float*>(data));  // borrowed, never written
  };
  // (memory is a reference-counted handle: copies share the buffer.)
  auto reordered = [&](memory from, const memory::desc& layout) {
    memory to(layout, engine);
    dnnl::reorder(from, to).execute(dnnl_stream(), from, to);
    dnnl_stream().wait();
    return to;
  };
  const memory x = plain(x_dims, tag::nchw, ops.x.data_ptr<float>());
  const memory w = plain(w_dims, tag::oihw, ops.w.data_ptr<float>());
  const memory grad_y = plain(y_dims, tag::nchw, ops.grad_y.data_ptr<float>());

  dnnl::primitive primitive;
  std::unordered_map<int, memory> args;
  memory result;
  switch (pass) {
    case ConvPass::kForward:
      primitive = dnnl::convolution_forward(forward_pd);
      result = memory(forward_pd.dst_desc(), engine);
      args = {{DNNL_ARG_SRC, reordered(x, forward_pd.src_desc())},
              {DNNL_ARG_WEIGHTS, reordered(w, forward_pd.weights_desc())},
              {DNNL_ARG_DST, result}};
      break;
    case ConvPass::kInputGrad: {
      const dnnl::convolution_backward_data::primitive_desc pd(
          dnnl::convolution_backward_data::desc(dnnl::algorithm::convolution_direct, x_any, w_any, y_any, strides,
                                                padding, padding),
          engine, forward_pd);
      primitive = dnnl::convolution_backward_data(pd);
      result = memory(pd.diff_src_desc(), engine);
      args = {{DNNL_ARG_DIFF_DST, reordered(grad_y, pd.diff_dst_desc())},
              {DNNL_ARG_WEIGHTS, reordered(w, pd.weights_desc())},
              {DNNL_ARG_DIFF_SRC, result}};
      break;
    }
    case ConvPass::kWeightGrad: {
      const dnnl::convolution_backward_weights::primitive_desc pd(
          dnnl::convolution_backward_weights::desc(dnnl::algorithm::convolution_direct, x_any, w_any, y_any,
                                                   strides, padding, padding),
          engine, forward_pd);
      primitive = dnnl::convolution_backward_weights(pd);
      result = memory(pd.diff_weights_desc(), engine);
      args = {{DNNL_ARG_SRC, reordered(x, pd.src_desc())},
              {DNNL_ARG_DIFF_DST, reordered(grad_y, pd.diff_dst_desc())},
              {DNNL_ARG_DIFF_WEIGHTS, result}};
      break;
    }
  }
  auto run = [&] {
    primitive.execute(dnnl_stream(), args);
    dnnl_stream().wait();
  };
  // The check reads the result in nnvm's layout: reorder it back first.
  std::vector<float> got(size_t(want.numel()));
  memory got_plain = plain(pass == ConvPass::kWeightGrad ? w_dims : pass == ConvPass::kForward ? y_dims : x_dims,
                                 pass == ConvPass::kWeightGrad ? tag::oihw : tag::nchw, got.data());
  run();
  dnnl::reorder(result, got_plain).execute(dnnl_stream(), result, got_plain);
  dnnl_stream().wait();
  if (!check_against_nnvm(state, got.data(), want.data_ptr<float>(), want.numel())) return;
  time_product(state, run, nullptr, nullptr, 0);
}
#endif

enum class ConvImpl { kNnvm, kOneDnn };

void BM_Conv(benchmark::State& state, ConvImpl impl, ConvPass pass, ConvLayerShape l, int threads) {
  const EagerGuard eager;
  const ReferenceThreads thread_count(threads);
  const ConvOperands ops(l);
  switch (impl) {
    case ConvImpl::kNnvm: run_nnvm(state, pass, ops); break;
#ifdef NNVM_BENCH_HAVE_DNNL
    case ConvImpl::kOneDnn: run_onednn(state, l, pass, ops, nnvm_conv_pass(pass, ops)); break;
#endif
    default: state.SkipWithError("reference not built"); return;
  }
  set_flop_counters(state, l.flops(), threads);
}

// As BM_Gemm: each library's rows together, threads:1 before threads:2.
[[maybe_unused]] const bool kConvRegistered = [] {
  const std::pair<const char*, ConvLayerShape> layers[] = {{"cnn_conv1_b64", {64, 1, 32, 28}},
                                                           {"cnn_conv2_b64", {64, 32, 64, 14}},
                                                           {"resnet_64c_56_b1", {1, 64, 64, 56}},
                                                           {"resnet_64c_56_b8", {8, 64, 64, 56}},
                                                           {"resnet_256c_14_b1", {1, 256, 256, 14}},
                                                           {"resnet_512c_7_b1", {1, 512, 512, 7}}};
  const std::pair<const char*, ConvPass> passes[] = {
      {"forward", ConvPass::kForward}, {"input_grad", ConvPass::kInputGrad}, {"weight_grad", ConvPass::kWeightGrad}};
  std::vector<std::pair<const char*, ConvImpl>> impls = {{"nnvm", ConvImpl::kNnvm}};
#ifdef NNVM_BENCH_HAVE_DNNL
  impls.emplace_back("onednn", ConvImpl::kOneDnn);
#endif
  for (const auto& [impl_name, impl] : impls)
    for (int threads : {1, 2})
      for (const auto& [layer_name, layer] : layers)
        for (const auto& [pass_name, pass] : passes)
          register_reference_row(std::string("BM_Conv/") + impl_name + "/" + pass_name + "/" + layer_name +
                                     "/threads:" + std::to_string(threads),
                                 BM_Conv, impl, pass, layer, threads);
  return true;
}();

}  // namespace

}  // namespace nnvm::bench
