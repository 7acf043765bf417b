// CPU kernels of "matmul" and "matmul_sum" (core/ops/linalg.cpp): one GEMM
// per batch entry, reading every operand through its strides (broadcast batch
// dims have stride 0, transposed views are read as they are); matmul_sum's
// second product is added into the first's (beta = 1).
#include <optional>

#include "nnvm/core/op.h"
#include "nnvm/kernels/cpu/gemm.h"
#include "nnvm/kernels/cpu/staging.h"

namespace nnvm::cpu {

namespace {

// Below this many multiply-adds per matrix, batch entries go to threads whole
// and each GEMM runs on one thread.
constexpr int64_t kSmallProduct = int64_t(1) << 21;

// Element offsets of each batch entry of an operand broadcast to `batch`.
std::vector<int64_t> batch_offsets(const Tensor& t, IntArrayRef batch) {
  const int64_t rank = t.dim() - 2;
  const DimVector strides = broadcast_strides(t.sizes().first(rank), t.strides().first(rank), batch);
  std::vector<int64_t> offsets(size_t(numel_of(batch)));
  DimVector idx(batch.size(), 0);
  for (int64_t& off : offsets) {
    off = 0;
    for (size_t d = 0; d < batch.size(); ++d) off += idx[d] * strides[d];
    for (int64_t d = int64_t(batch.size()) - 1; d >= 0; --d) {
      if (++idx[d] < batch[d]) break;
      idx[d] = 0;
    }
  }
  return offsets;
}

// a as one matrix of all its batch's rows, when the batch of c = a b (c of
// `rank` dims, contiguous) is one matrix product with those rows stacked: b
// the same matrix for every entry (2-D, or broadcast over the batch), and a
// viewable as [rows, k] (a contiguous [batch, time, features] is: a linear
// layer over sequences). Each row's sums are then the packed path's, as its
// entry's own product's are from 6 rows up (gemm_takes_few_rows); entries of
// fewer rows alone would take the few-row path, whose last bits differ.
template <class T> std::optional<MatrixRef<T>> rows_fold(const Tensor& a, const Tensor& b, size_t rank) {
  for (int64_t d = 0; d + 2 < b.dim(); ++d)
    if (b.size(d) != 1 && b.stride(d) != 0) return std::nullopt;
  if (size_t(a.dim()) != rank) return std::nullopt;  // a broadcast over leading dims repeats its rows
  const int64_t k = a.size(-1), rows = numel_of(a.sizes().first(rank - 1));
  const std::optional<DimVector> strides = view_strides(a.sizes(), a.strides(), {rows, k});
  if (!strides) return std::nullopt;
  return MatrixRef<T>{a.data_ptr<T>(), (*strides)[0], (*strides)[1]};
}

// c = a b + beta c, per batch entry of c.
template <class T> void batched_gemm(const Tensor& a, const Tensor& b, const Tensor& c, T beta = T(0)) {
  // off the arrays, not through checked size(d) calls: a small product (an RNN step's) feels them
  const IntArrayRef cs = c.sizes(), as = a.strides(), bs = b.strides();
  const size_t rank = cs.size(), ra = as.size(), rb = bs.size();
  const int64_t m = cs[rank - 2], n = cs[rank - 1], k = a.sizes()[ra - 1];
  if (rank == 2) {  // one product: no batch offsets to build
    gemm(m, n, k, MatrixRef<T>{a.data_ptr<T>(), as[ra - 2], as[ra - 1]},
         MatrixRef<T>{b.data_ptr<T>(), bs[rb - 2], bs[rb - 1]}, beta, c.data_ptr<T>(), n);
    return;
  }
  const IntArrayRef batch = c.sizes().first(c.dim() - 2);
  const T* pa = a.data_ptr<T>();
  const T* pb = b.data_ptr<T>();
  T* pc = c.data_ptr<T>();
  if (const std::optional<MatrixRef<T>> rows = rows_fold<T>(a, b, rank)) {
    // one product of all the batch's rows: one call, whole tiles, the pool once
    gemm(numel_of(batch) * m, n, k, *rows, MatrixRef<T>{pb, bs[rb - 2], bs[rb - 1]}, beta, pc, n);
    return;
  }
  const std::vector<int64_t> off_a = batch_offsets(a, batch), off_b = batch_offsets(b, batch);
  auto one = [&](int64_t i) {
    gemm(m, n, k, MatrixRef<T>{pa + off_a[i], a.stride(-2), a.stride(-1)},
         MatrixRef<T>{pb + off_b[i], b.stride(-2), b.stride(-1)}, beta, pc + i * m * n, n);
  };
  const int64_t entries = int64_t(off_a.size());
  if (entries > 1 && m * n * k < kSmallProduct) {
    parallel_for(0, entries, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) one(i);
    });
  } else {
    for (int64_t i = 0; i < entries; ++i) one(i);
  }
}

// Integers: exact int64 sums (wrapping on overflow like libtorch), plain loops.
void batched_integer(const Tensor& a, const Tensor& b, const Tensor& c) {
  const int64_t m = c.size(-2), n = c.size(-1), k = a.size(-1);
  const IntArrayRef batch = c.sizes().first(c.dim() - 2);
  const std::vector<int64_t> off_a = batch_offsets(a, batch), off_b = batch_offsets(b, batch);
  const int64_t *pa = a.data_ptr<int64_t>(), *pb = b.data_ptr<int64_t>();
  const int64_t ars = a.stride(-2), acs = a.stride(-1), brs = b.stride(-2), bcs = b.stride(-1);
  int64_t* pc = c.data_ptr<int64_t>();
  parallel_for(0, int64_t(off_a.size()) * m, std::max<int64_t>(1, kGrain / std::max<int64_t>(1, n * k)),
               [&](int64_t begin, int64_t end) {
                 for (int64_t r = begin; r < end; ++r) {
                   const int64_t e = r / m, i = r % m;
                   for (int64_t j = 0; j < n; ++j) {
                     uint64_t sum = 0;
                     for (int64_t p = 0; p < k; ++p)
                       sum += uint64_t(pa[off_a[e] + i * ars + p * acs]) * uint64_t(pb[off_b[e] + p * brs + j * bcs]);
                     pc[r * n + j] = int64_t(sum);
                   }
                 }
               });
}

void matmul_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs&) {
  const Tensor& c = out[0];
  if (c.numel() == 0) return;
  switch (c.dtype()) {
    case kFloat32: return batched_gemm<float>(in[0], in[1], c);
    case kFloat64: return batched_gemm<double>(in[0], in[1], c);
    case kFloat16: case kBFloat16: {
      const Tensor result = empty(c.sizes(), kFloat32);
      batched_gemm<float>(staged(in[0], kFloat32), staged(in[1], kFloat32), result);
      return convert_into(c, result);
    }
    default: {
      const Tensor result = empty(c.sizes(), kInt64);
      batched_integer(staged(in[0], kInt64), staged(in[1], kInt64), result);
      return convert_into(c, result);
    }
  }
}

// out = a b, then out += c d: the sum's rounding is the one add(a b, c d)
// makes whenever the GEMM sums c d's k in one block.
void matmul_sum_kernel(absl::Span<const Tensor> in, absl::Span<const Tensor> out, const Attrs&) {
  const Tensor& c = out[0];
  if (c.numel() == 0) return;
  switch (c.dtype()) {
    case kFloat32:
      batched_gemm<float>(in[0], in[1], c);
      return batched_gemm<float>(in[2], in[3], c, 1.f);
    case kFloat64:
      batched_gemm<double>(in[0], in[1], c);
      return batched_gemm<double>(in[2], in[3], c, 1.0);
    default:
      throw Error(nnvm::detail::concat("matmul_sum: float32 and float64 only, got ", dtype_name(c.dtype())));
  }
}

}  // namespace

NNVM_REGISTER(cpu_linalg_kernels) {
  register_kernel("matmul", kCPU, matmul_kernel);
  register_kernel("matmul_sum", kCPU, matmul_sum_kernel);
}

}  // namespace nnvm::cpu
