// Each layer's forward against a reference computed in the test from the
// functional ops (or naive loops), with the layer's own parameters.
#include <cmath>

#include <gtest/gtest.h>

#include "nnvm/nnvm.h"
#include "reference.h"

namespace nnvm {
namespace {

namespace nn = nnvm::nn;

TEST(ApiLayers, Linear) {
  nn::Linear lin(3, 2);
  const Tensor x = testing::random({4, 3}, kFloat32, 1);
  const std::vector<double> xv = testing::values(x), w = testing::values(lin->weight), b = testing::values(lin->bias);
  std::vector<double> expected;
  for (int i = 0; i < 4; ++i)
    for (int o = 0; o < 2; ++o) {
      double acc = b[size_t(o)];
      for (int k = 0; k < 3; ++k) acc += xv[size_t(i * 3 + k)] * w[size_t(o * 3 + k)];
      expected.push_back(acc);
    }
  testing::expect_values(lin(x), expected, 1e-5, 1e-6);
  testing::expect_error([&] { lin(randn({4, 5})); }, {"linear", "[4, 5]"});
}

TEST(ApiLayers, Conv2dAndPools) {
  nn::Conv2d conv(nn::Conv2dOptions(2, 4, {3, 2}).stride(2).padding({1, 0}).dilation(1));
  const Tensor x = testing::random({2, 2, 7, 6}, kFloat32, 2);
  testing::expect_tensors_close(conv(x), conv2d(x, conv->weight, conv->bias, {2, 2}, {1, 0}, {1, 1}, 1));
  nn::Conv2d grouped(nn::Conv2dOptions(4, 2, 1).groups(2).bias(false));
  const Tensor x4 = testing::random({1, 4, 3, 3}, kFloat32, 3);
  testing::expect_tensors_close(grouped(x4), conv2d(x4, grouped->weight, {}, {1, 1}, {0, 0}, {1, 1}, 2));
  testing::expect_error([] { nn::Conv2d(nn::Conv2dOptions(3, 4, 3).groups(2)); }, {"Conv2d", "groups 2"});

  nn::MaxPool2d max_pool(nn::MaxPool2dOptions(3).stride(2).padding(1).ceil_mode(true));
  testing::expect_tensors_close(max_pool(x), max_pool2d(x, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true));
  nn::AvgPool2d avg_pool(nn::AvgPool2dOptions({2, 3}).count_include_pad(false).padding({1, 1}));
  testing::expect_tensors_close(avg_pool(x), avg_pool2d(x, {2, 3}, {2, 3}, {1, 1}, false, false));
  nn::Flatten flatten;
  EXPECT_EQ(flatten(x).sizes(), IntArrayRef({2, 2 * 7 * 6}));
  EXPECT_EQ(nn::Flatten(nn::FlattenOptions().start_dim(0).end_dim(1))(x).sizes(), IntArrayRef({4, 7, 6}));
}

TEST(ApiLayers, BatchNorm2dTrainAndEval) {
  nn::BatchNorm2d bn(nn::BatchNormOptions(3).momentum(0.2));
  {
    NoGradGuard no_grad;
    bn->weight.copy_(tensor<float>({1.0f, 2.0f, -1.0f}));
    bn->bias.copy_(tensor<float>({0.0f, 0.5f, 1.0f}));
  }
  const Tensor x = testing::random({2, 3, 2, 2}, kFloat32, 4);
  const std::vector<double> xv = testing::values(x), w = testing::values(bn->weight), b = testing::values(bn->bias);
  std::vector<double> mean(3, 0), var(3, 0);
  testing::for_each_index(x.sizes(), [&](const DimVector& i) { mean[size_t(i[1])] += xv[size_t(testing::broadcast_offset(i, x.sizes()))] / 8; });
  testing::for_each_index(x.sizes(), [&](const DimVector& i) {
    const double d = xv[size_t(testing::broadcast_offset(i, x.sizes()))] - mean[size_t(i[1])];
    var[size_t(i[1])] += d * d / 8;
  });
  std::vector<double> expected;
  testing::for_each_index(x.sizes(), [&](const DimVector& i) {
    const size_t c = size_t(i[1]);
    const double v = xv[size_t(testing::broadcast_offset(i, x.sizes()))];
    expected.push_back((v - mean[c]) / std::sqrt(var[c] + 1e-5) * w[c] + b[c]);
  });
  testing::expect_values(bn(x), expected, 1e-4, 1e-5);
  // Running statistics: the unbiased batch variance, mixed in with momentum 0.2.
  std::vector<double> rm, rv;
  for (size_t c = 0; c < 3; ++c) {
    rm.push_back(0.2 * mean[c]);
    rv.push_back(0.8 + 0.2 * var[c] * 8 / 7);
  }
  testing::expect_values(bn->running_mean, rm, 1e-5, 1e-6);
  testing::expect_values(bn->running_var, rv, 1e-5, 1e-6);
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);

  bn->eval();
  expected.clear();
  testing::for_each_index(x.sizes(), [&](const DimVector& i) {
    const size_t c = size_t(i[1]);
    const double v = xv[size_t(testing::broadcast_offset(i, x.sizes()))];
    expected.push_back((v - rm[c]) / std::sqrt(rv[c] + 1e-5) * w[c] + b[c]);
  });
  testing::expect_values(bn(x), expected, 1e-4, 1e-5);
  testing::expect_values(bn->running_mean, rm, 1e-5, 1e-6);  // evaluation leaves the statistics alone
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 1);
  testing::expect_error([&] { bn(randn({2, 3})); }, {"BatchNorm2d", "4-D", "[2, 3]"});
}

TEST(ApiLayers, LayerNormGroupNormEmbedding) {
  nn::LayerNorm ln(nn::LayerNormOptions({4}).eps(1e-3));
  {
    NoGradGuard no_grad;
    ln->weight.copy_(testing::random({4}, kFloat32, 5));
    ln->bias.copy_(testing::random({4}, kFloat32, 6));
  }
  const Tensor x = testing::random({3, 4}, kFloat32, 7);
  testing::expect_tensors_close(ln(x), layer_norm(x, {4}, ln->weight, ln->bias, 1e-3));
  testing::expect_values(nn::LayerNorm(std::vector<int64_t>{4})->weight, {1, 1, 1, 1});

  nn::GroupNorm gn(2, 4);
  const Tensor xg = testing::random({2, 4, 3}, kFloat32, 8);
  testing::expect_tensors_close(gn(xg), group_norm(xg, 2, gn->weight, gn->bias, 1e-5));
  testing::expect_error([] { nn::GroupNorm(3, 4); }, {"GroupNorm", "num_groups 3"});

  nn::Embedding emb(nn::EmbeddingOptions(5, 3).padding_idx(-1));
  EXPECT_EQ(emb->options.padding_idx(), 4);
  testing::expect_values(emb->weight[4], {0, 0, 0});
  const Tensor ids = tensor<int64_t>({4, 0, 2});
  const Tensor out = emb(ids);
  for (int64_t i = 0; i < 3; ++i)
    testing::expect_tensors_close(out[i], emb->weight[ids[i].item<int64_t>()], 0, 0);
}

TEST(ApiLayers, Activations) {
  const Tensor x = testing::random({3, 5}, kFloat32, 9);
  testing::expect_tensors_close(nn::ReLU()(x), x.relu());
  testing::expect_tensors_close(nn::GELU()(x), gelu(x));
  testing::expect_tensors_close(nn::GELU(nn::GELUOptions().approximate("tanh"))(x), gelu(x, "tanh"));
  testing::expect_tensors_close(nn::SiLU()(x), silu(x));
  testing::expect_tensors_close(nn::Tanh()(x), x.tanh());
}

// Each module's forward is the functional form with the module's options.
TEST(ApiLayers, ActivationModulesWithOptions) {
  namespace F = nn::functional;
  const Tensor x = testing::random({3, 5}, kFloat32, 12, -8, 8);
  testing::expect_tensors_close(nn::ReLU6()(x), x.clamp(0, 6));
  testing::expect_tensors_close(nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.3))(x), leaky_relu(x, 0.3));
  testing::expect_tensors_close(nn::ELU(nn::ELUOptions().alpha(0.7))(x), elu(x, 0.7));
  testing::expect_tensors_close(nn::SELU()(x), F::selu(x));
  testing::expect_tensors_close(nn::Hardtanh(nn::HardtanhOptions().min_val(-2).max_val(4))(x), x.clamp(-2, 4));
  testing::expect_tensors_close(nn::Softplus(nn::SoftplusOptions().beta(2).threshold(5))(x), softplus(x, 2, 5));
  testing::expect_tensors_close(nn::Sigmoid()(x), x.sigmoid());
  testing::expect_tensors_close(nn::Softmax(0)(x), softmax(x, 0));
  testing::expect_tensors_close(nn::LogSoftmax(nn::LogSoftmaxOptions(1))(x), log_softmax(x, 1));
  Tensor y = x.clone();
  const Tensor out = nn::ReLU(nn::ReLUOptions(true))(y);
  testing::expect_tensors_close(y, x.relu());
  testing::expect_tensors_close(out, x.relu());
  testing::expect_error([] { nn::Hardtanh(nn::HardtanhOptions().min_val(1).max_val(1)); },
                        {"Hardtanh", "min_val 1", "max_val 1"});

  nn::Sequential seq(nn::Linear(5, 4), nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.1)), nn::ELU(),
                     nn::Linear(4, 3), nn::LogSoftmax(1));
  EXPECT_EQ(seq->named_parameters().keys(),
            (std::vector<std::string>{"0.weight", "0.bias", "3.weight", "3.bias"}));
  const Tensor hidden = elu(leaky_relu(seq->at<nn::Linear>(0)->forward(x), 0.1));
  testing::expect_tensors_close(seq(x), log_softmax(seq->at<nn::Linear>(3)->forward(hidden), 1));
}

TEST(ApiLayers, Dropout2dTrainAndEval) {
  manual_seed(1);
  nn::Dropout2d drop(0.5);
  const Tensor x = ones({4, 8, 3, 3});
  const std::vector<double> y = testing::values(drop(x));
  int64_t dropped = 0;
  for (size_t channel = 0; channel < 32; ++channel) {
    dropped += y[channel * 9] == 0;
    for (size_t i = channel * 9; i < channel * 9 + 9; ++i) EXPECT_EQ(y[i], y[channel * 9]) << i;
  }
  EXPECT_GT(dropped, 4);
  EXPECT_LT(dropped, 28);
  drop->eval();
  testing::expect_tensors_close(drop(x), x, 0, 0);
  testing::expect_error([] { nn::Dropout2d(nn::Dropout2dOptions(-0.5)); }, {"Dropout2d", "-0.5"});
}

TEST(ApiLayers, ConvTranspose2d) {
  nn::ConvTranspose2d deconv(nn::ConvTranspose2dOptions(4, 6, {3, 2}).stride(2).padding({1, 0}).groups(2));
  EXPECT_EQ(deconv->weight.sizes(), IntArrayRef({4, 3, 3, 2}));
  EXPECT_EQ(deconv->named_parameters().keys(), (std::vector<std::string>{"weight", "bias"}));
  const Tensor x = testing::random({2, 4, 5, 5}, kFloat32, 13);
  const Tensor y = deconv(x);
  EXPECT_EQ(y.sizes(), IntArrayRef({2, 6, 9, 10}));
  testing::expect_tensors_close(y, conv_transpose2d(x, deconv->weight, deconv->bias, {2, 2}, {1, 0}, {0, 0}, 2));
  // output_size picks output_padding: 10 x 11 is one more row and column
  const std::vector<int64_t> size{10, 11};
  testing::expect_tensors_close(deconv->forward(x, size),
                                conv_transpose2d(x, deconv->weight, deconv->bias, {2, 2}, {1, 0}, {1, 1}, 2));
  const std::vector<int64_t> too_big{12, 11};
  testing::expect_error([&] { deconv->forward(x, too_big); }, {"ConvTranspose2d", "[12, 11]", "[9, 10]"});
  testing::expect_error([] { nn::ConvTranspose2d(0, 4, 3); }, {"ConvTranspose2d", "in_channels 0"});
  testing::expect_error([] { nn::ConvTranspose2d(nn::ConvTranspose2dOptions(2, 4, 3).groups(4)); },
                        {"ConvTranspose2d", "groups 4"});
}

TEST(ApiLayers, ShapeLayersInSequential) {
  nn::Sequential seq(nn::Identity(), nn::Flatten(), nn::Linear(12, 6), nn::Unflatten(nn::UnflattenOptions(1, {2, 3})),
                     nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({1, 1})));
  const Tensor x = testing::random({5, 3, 4}, kFloat32, 14);
  const Tensor flat = seq->at<nn::Linear>(2)->forward(x.flatten(1));
  testing::expect_tensors_close(seq->forward(x.unsqueeze(1)), flat.view({5, 2, 3}).mean({1, 2}, true));
  EXPECT_EQ(seq->named_parameters().keys(), (std::vector<std::string>{"2.weight", "2.bias"}));
}

TEST(ApiLayers, DropoutTrainAndEval) {
  nn::Dropout drop(0.25);
  const Tensor x = testing::random({4000}, kFloat32, 10, 0.5, 1.5);
  const std::vector<double> xv = testing::values(x), yv = testing::values(drop(x));
  int64_t zeros = 0;
  for (size_t i = 0; i < xv.size(); ++i) {
    if (yv[i] == 0) {
      ++zeros;
    } else {
      EXPECT_NEAR(yv[i], xv[i] / 0.75, 1e-5);
    }
  }
  EXPECT_NEAR(double(zeros) / 4000, 0.25, 0.03);
  drop->eval();
  testing::expect_tensors_close(drop(x), x, 0, 0);
  testing::expect_error([] { nn::Dropout(1.5); }, {"Dropout", "1.5"});
}

TEST(ApiLayers, Sequential) {
  nn::Sequential seq(nn::Linear(3, 4), nn::Tanh());
  seq->push_back("out", nn::Linear(4, 2));
  EXPECT_EQ(seq->named_parameters().keys(),
            (std::vector<std::string>{"0.weight", "0.bias", "out.weight", "out.bias"}));
  const Tensor x = testing::random({5, 3}, kFloat32, 11);
  const Tensor expected = seq->at<nn::Linear>(2)->forward(seq->at<nn::Linear>(0)->forward(x).tanh());
  testing::expect_tensors_close(seq(x), expected);
}

// Attention of one batch element, head by head, with 2-D ops only; `mask`
// [L, S] is added to the scores.
Tensor reference_attention(const nn::MultiheadAttentionImpl& mha, const Tensor& q, const Tensor& k, const Tensor& v,
                           const Tensor& mask) {
  const int64_t e = mha.options.embed_dim(), heads = mha.options.num_heads(), d = e / heads;
  std::vector<Tensor> outs;
  for (int64_t h = 0; h < heads; ++h) {
    auto proj = [&](const Tensor& x, int64_t which) {
      const Tensor w = mha.in_proj_weight.narrow(0, which * e + h * d, d);
      const Tensor b = mha.in_proj_bias.narrow(0, which * e + h * d, d);
      return matmul(x, w.t()) + b;
    };
    Tensor scores = matmul(proj(q, 0), proj(k, 1).t()) / std::sqrt(double(d));
    if (mask.defined()) scores = scores + mask;
    outs.push_back(matmul(softmax(scores, -1), proj(v, 2)));
  }
  return matmul(cat(outs, 1), mha.out_proj->weight.t()) + mha.out_proj->bias;
}

TEST(ApiLayers, MultiheadAttention) {
  manual_seed(3);
  nn::MultiheadAttention mha(nn::MultiheadAttentionOptions(6, 2).batch_first(true));
  {
    NoGradGuard no_grad;  // the default biases are zero: make them matter
    mha->in_proj_bias.copy_(testing::random({18}, kFloat32, 12));
    mha->out_proj->bias.copy_(testing::random({6}, kFloat32, 13));
  }
  const int64_t b = 2, l = 3, s = 4;
  const Tensor q = testing::random({b, l, 6}, kFloat32, 14), k = testing::random({b, s, 6}, kFloat32, 15),
               v = testing::random({b, s, 6}, kFloat32, 16);
  const auto [out, weights] = mha(q, k, v);
  EXPECT_EQ(weights.sizes(), IntArrayRef({b, l, s}));
  for (int64_t i = 0; i < b; ++i)
    testing::expect_tensors_close(out[i], reference_attention(*mha, q[i], k[i], v[i], {}), 1e-4, 1e-5);
  testing::expect_values(weights.sum({-1}), std::vector<double>(size_t(b * l), 1.0), 1e-5, 1e-5);

  // A masked key is the same as a missing key.
  const Tensor kpm = tensor(std::vector<bool>{false, false, false, true, false, false, false, false}, IntArrayRef({b, s}));
  const Tensor masked = std::get<0>(mha(q, k, v, kpm));
  testing::expect_tensors_close(masked[0], reference_attention(*mha, q[0], k[0].narrow(0, 0, 3), v[0].narrow(0, 0, 3), {}),
                                1e-4, 1e-5);
  testing::expect_tensors_close(masked[1], out[1], 1e-5, 1e-6);

  // A bool attn_mask hides pairs; a float one is added.
  const Tensor bool_mask = triu(ones({l, s}, kBool), 1);
  const Tensor float_mask = testing::random({l, s}, kFloat32, 17);
  const Tensor with_bool = std::get<0>(mha(q, k, v, Tensor(), false, bool_mask));
  const Tensor with_float = std::get<0>(mha(q, k, v, Tensor(), false, float_mask));
  const Tensor neg_inf = zeros({l, s}).masked_fill(bool_mask, -INFINITY);
  for (int64_t i = 0; i < b; ++i) {
    testing::expect_tensors_close(with_bool[i], reference_attention(*mha, q[i], k[i], v[i], neg_inf), 1e-4, 1e-5);
    testing::expect_tensors_close(with_float[i], reference_attention(*mha, q[i], k[i], v[i], float_mask), 1e-4, 1e-5);
  }

  // Sequence-first layout: the same numbers, transposed.
  nn::MultiheadAttention seq_first(6, 2);
  seq_first->load_state_dict(mha->state_dict());
  const Tensor out_sf = std::get<0>(seq_first(q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)));
  testing::expect_tensors_close(out_sf.transpose(0, 1), out, 1e-5, 1e-6);
  EXPECT_EQ(mha->named_parameters().keys(),
            (std::vector<std::string>{"in_proj_weight", "in_proj_bias", "out_proj.weight", "out_proj.bias"}));
  testing::expect_error([&] { mha(q, k, v, Tensor(), true, ones({2, 2}, kBool)); }, {"MultiheadAttention", "attn_mask", "[2, 2]"});
  testing::expect_error([] { nn::MultiheadAttention(6, 4); }, {"MultiheadAttention", "num_heads 4"});
}

TEST(ApiLayers, TransformerEncoderLayer) {
  // libtorch's activations: the tokens kReLU and kGELU, or any function
  const std::function<Tensor(const Tensor&)> tanh_fn = [](const Tensor& t) { return t.tanh(); };
  const std::vector<std::pair<nn::TransformerActivation, std::function<Tensor(const Tensor&)>>> activations = {
      {kReLU, [](const Tensor& t) { return t.relu(); }},
      {kGELU, [](const Tensor& t) { return gelu(t); }},
      {tanh_fn, tanh_fn}};
  for (const bool norm_first : {false, true}) {
    for (const auto& [activation, reference] : activations) {
      nn::TransformerEncoderLayer layer(nn::TransformerEncoderLayerOptions(8, 2)
                                            .dim_feedforward(16)
                                            .batch_first(true)
                                            .norm_first(norm_first)
                                            .activation(activation));
      layer->eval();
      const Tensor x = testing::random({2, 5, 8}, kFloat32, 18);
      const Tensor kpm = zeros({2, 5}, kBool);
      auto sa = [&](const Tensor& t) { return std::get<0>(layer->self_attn(t, t, t)); };
      auto ff = [&](const Tensor& t) {
        const Tensor h = layer->linear1(t);
        return layer->linear2(reference(h));
      };
      auto ln1 = [&](const Tensor& t) { return layer_norm(t, {8}, layer->norm1->weight, layer->norm1->bias); };
      auto ln2 = [&](const Tensor& t) { return layer_norm(t, {8}, layer->norm2->weight, layer->norm2->bias); };
      Tensor expected;
      if (norm_first) {
        const Tensor h = x + sa(ln1(x));
        expected = h + ff(ln2(h));
      } else {
        const Tensor h = ln1(x + sa(x));
        expected = ln2(h + ff(h));
      }
      testing::expect_tensors_close(layer(x, Tensor(), kpm), expected, 1e-4, 1e-5);
    }
  }
  nn::TransformerEncoderLayer layer(8, 2);
  EXPECT_EQ(layer->named_parameters().size(), 12u);
  EXPECT_EQ(layer->num_parameters(), (3 * 8 * 8 + 3 * 8) + (8 * 8 + 8) + (8 * 2048 + 2048) + (2048 * 8 + 8) + 4 * 8);
  testing::expect_error(
      [] {
        nn::TransformerEncoderLayer(
            nn::TransformerEncoderLayerOptions(8, 2).activation(std::function<Tensor(const Tensor&)>()));
      },
      {"TransformerEncoderLayer", "empty function", "kReLU, kGELU or a callable"});
}

TEST(ApiLayers, TransformerEncoderStacksCopiesOfTheLayer) {
  nn::TransformerEncoderLayer prototype(nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0));
  nn::TransformerEncoder encoder(nn::TransformerEncoderOptions(prototype, 3));
  EXPECT_EQ(encoder->named_parameters().size(), 3 * 12u);
  EXPECT_TRUE(encoder->named_parameters().contains("layers.2.self_attn.in_proj_weight"));
  // each layer starts as a copy of the prototype, in storage of its own
  auto first = encoder->layers[0]->as<nn::TransformerEncoderLayer>();
  testing::expect_tensors_close(first->linear1->weight, prototype->linear1->weight, 0, 0);
  EXPECT_FALSE(first->linear1->weight.is_same(prototype->linear1->weight));

  const Tensor x = testing::random({5, 2, 8}, kFloat32, 19);
  const Tensor mask = triu(full({5, 5}, -INFINITY), 1);
  Tensor expected = x;
  for (const auto& layer : *encoder->layers) expected = layer->as<nn::TransformerEncoderLayer>()->forward(expected, mask);
  testing::expect_tensors_close(encoder(x, mask), expected, 0, 0);
  EXPECT_EQ(nn::TransformerEncoder(prototype, 2)->layers->size(), 2u);
  EXPECT_TRUE(encoder->norm.is_empty());
  testing::expect_error([&] { nn::TransformerEncoder(prototype, 0); }, {"TransformerEncoder", "num_layers", "0"});
}

// libtorch's TransformerEncoderOptions(layer, n).norm(AnyModule(LayerNorm(...))): the stack, then the norm.
TEST(ApiLayers, TransformerEncoderFinalNorm) {
  nn::TransformerEncoderLayer prototype(nn::TransformerEncoderLayerOptions(8, 2).dim_feedforward(16).dropout(0.0));
  nn::LayerNorm final_norm(nn::LayerNormOptions({8}).eps(1e-6));
  final_norm->weight.detach().uniform_(0.5, 1.5);
  nn::TransformerEncoder encoder(nn::TransformerEncoderOptions(prototype, 2).norm(nn::AnyModule(final_norm)));
  // the norm is the encoder's own copy, under PyTorch's name
  EXPECT_EQ(encoder->named_parameters().size(), 2 * 12u + 2);
  EXPECT_TRUE(encoder->named_parameters().contains("norm.weight"));
  auto& norm = encoder->norm.get<nn::LayerNorm>();
  EXPECT_FALSE(norm.weight.is_same(final_norm->weight));
  testing::expect_tensors_close(norm.weight, final_norm->weight, 0, 0);
  EXPECT_EQ(norm.options.eps(), 1e-6);

  const Tensor x = testing::random({5, 2, 8}, kFloat32, 20);
  Tensor expected = x;
  for (const auto& layer : *encoder->layers) expected = layer->as<nn::TransformerEncoderLayer>()->forward(expected);
  expected = layer_norm(expected, {8}, final_norm->weight, final_norm->bias, 1e-6);
  testing::expect_tensors_close(encoder(x), expected, 1e-5, 1e-6);

  // AnyModule: forward without the type, forward<Tensor> as libtorch spells it, errors for misuse
  nn::AnyModule any(final_norm);
  testing::expect_tensors_close(any.forward<Tensor>(x), final_norm(x), 0, 0);
  testing::expect_error([] { nn::AnyModule().forward(ones({2})); }, {"AnyModule", "empty"});
  testing::expect_error([&] { any.get<nn::Linear>(); }, {"AnyModule", "holds a LayerNorm"});
  testing::expect_error([] { nn::AnyModule(nn::Sequential(nn::Linear(2, 2))).clone(); },
                        {"AnyModule", "clone of a Sequential", "options"});
}

TEST(ApiLayers, GRUCellAndLSTMCell) {
  const int64_t in = 3, hidden = 4;
  const Tensor x = testing::random({2, in}, kFloat32, 19), h = testing::random({2, hidden}, kFloat32, 20),
               c = testing::random({2, hidden}, kFloat32, 21);
  auto gate = [&](const nn::RNNCellBase& cell, int64_t g, const Tensor& input, const Tensor& state, bool hh) {
    const Tensor w = (hh ? cell.weight_hh : cell.weight_ih).narrow(0, g * hidden, hidden);
    const Tensor b = (hh ? cell.bias_hh : cell.bias_ih).narrow(0, g * hidden, hidden);
    return matmul(hh ? state : input, w.t()) + b;
  };
  nn::GRUCell gru(in, hidden);
  {
    const Tensor r = (gate(*gru, 0, x, h, false) + gate(*gru, 0, x, h, true)).sigmoid();
    const Tensor z = (gate(*gru, 1, x, h, false) + gate(*gru, 1, x, h, true)).sigmoid();
    const Tensor n = (gate(*gru, 2, x, h, false) + r * gate(*gru, 2, x, h, true)).tanh();
    testing::expect_tensors_close(gru(x, h), (1 - z) * n + z * h, 1e-5, 1e-6);
    const Tensor h0 = zeros({2, hidden});
    testing::expect_tensors_close(gru(x), gru(x, h0));
    testing::expect_tensors_close(gru(x[0], h[0]), gru(x, h)[0], 1e-6, 1e-7);
  }
  nn::LSTMCell lstm(in, hidden);
  {
    auto g = [&](int64_t k) { return gate(*lstm, k, x, h, false) + gate(*lstm, k, x, h, true); };
    const Tensor c_next = g(1).sigmoid() * c + g(0).sigmoid() * g(2).tanh();
    const Tensor h_next = g(3).sigmoid() * c_next.tanh();
    const auto [h1, c1] = lstm(x, std::make_tuple(h, c));
    testing::expect_tensors_close(h1, h_next, 1e-5, 1e-6);
    testing::expect_tensors_close(c1, c_next, 1e-5, 1e-6);
  }
  EXPECT_EQ(lstm->weight_ih.sizes(), IntArrayRef({16, 3}));
  EXPECT_LE(lstm->weight_hh.abs().max().item<double>(), 0.5);
  testing::expect_error([&] { gru(x, zeros({3, hidden})); }, {"GRUCell", "hx", "[3, 4]"});
  testing::expect_error([&] { gru(zeros({2, 5})); }, {"GRUCell", "[2, 5]"});
}

}  // namespace
}  // namespace nnvm
