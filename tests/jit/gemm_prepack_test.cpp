// Weights kept packed between products (kernels/cpu/gemm_prepack.h): a
// registered storage's B gives the bits of the same product packed per call,
// on every ISA, row-major and transposed, ragged sizes; an in-place change
// (its version bump) is seen by the next product; a B that is not a
// registered storage's start, or whose storage died, is packed per call.
#include <cstring>

#include "isa_scope.h"
#include "nnvm/core/functions.h"
#include "nnvm/core/mode.h"
#include "nnvm/core/tensor.h"
#include "nnvm/jit/gemm_jit.h"
#include "nnvm/kernels/cpu/gemm.h"
#include "nnvm/kernels/cpu/gemm_prepack.h"
#include "reference.h"

namespace nnvm::jit {
namespace {

using cpu::MatrixRef;

// c = a · b (a m × k, b k × n in its own strides) through cpu::gemm.
std::vector<float> product(const Tensor& a, const Tensor& b) {
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  std::vector<float> c(size_t(m * n));
  cpu::gemm(m, n, k, MatrixRef<float>{a.data_ptr<float>(), a.stride(0), a.stride(1)},
            MatrixRef<float>{b.data_ptr<float>(), b.stride(0), b.stride(1)}, 0.f, c.data(), n);
  return c;
}

bool same_bits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

struct Shape {
  int64_t m, k, n;
};

// Eager for the test's scope: a traced flush may hold its inputs' storages
// until the next one, and the test watches a storage die.
struct Eager {
  Mode saved = mode();
  Eager() { set_mode(Mode::Eager); }
  ~Eager() { set_mode(saved); }
};

TEST(GemmPrepack, KeptPanelsGiveThePackedBitsAndFollowTheVersion) {
  const Eager eager;
  const Shape shapes[] = {{37, 300, 131}, {128, 768, 200}, {9, 17, 1}, {70, 5, 47}};
  uint64_t seed = 7;
  for (Isa isa : jit_isas()) {
    const IsaGuard guard(isa);
    for (const Shape& s : shapes)
      for (bool transposed : {false, true}) {
        SCOPED_TRACE(::testing::Message() << isa_name(isa) << " " << s.m << "x" << s.k << "x" << s.n
                                          << (transposed ? " B transposed" : " B row-major"));
        const Tensor a = testing::random({s.m, s.k}, kFloat32, seed++);
        // B starts at its storage's first byte either way (a Linear's weight, read transposed)
        Tensor stored = transposed ? testing::random({s.n, s.k}, kFloat32, seed++)
                                   : testing::random({s.k, s.n}, kFloat32, seed++);
        const auto view = [&] { return transposed ? stored.t() : stored; };
        const std::vector<float> packed_per_call = product(a, view());
        const int64_t before = cpu::gemm_packed_count();
        cpu::gemm_keep_packed(stored.storage());
        EXPECT_TRUE(same_bits(product(a, view()), packed_per_call));
        EXPECT_EQ(cpu::gemm_packed_count(), before + 1);
        EXPECT_TRUE(same_bits(product(a, view()), packed_per_call));  // the kept panels, read again
        EXPECT_EQ(cpu::gemm_packed_count(), before + 1);
        // an in-place change bumps the version: the next product packs the new values
        stored.mul_(Scalar(-0.5));
        const Tensor fresh = stored.clone();  // another storage: packed per call
        const std::vector<float> want = product(a, transposed ? fresh.t() : fresh);
        EXPECT_TRUE(same_bits(product(a, view()), want));
        stored = Tensor();  // the storage dies: its panels are no longer counted
        EXPECT_EQ(cpu::gemm_packed_count(), before);
      }
  }
}

// A B inside a registered storage but not at its start (a slice of it) is
// not one of the kept ones: packed per call, the right values.
TEST(GemmPrepack, ViewsThatDoNotStartTheStorageArePackedPerCall) {
  const Tensor a = testing::random({20, 64}, kFloat32, 3);
  const Tensor whole = testing::random({128, 40}, kFloat32, 4);
  cpu::gemm_keep_packed(whole.storage());
  const int64_t before = cpu::gemm_packed_count();
  const Tensor lower = whole.slice(0, 64, 128);
  const std::vector<float> got = product(a, lower);
  EXPECT_EQ(cpu::gemm_packed_count(), before);
  EXPECT_TRUE(same_bits(got, product(a, lower.contiguous())));
}

}  // namespace
}  // namespace nnvm::jit
