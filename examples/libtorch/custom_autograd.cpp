// Custom autograd functions, as libtorch's autograd tutorial writes them:
// a LinearFunction that saves its inputs for backward, a MulConstant that
// keeps a number in ctx->saved_data, and a SiLU that saves its input. The
// program first checks each one's gradients against the built-in ops (and
// LinearFunction's against central differences), then trains a small
// classifier made of them: is a point inside a circle?
//
//   libtorch_custom_autograd           the checks, then 1000 training steps
//   libtorch_custom_autograd --quick   the checks, then 200 steps
#include <nnvm/nnvm.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <utility>

using namespace nnvm::autograd;
namespace F = nnvm::nn::functional;

// y = x w^T + b, with the bias optional.
class LinearFunction : public Function<LinearFunction> {
 public:
  static nnvm::Tensor forward(AutogradContext* ctx, nnvm::Tensor input, nnvm::Tensor weight,
                               nnvm::Tensor bias = nnvm::Tensor()) {
    ctx->save_for_backward({input, weight, bias});
    auto output = input.mm(weight.t());
    if (bias.defined()) output += bias.unsqueeze(0).expand_as(output);
    return output;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    auto saved = ctx->get_saved_variables();
    auto input = saved[0];
    auto weight = saved[1];
    auto bias = saved[2];
    auto grad_output = grad_outputs[0];

    nnvm::Tensor grad_input, grad_weight, grad_bias;
    if (ctx->needs_input_grad(0)) grad_input = grad_output.mm(weight);
    if (ctx->needs_input_grad(1)) grad_weight = grad_output.t().mm(input);
    if (bias.defined() && ctx->needs_input_grad(2)) grad_bias = grad_output.sum(0);
    return {grad_input, grad_weight, grad_bias};
  }
};

// y = x * constant; the constant is not a tensor, so it gets no gradient.
class MulConstant : public Function<MulConstant> {
 public:
  static nnvm::Tensor forward(AutogradContext* ctx, nnvm::Tensor tensor, double constant) {
    ctx->saved_data["constant"] = constant;
    return tensor * constant;
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    return {grad_outputs[0] * ctx->saved_data["constant"].toDouble(), nnvm::Tensor()};
  }
};

// y = x * sigmoid(x); dy/dx = s (1 + x (1 - s)) with s = sigmoid(x).
class SiLU : public Function<SiLU> {
 public:
  static nnvm::Tensor forward(AutogradContext* ctx, nnvm::Tensor input) {
    ctx->save_for_backward({input});
    return input * nnvm::sigmoid(input);
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grad_outputs) {
    auto input = ctx->get_saved_variables()[0];
    auto s = nnvm::sigmoid(input);
    return {grad_outputs[0] * s * (1 + input * (1 - s))};
  }
};

bool report(const char* what, const nnvm::Tensor& custom, const nnvm::Tensor& reference) {
  const bool ok = nnvm::allclose(custom, reference, /*rtol=*/1e-6, /*atol=*/1e-8);
  std::cout << "  " << std::left << std::setw(44) << what << (ok ? "ok" : "MISMATCH") << std::endl;
  if (!ok) std::cout << "custom:\n" << custom << "\nreference:\n" << reference << std::endl;
  return ok;
}

// Each function against the built-in ops, in double precision.
bool check_gradients() {
  std::cout << "Gradient checks" << std::endl;
  bool ok = true;
  auto options = nnvm::TensorOptions().dtype(nnvm::kFloat64).requires_grad(true);
  {
    auto x = nnvm::randn({5, 3}, options);
    auto w = nnvm::randn({4, 3}, options);
    auto b = nnvm::randn({4}, options);
    auto probe = nnvm::randn({5, 4}, nnvm::kFloat64);
    auto y = LinearFunction::apply(x, w, b);
    (y * probe).sum().backward();

    auto x_ref = x.detach().clone().requires_grad_(true);
    auto w_ref = w.detach().clone().requires_grad_(true);
    auto b_ref = b.detach().clone().requires_grad_(true);
    auto y_ref = F::linear(x_ref, w_ref, b_ref);
    (y_ref * probe).sum().backward();

    ok &= report("LinearFunction output vs F::linear", y, y_ref);
    ok &= report("LinearFunction d/dinput", x.grad(), x_ref.grad());
    ok &= report("LinearFunction d/dweight", w.grad(), w_ref.grad());
    ok &= report("LinearFunction d/dbias", b.grad(), b_ref.grad());
    std::cout << "  y.grad_fn()->name() = " << y.grad_fn()->name() << std::endl;
  }
  {
    // Without a bias, and with an input that needs no gradient.
    auto x = nnvm::randn({2, 3}, nnvm::kFloat64);
    auto w = nnvm::randn({4, 3}, options);
    LinearFunction::apply(x, w).sum().backward();
    ok &= report("LinearFunction without bias d/dweight", w.grad(), nnvm::ones({2, 4}, nnvm::kFloat64).t().mm(x));
  }
  {
    auto x = nnvm::randn({2, 3}, options);
    MulConstant::apply(x, 5.5).sum().backward();
    ok &= report("MulConstant d/dinput", x.grad(), nnvm::full({2, 3}, 5.5, nnvm::kFloat64));
  }
  {
    auto x = nnvm::randn({6}, options);
    auto x_ref = x.detach().clone().requires_grad_(true);
    // Second derivatives: the gradient, built with create_graph, is differentiated again.
    auto dx = nnvm::autograd::grad({SiLU::apply(x).sum()}, {x}, {}, /*retain_graph=*/true,
                                    /*create_graph=*/true)[0];
    auto dx_ref = nnvm::autograd::grad({F::silu(x_ref).sum()}, {x_ref}, {}, /*retain_graph=*/true,
                                        /*create_graph=*/true)[0];
    ok &= report("SiLU d/dinput vs F::silu", dx, dx_ref);
    dx.sum().backward();
    dx_ref.sum().backward();
    ok &= report("SiLU d2/dinput2 vs F::silu", x.grad(), x_ref.grad());
  }
  {
    // Central differences of f(w) = sum(LinearFunction(x, w) * probe).
    auto x = nnvm::randn({4, 3}, nnvm::kFloat64);
    auto w = nnvm::randn({2, 3}, options);
    auto probe = nnvm::randn({4, 2}, nnvm::kFloat64);
    auto f = [&](const nnvm::Tensor& weight) { return (LinearFunction::apply(x, weight) * probe).sum(); };
    f(w).backward();

    const double eps = 1e-6;
    auto numeric = nnvm::zeros_like(w, nnvm::kFloat64);
    {
      nnvm::NoGradGuard no_grad;
      for (int64_t i = 0; i < w.size(0); ++i) {
        for (int64_t j = 0; j < w.size(1); ++j) {
          auto plus = w.clone();
          auto minus = w.clone();
          plus[i][j] += eps;
          minus[i][j] -= eps;
          numeric[i][j] = (f(plus) - f(minus)) / (2 * eps);
        }
      }
    }
    const bool close = nnvm::allclose(w.grad(), numeric, /*rtol=*/1e-5, /*atol=*/1e-7);
    std::cout << "  " << std::left << std::setw(44) << "LinearFunction vs central differences"
              << (close ? "ok" : "MISMATCH") << std::endl;
    ok &= close;
  }
  return ok;
}

// A linear layer whose forward is LinearFunction.
struct CustomLinearImpl : nnvm::nn::Module {
  CustomLinearImpl(int64_t in_features, int64_t out_features) {
    weight = register_parameter("weight", nnvm::randn({out_features, in_features}) / std::sqrt(in_features));
    bias = register_parameter("bias", nnvm::zeros({out_features}));
  }
  nnvm::Tensor forward(const nnvm::Tensor& input) { return LinearFunction::apply(input, weight, bias); }
  nnvm::Tensor weight, bias;
};
NNVM_MODULE(CustomLinear);

struct NetImpl : nnvm::nn::Module {
  NetImpl(int64_t hidden, double temperature)
      : fc1(register_module("fc1", CustomLinear(2, hidden))),
        fc2(register_module("fc2", CustomLinear(hidden, hidden))),
        fc3(register_module("fc3", CustomLinear(hidden, 2))),
        temperature(temperature) {}
  nnvm::Tensor forward(nnvm::Tensor x) {
    x = SiLU::apply(fc1(x));
    x = SiLU::apply(fc2(x));
    return MulConstant::apply(fc3(x), 1.0 / temperature);
  }
  CustomLinear fc1, fc2, fc3;
  double temperature;
};
NNVM_MODULE(Net);

// n points uniform in [-1, 1]^2, labelled 1 inside the circle of radius 0.8.
std::pair<nnvm::Tensor, nnvm::Tensor> make_points(int64_t n) {
  auto points = nnvm::rand({n, 2}) * 2 - 1;
  auto labels = (points.pow(2).sum(1) < 0.64).to(nnvm::kLong);
  return {points, labels};
}

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  nnvm::manual_seed(0);
  std::cout << std::boolalpha;

  const bool gradients_ok = check_gradients();

  auto [train_x, train_y] = make_points(1024);
  auto [test_x, test_y] = make_points(1024);
  Net net(/*hidden=*/32, /*temperature=*/0.5);
  nnvm::optim::SGD optimizer(net->parameters(), nnvm::optim::SGDOptions(0.05).momentum(0.9));

  auto accuracy = [&](const nnvm::Tensor& x, const nnvm::Tensor& y) {
    nnvm::NoGradGuard no_grad;
    return net(x).argmax(1).eq(y).to(nnvm::kFloat).mean().item<double>();
  };
  // The classifier that always answers the larger class.
  const double majority = std::max(test_y.to(nnvm::kFloat).mean().item<double>(),
                                   1 - test_y.to(nnvm::kFloat).mean().item<double>());

  std::cout << "\nTraining (" << net->parameters().size() << " parameter tensors)" << std::endl;
  const int64_t steps = quick ? 200 : 1000;
  double first_loss = 0, loss_value = 0;
  for (int64_t step = 1; step <= steps; ++step) {
    optimizer.zero_grad();
    auto loss = F::cross_entropy(net(train_x), train_y);
    loss.backward();
    optimizer.step();
    loss_value = loss.item<double>();
    if (step == 1) first_loss = loss_value;
    if (step % (steps / 10) == 0)
      std::cout << "step " << std::setw(5) << step << "  loss " << std::fixed << std::setprecision(4)
                << loss_value << std::endl;
  }
  const double test_accuracy = accuracy(test_x, test_y);
  std::cout << "test accuracy " << test_accuracy << " (the larger class alone: " << majority << ")" << std::endl;

  const bool learned = loss_value < 0.5 * first_loss && test_accuracy > 0.9;
  if (!gradients_ok) std::cerr << "a gradient check failed" << std::endl;
  if (!learned) std::cerr << "the classifier did not learn" << std::endl;
  return gradients_ok && learned ? EXIT_SUCCESS : EXIT_FAILURE;
}
