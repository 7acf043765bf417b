// Custom autograd functions (core/custom_function.h), written as libtorch's
// tutorials write them: values, gradients against finite differences,
// second derivatives, traced against eager, and the mistakes a user makes.
#include "nnvm/core/custom_function.h"

#include "reference.h"

namespace nnvm::autograd {
namespace {

// libtorch's LinearFunction example, with an optional bias.
struct LinearFunction : Function<LinearFunction> {
  static Tensor forward(AutogradContext* ctx, Tensor input, Tensor weight, Tensor bias = Tensor()) {
    ctx->save_for_backward({input, weight, bias});
    Tensor output = input.mm(weight.t());
    if (bias.defined()) output += bias.unsqueeze(0).expand_as(output);
    return output;
  }
  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    const variable_list saved = ctx->get_saved_variables();
    const Tensor& input = saved[0];
    const Tensor& weight = saved[1];
    const Tensor& bias = saved[2];
    const Tensor& grad_output = grad_outputs[0];
    Tensor grad_input = grad_output.mm(weight);
    Tensor grad_weight = grad_output.t().mm(input);
    Tensor grad_bias;
    if (bias.defined()) grad_bias = grad_output.sum({0});
    return {grad_input, grad_weight, grad_bias};
  }
};

// A non-tensor argument, kept in saved_data; needs_input_grad.
struct MulConstant : Function<MulConstant> {
  static Tensor forward(AutogradContext* ctx, Tensor x, double constant) {
    ctx->saved_data["mul"] = constant;
    ctx->saved_data["needed"] = ctx->needs_input_grad(0);
    return x * constant;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {grads[0] * ctx->saved_data["mul"].toDouble(), Tensor()};
  }
};

// Saves its own output (no reference cycle: Note [Saved tensors]); its
// backward is differentiable, so second derivatives flow through it.
struct Exp : Function<Exp> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    Tensor y = x.exp();
    ctx->save_for_backward({y});
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {grads[0] * ctx->get_saved_variables()[0]};
  }
};

// Two outputs, one of them indices that get no gradient.
struct MaxAlongRows : Function<MaxAlongRows> {
  static variable_list forward(AutogradContext* ctx, Tensor x) {
    const Tensor idx = x.argmax(1, /*keepdim=*/true);
    const Tensor values = x.gather(1, idx);
    ctx->mark_non_differentiable({idx});
    ctx->save_for_backward({idx});
    ctx->saved_data["shape"] = std::vector<int64_t>(x.sizes().begin(), x.sizes().end());
    return {values, idx};
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const Tensor idx = ctx->get_saved_variables()[0];
    const std::vector<int64_t>& shape = ctx->saved_data["shape"].toIntVector();
    Tensor g = zeros(shape, grads[0].dtype());
    g.scatter_(1, idx, grads[0]);
    return {g};
  }
};

// Returns one of its inputs as it is.
struct PassThrough : Function<PassThrough> {
  static Tensor forward(AutogradContext*, Tensor x) { return x; }
  static variable_list backward(AutogradContext*, variable_list grads) { return {grads[0] * 2}; }
};

// Modifies its input in place and says so (libtorch's in-place custom function).
struct ScaleInPlace : Function<ScaleInPlace> {
  static Tensor forward(AutogradContext* ctx, Tensor x, double k) {
    x.mul_(k);
    ctx->mark_dirty({x});
    ctx->saved_data["k"] = k;
    return x;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {grads[0] * ctx->saved_data["k"].toDouble(), Tensor()};
  }
};

// Mistakes.
struct DirtyNotReturned : Function<DirtyNotReturned> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    x.mul_(2);
    ctx->mark_dirty({x});
    return x * 1;
  }
  static variable_list backward(AutogradContext*, variable_list grads) { return {grads[0] * 2}; }
};
struct DirtyNotAnArgument : Function<DirtyNotAnArgument> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    Tensor y = x * 2;
    ctx->mark_dirty({y});
    return y;
  }
  static variable_list backward(AutogradContext*, variable_list grads) { return {grads[0] * 2}; }
};
struct TooFewGradients : Function<TooFewGradients> {
  static Tensor forward(AutogradContext*, Tensor a, Tensor b) { return a * b; }
  static variable_list backward(AutogradContext*, variable_list grads) { return {grads[0]}; }
};
struct WrongShape : Function<WrongShape> {
  static Tensor forward(AutogradContext*, Tensor a) { return a.sum(); }
  static variable_list backward(AutogradContext*, variable_list grads) { return {grads[0].expand({2, 3})}; }
};
struct GradientForANumber : Function<GradientForANumber> {
  static Tensor forward(AutogradContext*, Tensor a, double k) { return a * k; }
  static variable_list backward(AutogradContext*, variable_list grads) { return {grads[0], grads[0]}; }
};
struct Square : Function<Square> {
  static Tensor forward(AutogradContext* ctx, Tensor x) {
    ctx->save_for_backward({x});
    return x * x;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {grads[0] * 2 * ctx->get_saved_variables()[0]};
  }
};

TEST(CustomFunction, LinearFunctionMatchesLinearAndFiniteDifferences) {
  const Tensor x = testing::leaf({5, 3}, 1), w = testing::leaf({4, 3}, 2), b = testing::leaf({4}, 3);
  testing::expect_tensors_close(LinearFunction::apply(x, w, b), linear(x, w, b), 1e-12, 1e-12);
  testing::gradcheck([](const std::vector<Tensor>& in) { return LinearFunction::apply(in[0], in[1], in[2]); },
                     {x, w, b});
  testing::gradcheck([](const std::vector<Tensor>& in) { return LinearFunction::apply(in[0], in[1]); }, {x, w});
  EXPECT_EQ(LinearFunction::apply(x, w, b).grad_fn()->name(),
            "nnvm::autograd::CppNode<nnvm::autograd::(anonymous namespace)::LinearFunction>");
}

TEST(CustomFunction, SavedDataAndArgumentsThatAreNotTensors) {
  const Tensor x = testing::leaf({2, 3}, 4);
  const Tensor y = MulConstant::apply(x, 2.5);
  testing::expect_tensors_close(y, x * 2.5, 1e-12, 1e-12);
  y.sum().backward();
  testing::expect_tensors_close(x.grad(), full({2, 3}, 2.5, kFloat64), 0, 0);
  testing::gradcheck([](const std::vector<Tensor>& in) { return MulConstant::apply(in[0], -1.5); }, {x});
  // Without grad, nothing is recorded.
  const Tensor plain = testing::random({2}, kFloat64, 5);
  EXPECT_FALSE(MulConstant::apply(plain, 2.0).requires_grad());
}

TEST(CustomFunction, SavedOutputAndSecondDerivatives) {
  const Tensor x = testing::leaf({3, 2}, 6, -1.0, 1.0);
  testing::gradcheck([](const std::vector<Tensor>& in) { return Exp::apply(in[0]); }, {x});
  testing::gradgradcheck([](const std::vector<Tensor>& in) { return Exp::apply(in[0]); }, {x});
}

TEST(CustomFunction, NonDifferentiableOutputs) {
  const Tensor x = testing::leaf({4, 5}, 7);
  const variable_list out = MaxAlongRows::apply(x);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].requires_grad());
  EXPECT_FALSE(out[1].requires_grad());
  testing::expect_tensors_close(out[0], std::get<0>(x.max(1, true)), 0, 0);
  testing::gradcheck([](const std::vector<Tensor>& in) { return MaxAlongRows::apply(in[0])[0]; }, {x});
}

TEST(CustomFunction, AnInputReturnedAsItIsKeepsItsOwnHistory) {
  const Tensor x = testing::leaf({3}, 8);
  const Tensor y = PassThrough::apply(x);
  EXPECT_TRUE(x.is_leaf());
  EXPECT_FALSE(y.is_leaf());
  y.sum().backward();
  testing::expect_tensors_close(x.grad(), full({3}, 2.0, kFloat64), 0, 0);
}

// mark_dirty: the modified input is the output, and its history now runs
// through the function's node, whose next edge is the input's old history.
TEST(CustomFunction, MarkDirtyContinuesTheInputsHistory) {
  const Tensor a = testing::leaf({2, 3}, 16);
  Tensor x = a * 3;  // not a leaf: it may be modified in place
  const Tensor y = ScaleInPlace::apply(x, 2.0);
  EXPECT_TRUE(y.is_same(x));
  EXPECT_EQ(x.grad_fn()->name(), "nnvm::autograd::CppNode<nnvm::autograd::(anonymous namespace)::ScaleInPlace>");
  testing::expect_tensors_close(x, a * 6, 1e-12, 1e-12);
  x.sum().backward();
  testing::expect_tensors_close(a.grad(), full({2, 3}, 6.0, kFloat64), 0, 0);
  testing::gradcheck([](const std::vector<Tensor>& in) { return ScaleInPlace::apply(in[0] * 1.5, -0.5).exp(); },
                     {testing::leaf({4}, 17)});
  // Where no input requires grad, nothing is recorded.
  const Tensor plain = testing::random({3}, kFloat64, 18);
  ScaleInPlace::apply(plain, 3.0);
  EXPECT_FALSE(plain.requires_grad());
  // A saved tensor modified through the function fails its version check.
  Tensor s = testing::leaf({2}, 19) * 1.0;
  const Tensor sq = Square::apply(s).sum();
  ScaleInPlace::apply(s, 2.0);
  testing::expect_error([&] { sq.backward(); }, {"Square", "modified by an in-place operation"});
}

// The function's forward and backward ops are recorded like any other ops:
// three traced runs (cold, turning hot, hot) give eager mode's values and
// gradients.
TEST(CustomFunction, TracedEqualsEager) {
  testing::expect_traced_equals_eager(
      [] {
        return std::vector<Tensor>{testing::random({6, 5}, kFloat32, 9), testing::random({3, 5}, kFloat32, 10),
                                   testing::random({3}, kFloat32, 11)};
      },
      [](std::vector<Tensor>& in) {
        const Tensor w = in[1].detach().requires_grad_();
        const Tensor b = in[2].detach().requires_grad_();
        const Tensor h = LinearFunction::apply(in[0], w, b);
        const Tensor loss = Exp::apply(MulConstant::apply(h, 0.1)).sum();
        loss.backward();
        return std::vector<Tensor>{h, loss, w.grad(), b.grad()};
      });
}

TEST(CustomFunction, MistakesNameTheFunction) {
  const Tensor a = testing::leaf({3, 2}, 12), b = testing::leaf({3, 2}, 13);
  testing::expect_error([&] { TooFewGradients::apply(a, b).sum().backward(); },
                        {"TooFewGradients", "returned 1 gradients, expected 2"});
  testing::expect_error([&] { WrongShape::apply(a).backward(); },
                        {"WrongShape", "gradient of shape [2, 3]", "argument 0", "expected its shape [3, 2]"});
  testing::expect_error([&] { GradientForANumber::apply(a, 2.0).sum().backward(); },
                        {"GradientForANumber", "argument 1", "not a tensor"});
  {
    const Tensor y = Square::apply(a);
    y.backward(ones_like(y));
    testing::expect_error([&] { y.backward(ones_like(y)); }, {"Square", "second time", "retain_graph"});
  }
  {
    Tensor x = testing::leaf({2}, 14) * 1.0;  // not a leaf: it may be modified in place
    const Tensor y = Square::apply(x).sum();
    x.mul_(2);
    testing::expect_error([&] { y.backward(); }, {"Square", "modified by an in-place operation"});
  }
  testing::expect_error([] { IValue(2.0).toTensor(); }, {"IValue", "holds a double, not a Tensor"});
  // mark_dirty: a leaf that requires grad, a tensor not returned, a tensor not an argument
  testing::expect_error([] { ScaleInPlace::apply(testing::leaf({2}, 20), 2.0); },
                        {"ScaleInPlace", "leaf tensor that requires grad", "[2]", "marked dirty"});
  testing::expect_error([] { DirtyNotReturned::apply(testing::leaf({2}, 21) * 1.0); },
                        {"DirtyNotReturned", "marked dirty is not returned", "[2]"});
  testing::expect_error([] { DirtyNotAnArgument::apply(testing::leaf({2}, 22)); },
                        {"DirtyNotAnArgument", "not an argument of forward", "[2]"});
}

// Built-in ops' gradient nodes carry libtorch's names.
TEST(CustomFunction, BuiltInNodesHaveLibtorchNames) {
  const Tensor x = testing::leaf({2, 3}, 15);
  EXPECT_EQ((x + x).grad_fn()->name(), "AddBackward0");
  EXPECT_EQ(x.mean().grad_fn()->name(), "MeanBackward0");
  EXPECT_EQ(log_softmax(x, 1).grad_fn()->name(), "LogSoftmaxBackward0");
  EXPECT_EQ((x * 2).grad_fn()->name(), "MulBackward1");
}

}  // namespace
}  // namespace nnvm::autograd
