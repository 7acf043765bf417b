// Guard mode (core/allocator.h, Note [Guard mode]) and why the JIT tests run
// in it: AddressSanitizer does not see JIT code, so every test defined under
// tests/jit/ allocates its buffers against a PROT_NONE page (the listener
// below), and a kernel that reads or writes one element past a buffer dies.
// The death tests here show that it does.
#include <cstring>

#include "nnvm/core/allocator.h"
#include "nnvm/jit/x86/pointwise_kernel.h"
#include "reference.h"

namespace nnvm::jit {
namespace {

class GuardJitTests : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo& info) override {
    if (std::strstr(info.file(), "/tests/jit/")) set_alloc_guard(true);
  }
  void OnTestEnd(const ::testing::TestInfo& info) override {
    if (std::strstr(info.file(), "/tests/jit/")) set_alloc_guard(false);
  }
};

const bool registered = [] {
  ::testing::UnitTest::GetInstance()->listeners().Append(new GuardJitTests);
  return true;
}();

TEST(AllocGuard, JitTestsRunGuarded) {
  EXPECT_TRUE(registered);
  EXPECT_TRUE(CpuCachingAllocator::instance().guard());
}

TEST(AllocGuard, EveryBlockEndsAtAProtectedPage) {
  auto& a = CpuCachingAllocator::instance();
  for (size_t n : {size_t(0), size_t(1), size_t(4), size_t(12), size_t(64), size_t(68), size_t(4096),
                   size_t(4100), size_t(1) << 20}) {
    SCOPED_TRACE(n);
    const AllocatorStats before = a.stats();
    void* p = a.allocate(n);
    const uintptr_t end = reinterpret_cast<uintptr_t>(p) + n;
    EXPECT_EQ(end % 4096, 0u);
    // the alignment is the largest power of two dividing n (at least an element's)
    if (n > 0) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % std::min<size_t>(n & -n, 4096), 0u);
      std::memset(p, 0x5a, n);  // the whole block is writable
    }
    a.free(p, n);
    EXPECT_EQ(a.stats().bytes_reserved, before.bytes_reserved) << "a guarded block is unmapped, not cached";
  }
}

// A death test's child runs without event listeners: it turns guard mode on itself.
class AllocGuardDeathTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    set_alloc_guard(true);
  }
  void TearDown() override { set_alloc_guard(false); }
};

TEST_F(AllocGuardDeathTest, ReadingOneElementPastABufferFaults) {
  for (int64_t n : {1, 15, 16, 17, 1000}) {
    SCOPED_TRACE(n);
    const Tensor x = testing::random({n}, kFloat32, 1);
    const volatile float* p = x.data_ptr<float>();
    EXPECT_EQ(p[n - 1], x.data_ptr<float>()[n - 1]);
    EXPECT_DEATH((void)p[n], "");
  }
}

TEST_F(AllocGuardDeathTest, AJitKernelOverrunningItsInputFaults) {
  LoopIR ir;  // out0 = exp(in0)
  ir.inputs = 1;
  ir.exprs = {Expr{Prim::kLoad, -1, -1, -1, 0}, Expr{Prim::kExp, 0}};
  ir.stores = {1};
  for (Isa isa : {Isa::kAvx512, Isa::kAvx2}) {
    if (!isa_supported(isa)) continue;
    SCOPED_TRACE(isa_name(isa));
    const x86::PointwiseKernel kernel(ir, "cc", isa);
    const int64_t n = 37;
    const Tensor x = testing::random({n}, kFloat32, 2);
    const Tensor y = empty({n + 1});
    x86::PointwiseCall call;
    call.ptr[0] = static_cast<const char*>(x.data_ptr());
    call.ptr[1] = static_cast<const char*>(y.data_ptr());
    call.row_stride[0] = call.row_stride[1] = 0;
    call.rows = 1;
    call.cols = n;
    kernel(&call);  // in bounds: runs
    EXPECT_FLOAT_EQ(y.data_ptr<float>()[n - 1], std::exp(x.data_ptr<float>()[n - 1]));
    call.ptr[0] = static_cast<const char*>(x.data_ptr());
    call.ptr[1] = static_cast<const char*>(y.data_ptr());
    call.cols = n + 1;  // one element too many: the masked tail reads in0[n]
    EXPECT_DEATH(kernel(&call), "");
  }
}

}  // namespace
}  // namespace nnvm::jit
