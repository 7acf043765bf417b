// pad's replicate and circular modes (composed of views and cat in
// core/ops/movement.cpp), F::pad's mode tokens and Conv2d's padding_mode.
#include <algorithm>

#include "reference.h"

namespace nnvm {
namespace {

namespace F = nn::functional;

// Where output index i of a padded dim reads, PyTorch's way: replicate reads
// input[clamp(i - before, 0, n - 1)] (replication_pad); circular crops first,
// then wraps around the m elements left.
int64_t copy_source(int64_t i, int64_t before, int64_t after, int64_t n, bool circular) {
  if (!circular) return std::clamp<int64_t>(i - before, 0, n - 1);
  const int64_t first = std::max<int64_t>(-before, 0), m = n - first - std::max<int64_t>(-after, 0);
  const int64_t s = i - std::max<int64_t>(before, 0);
  return first + ((s % m) + m) % m;
}

// The padded tensor element by element, from the rule above.
std::vector<double> reference_pad(const Tensor& x, const DimVector& pads, bool circular, DimVector& shape) {
  shape = dims(x.sizes());
  for (size_t p = 0; p < pads.size() / 2; ++p) shape[x.dim() - 1 - p] += pads[2 * p] + pads[2 * p + 1];
  const std::vector<double> xv = testing::values(x);
  std::vector<double> out;
  testing::for_each_index(shape, [&](const DimVector& idx) {
    DimVector src = idx;
    for (size_t p = 0; p < pads.size() / 2; ++p) {
      const int64_t d = x.dim() - 1 - int64_t(p);
      src[d] = copy_source(idx[d], pads[2 * p], pads[2 * p + 1], x.size(d), circular);
    }
    out.push_back(xv[size_t(testing::broadcast_offset(src, x.sizes()))]);
  });
  return out;
}

TEST(PadModes, ReplicateAndCircularMatchTheCopyRule) {
  // the last two crop a whole dim (5, then 4) and pad the other side: replicate only, as in PyTorch
  const DimVector cases[] = {{1, 2}, {0, 0, 2, 1}, {1, 1, 1, 1, 1, 1}, {-1, 2}, {2, -1, 0, 3}, {4, 4}, {},
                             {-5, 2}, {1, 0, 3, -4}};
  uint64_t seed = 60;
  for (const bool circular : {false, true})
    for (DType dt : {kFloat32, kFloat64, kInt64, kBool})
      for (testing::Layout l : testing::kLayouts)
        for (const DimVector& pads : absl::MakeConstSpan(cases).first(circular ? 7 : 9)) {
          SCOPED_TRACE(shape_str(pads) + (circular ? " circular " : " replicate ") + testing::layout_name(l));
          const Tensor x = testing::with_layout(testing::random({2, 4, 5}, dt, seed++), l);
          DimVector shape;
          const std::vector<double> expected = reference_pad(x, pads, circular, shape);
          const Tensor out = pad(x, pads, circular ? "circular" : "replicate");
          ASSERT_EQ(shape_str(out.sizes()), shape_str(shape));
          EXPECT_EQ(out.dtype(), x.dtype());
          testing::expect_values(out, expected, 0, 0);
        }
}

// torch.nn.functional.pad(torch.arange(12.).reshape(1, 3, 4), (2, -1, 1, 2), mode=...) from PyTorch 2.
TEST(PadModes, MatchPyTorch) {
  const Tensor x = arange(12, kFloat32).reshape({1, 3, 4});
  const Tensor replicate = F::pad(x, F::PadFuncOptions({2, -1, 1, 2}).mode(kReplicate));
  ASSERT_EQ(shape_str(replicate.sizes()), "[1, 6, 5]");
  testing::expect_values(replicate, {0, 0, 0, 1, 2, 0, 0, 0, 1, 2, 4, 4, 4, 5, 6,  //
                                     8, 8, 8, 9, 10, 8, 8, 8, 9, 10, 8, 8, 8, 9, 10}, 0, 0);
  testing::expect_values(F::pad(x, F::PadFuncOptions({2, -1, 1, 2}).mode(kCircular)),
                         {9, 10, 8, 9, 10, 1, 2, 0, 1, 2, 5, 6, 4, 5, 6,  //
                          9, 10, 8, 9, 10, 1, 2, 0, 1, 2, 5, 6, 4, 5, 6}, 0, 0);
  // a whole period of circular padding is allowed, as in PyTorch
  testing::expect_values(pad(arange(3, kFloat32), {3, 0}, "circular"), {0, 1, 2, 0, 1, 2}, 0, 0);
  // replication_pad reads input[clamp(j - before, 0, 2)]: a crop of the whole dim leaves the other edge
  testing::expect_values(F::pad(arange(3, kFloat32).reshape({1, 1, 3}), F::PadFuncOptions({-3, 2}).mode(kReplicate)),
                         {2, 2}, 0, 0);
  testing::expect_values(pad(arange(3, kFloat32), {1, -3}, "replicate"), {0}, 0, 0);
}

TEST(PadModes, GradientsMatchFiniteDifferences) {
  for (const char* mode : {"replicate", "circular"}) {
    SCOPED_TRACE(mode);
    testing::gradcheck([&](const std::vector<Tensor>& in) { return pad(in[0], {2, 1, 1, 3}, mode); },
                       {testing::leaf({2, 3, 4}, 61)});
    // negative pads crop; a transposed input
    testing::gradcheck([&](const std::vector<Tensor>& in) { return pad(in[0].transpose(1, 2), {-1, 2, 3, 0}, mode); },
                       {testing::leaf({2, 3, 4}, 62)});
  }
  // replicate crops past a whole dim: every output element reads the edge left on the other side
  testing::gradcheck([](const std::vector<Tensor>& in) { return pad(in[0], {-4, 2, 1, -3}, "replicate"); },
                     {testing::leaf({2, 3, 4}, 64)});
}

TEST(PadModes, TraceAsEager) {
  testing::expect_traced_equals_eager([] { return std::vector<Tensor>{testing::random({2, 3, 4}, kFloat32, 63)}; },
                                      [](std::vector<Tensor>& in) {
                                        return std::vector<Tensor>{pad(in[0], {1, 2, 2, 1}, "replicate") * 2,
                                                                   pad(in[0], {3, 1}, "circular").exp()};
                                      });
}

TEST(PadModes, ReportBadInput) {
  const Tensor x = zeros({2, 3});
  testing::expect_error([&] { pad(x, {4, 0}, "circular"); },
                        {"pad", "circular", "(4, 0)", "more than once", "size 3", "[2, 3]"});
  testing::expect_error([&] { pad(zeros({2, 0}), {1, 1}, "replicate"); },
                        {"pad", "replicate", "(1, 1)", "non-empty", "[2, 0]"});
  testing::expect_error([&] { pad(x, {-5, 1}, "replicate"); }, {"pad", "replicate", "crops more", "size 3", "[2, 3]"});
  testing::expect_error([&] { pad(x, {-4, 1}, "circular"); }, {"pad", "circular", "crops more", "size 3"});
  testing::expect_error([&] { pad(x, {1, 1, 1}, "replicate"); }, {"pad", "pairs", "[1, 1, 1]"});
  testing::expect_error([&] { pad(x, {1, 1}, "wrap"); }, {"pad", "\"wrap\"", "\"replicate\" or \"circular\""});
  testing::expect_error([&] { F::pad(x, F::PadFuncOptions({1, 1}).mode(kZeros)); },
                        {"pad", "kZeros", "Conv2d", "kReplicate or kCircular"});
}

// Conv2d(padding_mode) is F::pad with that mode, then the convolution without padding.
TEST(PadModes, Conv2dPaddingMode) {
  const Tensor x = testing::random({2, 3, 5, 6}, kFloat32, 64);
  for (const PadMode mode : {kReflect, kReplicate, kCircular}) {
    nn::Conv2d conv(nn::Conv2dOptions(3, 4, {3, 2}).padding({1, 2}).stride(2).padding_mode(mode));
    const Tensor padded = F::pad(x, F::PadFuncOptions({2, 2, 1, 1}).mode(mode));
    const Tensor expected = conv2d(padded, conv->weight, conv->bias, {2, 2});
    const Tensor out = conv(x);
    ASSERT_EQ(shape_str(out.sizes()), shape_str(expected.sizes()));
    testing::expect_tensors_close(out, expected, 1e-5, 1e-6);
    testing::expect_tensors_close(conv(x[0]), expected[0], 1e-5, 1e-6);  // unbatched
  }
  // kZeros (the default) is the convolution's own zero padding
  nn::Conv2d zeros_conv(nn::Conv2dOptions(3, 4, 3).padding(1));
  EXPECT_EQ(zeros_conv->options.padding_mode(), kZeros);
  testing::expect_tensors_close(zeros_conv(x), conv2d(x, zeros_conv->weight, zeros_conv->bias, {1, 1}, {1, 1}));
  // gradients reach the weight and the input through the padding
  nn::Conv2d conv(nn::Conv2dOptions(2, 2, 3).padding(1).padding_mode(kCircular));
  conv->to(kFloat64);
  testing::gradcheck([&](const std::vector<Tensor>& in) { return conv(in[0]); }, {testing::leaf({1, 2, 4, 4}, 65)});
  testing::expect_error([] { nn::Conv2d(nn::Conv2dOptions(3, 4, 3).padding_mode(kConstant)); },
                        {"Conv2d", "padding_mode", "kCircular", "kConstant"});
}

}  // namespace
}  // namespace nnvm
