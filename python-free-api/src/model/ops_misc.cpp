// Model ops of ONNX that fit no other family: EyeLike, ReverseSequence,
// MaxUnpool, BitShift, Det, Scan (whose body runs through
// OpContext::run_graph, as Loop's does), Unique and TfIdfVectorizer.
// add_more_ops, which the registry calls after the other groups, registers
// them and the groups op_util.h lists after it (losses, quantization, random
// draws, signals, images).
#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "op_util.h"

namespace nnvm::model_detail {
namespace {

Tensor eye_like(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  NNVM_CHECK(x.dim() == 2, ctx.where(), "expected a 2-d input, got ", shape_str(x.sizes()));
  DType dtype = x.dtype();
  if (ctx.has_attr("dtype")) {
    const int64_t code = ctx.attr_int("dtype");
    const std::optional<DType> given = dtype_from_onnx(code);
    NNVM_CHECK(given.has_value(), ctx.where(), "dtype ", onnx_dtype_name(code), " is not one nnvm has");
    dtype = *given;
  }
  const int64_t k = ctx.attr_int("k", 0);
  const Tensor offset = arange(x.size(1), kInt64).unsqueeze(0) - arange(x.size(0), kInt64).unsqueeze(1);
  return (offset == k).to(dtype);
}

// y[b, t] = x[b, len[b] - 1 - t] for t < len[b], else x[b, t]: a gather along
// the time axis, which refuses a length past the axis.
Tensor reverse_sequence(const OpContext& ctx) {
  const Tensor &x = ctx.input(0), &lens = ctx.input(1);
  const int64_t batch_axis = ctx.attr_int("batch_axis", 1), time_axis = ctx.attr_int("time_axis", 0);
  NNVM_CHECK(x.dim() >= 2, ctx.where(), "expected an input of rank >= 2, got ", shape_str(x.sizes()));
  NNVM_CHECK((batch_axis == 0 && time_axis == 1) || (batch_axis == 1 && time_axis == 0), ctx.where(),
             "batch_axis and time_axis must be 0 and 1 in some order, got ", batch_axis, " and ", time_axis);
  NNVM_CHECK(lens.dim() == 1 && lens.size(0) == x.size(batch_axis) && is_integral(lens.dtype()), ctx.where(),
             "sequence_lens must be 1-d integers, one per batch entry (", x.size(batch_axis), "), got ", lens.dtype(),
             shape_str(lens.sizes()));
  const Tensor t = arange(x.size(time_axis), kInt64).unsqueeze(0), len = lens.to(kInt64).unsqueeze(1);
  Tensor source = where(t < len, len - 1 - t, t);  // [batch, time]
  if (batch_axis == 1) source = source.t();
  std::vector<int64_t> shape(size_t(x.dim()), 1);
  shape[0] = source.size(0);
  shape[1] = source.size(1);
  return x.gather(time_axis, source.reshape(shape).expand(x.sizes()).contiguous());
}

// MaxUnpool: X's values put at their Indices (MaxPool's: positions in
// [N, C, D1, ...] flattened) of the shape the pooling attributes imply, zeros
// elsewhere. An output_shape input pads that with zeros at the end of each
// spatial dim: the specification's reference reads the indices in the
// implied shape, not in output_shape.
Tensor max_unpool(const OpContext& ctx) {
  const Tensor &x = ctx.input(0), &indices = ctx.input(1);
  NNVM_CHECK(x.dim() >= 3, ctx.where(), "expected X [N, C, D1, ...], got ", shape_str(x.sizes()));
  NNVM_CHECK(indices.sizes() == x.sizes() && is_integral(indices.dtype()), ctx.where(), "indices I ",
             indices.dtype(), shape_str(indices.sizes()), " must be integers of X's shape ", shape_str(x.sizes()));
  const size_t rank = size_t(x.dim() - 2);
  const std::vector<int64_t> kernel = ctx.attr_ints("kernel_shape");
  const std::vector<int64_t> strides = ctx.attr_ints("strides", std::vector<int64_t>(rank, 1));
  const std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * rank, 0));
  NNVM_CHECK(kernel.size() == rank && strides.size() == rank && pads.size() == 2 * rank, ctx.where(),
             "kernel_shape ", shape_str(kernel), ", strides ", shape_str(strides), " and pads ", shape_str(pads),
             " must have ", rank, ", ", rank, " and ", 2 * rank, " values for X ", shape_str(x.sizes()));
  std::vector<int64_t> shape{x.size(0), x.size(1)};
  for (size_t d = 0; d < rank; ++d) {
    NNVM_CHECK(kernel[d] >= 1 && strides[d] >= 1 && pads[d] >= 0 && pads[d + rank] >= 0, ctx.where(),
               "kernel_shape and strides must be positive, pads non-negative");
    shape.push_back((x.size(int64_t(d) + 2) - 1) * strides[d] - pads[d] - pads[d + rank] + kernel[d]);
    NNVM_CHECK(shape.back() >= 0, ctx.where(), "the pads ", shape_str(pads), " are wider than the output");
  }
  Tensor y = zeros({numel_of(shape)}, x.dtype()).scatter(0, indices.reshape({-1}).to(kInt64), x.reshape({-1}));
  y = y.reshape(shape);
  if (!ctx.has_input(2)) return y;
  const std::vector<int64_t> out = ints_input(ctx, 2, "output_shape", x.dim());
  std::vector<int64_t> widths;  // nnvm's pad order: from the last dim back
  for (size_t d = out.size(); d-- > 0;) {
    NNVM_CHECK(out[d] >= shape[d] && (d >= 2 || out[d] == shape[d]), ctx.where(), "output_shape ", shape_str(out),
               " must keep N and C and hold the unpooled shape ", shape_str(shape));
    widths.insert(widths.end(), {0, out[d] - shape[d]});
  }
  return pad(y, widths);
}

// BitShift of uint8 values (nnvm has no other unsigned dtype); a shift by 8
// or more leaves 0.
Tensor bit_shift(const OpContext& ctx) {
  const Tensor &x = ctx.input(0), &amount = ctx.input(1);
  NNVM_CHECK(x.dtype() == kUInt8 && amount.dtype() == kUInt8, ctx.where(),
             "expected uint8 operands (nnvm's one unsigned dtype), got ", x.dtype(), " and ", amount.dtype());
  const std::string direction = ctx.attr_string("direction");
  NNVM_CHECK(direction == "LEFT" || direction == "RIGHT", ctx.where(), "direction must be LEFT or RIGHT, got '",
             direction, "'");
  const Tensor factor = pow(2, amount.to(kInt64).clamp_max(8)), wide = x.to(kInt64);
  return (direction == "LEFT" ? (wide * factor).remainder(256) : wide.div(factor, "floor")).to(kUInt8);
}

// Det of [..., M, M] by Gaussian elimination with partial pivoting, batched,
// in float64: M steps of tensor ops, so it is recorded like any other node.
Tensor det(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  NNVM_CHECK(is_floating(x.dtype()) && x.dim() >= 2 && x.size(-1) == x.size(-2), ctx.where(),
             "expected floating-point square matrices [..., M, M], got ", x.dtype(), shape_str(x.sizes()));
  const int64_t m = x.size(-1);
  const std::vector<int64_t> batch(x.sizes().begin(), x.sizes().end() - 2);
  const int64_t n = numel_of(batch);
  Tensor a = x.to(kFloat64).reshape({n, m, m});
  Tensor result = ones({n}, kFloat64);
  const Tensor rows = arange(m, kInt64);
  for (int64_t k = 0; k < m; ++k) {
    // Swap row k with the row at or below it of the largest |a[i, k]|.
    const Tensor pivot_row = (a.select(2, k).slice(1, k).abs().argmax(1) + k).unsqueeze(1);  // [n, 1]
    const Tensor order = where(rows == k, pivot_row, where(rows == pivot_row, k, rows));   // [n, m]
    a = a.gather(1, order.unsqueeze(2).expand({n, m, m}).contiguous());
    const Tensor pivot = a.select(1, k).select(1, k);  // [n]
    result = result * where(pivot_row.squeeze(1) != k, -pivot, pivot);
    if (k + 1 == m) break;
    // The rows below less their multiple of row k. A zero pivot (a singular
    // matrix, whose result is 0 already) divides by 1 instead.
    const Tensor factor = a.slice(1, k + 1).select(2, k) / where(pivot == 0, 1.0, pivot).unsqueeze(1);
    const Tensor below = a.slice(1, k + 1) - factor.unsqueeze(2) * a.slice(1, k, k + 1);
    a = cat({a.slice(1, 0, k + 1), below}, 1);
  }
  return result.reshape(batch).to(x.dtype());
}

// ---- Scan ----

// An int attribute with one value per scanned value (`count`), 0 each by default.
std::vector<int64_t> per_value(const OpContext& ctx, const char* name, size_t count) {
  std::vector<int64_t> v = ctx.attr_ints(name, std::vector<int64_t>(count, 0));
  NNVM_CHECK(v.size() == count, ctx.where(), name, " ", shape_str(v), " must have ", count, " values");
  return v;
}

// How one Scan runs: per scan input its axis and direction, per scan output
// the same (direction 1: backwards).
struct ScanAxes {
  std::vector<int64_t> in_axes, in_directions, out_axes, out_directions;
};

// Runs the body over the scan inputs' slices: (states..., scans...) ->
// (final states..., scan outputs...), each scan output the body's values
// stacked along its axis.
std::vector<Tensor> scan_loop(const OpContext& ctx, std::vector<Tensor> states, const std::vector<Tensor>& scans,
                              const ScanAxes& axes, size_t num_outputs) {
  NNVM_CHECK(num_outputs >= states.size(), ctx.where(), "has ", num_outputs, " outputs for ", states.size(),
             " states");
  const size_t num_states = states.size(), num_scans = num_outputs - num_states;
  std::vector<int64_t> in_axes;
  for (size_t i = 0; i < scans.size(); ++i) {
    NNVM_CHECK(scans[i].dim() >= 1, ctx.where(), "scan input ", i, " is 0-d; it needs an axis to scan");
    in_axes.push_back(normalize_axis(ctx, axes.in_axes[i], scans[i].dim()));
  }
  const int64_t length = scans.empty() ? 0 : scans[0].size(in_axes[0]);
  for (size_t i = 0; i < scans.size(); ++i)
    NNVM_CHECK(scans[i].size(in_axes[i]) == length, ctx.where(), "scan input ", i, " ", shape_str(scans[i].sizes()),
               " has ", scans[i].size(in_axes[i]), " steps along axis ", in_axes[i], ", scan input 0 has ", length);
  std::vector<std::vector<Tensor>> scanned(num_scans);
  for (int64_t t = 0; t < length; ++t) {
    std::vector<Tensor> args = states;
    for (size_t i = 0; i < scans.size(); ++i)
      args.push_back(scans[i].select(in_axes[i], axes.in_directions[i] ? length - 1 - t : t));
    std::vector<Tensor> outs = ctx.run_graph("body", args);
    NNVM_CHECK(outs.size() == num_outputs, ctx.where(), "body gives ", outs.size(), " outputs; expected ",
               num_outputs, " (", num_states, " states, ", num_scans, " scan outputs)");
    std::copy(outs.begin(), outs.begin() + ptrdiff_t(num_states), states.begin());
    for (size_t k = 0; k < num_scans; ++k) scanned[k].push_back(outs[num_states + k]);
  }
  for (size_t k = 0; k < num_scans; ++k) {
    if (scanned[k].empty()) {
      states.push_back(empty_scan_output(ctx, num_states + k, axes.out_axes[k]));
      continue;
    }
    if (axes.out_directions[k]) std::reverse(scanned[k].begin(), scanned[k].end());
    states.push_back(stack(scanned[k], normalize_axis(ctx, axes.out_axes[k], scanned[k][0].dim() + 1)));
  }
  return states;
}

// Scan from opset 9: (states..., scan inputs...) with per-input axes and directions.
std::vector<Tensor> scan(const OpContext& ctx) {
  const int64_t num_scan_inputs = ctx.attr_int("num_scan_inputs");
  NNVM_CHECK(num_scan_inputs >= 1 && num_scan_inputs <= ctx.num_inputs(), ctx.where(), "num_scan_inputs ",
             num_scan_inputs, " must be in [1, ", ctx.num_inputs(), "], the node's inputs");
  const size_t num_states = size_t(ctx.num_inputs() - num_scan_inputs), num_scans = size_t(num_scan_inputs);
  NNVM_CHECK(ctx.num_outputs() >= int64_t(num_states), ctx.where(), "has ", ctx.num_outputs(), " outputs for ",
             num_states, " states");
  const size_t num_scan_outputs = size_t(ctx.num_outputs()) - num_states;
  std::vector<Tensor> states, scans;
  for (int64_t i = 0; i < ctx.num_inputs(); ++i) (size_t(i) < num_states ? states : scans).push_back(ctx.input(i));
  const ScanAxes axes{per_value(ctx, "scan_input_axes", num_scans), per_value(ctx, "scan_input_directions", num_scans),
                      per_value(ctx, "scan_output_axes", num_scan_outputs),
                      per_value(ctx, "scan_output_directions", num_scan_outputs)};
  return scan_loop(ctx, states, scans, axes, size_t(ctx.num_outputs()));
}

// Scan of opset 8: a batch axis 0 before the scan axis, and an optional
// sequence_lens input (one length per batch entry; scan outputs past it are
// zeros).
std::vector<Tensor> scan8(const OpContext& ctx) {
  const int64_t num_scan_inputs = ctx.attr_int("num_scan_inputs");
  NNVM_CHECK(num_scan_inputs >= 1 && num_scan_inputs < ctx.num_inputs(), ctx.where(), "num_scan_inputs ",
             num_scan_inputs, " must be in [1, ", ctx.num_inputs() - 1, "]");
  const size_t num_states = size_t(ctx.num_inputs() - 1 - num_scan_inputs), num_scans = size_t(num_scan_inputs);
  NNVM_CHECK(ctx.num_outputs() >= int64_t(num_states), ctx.where(), "has ", ctx.num_outputs(), " outputs for ",
             num_states, " states");
  const size_t num_outputs = size_t(ctx.num_outputs()), num_scan_outputs = num_outputs - num_states;
  std::vector<Tensor> states, scans;
  for (int64_t i = 1; i < ctx.num_inputs(); ++i)
    (size_t(i) <= num_states ? states : scans).push_back(ctx.input(i));
  for (const std::vector<Tensor>* list : {&states, &scans})
    for (const Tensor& v : *list)
      NNVM_CHECK(v.dim() >= (list == &scans ? 2 : 1) && v.size(0) == scans[0].size(0), ctx.where(),
                 "every state and scan input needs batch axis 0 of scan input 0's size ", scans[0].size(0),
                 " (scan inputs a sequence axis 1), got ", shape_str(v.sizes()));
  const int64_t batch = scans[0].size(0), steps = scans[0].size(1);
  std::vector<int64_t> lens(size_t(batch), steps);
  if (ctx.has_input(0)) lens = ints_input(ctx, 0, "sequence_lens", batch);
  const ScanAxes axes{std::vector<int64_t>(num_scans, 0), per_value(ctx, "directions", num_scans),
                      std::vector<int64_t>(num_scan_outputs, 0), std::vector<int64_t>(num_scan_outputs, 0)};
  std::vector<std::vector<Tensor>> per_entry(num_outputs);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t len = lens[size_t(b)];
    NNVM_CHECK(len >= 0 && len <= steps, ctx.where(), "sequence length ", len, " of batch entry ", b,
               " is outside [0, ", steps, "]");
    std::vector<Tensor> entry_states, entry_scans;
    for (const Tensor& s : states) entry_states.push_back(s.select(0, b));
    for (const Tensor& s : scans) entry_scans.push_back(s.select(0, b).narrow(0, 0, len));
    std::vector<Tensor> outs = scan_loop(ctx, entry_states, entry_scans, axes, num_outputs);
    for (size_t k = num_states; k < num_outputs && len < steps; ++k) {
      std::vector<int64_t> rest(outs[k].sizes().begin(), outs[k].sizes().end());
      rest[0] = steps - len;
      outs[k] = cat({outs[k], zeros(rest, outs[k].dtype())}, 0);
    }
    for (size_t k = 0; k < num_outputs; ++k) per_entry[k].push_back(outs[k]);
  }
  std::vector<Tensor> results;
  for (const std::vector<Tensor>& values : per_entry) results.push_back(stack(values, 0));
  return results;
}

// ---- Unique ----

// Row-major rows of equal width compared lexicographically; NaNs sort last
// and equal each other (numpy's unique). Keys are exact: int64 for integers,
// double for floating values.
template <class T>
struct RowOrder {
  const std::vector<T>& data;
  int64_t width;
  static bool less(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) return a < b || (!std::isnan(a) && std::isnan(b));
    return a < b;
  }
  static bool equal(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) return a == b || (std::isnan(a) && std::isnan(b));
    return a == b;
  }
  bool operator()(int64_t i, int64_t j) const {
    for (int64_t k = 0; k < width; ++k) {
      const T a = data[size_t(i * width + k)], b = data[size_t(j * width + k)];
      if (!equal(a, b)) return less(a, b);
    }
    return false;
  }
};

// The distinct rows (groups of equal ones): each group's first row and size,
// and each row's group; the groups sorted, or in order of first occurrence.
struct Groups {
  std::vector<int64_t> first, inverse, counts;
};

template <class T>
Groups group_rows(const std::vector<T>& data, int64_t rows, int64_t width, bool sorted) {
  const RowOrder<T> less{data, width};
  std::vector<int64_t> order(static_cast<size_t>(rows));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), less);
  Groups g;
  g.inverse.resize(size_t(rows));
  for (size_t i = 0; i < order.size(); ++i) {
    if (i == 0 || less(order[i - 1], order[i])) {
      g.first.push_back(order[i]);  // the stable sort keeps a group's first row first
      g.counts.push_back(0);
    }
    g.inverse[size_t(order[i])] = int64_t(g.first.size()) - 1;
    ++g.counts.back();
  }
  if (sorted) return g;
  std::vector<int64_t> by_first(g.first.size()), rank(g.first.size());
  std::iota(by_first.begin(), by_first.end(), 0);
  std::sort(by_first.begin(), by_first.end(),
            [&](int64_t a, int64_t b) { return g.first[size_t(a)] < g.first[size_t(b)]; });
  Groups out;
  for (size_t i = 0; i < by_first.size(); ++i) {
    rank[size_t(by_first[i])] = int64_t(i);
    out.first.push_back(g.first[size_t(by_first[i])]);
    out.counts.push_back(g.counts[size_t(by_first[i])]);
  }
  for (int64_t group : g.inverse) out.inverse.push_back(rank[size_t(group)]);
  return out;
}

// Unique -> (Y, indices, inverse_indices, counts): the distinct elements of x
// flattened, or its distinct slices along `axis`; computed on the host, as
// the output's size depends on the values.
std::vector<Tensor> unique(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  const bool sorted = ctx.attr_int("sorted", 1) != 0;
  Tensor source = x.reshape({-1});
  int64_t axis = 0;
  Tensor rows_first = source;  // the slices as rows
  if (ctx.has_attr("axis")) {
    axis = normalize_axis(ctx, ctx.attr_int("axis"), x.dim());
    NNVM_CHECK(x.dim() >= 1, ctx.where(), "cannot take slices of a 0-d input along an axis");
    std::vector<int64_t> perm{axis};
    for (int64_t d = 0; d < x.dim(); ++d)
      if (d != axis) perm.push_back(d);
    source = x;
    rows_first = x.permute(perm);
  }
  const int64_t rows = source.size(axis), width = rows ? x.numel() / rows : 0;
  const Groups g = is_floating(x.dtype()) ? group_rows(to_doubles(rows_first), rows, width, sorted)
                                          : group_rows(to_ints(rows_first), rows, width, sorted);
  return {source.index_select(axis, int_tensor(g.first)), int_tensor(g.first), int_tensor(g.inverse),
          int_tensor(g.counts)};
}

// ---- TfIdfVectorizer ----

// TfIdfVectorizer of integer tokens (nnvm has no strings): per row of x ([C]
// or [B, C]), how often each pooled n-gram occurs, its tokens max_skip_count
// + 1 or fewer apart, as ONNX's reference walks them: unigrams once, longer
// n-grams once per skip distance. mode TF gives the counts, IDF the weight of
// each n-gram present, TFIDF counts times weights (weights default to 1).
Tensor tfidf_vectorizer(const OpContext& ctx) {
  const Tensor& x = ctx.input(0);
  NNVM_CHECK(!ctx.has_attr("pool_strings"), ctx.where(), "pool_strings: nnvm has no string tensors");
  NNVM_CHECK((x.dtype() == kInt32 || x.dtype() == kInt64) && x.dim() <= 2, ctx.where(),
             "expected int32 or int64 tokens [C] or [B, C], got ", x.dtype(), shape_str(x.sizes()));
  const int64_t min_n = ctx.attr_int("min_gram_length"), max_n = ctx.attr_int("max_gram_length");
  const int64_t max_skip = ctx.attr_int("max_skip_count");
  const std::string mode = ctx.attr_string("mode");
  NNVM_CHECK(1 <= min_n && min_n <= max_n && max_skip >= 0, ctx.where(), "expected 1 <= min_gram_length (", min_n,
             ") <= max_gram_length (", max_n, ") and max_skip_count (", max_skip, ") >= 0");
  NNVM_CHECK(mode == "TF" || mode == "IDF" || mode == "TFIDF", ctx.where(), "mode '", mode,
             "' is not one of TF, IDF, TFIDF");
  const std::vector<int64_t> counts = ctx.attr_ints("ngram_counts"), indexes = ctx.attr_ints("ngram_indexes");
  const std::vector<int64_t> pool = ctx.attr_ints("pool_int64s");
  const int64_t out_size = indexes.empty() ? 0 : *std::max_element(indexes.begin(), indexes.end()) + 1;
  const std::vector<double> weights = ctx.attr_floats("weights", std::vector<double>{});
  NNVM_CHECK(weights.empty() || int64_t(weights.size()) >= out_size, ctx.where(), "weights hold ", weights.size(),
             " values for ", out_size, " outputs");
  // The pooled n-grams of lengths min_n to max_n, each to its output index.
  std::map<std::vector<int64_t>, int64_t> grams;
  size_t ordinal = 0;
  for (size_t k = 0; k < counts.size(); ++k) {
    const int64_t n = int64_t(k) + 1, begin = counts[k];
    const int64_t end = k + 1 < counts.size() ? counts[k + 1] : int64_t(pool.size());
    NNVM_CHECK(0 <= begin && begin <= end && end <= int64_t(pool.size()) && (end - begin) % n == 0, ctx.where(),
               "ngram_counts ", shape_str(counts), " does not split pool_int64s (", pool.size(),
               " values) into n-grams");
    for (int64_t at = begin; at < end; at += n, ++ordinal) {
      NNVM_CHECK(ordinal < indexes.size() && indexes[ordinal] >= 0, ctx.where(), "ngram_indexes ",
                 shape_str(indexes), " has no non-negative index for n-gram ", ordinal);
      if (n >= min_n && n <= max_n)
        grams[std::vector<int64_t>(pool.begin() + at, pool.begin() + at + n)] = indexes[ordinal];
    }
  }
  const int64_t rows = x.dim() == 2 ? x.size(0) : 1, cols = x.dim() == 0 ? 1 : x.size(-1);
  const std::vector<int64_t> tokens = to_ints(x);
  Tensor y = empty({rows, out_size}, kFloat64);
  double* freq = y.data_ptr<double>();
  std::fill(freq, freq + y.numel(), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t* row = tokens.data() + r * cols;
    // Skip distances past the row's length fit no n-gram: stop there.
    const int64_t last_skip = std::min<int64_t>(max_skip, std::max<int64_t>(cols, 1)) + 1;
    for (int64_t skip = 1, start_n = min_n; skip <= last_skip && start_n <= max_n; ++skip) {
      for (int64_t i = 0; i + skip * (start_n - 1) < cols; ++i) {
        std::vector<int64_t> gram;
        for (int64_t n = 1; n <= max_n && i + skip * (n - 1) < cols; ++n) {
          gram.push_back(row[i + skip * (n - 1)]);
          const auto hit = n >= start_n ? grams.find(gram) : grams.end();
          if (hit != grams.end()) ++freq[r * out_size + hit->second];
        }
      }
      start_n = std::max<int64_t>(start_n, 2);  // unigrams are counted at skip distance 1 only
    }
  }
  for (int64_t i = 0; i < y.numel(); ++i) {
    const double w = weights.empty() ? 1.0 : weights[size_t(i % out_size)];
    if (mode == "IDF") freq[i] = freq[i] > 0 ? w : 0.0;
    if (mode == "TFIDF") freq[i] *= w;
  }
  return x.dim() == 2 ? y.to(kFloat32) : y.reshape({out_size}).to(kFloat32);
}

}  // namespace

void add_more_ops(OpTable& table) {
  add_single(table, "EyeLike", eye_like);
  add_single(table, "ReverseSequence", reverse_sequence);
  add_single(table, "MaxUnpool", max_unpool);
  add_single(table, "BitShift", bit_shift);
  add_single(table, "Det", det);
  add(table, "Unique", unique);
  add_single(table, "TfIdfVectorizer", tfidf_vectorizer);
  add(table, "Scan", [](const OpContext& ctx) { return ctx.opset() >= 9 ? scan(ctx) : scan8(ctx); });
  add_loss_ops(table);
  add_quant_ops(table);
  add_random_ops(table);
  add_signal_ops(table);
  add_image_ops(table);
}

}  // namespace nnvm::model_detail
