// The padding modules (nn/padding.h): each is F::pad with its mode over the
// last D dims, for unbatched and batched inputs, with libtorch's option
// spellings; a negative pad crops (reflect included, as libtorch's
// reflection_pad); gradients against finite differences; errors name the module.
#include "reference.h"

namespace nnvm {
namespace {

namespace F = nn::functional;

TEST(ApiPaddingModules, EachIsPadWithItsMode) {
  const Tensor x1 = testing::random({2, 3, 6}, kFloat32, 600), x2 = testing::random({2, 3, 5, 6}, kFloat32, 601);
  const Tensor x3 = testing::random({1, 2, 4, 5, 6}, kFloat32, 602);
  auto same = [](const Tensor& got, const Tensor& want) { testing::expect_tensors_close(got, want, 0, 0); };
  same(nn::ReflectionPad1d(2)(x1), pad(x1, {2, 2}, "reflect"));
  same(nn::ReflectionPad1d(nn::ReflectionPad1dOptions({-1, 3}))(x1), pad(x1, {-1, 3}, "reflect"));
  same(nn::ReflectionPad2d(nn::ReflectionPad2dOptions({1, 2, -2, 3}))(x2), pad(x2, {1, 2, -2, 3}, "reflect"));
  same(nn::ReflectionPad2d(1)(x2[0]), pad(x2[0], {1, 1, 1, 1}, "reflect"));  // unbatched
  same(nn::ReflectionPad3d(1)(x3), pad(x3, {1, 1, 1, 1, 1, 1}, "reflect"));
  same(nn::ReplicationPad1d(nn::ReplicationPad1dOptions({3, 0}))(x1), pad(x1, {3, 0}, "replicate"));
  same(nn::ReplicationPad2d(2)(x2), pad(x2, {2, 2, 2, 2}, "replicate"));
  same(nn::ReplicationPad3d(nn::ReplicationPad3dOptions({1, 0, 2, 0, -1, 1}))(x3),
       pad(x3, {1, 0, 2, 0, -1, 1}, "replicate"));
  same(nn::ZeroPad1d(1)(x1), pad(x1, {1, 1}));
  same(nn::ZeroPad2d(nn::ZeroPad2dOptions({1, 0, 0, -2}))(x2), pad(x2, {1, 0, 0, -2}));
  same(nn::ZeroPad3d(2)(x3), pad(x3, {2, 2, 2, 2, 2, 2}));
  same(nn::ConstantPad1d(2, 3.5)(x1), pad(x1, {2, 2}, "constant", 3.5));
  same(nn::ConstantPad2d(nn::ConstantPad2dOptions({1, 2, 3, 4}, -1.0))(x2), pad(x2, {1, 2, 3, 4}, "constant", -1.0));
  same(nn::ConstantPad3d(1, 0.5)(x3), pad(x3, {1, 1, 1, 1, 1, 1}, "constant", 0.5));
  // reflect's values, directly: [a b c d] padded (-1, 2) reads x[j + 1] reflected: [b c d c b]
  testing::expect_values(
      nn::ReflectionPad1d(nn::ReflectionPad1dOptions({-1, 2}))(tensor<float>({1, 2, 3, 4}).reshape({1, 4})),
      {2, 3, 4, 3, 2}, 0, 0);
  // a crop that reaches into the reflected part: (-5, 3) of 4 values is [b a]
  testing::expect_values(F::pad(tensor<float>({1, 2, 3, 4}).reshape({1, 4}), F::PadFuncOptions({-5, 3}).mode(kReflect)),
                         {2, 1}, 0, 0);
  EXPECT_EQ(nn::ReflectionPad2d(1)->name(), "ReflectionPad2d");
  EXPECT_EQ(nn::ConstantPad3d(1, 0.0)->name(), "ConstantPad3d");
  EXPECT_EQ(nn::ReflectionPad2d(nn::ReflectionPad2dOptions({1, 2, 3, 4}))->options.padding()[3], 4);
}

TEST(ApiPaddingModules, GradientsMatchFiniteDifferences) {
  testing::gradcheck(
      [](const std::vector<Tensor>& in) {
        return nn::ReflectionPad2d(nn::ReflectionPad2dOptions({-1, 2, 2, -3}))(in[0]);
      },
      {testing::leaf({1, 2, 4, 5}, 610)});
  testing::gradcheck(
      [](const std::vector<Tensor>& in) {
        return nn::ReplicationPad1d(nn::ReplicationPad1dOptions({2, -1}))(in[0]);
      },
      {testing::leaf({2, 3}, 611)});
  testing::gradcheck([](const std::vector<Tensor>& in) { return nn::ConstantPad3d(1, 2.0)(in[0]).square(); },
                     {testing::leaf({1, 2, 2, 2}, 612)});
}

TEST(ApiPaddingModules, ReportBadInput) {
  testing::expect_error(
      [] {
        nn::ReflectionPad2d(1)(ones({5, 5}));
      },
      {"ReflectionPad2d", "3-D (unbatched) or 4-D (batched)", "[5, 5]"});
  testing::expect_error([] { nn::ZeroPad1d(1)(ones({1, 2, 3, 4})); }, {"ZeroPad1d", "2-D", "3-D", "[1, 2, 3, 4]"});
  testing::expect_error(
      [] {
        nn::ReflectionPad1d(3)(ones({1, 3}));
      },
      {"pad", "reflect", "(3, 3)", "less than", "size 3"});
  testing::expect_error(
      [] {
        nn::ReflectionPad1dOptions({1, 2, 3});
      },
      {"ExpandingArray", "expected 2 values", "got 3"});
}

}  // namespace
}  // namespace nnvm
