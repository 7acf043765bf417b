// CPU kernels of the loss ops (core/ops/loss.cpp).
//
// Each computes its per-element (mse, l1, bce) or per-row (nll, cross-entropy)
// loss and reduces it in the same kernel. Sums are ordered_sum's (loops.h), so
// a loss is the same for every thread count.
#include <algorithm>
#include <cmath>
#include <vector>

#include "nnvm/core/functions.h"
#include "nnvm/core/op.h"
#include "nnvm/kernels/cpu/exp.h"
#include "nnvm/kernels/cpu/row_sums.h"
#include "nnvm/kernels/cpu/floating.h"
#include "nnvm/kernels/cpu/loops.h"

namespace nnvm::cpu {

namespace {

// Writes loss(i) for i in [0, n) into `out` (None), or their sum (Sum), or
// their sum divided by denominator() (Mean).
template <class S, class T, class Loss, class Denominator>
void reduce_loss(const Tensor& out, int64_t n, Reduction reduction, Loss loss, Denominator denominator) {
  S* po = out.data_ptr<S>();
  if (reduction == Reduction::None) {
    parallel_for(0, n, kGrain, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) po[i] = convert<S>(loss(i));
    });
    return;
  }
  const T total = ordered_sum<T>(n, loss);
  *po = convert<S>(reduction == Reduction::Sum ? total : total / denominator());
}

// mse_loss, l1_loss: attrs: reduction
template <bool kSquared> void pointwise_loss_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out,
                                                    const Attrs& a) {
  const DType dt = out[0].dtype();
  const Tensor x = in[0].to(dt).contiguous(), y = in[1].to(dt).contiguous();
  const int64_t n = x.numel();
  dispatch_floating(dt, kSquared ? "mse_loss" : "l1_loss", [&](auto s) {
    using S = decltype(s);
    using T = compute_t<S>;
    const S *px = x.data_ptr<S>(), *py = y.data_ptr<S>();
    auto loss = [&](int64_t i) {
      const T d = convert<T>(px[i]) - convert<T>(py[i]);
      return kSquared ? d * d : std::abs(d);
    };
    reduce_loss<S, T>(out[0], n, Reduction(a.i(0)), loss, [&] { return T(n); });
  });
}

// input, target, [weight], [pos_weight]. attrs: reduction, has_weight, has_pos_weight
//   loss = w * ((1 - y) x + (1 + (pos_weight - 1) y) * -log_sigmoid(x)),
//   -log_sigmoid(x) = max(-x, 0) + log1p(exp(-|x|)), which never overflows.
void bce_with_logits_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const DType dt = out[0].dtype();
  const Tensor x = in[0].to(dt).contiguous(), y = in[1].to(dt).contiguous();
  const bool has_weight = a.b(1), has_pos_weight = a.b(2);
  const int64_t n = x.numel();
  dispatch_floating(dt, "binary_cross_entropy_with_logits", [&](auto s) {
    using S = decltype(s);
    using T = compute_t<S>;
    // Weights broadcast to the input's shape, so element i of each lines up.
    const Tensor w = has_weight ? contiguous_as<T>(in[2].expand(x.sizes())) : Tensor();
    const Tensor pw = has_pos_weight ? contiguous_as<T>(in[2 + has_weight].expand(x.sizes())) : Tensor();
    const S *px = x.data_ptr<S>(), *py = y.data_ptr<S>();
    const T* pweight = has_weight ? w.data_ptr<T>() : nullptr;
    const T* ppos = has_pos_weight ? pw.data_ptr<T>() : nullptr;
    auto loss = [&](int64_t i) {
      const T xi = convert<T>(px[i]), yi = convert<T>(py[i]);
      const T neg_log_sigmoid = std::max(-xi, T(0)) + log1p_of(exp_of(-std::abs(xi)));
      const T log_weight = ppos ? T(1) + (ppos[i] - T(1)) * yi : T(1);
      const T l = (T(1) - yi) * xi + log_weight * neg_log_sigmoid;
      return pweight ? l * pweight[i] : l;
    };
    reduce_loss<S, T>(out[0], n, Reduction(a.i(0)), loss, [&] { return T(n); });
  });
}

// Scores [n, classes, spatial] (contiguous) with one target per (sample, position) row.
struct ClassRows {
  int64_t samples, classes, spatial;

  explicit ClassRows(const Tensor& x) {
    if (x.dim() == 1) {
      samples = 1, classes = x.size(0), spatial = 1;
      return;
    }
    samples = x.size(0), classes = x.size(1), spatial = 1;
    for (int64_t d = 2; d < x.dim(); ++d) spatial *= x.size(d);
  }
  int64_t rows() const { return samples * spatial; }
  // Element offset of class 0 of `row`; classes are `spatial` apart.
  int64_t base(int64_t row) const { return (row / spatial) * classes * spatial + row % spatial; }
};

// Every target is a class index or ignore_index; checked before any work so a
// bad target never reads out of bounds.
void check_targets(const int64_t* t, const ClassRows& rows, int64_t ignore_index, std::string_view op,
                   const Tensor& scores, const Tensor& target) {
  for (int64_t r = 0; r < rows.rows(); ++r)
    NNVM_CHECK(t[r] == ignore_index || (t[r] >= 0 && t[r] < rows.classes), op, "target ", t[r], " at index ", r,
               " is out of range (expected a class index in [0, ", rows.classes, ") or ignore_index ",
               ignore_index, "; input of shape ", shape_str(scores.sizes()), ", target of shape ",
               shape_str(target.sizes()), ")");
}

// The shared frame of nll_loss and cross_entropy: row_loss(row, class, weight)
// gives the loss of one non-ignored row; ignored rows count neither loss nor
// weight, and Mean divides by the summed weights of the counted rows.
// inputs: scores, target, [weight]; attrs: reduction, ignore_index, has_weight, ...
template <class RowLoss>
void class_loss(absl::Span<const Tensor> in, const Tensor& out, const Attrs& a, std::string_view op,
                RowLoss row_loss) {
  const Tensor x = in[0].contiguous(), target = in[1].contiguous();
  const ClassRows rows(x);
  const int64_t ignore_index = a.i(1);
  const int64_t* pt = target.data_ptr<int64_t>();
  check_targets(pt, rows, ignore_index, op, in[0], in[1]);
  dispatch_floating(x.dtype(), op, [&](auto s) {
    using S = decltype(s);
    using T = compute_t<S>;
    const Tensor w = a.b(2) ? contiguous_as<T>(in[2]) : Tensor();
    const T* pw = a.b(2) ? w.data_ptr<T>() : nullptr;
    const S* px = x.data_ptr<S>();
    const int64_t n = rows.rows();
    std::vector<T> losses(static_cast<size_t>(n)), weights(static_cast<size_t>(n));
    parallel_for(0, n, std::max<int64_t>(1, kGrain / std::max<int64_t>(rows.classes, 1)),
                 [&](int64_t r0, int64_t r1) {
                   for (int64_t r = r0; r < r1; ++r) {
                     if (pt[r] == ignore_index) continue;  // zero loss, zero weight
                     weights[size_t(r)] = pw ? pw[pt[r]] : T(1);
                     losses[size_t(r)] = row_loss(px + rows.base(r), rows, pt[r], pw, T{});
                   }
                 });
    reduce_loss<S, T>(out, n, Reduction(a.i(0)), [&](int64_t r) { return losses[size_t(r)]; },
                      [&] { return ordered_sum<T>(n, [&](int64_t r) { return weights[size_t(r)]; }); });
  });
}

// loss = -weight[t] * log_probs[t]
void nll_loss_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  class_loss(in, out[0], a, "nll_loss", [](const auto* p, const ClassRows& rows, int64_t t, const auto* w, auto z) {
    using T = decltype(z);
    return -(w ? w[t] : T(1)) * convert<T>(p[t * rows.spatial]);
  });
}

// libtorch's formula: with lp = log_softmax(logits) and smoothing ls,
//   loss = (1 - ls) * -w[t] lp[t] + ls / C * -sum_c w[c] lp[c]
// (w = 1 without weights); Mean divides both terms by the summed w[t]. The
// row's max, exp-sum and log-sum-exp are the JIT row kernel's
// (kernels/cpu/row_sums.h), as is the unweighted smoothing term C lse - sum_c x[c].
void cross_entropy_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const double smoothing = a.d(3);
  class_loss(in, out[0], a, "cross_entropy",
             [smoothing](const auto* p, const ClassRows& rows, int64_t t, const auto* w, auto z) {
               using T = decltype(z);
               const int64_t classes = rows.classes, stride = rows.spatial;
               auto x = [p, stride](int64_t c) { return convert<T>(p[c * stride]); };
               const T lse = row_log_sum_exp<T>(classes, x);
               const T ls = T(smoothing);
               T smooth = 0;
               if (ls != T(0) && !w) {
                 smooth = smooth_of_sum(row_fold<T>(classes, [&](T acc, int64_t c) { return acc + x(c); }), lse, classes);
               } else if (ls != T(0)) {
                 for (int64_t c = 0; c < classes; ++c) smooth -= w[c] * (x(c) - lse);
               }
               return cross_entropy_row_loss(x(t), lse, w ? w[t] : T(1), ls, classes, smooth);
             });
}

// inputs: g, logits, target, [weight]; attrs: reduction, ignore_index, has_weight, label_smoothing.
// With p = softmax(logits), W = sum_c w[c] and smoothing ls, a counted row's gradient is
//   dlogits[c] = scale * ((1 - ls) w[t] (p[c] - [c == t]) + ls / C (W p[c] - w[c])),
// the derivative of the forward's formula above; scale is g (g / summed w[t]
// for Mean). Ignored rows get zeros.
void cross_entropy_backward_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs& a) {
  const Tensor x = in[1].contiguous(), target = in[2].contiguous();
  const ClassRows rows(x);
  const int64_t ignore_index = a.i(1), n = rows.rows(), classes = rows.classes, stride = rows.spatial;
  const Reduction reduction = Reduction(a.i(0));
  const int64_t* pt = target.data_ptr<int64_t>();
  check_targets(pt, rows, ignore_index, "cross_entropy_backward", in[1], in[2]);
  dispatch_floating(x.dtype(), "cross_entropy_backward", [&](auto s) {
    using S = decltype(s);
    using T = compute_t<S>;
    const Tensor g = contiguous_as<T>(in[0]);
    const Tensor w = a.b(2) ? contiguous_as<T>(in[3]) : Tensor();
    const T* pw = a.b(2) ? w.data_ptr<T>() : nullptr;
    const T* pg = g.data_ptr<T>();
    T total_weight = 0;
    for (int64_t c = 0; c < classes; ++c) total_weight += pw ? pw[c] : T(1);
    T scale = reduction == Reduction::None ? T(0) : pg[0];
    if (reduction == Reduction::Mean)
      scale /= ordered_sum<T>(n, [&](int64_t r) { return pt[r] == ignore_index ? T(0) : (pw ? pw[pt[r]] : T(1)); });
    const T ls = T(a.d(3));
    const S* px = x.data_ptr<S>();
    S* pdx = out[0].data_ptr<S>();
    parallel_for(0, n, std::max<int64_t>(1, kGrain / std::max<int64_t>(classes, 1)), [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const S* xr = px + rows.base(r);
        S* dr = pdx + rows.base(r);
        const int64_t t = pt[r];
        if (t == ignore_index) {
          for (int64_t c = 0; c < classes; ++c) dr[c * stride] = convert<S>(T(0));
          continue;
        }
        const T k = reduction == Reduction::None ? pg[r] : scale;
        auto logit = [xr, stride](int64_t c) { return convert<T>(xr[c * stride]); };
        const T lse = row_log_sum_exp<T>(classes, logit);
        const CrossEntropyRowGrad<T> grad(k, pw ? pw[t] : T(1), ls, classes, total_weight);
        for (int64_t c = 0; c < classes; ++c) {
          const T d = grad.at(exp_of<T>(logit(c) - lse), pw ? pw + c : nullptr);
          dr[c * stride] = convert<S>(c == t ? grad.at_target(d) : d);
        }
      }
    });
  });
}

}  // namespace

NNVM_REGISTER(cpu_loss_kernels) {
  register_kernel("cross_entropy_backward", kCPU, cross_entropy_backward_kernel);
  register_kernel("mse_loss", kCPU, pointwise_loss_kernel<true>);
  register_kernel("l1_loss", kCPU, pointwise_loss_kernel<false>);
  register_kernel("binary_cross_entropy_with_logits", kCPU, bce_with_logits_kernel);
  register_kernel("nll_loss", kCPU, nll_loss_kernel);
  register_kernel("cross_entropy", kCPU, cross_entropy_kernel);
}

}  // namespace nnvm::cpu
