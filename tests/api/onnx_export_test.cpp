// nnvm::trace_graph and save_onnx of a function: what a function records is
// written as ONNX (checked by libonnx's checker), loads back with load_model
// and computes the function on other inputs; ops with no ONNX form are errors.
#include <cmath>
#include <filesystem>

#include <gtest/gtest.h>

#include "nnvm/nnvm.h"
#include "reference.h"

namespace nnvm {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;
using testing::expect_tensors_close;

// Saves fn traced on `example`, loads the file back, and checks that it
// computes what fn computes on `other` (inputs of the same dtypes and shapes).
void expect_round_trip(const TracedFunction& fn, const std::vector<Tensor>& example,
                       const std::vector<Tensor>& other, const std::string& name) {
  const fs::path file = fs::temp_directory_path() / ("nnvm_export_" + name + ".onnx");
  save_onnx(fn, example, file.string());
  Model back = load_model(file.string());
  fs::remove(file);
  ASSERT_EQ(back.inputs().size(), example.size()) << name;
  for (size_t i = 0; i < example.size(); ++i) {
    EXPECT_EQ(back.inputs()[i].name, "input_" + std::to_string(i));
    EXPECT_EQ(back.inputs()[i].dtype, example[i].dtype());
  }
  NoGradGuard no_grad;
  const std::vector<Tensor> want = fn(other), got = back(other);
  ASSERT_EQ(got.size(), want.size()) << name;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].dtype(), want[i].dtype()) << name << " output " << i;
    expect_tensors_close(got[i], want[i], 1e-5, 1e-6);
  }
}

void expect_round_trip(const TracedFunction& fn, const std::vector<Tensor>& example, const std::string& name) {
  std::vector<Tensor> other;
  for (const Tensor& x : example) other.push_back(randn_like(x));
  expect_round_trip(fn, example, other, name);
}

TEST(OnnxExport, Mlp) {
  manual_seed(0);
  nn::Sequential mlp(nn::Linear(8, 16), nn::GELU(), nn::Linear(16, 16), nn::ReLU(), nn::Linear(16, 3));
  auto fn = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{softmax(mlp->forward(in[0]), -1)}; };
  expect_round_trip(fn, {randn({4, 8})}, "mlp");
  // The graph: one input, the weights as initializers, in ONNX's ops.
  Graph g = trace_graph(fn, {randn({4, 8})});
  EXPECT_EQ(g.inputs.size(), 1u);
  EXPECT_GE(g.initializers.size(), 6u);
  EXPECT_TRUE(unsupported_ops(g).empty());
}

TEST(OnnxExport, Cnn) {
  manual_seed(1);
  Tensor w1 = randn({4, 1, 3, 3}) * 0.3, b1 = randn({4}), w2 = randn({8, 4, 3, 3}) * 0.2, b2 = randn({8});
  Tensor fw = randn({10, 8 * 2 * 2}) * 0.1, fb = randn({10});
  auto fn = [&](const std::vector<Tensor>& in) {
    Tensor h = max_pool2d(conv2d(in[0], w1, b1, {1, 1}, {1, 1}).relu(), {2, 2});
    h = avg_pool2d(conv2d(h, w2, b2, {1, 1}, {1, 1}).relu(), {2, 2});
    return std::vector<Tensor>{log_softmax(linear(h.flatten(1), fw, fb), 1)};
  };
  expect_round_trip(fn, {randn({2, 1, 8, 8})}, "cnn");
}

TEST(OnnxExport, AttentionBlock) {
  manual_seed(2);
  const int64_t b = 2, t = 5, d = 8, heads = 2, hd = d / heads;
  Tensor wq = randn({d, d}) * 0.3, wk = randn({d, d}) * 0.3, wv = randn({d, d}) * 0.3, wo = randn({d, d}) * 0.3;
  Tensor ln_w = randn({d}), ln_b = randn({d}), w1 = randn({2 * d, d}) * 0.3, w2 = randn({d, 2 * d}) * 0.3;
  auto split = [&](const Tensor& x) { return x.view({b, t, heads, hd}).transpose(1, 2); };
  auto fn = [&](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];
    Tensor q = split(linear(x, wq)), k = split(linear(x, wk)), v = split(linear(x, wv));
    Tensor att = softmax(q.matmul(k.transpose(-2, -1)) * (1.0 / std::sqrt(double(hd))) + in[1], -1);
    Tensor y = linear(att.matmul(v).transpose(1, 2).reshape({b, t, d}), wo) + x;
    y = layer_norm(y, {d}, ln_w, ln_b);
    return std::vector<Tensor>{y + linear(gelu(linear(y, w1), "tanh"), w2)};
  };
  Tensor mask = zeros({t, t}).masked_fill(ones({t, t}).triu(1).to(kBool), -1e9);
  expect_round_trip(fn, {randn({b, t, d}), mask}, {randn({b, t, d}), mask}, "attention");
}

TEST(OnnxExport, BroadcastingScalarsAndSizesOne) {
  manual_seed(3);
  auto fn = [](const std::vector<Tensor>& in) {
    const Tensor &x = in[0], &y = in[1], &i = in[2];
    Tensor z = (x + y) * 2.5 - y / 3;  // [3, 1] with [1, 4]
    Tensor w = where(z > 0, z.pow(2), (1 - z).clamp(-1, 1));
    Tensor s = (i + 1.5).sum({0}, true) + x.sum() + z.mean({1});  // int64 with a float Scalar
    return std::vector<Tensor>{w, s, x.exp().sqrt() + in[3], (i * 2).to(kFloat32)};
  };
  expect_round_trip(fn, {randn({3, 1}), randn({1, 4}), tensor<int64_t>({1, 2, 3}).view({3, 1}), randn({1, 1})},
                    {randn({3, 1}), randn({1, 4}), tensor<int64_t>({4, -2, 0}).view({3, 1}), randn({1, 1})},
                    "broadcasting");
}

// The other mapped ops, each once, in float32 and with int64 and bool operands.
TEST(OnnxExport, MoreOps) {
  manual_seed(7);
  Tensor idx = tensor<int64_t>({2, 0, 1});
  Tensor bn_mean = randn({3}), bn_var = rand({3}) + 0.5, bn_w = randn({3}), bn_b = randn({3});
  auto fn = [&](const std::vector<Tensor>& in) {
    const Tensor &x = in[0], &y = in[1], &i = in[2];  // [2, 3], [2, 3], int64 [2, 3]
    Tensor p = x.abs() + 0.5;
    Tensor cmp = x.eq(y).logical_or(x.ne(y).logical_and(x.le(y))).logical_xor(x.ge(0.5)).logical_or(x.lt(y));
    Tensor act = leaky_relu(x, 0.2) + silu(y) + x.sigmoid() * y.tanh() - x.neg().relu() + p.rsqrt() + p.log1p() +
                 x.expm1() + x.square() + p.sqrt().reciprocal() + x.sign() * x.floor() + x.ceil() + x.round() +
                 x.sin() + x.cos() + x.erf() + p.log() + x.maximum(y) + x.minimum(y) + gelu(x) + x.clamp(-0.5, 0.5);
    Tensor red = x.amax({1}) + x.amin({1}, false) + p.prod({1}) + x.logsumexp({1}) + x.max() + x.min() +
                 i.sum({1}).to(kFloat32) + i.to(kFloat32).mean({1});
    Tensor idxs = x.index_select(1, idx) + x.gather(1, i.remainder(3).clamp(0, 2)) +
                  x.masked_fill(x.isnan().logical_or(x.gt(1.0)), 0.25) + where(cmp, x, y) + (i / 2) +
                  pow(2.0, x) + (i + 1).pow(2);
    Tensor img = x.view({1, 1, 2, 3}).expand({2, 3, 2, 3}) * 1;
    Tensor bn = batch_norm(img, bn_mean, bn_var, bn_w, bn_b, false, 0.1, 1e-5);
    Tensor pooled = adaptive_avg_pool2d(bn, {1, 1}) + adaptive_avg_pool2d(bn, {2, 1}).mean({2}, true);
    return std::vector<Tensor>{act, red, idxs, cat({x, y}, 1), stack({x, y}, -1), pooled,
                               x.isinf().logical_not(), (i > 1).to(kInt64)};
  };
  Tensor i = tensor<int64_t>({1, -2, 3, 0, 5, 7}).view({2, 3});
  expect_round_trip(fn, {randn({2, 3}), randn({2, 3}), i}, {randn({2, 3}), randn({2, 3}), i + 3}, "more");
}

TEST(OnnxExport, ViewsAndInPlaceWrites) {
  manual_seed(4);
  auto fn = [](const std::vector<Tensor>& in) {
    const Tensor& x = in[0];  // [4, 6]
    Tensor a = x.index({indexing::Slice(1, 3), indexing::Slice(indexing::None, indexing::None, 2)}) * 1;  // a strided slice
    Tensor b = x.t().matmul(x) + x[2].unsqueeze(0).expand({6, 6});
    Tensor c = x.clone();
    c.index({indexing::Slice(), 0}).mul_(-3);  // a write through a view
    c.add_(1);
    const Tensor flat = x.view({24});
    return std::vector<Tensor>{a, b, c, flat.index({indexing::Slice(3, 20, 4)}) + 0,
                               flat.index({indexing::Slice(indexing::None, indexing::None, 5)}) + 0};  // a Gather
  };
  expect_round_trip(fn, {randn({4, 6})}, "views");
}

TEST(OnnxExport, OutputsThatAreInputsOrParameters) {
  manual_seed(5);
  Tensor p = randn({2, 3});
  auto fn = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0], p, in[0], in[0] * p}; };
  expect_round_trip(fn, {randn({2, 3})}, "identity");
  // A parameter is an initializer with its current value.
  Graph g = trace_graph(fn, {randn({2, 3})});
  ASSERT_FALSE(g.initializers.empty());
  EXPECT_TRUE(allclose(g.initializers[0].second, p, 0.0, 0.0));
}

TEST(OnnxExport, RunsTracedWhateverTheCallersMode) {
  manual_seed(6);
  Tensor w = randn({3, 3});
  auto fn = [&](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0].matmul(w).relu()}; };
  EagerGuard eager;
  expect_round_trip(fn, {randn({2, 3})}, "eager");
  EXPECT_FALSE(is_recording());
}

TEST(OnnxExport, OpsWithNoOnnxFormAreErrors) {
  const fs::path file = fs::temp_directory_path() / "nnvm_export_unmapped.onnx";
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0].cumsum(1) * 2}; };
  expect_error([&] { save_onnx(fn, {randn({2, 3})}, file.string()); },
               {"cannot export op 'cumsum'", "float32[2, 3]", "no ONNX form", "Exportable ops:"});
  EXPECT_FALSE(fs::exists(file));
  Tensor p = randn({3});
  auto writes = [&](const std::vector<Tensor>& in) {
    p.add_(in[0]);
    return std::vector<Tensor>{p};
  };
  expect_error([&] { trace_graph(writes, {randn({3})}); }, {"add", "did not compute"});
  // The thread records as before afterwards.
  Tensor x = randn({2}) + 1;
  EXPECT_EQ(x.sizes()[0], 2);
}

}  // namespace
}  // namespace nnvm
