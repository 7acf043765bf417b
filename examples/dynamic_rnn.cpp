// Dynamic control flow, trained end to end: a GRU cell reads a batch of
// variable-length sequences and learns to output each sequence's sum. How many
// steps the forward loop runs is read from the data (.item() on the lengths),
// every batch has a different longest sequence, and sequences that have ended
// keep their state through where(); backward flows through however many steps
// ran. Prints the loss as it falls; exits 1 unless the last window's mean loss
// is below half the first's.
//
//   dynamic_rnn [--steps N] [--seed S]
#include <nnvm/nnvm.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

using namespace nnvm;

namespace {

constexpr int64_t kBatch = 32, kHidden = 32, kMaxLen = 20, kWindow = 25;

struct SequenceSumImpl : nn::Module {
  SequenceSumImpl()
      : nn::Module("SequenceSum"),
        cell(register_module("cell", nn::GRUCell(1, kHidden))),
        head(register_module("head", nn::Linear(kHidden, 1))) {}

  // x [batch, time], lengths int64 [batch] in 1..time; returns [batch].
  Tensor forward(const Tensor& x, const Tensor& lengths) {
    const int64_t steps = lengths.max().item<int64_t>();
    Tensor h;
    for (int64_t t = 0; t < steps; ++t) {
      const Tensor next = cell(x.select(1, t).unsqueeze(1), h);
      h = h.defined() ? where(lengths.gt(t).unsqueeze(1), next, h) : next;
    }
    return head(h).squeeze(1);
  }

  nn::GRUCell cell;
  nn::Linear head;
};
NNVM_MODULE(SequenceSum);

struct Batch {
  Tensor x, lengths, target;
};

// Values in [-1, 1); past its length a sequence holds noise the model must ignore.
Batch make_batch() {
  const int64_t time = randint(2, kMaxLen + 1, {1}).item<int64_t>();
  const Tensor x = rand({kBatch, time}) * 2 - 1;
  const Tensor lengths = randint(1, time + 1, {kBatch});
  const Tensor inside = arange(time, kInt64).unsqueeze(0).lt(lengths.unsqueeze(1));
  return {x, lengths, where(inside, x, 0.0).sum({1})};
}

// The integer after argv[i]; exits with a usage message when there is none.
int64_t parse_arg(int argc, char** argv, int& i) {
  char* end = nullptr;
  const long long value = i + 1 < argc ? std::strtoll(argv[i + 1], &end, 10) : 0;
  if (end == nullptr || end == argv[i + 1] || *end != '\0') {
    std::cerr << argv[i] << " needs an integer value\n";
    std::exit(2);
  }
  ++i;
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t steps = 400, seed = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--steps") {
      steps = parse_arg(argc, argv, i);
    } else if (arg == "--seed") {
      seed = parse_arg(argc, argv, i);
    } else {
      std::cerr << "usage: dynamic_rnn [--steps N] [--seed S]\n";
      return 2;
    }
  }
  if (steps < 2 * kWindow) {
    std::cerr << "--steps must be at least " << 2 * kWindow << "\n";
    return 2;
  }

  manual_seed(uint64_t(seed));
  SequenceSum model;
  optim::Adam optimizer(model->parameters(), optim::AdamOptions(1e-2));

  double window_sum = 0, first_window = 0, last_window = 0;
  for (int64_t step = 1; step <= steps; ++step) {
    const Batch batch = make_batch();
    const Tensor loss = mse_loss(model(batch.x, batch.lengths), batch.target);
    optimizer.zero_grad();
    loss.backward();
    optimizer.step();

    window_sum += loss.item<double>();
    if (step % kWindow == 0) {
      const double mean = window_sum / kWindow;
      if (step == kWindow) first_window = mean;
      last_window = mean;
      window_sum = 0;
      std::printf("step %4lld  mean loss %.4f\n", static_cast<long long>(step), mean);
    }
  }
  const bool fell = last_window < 0.5 * first_window;
  std::printf("loss %s from %.4f to %.4f\n", fell ? "fell" : "did not halve", first_window, last_window);
  return fell ? 0 : 1;
}
