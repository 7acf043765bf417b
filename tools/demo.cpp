// The training demo: a small CNN learns Fashion-MNIST in one epoch, reports
// its test accuracy and saves its weights as safetensors; `--eval PATH`
// reloads such a checkpoint and reports its test accuracy. After training it
// times the same training step fused (traced mode) and unfused (eager mode).
//
//   nnvm_demo [--out PATH] [--data DIR] [--steps N]   train (default out: fmnist_cnn.safetensors)
//   nnvm_demo --eval PATH [--data DIR]                evaluate a checkpoint
//   ... --quantize int8                               also run the model in INT8 (docs/QUANTIZATION.md):
//                                                     its test accuracy and inference speed beside float32's
//   ... --precision bf16|f16                          train with autocast in bfloat16 or float16 (f16 with
//                                                     a GradScaler; docs/NN.md, "Mixed precision")
//
// The data comes from the Debian package dataset-fashion-mnist unless --data
// names a directory with the four IDX files; --steps stops training early
// (a quick smoke run).
#include <nnvm/nnvm.h>
#include <unistd.h>

#include "fashion_cnn.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

using namespace nnvm;

namespace {

constexpr int64_t kBatch = 64, kEvalBatch = 1000;
constexpr uint64_t kSeed = 0;


// On a terminal: one line redrawn in place with \r. Otherwise (a log, a pipe):
// a plain line every `kLineEvery` steps, so logs stay readable.
class Progress {
 public:
  explicit Progress(int64_t total) : total_(total), tty_(isatty(fileno(stdout)) != 0) {}

  void update(int64_t step, double loss) {
    loss_sum_ += loss;
    ++loss_count_;
    const double elapsed = seconds_since(start_);
    const bool last = step == total_;
    if (tty_) {
      if (!last && seconds_since(last_draw_) < 0.1) return;
      last_draw_ = Clock::now();
      constexpr int kWidth = 30;
      const int filled = int(kWidth * step / total_);
      std::string bar(size_t(filled), '=');
      if (filled < kWidth) bar += '>' + std::string(size_t(kWidth - filled - 1), ' ');
      std::printf("\r[%s] %lld/%lld  loss %.4f  %.0f img/s  ETA %s ", bar.c_str(), static_cast<long long>(step),
                  static_cast<long long>(total_), loss_sum_ / double(loss_count_), rate(step, elapsed),
                  eta(step, elapsed).c_str());
      loss_sum_ = 0;
      loss_count_ = 0;
      if (last) std::printf("\n");
      std::fflush(stdout);
    } else if (step % kLineEvery == 0 || last) {
      std::printf("step %lld/%lld  loss %.4f  %.0f img/s  ETA %s\n", static_cast<long long>(step),
                  static_cast<long long>(total_), loss_sum_ / double(loss_count_), rate(step, elapsed),
                  eta(step, elapsed).c_str());
      loss_sum_ = 0;
      loss_count_ = 0;
      std::fflush(stdout);
    }
  }

  double elapsed() const { return seconds_since(start_); }

 private:
  using Clock = std::chrono::steady_clock;
  static constexpr int64_t kLineEvery = 100;

  static double seconds_since(Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  }
  static double rate(int64_t step, double elapsed) { return double(step * kBatch) / std::max(elapsed, 1e-9); }
  std::string eta(int64_t step, double elapsed) const {
    const auto left = int64_t(elapsed / double(step) * double(total_ - step) + 0.5);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%lld:%02lld", static_cast<long long>(left / 60),
                  static_cast<long long>(left % 60));
    return buf;
  }

  int64_t total_;
  bool tty_;
  Clock::time_point start_ = Clock::now(), last_draw_ = start_ - std::chrono::seconds(1);
  double loss_sum_ = 0;
  int64_t loss_count_ = 0;
};

struct Evaluation {
  double accuracy;
  double images_per_second;  // the model's forward passes alone
};

Evaluation evaluate_model(FashionCnn& model, const std::string& root) {
  data::FashionMNIST test(root, data::FashionMNIST::Mode::kTest);
  test.normalize();
  model->eval();
  NoGradGuard no_grad;
  int64_t correct = 0;
  double seconds = 0;
  for (const auto& [x, y] : data::DataLoader(test, data::DataLoaderOptions(kEvalBatch))) {
    const auto start = std::chrono::steady_clock::now();
    const Tensor predicted = model(x).argmax(1);
    mark_step();
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    correct += predicted.eq(y).sum().item<int64_t>();
  }
  return {double(correct) / double(test.size()), double(test.size()) / seconds};
}

double test_accuracy(FashionCnn& model, const std::string& root) { return evaluate_model(model, root).accuracy; }

// The model's INT8 copies (every convolution and linear layer) beside the
// model: dynamic (each input quantized from its own range) and static (input
// scales calibrated on 16 training batches).
void compare_int8(FashionCnn& model, const std::string& root) {
  constexpr int64_t kCalibrationBatches = 16;
  FashionCnn dynamic = quantize_dynamic(model, QuantizeDynamicOptions().conv2d(true));
  FashionCnn calibrated = quantization::prepare(model);
  {
    data::FashionMNIST train_set(root);
    train_set.normalize();
    NoGradGuard no_grad;
    int64_t seen = 0;
    for (const auto& [x, y] : data::DataLoader(train_set, data::DataLoaderOptions(kBatch).shuffle(true).seed(kSeed))) {
      if (seen++ == kCalibrationBatches) break;
      calibrated(x);
    }
  }
  quantization::convert(calibrated);
  evaluate_model(model, root);  // warm: plans compiled, buffers cached
  const Evaluation f = evaluate_model(model, root);
  for (auto [name, q] : {std::pair<const char*, FashionCnn*>{"dynamic", &dynamic}, {"static", &calibrated}}) {
    evaluate_model(*q, root);
    const Evaluation i = evaluate_model(*q, root);
    std::printf("INT8 (Conv2d and Linear, %s): test accuracy %.2f%% (float32 %.2f%%, %+.2f points), "
                "inference %.0f img/s (float32 %.0f img/s, %.2fx)\n",
                name, 100.0 * i.accuracy, 100.0 * f.accuracy, 100.0 * (i.accuracy - f.accuracy),
                i.images_per_second, f.images_per_second, i.images_per_second / f.images_per_second);
  }
}

// One step: the loss (under autocast in `precision` when given) and its
// gradients, the optimizer's update through the scaler; returns the loss.
Tensor training_step(FashionCnn& model, optim::Optimizer& optimizer, GradScaler& scaler, const Tensor& x,
                     const Tensor& y, std::optional<DType> precision) {
  Tensor loss;
  {
    AutocastGuard autocast(precision.value_or(kBFloat16), precision.has_value());
    loss = cross_entropy(model(x), y);
  }
  optimizer.zero_grad();
  scaler.scale(loss).backward();
  scaler.step(optimizer);
  scaler.update();
  return loss;
}

// Runs `steps` training steps of a fresh model in the current mode after a
// warm-up (the traced mode's plans compile there); returns images per second.
double training_rate(const data::FashionMNIST& train_set, int64_t steps, std::optional<DType> precision) {
  constexpr int64_t kWarmup = 3;
  manual_seed(kSeed);
  FashionCnn model;
  optim::Adam optimizer(model->parameters(), optim::AdamOptions(1e-3));
  GradScaler scaler(GradScalerOptions().enabled(precision == kFloat16));
  data::DataLoader loader(train_set, data::DataLoaderOptions(kBatch));
  int64_t step = 0;
  auto start = std::chrono::steady_clock::now();
  for (const auto& [x, y] : loader) {
    if (step == kWarmup) start = std::chrono::steady_clock::now();
    if (step == kWarmup + steps) break;
    const Tensor loss = training_step(model, optimizer, scaler, x, y, precision);
    (void)loss.item<double>();
    ++step;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return double(steps * kBatch) / seconds;
}

// The product's benchmark in one line: the same training step traced
// (recorded, fused, replayed) and eager (op by op, unfused).
void compare_modes(const data::FashionMNIST& train_set, int64_t steps, std::optional<DType> precision) {
  const Mode was = mode();
  set_mode(Mode::Traced);
  const double fused = training_rate(train_set, steps, precision);
  set_mode(Mode::Eager);
  const double eager = training_rate(train_set, steps, precision);
  set_mode(was);
  std::printf("training step, %lld steps: fused (traced) %.0f img/s, unfused (eager) %.0f img/s: %.2fx\n",
              static_cast<long long>(steps), fused, eager, fused / eager);
}

int train(const std::string& root, const std::string& out, std::optional<int64_t> max_steps, bool int8,
          std::optional<DType> precision) {
  manual_seed(kSeed);
  data::FashionMNIST train_set(root);
  train_set.normalize();
  data::DataLoader loader(train_set, data::DataLoaderOptions(kBatch).shuffle(true).seed(kSeed));
  FashionCnn model;
  optim::Adam optimizer(model->parameters(), optim::AdamOptions(1e-3));
  GradScaler scaler(GradScalerOptions().enabled(precision == kFloat16));

  const int64_t total = max_steps ? std::min(*max_steps, loader.num_batches()) : loader.num_batches();
  std::printf("Fashion-MNIST: %lld training images, batch %lld, %lld steps, Adam lr 1e-3, %d threads, %s mode, %s\n",
              static_cast<long long>(train_set.size()), static_cast<long long>(kBatch),
              static_cast<long long>(total), get_num_threads(), mode() == Mode::Traced ? "traced" : "eager",
              precision == kBFloat16  ? "autocast bfloat16"
              : precision == kFloat16 ? "autocast float16 with loss scaling"
                                      : "float32");
  Progress progress(total);
  int64_t step = 0;
  for (const auto& [x, y] : loader) {
    if (step == total) break;
    const Tensor loss = training_step(model, optimizer, scaler, x, y, precision);
    progress.update(++step, loss.item<double>());
  }
  std::printf("trained in %.1f s\n", progress.elapsed());

  std::printf("test accuracy: %.2f%%\n", 100.0 * test_accuracy(model, root));
  nn::save(model, out);
  std::printf("saved weights to %s\n", out.c_str());
  if (int8) compare_int8(model, root);
  compare_modes(train_set, std::min<int64_t>(total, 40), precision);
  return 0;
}

int evaluate(const std::string& root, const std::string& path, bool int8) {
  FashionCnn model;
  nn::load(model, path);
  std::printf("%s: test accuracy %.2f%%\n", path.c_str(), 100.0 * test_accuracy(model, root));
  if (int8) compare_int8(model, root);
  return 0;
}

int usage() {
  std::cerr << "usage: nnvm_demo [--out PATH] [--data DIR] [--steps N] [--quantize int8] [--precision bf16|f16]\n"
               "       nnvm_demo --eval PATH [--data DIR] [--quantize int8]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string root = data::FashionMNIST::kDefaultRoot, out = "fmnist_cnn.safetensors";
  std::optional<std::string> eval_path;
  std::optional<int64_t> max_steps;
  bool int8 = false;
  std::optional<DType> precision;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (i + 1 >= argc) return usage();
    const std::string value = argv[++i];
    if (arg == "--out") {
      out = value;
    } else if (arg == "--data") {
      root = value;
    } else if (arg == "--eval") {
      eval_path = value;
    } else if (arg == "--quantize") {
      if (value != "int8") return usage();
      int8 = true;
    } else if (arg == "--precision") {
      if (value == "bf16") precision = kBFloat16;
      else if (value == "f16") precision = kFloat16;
      else if (value != "float32") return usage();
    } else if (arg == "--steps") {
      char* end = nullptr;
      max_steps = std::strtoll(value.c_str(), &end, 10);
      if (*end != '\0' || *max_steps < 1) return usage();
    } else {
      return usage();
    }
  }
  try {
    return eval_path ? evaluate(root, *eval_path, int8) : train(root, out, max_steps, int8, precision);
  } catch (const Error& e) {
    std::cerr << "nnvm_demo: " << e.what() << "\n";
    return 1;
  }
}
