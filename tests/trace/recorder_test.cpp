// Regressions found by the differential test (differential_test.cpp), each
// reduced to the smallest program that showed it: the program runs eagerly,
// then traced enough times to replay a hot plan, and every run must agree.
#include <functional>

#include "nnvm/core/mode.h"
#include "reference.h"

namespace nnvm::testing {
namespace {

// Runs `program` on fresh inputs from `make_inputs` once eagerly and three
// times traced (cold, turning hot, hot); compares what it returns.
void expect_traced_equals_eager(const std::function<std::vector<Tensor>()>& make_inputs,
                                const std::function<std::vector<Tensor>(std::vector<Tensor>&)>& program) {
  std::vector<Tensor> want;
  {
    EagerGuard eager;
    std::vector<Tensor> in = make_inputs();
    want = program(in);
  }
  for (int run = 1; run <= 3; ++run) {
    SCOPED_TRACE(::testing::Message() << "traced run " << run);
    std::vector<Tensor> in;
    {
      EagerGuard eager;
      in = make_inputs();
    }
    const std::vector<Tensor> got = program(in);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) expect_tensors_close(got[i], want[i]);
  }
}

// A materialised tensor overwritten from another layout of itself: a hot
// plan's result may be that input view, so the write needs a temporary.
TEST(Recorder, CopyIntoMaterialisedFromItsOwnTranspose) {
  expect_traced_equals_eager([] { return std::vector<Tensor>{random({3, 3}, kFloat32, 1)}; },
                             [](std::vector<Tensor>& in) {
                               Tensor v = in[0].mT();
                               v.copy_(v.mT());
                               return std::vector<Tensor>{in[0]};
                             });
}

}  // namespace
}  // namespace nnvm::testing
