// A small transformer learns to reverse sequences of digits. It reads
// "d1 d2 ... dn SEP" and writes "dn ... d2 d1" one token at a time, as a
// decoder-only language model: token embeddings plus sinusoidal positional
// encodings, a TransformerEncoder under a causal mask (nnvm::triu), a
// linear read-out, Adam on the cross-entropy of the answer tokens. At the end
// it reverses unseen sequences by greedy decoding.
//
//   libtorch_transformer           sequences of 8 digits, 1500 steps
//   libtorch_transformer --quick   sequences of 4 digits, 300 steps
#include <nnvm/nnvm.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <limits>
#include <utility>

using nnvm::indexing::None;
using nnvm::indexing::Slice;
namespace F = nnvm::nn::functional;

constexpr int64_t kDigits = 10;             // tokens 0..9
constexpr int64_t kSeparator = kDigits;     // the token between question and answer
constexpr int64_t kVocab = kDigits + 1;

// pe[pos, 0, 2i] = sin(pos / 10000^(2i/d)), pe[pos, 0, 2i+1] = cos(...), as in "Attention Is All You Need".
struct PositionalEncodingImpl : nnvm::nn::Module {
  PositionalEncodingImpl(int64_t d_model, int64_t max_len) {
    auto position = nnvm::arange(max_len, nnvm::kFloat).unsqueeze(1);
    auto div_term = nnvm::exp(nnvm::arange(0, d_model, 2, nnvm::kFloat) * (-std::log(10000.0) / d_model));
    pe = nnvm::zeros({max_len, 1, d_model});
    pe.index_put_({Slice(), 0, Slice(0, None, 2)}, nnvm::sin(position * div_term));
    pe.index_put_({Slice(), 0, Slice(1, None, 2)}, nnvm::cos(position * div_term));
    register_buffer("pe", pe);
  }

  // x [S, N, E]
  nnvm::Tensor forward(const nnvm::Tensor& x) { return x + pe.index({Slice(None, x.size(0))}); }

  nnvm::Tensor pe;
};
NNVM_MODULE(PositionalEncoding);

struct TransformerModelImpl : nnvm::nn::Module {
  TransformerModelImpl(int64_t d_model, int64_t nhead, int64_t num_layers, int64_t dim_feedforward, int64_t max_len)
      : embedding(register_module("embedding", nnvm::nn::Embedding(kVocab, d_model))),
        pos_encoder(register_module("pos_encoder", PositionalEncoding(d_model, max_len))),
        encoder(register_module(
            "encoder", nnvm::nn::TransformerEncoder(nnvm::nn::TransformerEncoderOptions(
                           nnvm::nn::TransformerEncoderLayerOptions(d_model, nhead)
                               .dim_feedforward(dim_feedforward)
                               .dropout(0.0),
                           num_layers)))),
        decoder(register_module("decoder", nnvm::nn::Linear(d_model, kVocab))),
        d_model(d_model) {}

  // tokens [S, N] -> logits [S, N, kVocab]; position s sees positions 0..s only.
  nnvm::Tensor forward(const nnvm::Tensor& tokens) {
    const int64_t size = tokens.size(0);
    auto mask = nnvm::triu(nnvm::full({size, size}, -std::numeric_limits<float>::infinity()), /*diagonal=*/1);
    auto x = pos_encoder(embedding(tokens) * std::sqrt(static_cast<double>(d_model)));
    return decoder(encoder(x, mask));
  }

  nnvm::nn::Embedding embedding;
  PositionalEncoding pos_encoder;
  nnvm::nn::TransformerEncoder encoder;
  nnvm::nn::Linear decoder;
  int64_t d_model;
};
NNVM_MODULE(TransformerModel);

// digits [n, N] -> the model's input [2n, N]: the digits, the separator and
// the reversed digits but the last (each answer token is predicted from those before it).
nnvm::Tensor make_input(const nnvm::Tensor& digits) {
  const int64_t n = digits.size(0);
  auto separator = nnvm::full({1, digits.size(1)}, kSeparator, nnvm::kLong);
  return nnvm::cat({digits, separator, digits.flip({0}).slice(0, 0, n - 1)}, 0);
}

// Reverses each column of digits [n, N] by greedy decoding, one token per forward pass.
nnvm::Tensor reverse(TransformerModel& model, const nnvm::Tensor& digits) {
  nnvm::NoGradGuard no_grad;
  const int64_t n = digits.size(0);
  auto sequence = nnvm::cat({digits, nnvm::full({1, digits.size(1)}, kSeparator, nnvm::kLong)}, 0);
  for (int64_t i = 0; i < n; ++i) {
    auto next = model(sequence)[-1].argmax(-1).unsqueeze(0);
    sequence = nnvm::cat({sequence, next}, 0);
  }
  return sequence.slice(0, n + 1);
}

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  nnvm::manual_seed(0);
  nnvm::Device device(nnvm::cuda::is_available() ? nnvm::kCPU : nnvm::kCPU);

  const int64_t length = quick ? 4 : 8;
  const int64_t steps = quick ? 300 : 1500;
  const int64_t batch_size = 64;

  TransformerModel model(/*d_model=*/64, /*nhead=*/4, /*num_layers=*/2, /*dim_feedforward=*/128,
                         /*max_len=*/2 * length);
  model->to(device);
  nnvm::optim::Adam optimizer(model->parameters(), nnvm::optim::AdamOptions(2e-3));
  std::cout << "TransformerModel with " << model->parameters().size() << " parameter tensors, sequences of "
            << length << " digits" << std::endl;

  double first_loss = 0, running_loss = 0;
  for (int64_t step = 1; step <= steps; ++step) {
    auto digits = nnvm::randint(kDigits, {length, batch_size}, nnvm::kLong).to(device);
    auto logits = model(make_input(digits));
    // Only the answer positions are scored: position n-1+i predicts the i-th reversed digit.
    auto answer = logits.slice(0, length, 2 * length);
    auto loss = F::cross_entropy(answer.reshape({-1, kVocab}), digits.flip({0}).reshape({-1}));

    optimizer.zero_grad();
    loss.backward();
    nnvm::nn::utils::clip_grad_norm_(model->parameters(), 1.0);
    optimizer.step();

    running_loss += loss.item<double>();
    if (step == 1) first_loss = loss.item<double>();
    if (step % (steps / 10) == 0) {
      std::cout << "step " << std::setw(5) << step << "  loss " << std::fixed << std::setprecision(4)
                << running_loss / (steps / 10) << std::endl;
      running_loss = 0;
    }
  }

  model->eval();
  auto digits = nnvm::randint(kDigits, {length, 1000}, nnvm::kLong).to(device);
  auto correct = reverse(model, digits).eq(digits.flip({0}));
  const double token_accuracy = correct.to(nnvm::kFloat).mean().item<double>();
  const double sequence_accuracy = correct.all(0).to(nnvm::kFloat).mean().item<double>();
  std::cout << "greedy decoding of 1000 unseen sequences: " << token_accuracy * 100 << "% of the digits, "
            << sequence_accuracy * 100 << "% of the sequences right (chance: "
            << 100.0 / kDigits << "% of the digits)" << std::endl;

  auto example = digits.index({Slice(), 0});
  std::cout << "example:\n" << example.view({1, -1}) << "\nreversed by the model:\n"
            << reverse(model, example.unsqueeze(1)).view({1, -1}) << std::endl;

  // The full run must reverse most sequences whole; the quick one must beat chance clearly.
  const bool learned = quick ? token_accuracy > 0.5 : sequence_accuracy > 0.8;
  if (!learned) std::cerr << "the model did not learn to reverse (first loss " << first_loss << ")" << std::endl;
  return learned ? EXIT_SUCCESS : EXIT_FAILURE;
}
