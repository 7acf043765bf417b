// The engine under every CPU reduction, scan, softmax and sort kernel.
//
// The input is first made a contiguous tensor of the compute type, then viewed
// as [outer, reduced, inner]: outputs, in row-major order, are (o, i) pairs.
// When inner == 1 the reduced extent of each output is one unit-stride row;
// otherwise the reduced dims are outer to the kept ones and a tile of outputs
// accumulates whole rows at once (acc[i] += x[r][i]), so a sum over dim 0 of a
// [4096, 1024] tensor streams memory instead of striding through it.
// Both inner loops are unit-stride and the compiler vectorises them.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>

#include "nnvm/core/op.h"
#include "nnvm/kernels/cpu/loops.h"

namespace nnvm::cpu {

struct ReduceLayout {
  Tensor data;  // contiguous, of the compute dtype; keeps the buffer alive
  int64_t outer = 1, reduced = 1, inner = 1;
  // A layout of gathered rows (reduce_layout's `gather`; inner is 1): row o's
  // element r is at data[offset(o in kept) + offset(r in red)], each an index
  // into dims of these sizes and strides (row-major). Empty otherwise.
  DimVector kept_sizes = {}, kept_strides = {}, red_sizes = {}, red_strides = {};
  bool gathered() const { return !red_sizes.empty(); }
  template <class T> const T* base() const { return static_cast<const T*>(data.data_ptr()); }
};

// The dtype a reduction computes in for a value dtype (see with_compute_type).
DType compute_dtype(DType t);
// `x` as [outer, reduced, inner] for a reduction over `dims` (sorted, unique).
// Reduced dims that are not one block are moved innermost by a copy, or,
// with `gather` (for reduce(), which then reads each row a block at a time),
// left where they are: a gathered layout.
ReduceLayout reduce_layout(const Tensor& x, IntArrayRef dims, DType compute, bool gather = false);
// `x` as [dims before `dim`, size(dim), dims after]: an op along one dim whose
// contiguous output has the input's layout (softmax, cumsum, sort).
ReduceLayout dim_layout(const Tensor& x, int64_t dim, DType compute);

// Floating sums accumulate in double, integers in int64.
template <class T> using acc_of = std::conditional_t<std::is_floating_point_v<T>, double, T>;

inline constexpr int64_t kLanes = 16;
// A row longer than this is reduced in blocks of this many elements whose
// partial results merge in order: the split is fixed, so long rows still run
// in parallel and results never depend on the thread count.
inline constexpr int64_t kRowBlock = 16384;
inline constexpr int64_t kMaxTile = 1024;
// Column reductions over more rows than this accumulate blocks of this many
// rows in parallel, each streaming whole rows, and merge them in order.
inline constexpr int64_t kColumnBlock = 256;

// (value, index) of max/min: the first NaN wins, then the extreme value, then
// the lower index, whichever lane or block saw it (the JIT's arg reductions
// merge their blocks with it too).
template <class T, bool kMax> struct ArgReducer {
  struct acc_t {
    T v;
    int64_t i;  // -1: no element yet
  };
  acc_t init() const { return {T(0), -1}; }
  static bool before(const acc_t& a, const acc_t& b) {
    if (b.i < 0) return true;
    if (a.i < 0) return false;
    if constexpr (std::is_floating_point_v<T>) {
      const bool an = a.v != a.v, bn = b.v != b.v;
      if (an || bn) return an && (!bn || a.i < b.i);
    }
    if (a.v != b.v) return kMax ? a.v > b.v : a.v < b.v;
    return a.i < b.i;
  }
  acc_t step(acc_t a, T x, int64_t r) const {
    const acc_t b{x, r};
    return before(b, a) ? b : a;
  }
  acc_t merge(acc_t a, acc_t b) const { return before(a, b) ? a : b; }
};

// A Reducer has `acc_t`, `init()`, `step(acc, x, r)` (r: the position in the
// reduced extent) and `merge(a, b)`. Lanes reduce interleaved elements, so
// `merge` must not depend on which of its arguments came first (argmax breaks
// ties by the index it carries, not by argument order).
template <class T, class Red>
typename Red::acc_t reduce_run(const Red& red, const T* p, int64_t n, int64_t r0) {
  using A = typename Red::acc_t;
  A lanes[kLanes];
  for (auto& l : lanes) l = red.init();
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int64_t k = 0; k < kLanes; ++k) lanes[k] = red.step(lanes[k], p[j + k], r0 + j + k);
  for (int64_t k = 0; j < n; ++j, ++k) lanes[k] = red.step(lanes[k], p[j], r0 + j);
  A acc = lanes[0];
  for (int64_t k = 1; k < kLanes; ++k) acc = red.merge(acc, lanes[k]);
  return acc;
}

// Splits the outputs over the pool: rows(o) for each output when inner == 1,
// else cols(o, i0, n) for tiles of at most kMaxTile consecutive inner outputs.
template <class Rows, class Cols> void for_each_slice(const ReduceLayout& L, Rows rows, Cols cols) {
  const int64_t O = L.outer, R = L.reduced, I = L.inner;
  if (O * I == 0) return;
  if (I == 1) {
    parallel_for(0, O, std::max<int64_t>(1, kGrain / std::max<int64_t>(R, 1)), [&](int64_t b, int64_t e) {
      for (int64_t o = b; o < e; ++o) rows(o);
    });
    return;
  }
  // Enough tiles to keep every thread busy; the tiling never changes a result,
  // since each output still accumulates its rows in order.
  const int64_t want = (4 * get_num_threads() + O - 1) / O;
  const int64_t tile = std::clamp<int64_t>((I / want + 15) / 16 * 16, 16, kMaxTile);
  const int64_t tiles = (I + tile - 1) / tile;
  parallel_for(0, O * tiles, std::max<int64_t>(1, kGrain / std::max<int64_t>(R * tile, 1)),
               [&](int64_t b, int64_t e) {
                 for (int64_t t = b; t < e; ++t) {
                   const int64_t i0 = (t % tiles) * tile;
                   cols(t / tiles, i0, std::min(tile, I - i0));
                 }
               });
}

// Elements [r0, r0 + n) of row o of a gathered layout into buf.
template <class T> void gather_row(const ReduceLayout& L, int64_t o, int64_t r0, int64_t n, T* buf) {
  const T* p = L.base<T>();
  for (size_t d = L.kept_sizes.size(); d-- > 0; o /= L.kept_sizes[d])
    p += (o % L.kept_sizes[d]) * L.kept_strides[d];
  const size_t last = L.red_sizes.size() - 1;
  DimVector at(last + 1);  // r0 as an index into the reduced dims
  for (size_t d = last + 1; d-- > 0; r0 /= L.red_sizes[d]) at[d] = r0 % L.red_sizes[d];
  const int64_t size = L.red_sizes[last], stride = L.red_strides[last];
  for (int64_t done = 0; done < n;) {
    const T* q = p;
    for (size_t d = 0; d <= last; ++d) q += at[d] * L.red_strides[d];
    const int64_t run = std::min(size - at[last], n - done);
    if (stride == 1) std::copy(q, q + run, buf + done);
    else for (int64_t j = 0; j < run; ++j) buf[done + j] = q[j * stride];
    done += run;
    at[last] += run;
    for (size_t d = last; d > 0 && at[d] == L.red_sizes[d]; --d) {  // carry
      at[d] = 0;
      ++at[d - 1];
    }
  }
}

// Reduces every output with `red` and calls store(k, acc) for output k = o * inner + i.
template <class T, class Red, class Store> void reduce(const ReduceLayout& L, const Red& red, Store store) {
  using A = typename Red::acc_t;
  const T* x = L.base<T>();
  const int64_t R = L.reduced, I = L.inner;
  const int64_t blocks = (R + kRowBlock - 1) / kRowBlock;
  if (L.gathered() || (I == 1 && blocks > 1)) {
    // Rows in blocks of kRowBlock reduced in parallel, merged in order. A
    // gathered layout's rows go through a buffer a block at a time: the same
    // runs, hence the same result, as the contiguous copy reduce_layout
    // would have made (a row of one block included: for_each_slice's rows).
    if (L.outer == 0) return;
    const int64_t per_row = std::max<int64_t>(blocks, 1);
    const std::unique_ptr<A[]> part(new A[size_t(L.outer * per_row)]);
    parallel_for(0, L.outer * per_row, 1, [&](int64_t b, int64_t e) {
      // One buffer per task (no thread_local: the library's TLS must stay
      // small, test dlopen_library), not a vector: T may be bool.
      const std::unique_ptr<T[]> buf(L.gathered() ? new T[size_t(std::min(R, kRowBlock))] : nullptr);
      for (int64_t t = b; t < e; ++t) {
        const int64_t o = t / per_row, r0 = (t % per_row) * kRowBlock, n = std::min(kRowBlock, R - r0);
        if (buf) gather_row(L, o, r0, n, buf.get());
        part[size_t(t)] = reduce_run(red, buf ? buf.get() : x + o * R + r0, n, r0);
      }
    });
    for (int64_t o = 0; o < L.outer; ++o) {
      A acc = part[size_t(o * per_row)];
      for (int64_t k = 1; k < per_row; ++k) acc = red.merge(acc, part[size_t(o * per_row + k)]);
      store(o, acc);
    }
    return;
  }
  auto columns = [&](int64_t o, int64_t i0, int64_t n, int64_t r0, int64_t r1, auto emit) {
    A acc[kMaxTile];
    for (int64_t i = 0; i < n; ++i) acc[i] = red.init();
    const T* p = x + (o * R + r0) * I + i0;
    int64_t r = r0;
    // Four rows per sweep keep acc[i] in a register (same order as one at a time).
    for (; r + 4 <= r1; r += 4, p += 4 * I)
      for (int64_t i = 0; i < n; ++i)
        acc[i] = red.step(red.step(red.step(red.step(acc[i], p[i], r), p[i + I], r + 1), p[i + 2 * I], r + 2),
                          p[i + 3 * I], r + 3);
    for (; r < r1; ++r, p += I)
      for (int64_t i = 0; i < n; ++i) acc[i] = red.step(acc[i], p[i], r);
    for (int64_t i = 0; i < n; ++i) emit(i0 + i, acc[i]);
  };
  const int64_t row_blocks = (R + kColumnBlock - 1) / kColumnBlock;
  if (I > 1 && row_blocks > 1) {
    // Blocks of rows accumulate whole rows in parallel, then merge in order.
    const int64_t tile = std::min(I, kMaxTile), tiles = (I + tile - 1) / tile;
    const std::unique_ptr<A[]> part(new A[size_t(L.outer * row_blocks * I)]);
    parallel_for(0, L.outer * row_blocks * tiles, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) {
        const int64_t i0 = (t % tiles) * tile, ob = t / tiles, r0 = (ob % row_blocks) * kColumnBlock;
        columns(ob / row_blocks, i0, std::min(tile, I - i0), r0, std::min(R, r0 + kColumnBlock),
                [&](int64_t i, const A& acc) { part[size_t(ob * I + i)] = acc; });
      }
    });
    parallel_for(0, L.outer * I, std::max<int64_t>(1, kGrain / row_blocks), [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) {
        const A* p = &part[size_t((k / I) * row_blocks * I + k % I)];
        A acc = p[0];
        for (int64_t rb = 1; rb < row_blocks; ++rb) acc = red.merge(acc, p[rb * I]);
        store(k, acc);
      }
    });
    return;
  }
  for_each_slice(
      L, [&](int64_t o) { store(o, reduce_run(red, x + o * R, R, 0)); },
      [&](int64_t o, int64_t i0, int64_t n) {
        columns(o, i0, n, 0, R, [&](int64_t i, const A& acc) { store(o * I + i, acc); });
      });
}

// Runs fill(dst) on a contiguous buffer of R values for `out` (contiguous):
// out's own memory when its dtype is R, else a temporary converted on store.
template <class R, class Fill> void write_output(const Tensor& out, Fill fill) {
  if (out.dtype() == dtype_of_v<R>) {
    fill(static_cast<R*>(out.data_ptr()));
    return;
  }
  const std::unique_ptr<R[]> buf(new R[size_t(out.numel())]);
  fill(buf.get());
  scatter<R>(buf.get(), data_bytes(out), int64_t(out.element_size()), out.numel(), out.dtype());
}

// ---- reducers shared by several kernels ----
template <class T> struct SumReducer {
  using acc_t = acc_of<T>;
  acc_t init() const { return acc_t(0); }
  acc_t step(acc_t a, T x, int64_t) const { return a + acc_t(x); }
  acc_t merge(acc_t a, acc_t b) const { return a + b; }
};

template <class T> constexpr T lowest() {
  if constexpr (std::is_floating_point_v<T>) return -std::numeric_limits<T>::infinity();
  else return std::numeric_limits<T>::lowest();
}
template <class T> constexpr T highest() {
  if constexpr (std::is_floating_point_v<T>) return std::numeric_limits<T>::infinity();
  else return std::numeric_limits<T>::max();
}

// NaN wins: it propagates like libtorch's max/amax.
template <class T, bool kMax> struct ExtremumReducer {
  using acc_t = T;
  acc_t init() const { return kMax ? lowest<T>() : highest<T>(); }
  acc_t step(acc_t a, T x, int64_t) const {
    const bool better = kMax ? x > a : x < a;
    if constexpr (std::is_floating_point_v<T>) return better || x != x ? x : a;
    else return better ? x : a;
  }
  acc_t merge(acc_t a, acc_t b) const { return step(a, b, 0); }
};

}  // namespace nnvm::cpu
