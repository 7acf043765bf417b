// Polynomial regression, the first program of libtorch's tutorials: a random
// polynomial of degree 4 is the target, and one linear layer over the features
// x, x^2, x^3, x^4 learns its coefficients by SGD on the smooth L1 loss,
// batch after batch, until the loss is small.
//
//   libtorch_regression           train until the loss is below 1e-3
//   libtorch_regression --quick   a few hundred batches
#include <nnvm/nnvm.h>

#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace F = nnvm::nn::functional;

constexpr int64_t kDegree = 4;

// x [batch] -> [batch, kDegree], the columns x, x^2, ..., x^kDegree.
nnvm::Tensor make_features(const nnvm::Tensor& x) {
  std::vector<nnvm::Tensor> columns;
  for (int64_t power = 1; power <= kDegree; ++power)
    columns.push_back(x.unsqueeze(1).pow(power));
  return nnvm::cat(columns, /*dim=*/1);
}

// The polynomial as text, highest power first: "y = 1.23 x^4 - 0.5 x^3 ... + 2.1".
std::string describe(const nnvm::Tensor& weight, const nnvm::Tensor& bias) {
  std::ostringstream text;
  text << std::fixed << std::setprecision(3) << "y =";
  for (int64_t i = weight.size(0) - 1; i >= 0; --i)
    text << " " << std::showpos << weight[i].item<float>() << std::noshowpos << " x^" << i + 1;
  text << " " << std::showpos << bias[0].item<float>();
  return text.str();
}

// A batch of (features, f(features)) at points drawn from a standard normal.
std::pair<nnvm::Tensor, nnvm::Tensor> get_batch(const nnvm::Tensor& w_target, const nnvm::Tensor& b_target,
                                                  int64_t batch_size) {
  nnvm::Tensor x = make_features(nnvm::randn({batch_size}));
  nnvm::Tensor y = x.mm(w_target) + b_target;
  return {x, y};
}

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  nnvm::manual_seed(0);

  nnvm::Tensor w_target = nnvm::randn({kDegree, 1}) * 5;
  nnvm::Tensor b_target = nnvm::randn({1}) * 5;

  nnvm::nn::Linear fc(kDegree, 1);
  nnvm::optim::SGD optimizer(fc->parameters(), nnvm::optim::SGDOptions(0.1));

  // A fixed batch to measure the fit on, before and after training.
  auto [test_x, test_y] = get_batch(w_target, b_target, 1000);
  auto test_loss = [&, test_x = test_x, test_y = test_y] {  // (clang 14 cannot capture structured bindings)
    nnvm::NoGradGuard no_grad;
    return F::smooth_l1_loss(fc(test_x), test_y).item<float>();
  };
  const float initial = test_loss();
  std::cout << "test loss before training: " << initial << std::endl;

  const int64_t max_batches = quick ? 300 : 100000;
  float loss = 0;
  int64_t batch_idx = 0;
  while (batch_idx < max_batches) {
    ++batch_idx;
    auto [batch_x, batch_y] = get_batch(w_target, b_target, 32);

    optimizer.zero_grad();
    nnvm::Tensor output = F::smooth_l1_loss(fc(batch_x), batch_y);
    output.backward();
    optimizer.step();

    loss = output.item<float>();
    if (batch_idx % 100 == 0)
      std::cout << "batch " << std::setw(5) << batch_idx << "  loss " << loss << std::endl;
    if (loss < 1e-3f) break;
  }

  const float final = test_loss();
  std::cout << "Loss: " << loss << " after " << batch_idx << " batches" << std::endl;
  std::cout << "test loss after training: " << final << std::endl;
  std::cout << "==> Learned function:\t" << describe(fc->weight.view({-1}), fc->bias) << std::endl;
  std::cout << "==> Actual function:\t" << describe(w_target.view({-1}), b_target) << std::endl;

  // The full run must reach the tutorial's criterion; the quick one must have
  // cut the test loss to a small fraction of what it was.
  const bool learned = quick ? final < 0.05f * initial : loss < 1e-3f;
  if (!learned) std::cerr << "did not learn the polynomial" << std::endl;
  return learned ? EXIT_SUCCESS : EXIT_FAILURE;
}
