// The padding modules (libtorch's ReflectionPad2d, ReplicationPad1d,
// ZeroPad2d, ConstantPad3d, ...): F::pad with the mode fixed, over the last
// D dims of an unbatched (D + 1)-D or batched (D + 2)-D input. The padding is
// 2·D values, (before, after) pairs from the last dim backwards, or one
// number for all of them; a negative pad crops, as in F::pad.
#pragma once

#include <concepts>
#include <string>
#include <string_view>

#include "nnvm/nn/expanding_array.h"
#include "nnvm/nn/module.h"

namespace nnvm::nn {

namespace detail {
// x padded by a module named `name` that pads `dims` dims in `mode`.
Tensor pad_module_forward(const Tensor& x, IntArrayRef padding, std::string_view mode, double value, size_t dims,
                          std::string_view name);
}  // namespace detail

template <size_t D> struct ReflectionPadOptions {
  ReflectionPadOptions(ExpandingArray<D * 2> padding) : padding_(padding) {}  // NOLINT: implicit, like libtorch
  NNVM_ARG(ExpandingArray<D * 2>, padding);
};
template <size_t D> struct ReplicationPadOptions {
  ReplicationPadOptions(ExpandingArray<D * 2> padding) : padding_(padding) {}  // NOLINT
  NNVM_ARG(ExpandingArray<D * 2>, padding);
};
template <size_t D> struct ZeroPadOptions {
  ZeroPadOptions(ExpandingArray<D * 2> padding) : padding_(padding) {}  // NOLINT
  NNVM_ARG(ExpandingArray<D * 2>, padding);
};
template <size_t D> struct ConstantPadOptions {
  ConstantPadOptions(ExpandingArray<D * 2> padding, double value) : padding_(padding), value_(value) {}
  NNVM_ARG(ExpandingArray<D * 2>, padding);
  NNVM_ARG(double, value);
};

// One padding module: Options says the padding (and ConstantPad's value);
// `Kind` names the module and its F::pad mode. Built from its options or, as
// libtorch's, from the padding (and value) alone: ReflectionPad2d(1).
template <size_t D, class Options, class Kind> class PadImpl : public Module {
 public:
  explicit PadImpl(const Options& options)
      : Module(std::string(Kind::name) + std::to_string(D) + "d"), options(options) {}
  explicit PadImpl(ExpandingArray<D * 2> padding)
    requires std::constructible_from<Options, ExpandingArray<D * 2>>
      : PadImpl(Options(padding)) {}
  PadImpl(ExpandingArray<D * 2> padding, double value)
    requires std::constructible_from<Options, ExpandingArray<D * 2>, double>
      : PadImpl(Options(padding, value)) {}
  Tensor forward(const Tensor& x) {
    double value = 0.0;
    if constexpr (requires { options.value(); }) value = options.value();
    return detail::pad_module_forward(x, options.padding(), Kind::mode, value, D, name());
  }

  Options options;
};

struct ReflectionPadKind {
  static constexpr std::string_view name = "ReflectionPad", mode = "reflect";
};
struct ReplicationPadKind {
  static constexpr std::string_view name = "ReplicationPad", mode = "replicate";
};
struct ZeroPadKind {
  static constexpr std::string_view name = "ZeroPad", mode = "constant";
};
struct ConstantPadKind {
  static constexpr std::string_view name = "ConstantPad", mode = "constant";
};

template <size_t D> using ReflectionPadImpl = PadImpl<D, ReflectionPadOptions<D>, ReflectionPadKind>;
template <size_t D> using ReplicationPadImpl = PadImpl<D, ReplicationPadOptions<D>, ReplicationPadKind>;
template <size_t D> using ZeroPadImpl = PadImpl<D, ZeroPadOptions<D>, ZeroPadKind>;
template <size_t D> using ConstantPadImpl = PadImpl<D, ConstantPadOptions<D>, ConstantPadKind>;

using ReflectionPad1dOptions = ReflectionPadOptions<1>;
using ReflectionPad2dOptions = ReflectionPadOptions<2>;
using ReflectionPad3dOptions = ReflectionPadOptions<3>;
using ReplicationPad1dOptions = ReplicationPadOptions<1>;
using ReplicationPad2dOptions = ReplicationPadOptions<2>;
using ReplicationPad3dOptions = ReplicationPadOptions<3>;
using ZeroPad1dOptions = ZeroPadOptions<1>;
using ZeroPad2dOptions = ZeroPadOptions<2>;
using ZeroPad3dOptions = ZeroPadOptions<3>;
using ConstantPad1dOptions = ConstantPadOptions<1>;
using ConstantPad2dOptions = ConstantPadOptions<2>;
using ConstantPad3dOptions = ConstantPadOptions<3>;

using ReflectionPad1dImpl = ReflectionPadImpl<1>;
using ReflectionPad2dImpl = ReflectionPadImpl<2>;
using ReflectionPad3dImpl = ReflectionPadImpl<3>;
using ReplicationPad1dImpl = ReplicationPadImpl<1>;
using ReplicationPad2dImpl = ReplicationPadImpl<2>;
using ReplicationPad3dImpl = ReplicationPadImpl<3>;
using ZeroPad1dImpl = ZeroPadImpl<1>;
using ZeroPad2dImpl = ZeroPadImpl<2>;
using ZeroPad3dImpl = ZeroPadImpl<3>;
using ConstantPad1dImpl = ConstantPadImpl<1>;
using ConstantPad2dImpl = ConstantPadImpl<2>;
using ConstantPad3dImpl = ConstantPadImpl<3>;

NNVM_MODULE(ReflectionPad1d);
NNVM_MODULE(ReflectionPad2d);
NNVM_MODULE(ReflectionPad3d);
NNVM_MODULE(ReplicationPad1d);
NNVM_MODULE(ReplicationPad2d);
NNVM_MODULE(ReplicationPad3d);
NNVM_MODULE(ZeroPad1d);
NNVM_MODULE(ZeroPad2d);
NNVM_MODULE(ZeroPad3d);
NNVM_MODULE(ConstantPad1d);
NNVM_MODULE(ConstantPad2d);
NNVM_MODULE(ConstantPad3d);

}  // namespace nnvm::nn
