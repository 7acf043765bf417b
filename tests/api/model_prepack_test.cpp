// A loaded model's weights stay packed for the GEMM between calls
// (kernels/cpu/gemm_prepack.h): registered when the Model is made, the
// right values after the weights change in place (fine-tuning), eager and
// traced.
#include <gtest/gtest.h>

#include "nnvm/nnvm.h"
#include "nnvm/jit/x86/isa.h"
#include "nnvm/kernels/cpu/gemm_prepack.h"

namespace nnvm {
namespace {

Model linear_relu(const Tensor& w, const Tensor& b) {
  GraphBuilder g;
  auto x = g.input("x", kFloat32, {"batch", w.size(0)});
  auto h = g.op("MatMul", {x, g.initializer("w", w)});
  g.output(g.op("Relu", {g.op("Add", {h, g.initializer("b", b)})}));
  return g.build();
}

TEST(ModelPrepack, WeightsStayPackedAndFollowInPlaceChanges) {
  NoGradGuard no_grad;
  for (Mode mode : {Mode::Eager, Mode::Traced}) {
    const Mode saved = nnvm::mode();
    set_mode(mode);
    manual_seed(11);
    Tensor w = randn({96, 70}), b = randn({70});
    const int64_t before = cpu::gemm_packed_count();
    Model m = linear_relu(w, b);
    const Tensor x = randn({40, 96});
    for (int call = 0; call < 4; ++call) {
      if (call == 2) w.mul_(Scalar(-1.5));  // as an optimizer step would: the version moves
      const Tensor y = m({x})[0];
      EXPECT_TRUE(allclose(y, (x.matmul(w) + b).relu(), 1e-4, 1e-5)) << "call " << call;
    }
    if (jit::active_isa() != jit::Isa::kPortable) {
      EXPECT_GT(cpu::gemm_packed_count(), before) << (mode == Mode::Eager ? "eager" : "traced");
    }
    set_mode(saved);
  }
}

}  // namespace
}  // namespace nnvm
