// Tensor metadata, creation, data access, printing and the custom-op API.
#include <chrono>
#include <algorithm>
#include <sstream>
#include <thread>

#include "absl/strings/str_format.h"
#include "reference.h"

namespace nnvm {
namespace {

using testing::expect_error;
using testing::expect_values;

TEST(Tensor, CreationShapesAndValues) {
  const Tensor z = zeros({2, 3});
  EXPECT_EQ(z.dtype(), kFloat32);
  EXPECT_EQ(z.sizes(), IntArrayRef({2, 3}));
  EXPECT_EQ(z.strides(), IntArrayRef({3, 1}));
  EXPECT_TRUE(z.is_contiguous());
  expect_values(z, {0, 0, 0, 0, 0, 0});
  expect_values(ones({2}, kInt32), {1, 1});
  EXPECT_EQ(ones({2}, kInt32).dtype(), kInt32);
  expect_values(full({2}, 2.5), {2.5, 2.5});
  EXPECT_EQ(full({2}, 7).dtype(), kInt64);
  EXPECT_EQ(full({2}, true).dtype(), kBool);
  expect_values(arange(5), {0, 1, 2, 3, 4});
  EXPECT_EQ(arange(5).dtype(), kInt64);
  expect_values(arange(1, 2, 0.25), {1, 1.25, 1.5, 1.75});
  EXPECT_EQ(arange(1, 2, 0.25).dtype(), kFloat32);
  expect_values(arange(5, 0, -2), {5, 3, 1});
  expect_values(linspace(0, 1, 5), {0, 0.25, 0.5, 0.75, 1});
  EXPECT_EQ(linspace(-1, 1, 7).to_vector<float>().back(), 1.0f);
  EXPECT_EQ(linspace(0, 1, 0).numel(), 0);
  expect_values(eye(2, 3), {1, 0, 0, 0, 1, 0});
  expect_values(eye(2, std::nullopt, kInt64), {1, 0, 0, 1});
  EXPECT_EQ(empty({0, 4}).numel(), 0);
  EXPECT_EQ(scalar_tensor(3.5).dim(), 0);
  EXPECT_EQ(scalar_tensor(3.5).item<double>(), 3.5);
  expect_values(zeros_like(ones({2, 2}, kInt8)), {0, 0, 0, 0});
  EXPECT_EQ(zeros_like(ones({2, 2}, kInt8)).dtype(), kInt8);
  EXPECT_EQ(full_like(ones({3}), 4, kFloat64).dtype(), kFloat64);
  EXPECT_EQ(empty_like(ones({2, 5})).sizes(), IntArrayRef({2, 5}));
  expect_values(ones_like(zeros({2})), {1, 1});
}

// The recorder trusts a TensorImpl's layout_id to name its shape and
// strides (trace/recorder.cpp): no two TensorImpls share one, a copy of one
// is another object, and set_data, which changes the layout, takes a new one.
TEST(Tensor, LayoutIdsAreNeverShared) {
  const Tensor a = zeros({2, 3});
  const Tensor same = a;  // the same TensorImpl
  EXPECT_EQ(same.impl()->layout_id, a.impl()->layout_id);
  const Tensor row = a[0], copy(std::make_shared<TensorImpl>(*a.impl()));
  EXPECT_NE(row.impl()->layout_id, a.impl()->layout_id);
  EXPECT_NE(copy.impl()->layout_id, a.impl()->layout_id);
  const uint64_t before = a.impl()->layout_id;
  a.set_data(zeros({3}));
  EXPECT_NE(a.impl()->layout_id, before);
  EXPECT_NE(a.impl()->layout_id, 0u);
  // Threads take ids from the same process-wide supply.
  std::vector<uint64_t> ids[2];
  std::thread other([&] {
    for (int k = 0; k < 1000; ++k) ids[1].push_back(zeros({1}).impl()->layout_id);
  });
  for (int k = 0; k < 1000; ++k) ids[0].push_back(zeros({1}).impl()->layout_id);
  other.join();
  std::vector<uint64_t> all = ids[0];
  all.insert(all.end(), ids[1].begin(), ids[1].end());
  std::sort(all.begin(), all.end());
  EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "an id made twice";
}

TEST(Tensor, CreationErrors) {
  expect_error([] { zeros({2, -1}); }, {"full", "negative size -1", "[2, -1]"});
  expect_error([] { empty({-3}); }, {"empty", "-3"});
  expect_error([] { arange(0, 5, 0); }, {"arange", "step"});
  expect_error([] { arange(5, 0, 1); }, {"arange", "step"});
  expect_error([] { linspace(0, 1, -1); }, {"linspace", "-1"});
  expect_error([] { randint(5, 5, {2}); }, {"randint", "low < high"});
  expect_error([] { rand({2}, kInt32); }, {"rand", "floating"});
  expect_error([] { bernoulli({2}, 1.5); }, {"bernoulli", "[0, 1]"});
  expect_error([] { bernoulli(tensor<float>({0.5f, 2.f})); }, {"bernoulli", "outside [0, 1]"});
  expect_error([] { tensor<float>({1.f, 2.f}, IntArrayRef({3})); }, {"tensor", "[3]"});
}

TEST(Tensor, FromVectorBlobAndAccess) {
  const Tensor t = tensor<float>({1.f, 2.f, 3.f, 4.f}, IntArrayRef({2, 2}));
  EXPECT_EQ(t.to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(t[1][0].item<float>(), 3.f);
  EXPECT_EQ(t.to_vector<int64_t>(), (std::vector<int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(tensor({true, false}).dtype(), kBool);
  EXPECT_EQ(tensor({true, false}).to_vector<int32_t>(), (std::vector<int32_t>{1, 0}));

  float data[6] = {0, 1, 2, 3, 4, 5};
  Tensor blob = from_blob(data, {2, 3});
  blob.mul_(2);
  EXPECT_EQ(data[5], 10.f);  // no copy: writes reach the caller's memory
  const Tensor strided = from_blob(data, {3}, {2});
  expect_values(strided, {0, 4, 8});
  bool deleted = false;
  { Tensor owned = from_blob(data, {6}, [&](void*) { deleted = true; }); }
  EXPECT_TRUE(deleted);

  expect_error([&] { t.data_ptr<double>(); }, {"data_ptr", "float64", "float32"});
  expect_error([&] { t.item<float>(); }, {"item", "4 elements", "[2, 2]"});
  expect_error([&] { Tensor().item<float>(); }, {"item", "undefined"});
}

TEST(Tensor, UndefinedTensorsThrowInsteadOfCrashing) {
  const Tensor u;
  EXPECT_FALSE(u.defined());
  expect_error([&] { u.sizes(); }, {"undefined"});
  expect_error([&] { u.unsqueeze(0); }, {"undefined"});
  expect_error([&] { u.sum(); }, {"undefined"});
  expect_error([&] { u.view({1}); }, {"undefined"});
  expect_error([&] { u.t(); }, {"undefined"});
  expect_error([&] { ones({2}).add(u); }, {"add", "undefined"});
}

TEST(Tensor, Printing) {
  std::ostringstream os;
  os << arange(6, kFloat32).view({2, 3});
  EXPECT_EQ(os.str(), " 0  1  2\n 3  4  5\n[ CPUFloatType{2,3} ]");
  os.str("");
  os << tensor<int64_t>({1, 20});
  EXPECT_EQ(os.str(), "  1\n 20\n[ CPULongType{2} ]");
  os.str("");
  os << scalar_tensor(0.5);
  EXPECT_EQ(os.str(), "0.5000\n[ CPUFloatType{} ]");
  os.str("");
  os << zeros({2, 1, 2}, kFloat64);
  EXPECT_NE(os.str().find("(0,.,.) = "), std::string::npos);
  EXPECT_NE(os.str().find("CPUDoubleType{2,1,2}"), std::string::npos);
  EXPECT_EQ(ones({3}, kFloat16).toString(), "CPUHalfType{3}");
}

TEST(Tensor, CopiesAndCasts) {
  const Tensor a = arange(6, kFloat32).view({2, 3});
  const Tensor t = a.t();
  EXPECT_FALSE(t.is_contiguous());
  const Tensor c = t.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  expect_values(c, {0, 3, 1, 4, 2, 5});
  EXPECT_TRUE(a.contiguous().is_same(a));  // no copy when already contiguous
  EXPECT_TRUE(a.to(kFloat32).is_same(a));
  const Tensor cl = a.clone();
  EXPECT_NE(cl.data_ptr(), a.data_ptr());
  expect_values(a.to(kInt32) , {0, 1, 2, 3, 4, 5});
  expect_values(tensor<float>({-1.7f, 2.9f}).to(kInt64), {-1, 2});
  expect_values(tensor<float>({0.f, 0.3f}).to(kBool), {0, 1});
  expect_values(tensor<float>({300.f}).to(kUInt8).to(kInt32), {44});

  Tensor dst = zeros({2, 3}, kFloat64);
  dst.copy_(tensor<int32_t>({7, 8, 9}));  // broadcasts and casts
  expect_values(dst, {7, 8, 9, 7, 8, 9});
  dst.t().copy_(arange(6, kFloat32).view({3, 2}));
  expect_values(dst, {0, 2, 4, 1, 3, 5});
  expect_error([&] { dst.copy_(ones({4})); }, {"copy_", "[2, 3]", "[4]"});
  dst.fill_(1.5);
  expect_values(dst, {1.5, 1.5, 1.5, 1.5, 1.5, 1.5});
  dst.select(1, 0).zero_();
  expect_values(dst, {0, 1.5, 1.5, 0, 1.5, 1.5});
}

// libtorch's methods a.isclose(b) / a.allclose(b), with its defaults rtol 1e-05, atol 1e-08.
TEST(Tensor, IsCloseAndAllCloseMethods) {
  const Tensor a = tensor<double>({1.0, 1.0, 100.0, 0.0});
  const Tensor b = tensor<double>({1.0 + 1e-9, 1.0 + 2e-5, 100.0005, 2e-8});
  // the bound is 1e-08 + 1e-05 |b|: 1e-9 and 5e-4 (of 1e-3) pass, 2e-5 (of 1e-5) and 2e-8 (of 1e-8) fail
  expect_values(a.isclose(b), {1, 0, 1, 0});
  EXPECT_EQ(a.isclose(b).dtype(), kBool);
  EXPECT_FALSE(a.allclose(b));
  EXPECT_TRUE(a.allclose(b, /*rtol=*/1e-4, /*atol=*/1e-7));
  EXPECT_TRUE(a.narrow(0, 2, 1).allclose(b.narrow(0, 2, 1)));
  // broadcasting, and NaN close to NaN only with equal_nan
  const Tensor nan = tensor<double>({NAN, 1.0});
  expect_values(nan.isclose(tensor<double>({NAN})), {0, 0});
  expect_values(nan.isclose(tensor<double>({NAN}), 1e-05, 1e-08, /*equal_nan=*/true), {1, 0});
  EXPECT_TRUE(ones({2, 3}).allclose(ones({3})));
  // the free functions are the methods
  expect_values(isclose(a, b), testing::values(a.isclose(b)));
  EXPECT_EQ(allclose(a, b, 1e-4, 1e-7), a.allclose(b, 1e-4, 1e-7));

  expect_error([] { ones({2, 3}).isclose(ones({4})); }, {"isclose", "[2, 3]", "[4]", "broadcastable"});
  expect_error([] { ones({2}).allclose(ones({2}, kFloat64)); }, {"isclose", "one dtype", "float32", "float64"});
  expect_error([&] { a.isclose(b, -1.0); }, {"isclose", "non-negative", "rtol -1"});
}

TEST(Tensor, InPlaceBumpsVersion) {
  Tensor x = zeros({4});
  const uint64_t v = x.storage()->version();
  x.add_(1);
  x.mul_(2);
  x.zero_();
  x.slice(0, 1, 3).fill_(3);
  EXPECT_EQ(x.storage()->version(), v + 4);
  const Tensor y = x + 1;  // out-of-place leaves it alone
  EXPECT_EQ(x.storage()->version(), v + 4);
  (void)y;
}

TEST(Random, SameSeedSameNumbers) {
  manual_seed(123);
  const Tensor a = randn({1000});
  manual_seed(123);
  const Tensor b = randn({1000});
  EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>());
  const Tensor c = randn({1000});
  EXPECT_NE(a.to_vector<float>(), c.to_vector<float>());
}

TEST(Random, IndependentOfThreadCount) {
  const int before = get_num_threads();
  std::vector<std::vector<float>> runs;
  for (int threads : {1, 2, 3}) {
    set_num_threads(threads);
    Generator g(99);
    runs.push_back(randn({200000}, kFloat32, &g).to_vector<float>());
    runs.back().push_back(rand({1}, kFloat32, &g).item<float>());
  }
  set_num_threads(before);
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(runs[0], runs[2]);
}

TEST(Random, Distributions) {
  Generator g(7);
  const std::vector<double> u = rand({100000}, kFloat64, &g).to_vector<double>();
  double mean = 0, lo = 1, hi = 0;
  for (double v : u) mean += v / u.size(), lo = std::min(lo, v), hi = std::max(hi, v);
  EXPECT_NEAR(mean, 0.5, 0.01);
  EXPECT_GE(lo, 0.0);
  EXPECT_LT(hi, 1.0);
  const std::vector<double> n = randn({100000}, kFloat64, &g).to_vector<double>();
  double m = 0, var = 0;
  for (double v : n) m += v / n.size();
  for (double v : n) var += (v - m) * (v - m) / n.size();
  EXPECT_NEAR(m, 0.0, 0.02);
  EXPECT_NEAR(var, 1.0, 0.03);
  const std::vector<int64_t> r = randint(-3, 4, {10000}, kInt64, &g).to_vector<int64_t>();
  std::vector<int> hist(7);
  for (int64_t v : r) {
    ASSERT_GE(v, -3);
    ASSERT_LT(v, 4);
    ++hist[v + 3];
  }
  for (int h : hist) EXPECT_GT(h, 1200);
  const std::vector<double> b = bernoulli({20000}, 0.3, kFloat32, &g).to_vector<double>();
  double ones_frac = 0;
  for (double v : b) ones_frac += v / b.size();
  EXPECT_NEAR(ones_frac, 0.3, 0.015);
  expect_values(bernoulli(tensor<float>({0.f, 1.f, 0.f, 1.f}), &g), {0, 1, 0, 1});
  EXPECT_EQ(randn({3}, kFloat16).dtype(), kFloat16);
  EXPECT_EQ(randn_like(ones({2}, kFloat64)).dtype(), kFloat64);
  EXPECT_EQ(rand_like(ones({2, 2})).sizes(), IntArrayRef({2, 2}));
}

// A user op registered through the public op table behaves like a built-in:
// shape inference, errors, in-place use.
TEST(CustomOp, RegistersAndRunsLikeABuiltIn) {
  register_op("test.scaled_add")
      .inputs(2)
      .is_elementwise()
      .infer_with([](absl::Span<const Tensor> in, const Attrs&) -> OutputSpecs {
        NNVM_CHECK(in[0].sizes() == in[1].sizes(), "test.scaled_add", "shapes ", shape_str(in[0].sizes()), " and ",
                   shape_str(in[1].sizes()), " differ");
        return {{dims(in[0].sizes()), kFloat32}};
      })
      .kernel(kCPU, [](absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
        const Tensor x = in[0].contiguous().to(kFloat32), y = in[1].contiguous().to(kFloat32);
        const float s = float(a.d(0));
        float* o = out[0].data_ptr<float>();
        for (int64_t i = 0; i < x.numel(); ++i) o[i] = x.data_ptr<float>()[i] + s * y.data_ptr<float>()[i];
      });
  const OpDef& op = find_op("test.scaled_add");
  EXPECT_TRUE(has_op("test.scaled_add"));
  const Tensor r = call1(op, {ones({3}), arange(3, kFloat32)}, {Scalar(2.0)});
  expect_values(r, {1, 3, 5});
  Tensor acc = zeros({3});
  call_into(op, {acc, ones({3})}, {Scalar(0.5)}, acc);
  expect_values(acc, {0.5, 0.5, 0.5});
  expect_error([&] { call1(op, {ones({3}), ones({2})}, {Scalar(1.0)}); }, {"test.scaled_add", "[3]", "[2]"});
  expect_error([&] { call1(op, {ones({3})}, {Scalar(1.0)}); }, {"test.scaled_add", "expected 2 inputs"});
  expect_error([] { find_op("no.such.op"); }, {"no.such.op"});
  register_op("test.no_kernel").inputs(1).infer_with(
      [](absl::Span<const Tensor> in, const Attrs&) -> OutputSpecs { return {{dims(in[0].sizes()), kFloat32}}; });
  expect_error([] { call1(find_op("test.no_kernel"), {ones({1})}); }, {"test.no_kernel", "no kernel", "cpu"});
}

// A non-elementwise kernel writes the contiguous output of its inferred dtype
// the dispatcher allocates: call_into gives it one and copies the result into
// a strided or wider `out` (found by the per-op sweep's sentinels, tests/sweep).
TEST(CallInto, NonElementwiseOpIntoAStridedOrWiderOutput) {
  static const OpDef& amax = find_op("amax");
  const Tensor x = tensor(std::vector<float>{1, 5, 2, 7, 3, 4}).view({2, 3});
  const Tensor buffer = full({5}, -1.0);
  const Tensor every_other = buffer.slice(0, 1, 5, 2);
  call_into(amax, {x}, {DimVector{1}, false}, every_other);
  EXPECT_EQ(buffer.to_vector<float>(), (std::vector<float>{-1, 5, -1, 7, -1}));
  const Tensor wide = zeros({2}, kFloat64);
  call_into(amax, {x}, {DimVector{1}, false}, wide);
  EXPECT_EQ(wide.to_vector<double>(), (std::vector<double>{5, 7}));
}

// call, call1 and call_into borrow their inputs: a braced list is a list of
// pointers to the caller's tensors (temporaries included: they live to the end
// of the call's full expression), a span or a vector is used as it is, and
// only a kernel or shape inference, which take a span, get copies of a list.
TEST(TensorRefs, BorrowsTheCallersTensors) {
  const Tensor a = ones({3}), b = arange(3, kFloat32);
  const long a_uses = a.impl_ptr().use_count();
  auto inspect_list = [&](TensorRefs refs) {
    ASSERT_EQ(refs.size(), 2u);
    EXPECT_EQ(&refs[0], &a);  // the caller's objects, not copies
    EXPECT_EQ(&refs[1], &b);
    EXPECT_EQ(refs.array(), nullptr);
    EXPECT_EQ(a.impl_ptr().use_count(), a_uses);
    std::vector<const Tensor*> seen;
    for (const Tensor& t : refs) seen.push_back(&t);
    EXPECT_EQ(seen, (std::vector<const Tensor*>{&a, &b}));
    const TensorSpan span(refs);  // a list: copies, each a reference of its own
    ASSERT_EQ(span.get().size(), 2u);
    EXPECT_TRUE(span.get()[0].is_same(a));
    EXPECT_EQ(a.impl_ptr().use_count(), a_uses + 1);
  };
  inspect_list({a, b});
  EXPECT_EQ(a.impl_ptr().use_count(), a_uses);

  const std::vector<Tensor> v = {a, b};
  auto inspect_array = [&](TensorRefs refs) {
    EXPECT_EQ(refs.array(), v.data());
    EXPECT_EQ(&refs[1], &v[1]);
    const TensorSpan span(refs);  // an array: used as it is
    EXPECT_EQ(span.get().data(), v.data());
  };
  inspect_array(v);
  inspect_array(absl::MakeConstSpan(v));
  auto inspect_empty = [](TensorRefs refs) {
    EXPECT_TRUE(refs.empty());
    EXPECT_TRUE(TensorSpan(refs).get().empty());
  };
  inspect_empty({});

  // Temporaries in the list, in both modes.
  for (const Mode m : {Mode::Eager, Mode::Traced}) {
    const Mode previous = mode();
    set_mode(m);
    const Tensor r = call1(find_op("add"), {a.unsqueeze(0), b.unsqueeze(0) * 2}, {Scalar(1)});
    EXPECT_EQ(r.sizes(), IntArrayRef({1, 3}));
    expect_values(r, {1, 3, 5});
    set_mode(previous);
  }
}

TEST(ThreadPool, CoversRangeOnceAndRethrows) {
  std::vector<std::atomic<int>> hits(100003);
  parallel_for(0, 100003, 1000, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[i]++;
  });
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
  // the chunk holding the last element throws, whatever the thread count
  EXPECT_THROW(parallel_for(0, 100000, 10, [](int64_t, int64_t e) {
                 if (e == 100000) throw Error("boom");
               }),
               Error);
  // nested parallel_for runs inline instead of deadlocking
  std::atomic<int64_t> total{0};
  parallel_for(0, 4, 1, [&](int64_t b, int64_t e) {
    parallel_for(0, 1000, 1, [&](int64_t b2, int64_t e2) { total += (e - b) * (e2 - b2); });
  });
  EXPECT_EQ(total.load(), 4000);
  // several user threads share the pool safely
  std::vector<std::thread> users;
  std::atomic<int64_t> sum{0};
  for (int t = 0; t < 4; ++t)
    users.emplace_back([&] {
      for (int r = 0; r < 20; ++r)
        parallel_for(0, 10000, 100, [&](int64_t b, int64_t e) { sum += e - b; });
    });
  for (auto& u : users) u.join();
  EXPECT_EQ(sum.load(), 4 * 20 * 10000);
}

// Workers spin for a while after a job, then sleep (core/thread_pool.cpp):
// regions back to back (taken by spinning workers), regions after a pause
// longer than the spin (workers woken from sleep), and resizes between them
// each cover their range once.
TEST(ThreadPool, BackToBackAndAfterSleepingRegionsCoverTheirRanges) {
  const int threads = get_num_threads();
  for (int n : {3, 2, 4}) {
    set_num_threads(n);
    for (int round = 0; round < 3; ++round) {
      std::atomic<int64_t> sum{0};
      for (int r = 0; r < 2000; ++r)
        parallel_for(0, 1 + r % 7, 1, [&](int64_t b, int64_t e) { sum += e - b; });
      int64_t want = 0;
      for (int r = 0; r < 2000; ++r) want += 1 + r % 7;
      EXPECT_EQ(sum.load(), want);
      std::this_thread::sleep_for(std::chrono::milliseconds(2));  // past the spin: the workers sleep
      std::vector<std::atomic<int>> hits(997);
      parallel_for(0, 997, 1, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
      });
      for (auto& h : hits) ASSERT_EQ(h.load(), 1);
    }
  }
  set_num_threads(threads);
}

// An empty tensor whose other sizes multiply past 2^63: its strides do not
// fit int64, an error naming the shape (UBSan found the signed overflow);
// the layout check of such a shape does not overflow either.
TEST(Tensor, EmptyShapesWhoseStridesOverflowAreErrors) {
  const int64_t big = int64_t(1) << 32;
  testing::expect_error([&] { (void)empty({0, big, big}); }, {"strides", "[0, 4294967296, 4294967296]"});
  EXPECT_EQ(checked_nbytes(DimVector{big, big, 0}, 4, "empty"), 0u);  // empty, whatever the other sizes
  // past the overflow: an empty dim makes the layout contiguous, a dim of 2 cannot match
  EXPECT_TRUE(is_contiguous_layout(DimVector{0, big, big}, DimVector{7, big, 1}));
  EXPECT_FALSE(is_contiguous_layout(DimVector{2, big, big}, DimVector{123, big, 1}));
  EXPECT_TRUE(is_contiguous_layout(DimVector{1, 0, big}, DimVector{5, 9, 1}));
}

// The element count of an empty shape whose leading sizes multiply past 2^63
// before its 0 is reached (a signed overflow under UBSan until numel_of
// multiplied unsigned).
TEST(Tensor, EmptyShapesWhoseLeadingSizesOverflowHaveNoElements) {
  const int64_t big = int64_t(1) << 32;
  EXPECT_EQ(numel_of(DimVector{big, big, 0}), 0);
  EXPECT_EQ(numel_of(DimVector{big, big, big, 0, big}), 0);
  EXPECT_EQ(empty({big, big, 0}).numel(), 0);  // the strides fit: [big, 1, 1]
  EXPECT_EQ(numel_of(DimVector{3, 5, 7}), 105);
  EXPECT_EQ(numel_of(DimVector{}), 1);
}

TEST(Allocator, CachesAndReturnsToBaseline) {
  const AllocatorStats before = cpu_memory_stats();
  {
    Tensor a = empty({1000, 1000});
    EXPECT_GE(cpu_memory_stats().bytes_in_use, before.bytes_in_use + 4000000);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data_ptr()) % 64, 0u);
  }
  const AllocatorStats mid = cpu_memory_stats();
  EXPECT_EQ(mid.bytes_in_use, before.bytes_in_use);
  {
    Tensor b = empty({1000, 1000});  // same size class: served from the cache
    (void)b;
  }
  const AllocatorStats after = cpu_memory_stats();
  EXPECT_EQ(after.cache_hits, mid.cache_hits + 1);
  EXPECT_EQ(after.cache_misses, mid.cache_misses);
  EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
  EXPECT_GE(after.peak_bytes_in_use, before.bytes_in_use + 4000000);
  EXPECT_EQ(after.allocations - after.frees, before.allocations - before.frees);
  empty_cache();
  EXPECT_EQ(cpu_memory_stats().bytes_reserved, cpu_memory_stats().bytes_in_use);
  // size classes waste at most a quarter
  for (size_t n : {1ul, 63ul, 65ul, 1000ul, 1025ul, 4097ul, 1ul << 20, (1ul << 20) + 1, 123456789ul}) {
    const size_t r = CpuCachingAllocator::round_size(n);
    EXPECT_GE(r, n);
    EXPECT_LE(double(r), std::max(64.0, 1.25 * double(n) + 64));
    EXPECT_EQ(r % 64, 0u);
  }
}

// The cumulative counts add up, and memory_summary shows them in PyTorch's
// layout: a 4 MB block allocated, freed, reserved and released.
TEST(Allocator, CountsEveryByteAndSummarisesThem) {
  empty_cache();
  const AllocatorStats before = cpu_memory_stats();
  const int64_t block = int64_t(CpuCachingAllocator::round_size(4000000));
  {
    Tensor a = empty({1000, 1000}), b = empty({1000, 1000});
    const AllocatorStats live = cpu_memory_stats();
    EXPECT_EQ(live.bytes_allocated, before.bytes_allocated + 2 * block);
    EXPECT_GE(live.peak_live_allocations, live.allocations - live.frees);
    EXPECT_GE(live.peak_bytes_reserved, live.bytes_reserved);
    const std::string summary = memory_summary();
    EXPECT_NE(summary.find("nnvm CPU memory summary"), std::string::npos) << summary;
    EXPECT_NE(summary.find("| Metric                | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |"),
              std::string::npos)
        << summary;
    const std::string row = absl::StrFormat("| Allocations           | %10d | %10d | %10d | %10d |",
                                            live.allocations - live.frees, live.peak_live_allocations,
                                            live.allocations, live.frees);
    EXPECT_NE(summary.find(row), std::string::npos) << summary;
    for (size_t at = 0; (at = summary.find('\n', at)) != std::string::npos; ++at)
      EXPECT_EQ(summary.rfind('\n', at - 1) == std::string::npos ? at : at - summary.rfind('\n', at - 1) - 1, 77u)
          << "every line is 77 characters wide:\n" << summary;
  }
  const AllocatorStats freed = cpu_memory_stats();
  EXPECT_EQ(freed.bytes_freed, before.bytes_freed + 2 * block);
  empty_cache();
  const AllocatorStats released = cpu_memory_stats();
  if (!CpuCachingAllocator::instance().guard()) {
    EXPECT_GE(released.bytes_released, before.bytes_released + 2 * block);
    EXPECT_GE(released.blocks_released, before.blocks_released + 2);
  }
  EXPECT_EQ(released.bytes_reserved, released.bytes_in_use);
}

// Classes up to 1 KiB have free lists of their own (no hashing): each is
// reused by its class only, and empty_cache releases them with the rest.
TEST(Allocator, SmallClassesAreCachedAndReleased) {
  CpuCachingAllocator& a = CpuCachingAllocator::instance();
  if (a.guard()) GTEST_SKIP() << "guarded blocks are never cached";
  for (size_t n : {1ul, 64ul, 65ul, 640ul, 1024ul, 1025ul}) {
    empty_cache();
    const size_t next = CpuCachingAllocator::round_size(n) + 1;  // the next class up
    void* p = a.allocate(n);
    a.free(p, n);
    const AllocatorStats before = a.stats();
    void* other = a.allocate(next);
    void* same = a.allocate(n);
    EXPECT_EQ(same, p) << n;
    EXPECT_NE(other, p) << n;
    EXPECT_EQ(a.stats().cache_hits, before.cache_hits + 1) << n;
    a.free(other, next);
    a.free(same, n);
  }
  empty_cache();
  EXPECT_EQ(cpu_memory_stats().bytes_reserved, cpu_memory_stats().bytes_in_use);
}

// Four threads allocate and free at once; the bytes in use come back to the
// baseline. Eager: a hot trace's plan keeps an arena in the shared cache for
// its next replay (NNVM_HOT=1 makes fill_'s traces hot at once), and which
// thread's arena it keeps depends on the interleaving.
TEST(Allocator, ThreadSafe) {
  const AllocatorStats before = cpu_memory_stats();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([t] {
      const EagerGuard eager;
      for (int i = 0; i < 500; ++i) {
        Tensor x = empty({(t + 1) * 100 + i % 7});
        x.fill_(1);
      }
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(cpu_memory_stats().bytes_in_use, before.bytes_in_use);
}

}  // namespace
}  // namespace nnvm
