#include "nnvm/core/tensor.h"

#include "nnvm/core/mode.h"

#include <atomic>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nnvm/core/hot_tls.h"
#include "nnvm/core/quantize.h"

namespace nnvm {

uint64_t new_layout_id() {
  struct Ids {
    uint64_t next = 0, end = 0;
  };
  NNVM_HOT_TLS static thread_local Ids ids;
  if (ids.next == ids.end) [[unlikely]] {
    constexpr uint64_t kBlock = uint64_t(1) << 16;
    static std::atomic<uint64_t> taken{1};  // 0: none
    ids.next = taken.fetch_add(kBlock, std::memory_order_relaxed);
    ids.end = ids.next + kBlock;
  }
  return ids.next++;
}

void Tensor::throw_undefined() {
  throw Error("tensor: this tensor is undefined (default-constructed or moved from); expected a defined tensor");
}

int64_t Tensor::size(int64_t dim) const {
  NNVM_CHECK(this->dim() > 0, "size", "dim ", dim, " was asked of a 0-d tensor, which has no dims");
  return impl_->shape[wrap_dim(dim, this->dim(), "size")];
}
int64_t Tensor::stride(int64_t dim) const {
  NNVM_CHECK(this->dim() > 0, "stride", "dim ", dim, " was asked of a 0-d tensor, which has no dims");
  return impl_->strides[wrap_dim(dim, this->dim(), "stride")];
}

void* Tensor::data_ptr() const {
  NNVM_CHECK(defined(), "data_ptr", "the tensor is undefined");
  Storage& s = *impl_->storage;
  if (s.pending()) [[unlikely]]
    detail::trace_hooks()->materialize(s);
  return static_cast<char*>(impl_->storage->data()) + impl_->offset * int64_t(itemsize(impl_->dtype));
}

void Tensor::set_data(const Tensor& value) const {
  NNVM_CHECK(defined() && value.defined(), "set_data", "both tensors must be defined");
  if (const detail::TraceHooks* hooks = detail::trace_hooks()) hooks->repoint(*impl_);
  TensorImpl& impl = *impl_;
  const TensorImpl& src = *value.impl_;
  impl.storage = src.storage;
  impl.shape = src.shape;
  impl.strides = src.strides;
  impl.offset = src.offset;
  impl.dtype = src.dtype;
  impl.device = src.device;
  impl.is_view = false;
  impl.layout_id.renew();
}

void Tensor::check_dtype(DType expected, std::string_view op) const {
  NNVM_CHECK(defined(), op, "the tensor is undefined");
  NNVM_CHECK(impl_->dtype == expected, op, "expected a tensor of dtype ", dtype_name(expected),
             " but got ", dtype_name(impl_->dtype), " (shape ", shape_str(sizes()), ")");
}

Scalar Tensor::item() const {
  NNVM_CHECK(defined(), "item", "the tensor is undefined");
  NNVM_CHECK(numel() == 1, "item", "a tensor with ", numel(), " elements (shape ", shape_str(sizes()),
             ") cannot be converted to a scalar; expected exactly one element");
  const void* p = data_ptr();
  return NNVM_DISPATCH_ALL(dtype(), "item", [&]() -> Scalar { return Scalar(*static_cast<const scalar_t*>(p)); });
}

namespace {

std::string type_name(const Tensor& t) {
  static const char* names[] = {"Bool",  "Byte",   "Char",  "Int",   "Long",   "Half",
                                 "BFloat16", "Float", "Double", "QInt8", "QUInt8", "QInt32"};
  static_assert(std::size(names) == kNumDTypes);
  return absl::StrCat(t.device().is_cpu() ? "CPU" : "CUDA", names[int(t.dtype())], "Type");
}

// Formats every element of a contiguous double copy with one shared width,
// the way libtorch lines up columns: integer-valued floats without decimals,
// otherwise 4 decimals, scientific notation for very large or small magnitudes.
struct Formatter {
  bool integral = false;
  bool sci = false;
  int precision = 4;
  int width = 1;

  explicit Formatter(const std::vector<double>& v, bool is_int) : integral(is_int) {
    double amax = 0, amin_nz = INFINITY;
    bool all_int = true;
    for (double x : v) {
      if (!std::isfinite(x)) continue;
      amax = std::max(amax, std::fabs(x));
      if (x != 0) amin_nz = std::min(amin_nz, std::fabs(x));
      if (x != std::floor(x)) all_int = false;
    }
    if (!integral && all_int && amax < 1e8) precision = 0;
    if (!integral && (amax >= 1e8 || (amin_nz < 1e-4 && amin_nz != INFINITY))) sci = true;
    for (double x : v) width = std::max(width, int(str(x).size()));
  }
  std::string str(double x) const {
    std::ostringstream os;
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
    if (integral) os << int64_t(x);
    else if (sci) os << std::scientific << std::setprecision(4) << x;
    else if (precision == 0) os << std::fixed << std::setprecision(0) << x;
    else os << std::fixed << std::setprecision(precision) << x;
    return os.str();
  }
};

void print_matrix(std::ostream& os, const double* p, int64_t rows, int64_t cols, const Formatter& f) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) os << (c ? " " : "") << std::setw(f.width + 1) << f.str(p[r * cols + c]);
    os << "\n";
  }
}

}  // namespace

std::string Tensor::toString() const {
  if (!defined()) return "UndefinedType";
  return absl::StrCat(type_name(*this), "{", absl::StrJoin(sizes(), ","), "}");
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "[ Tensor (undefined) ]";
  // a quantized tensor prints its values, then its scale and zero point (libtorch's layout)
  const Tensor shown = t.is_quantized() ? t.dequantize() : t;
  const std::vector<double> v = shown.to_vector<double>();
  const Formatter f(v, !shown.is_floating_point());
  if (t.dim() == 0) {
    os << f.str(v.empty() ? 0.0 : v[0]) << "\n";
  } else if (t.numel() > 0) {
    // a 1-d tensor prints as a column, like libtorch
    const int64_t cols = t.dim() >= 2 ? t.size(-1) : 1;
    const int64_t rows = t.dim() >= 2 ? t.size(-2) : t.size(0);
    const int64_t mats = t.numel() / (rows * cols);
    for (int64_t m = 0; m < mats; ++m) {
      if (t.dim() > 2) {
        os << "(";
        int64_t rem = m;
        DimVector idx(t.dim() - 2);
        for (int64_t d = t.dim() - 3; d >= 0; --d) {
          idx[d] = rem % t.size(d);
          rem /= t.size(d);
        }
        os << absl::StrJoin(idx, ",") << ",.,.) = \n";
      }
      print_matrix(os, v.data() + m * rows * cols, rows, cols, f);
      if (t.dim() > 2 && m + 1 < mats) os << "\n";
    }
  }
  os << "[ " << t.toString();
  if (t.is_quantized()) os << ", " << t.quantizer().describe();
  return os << " ]";
}

}  // namespace nnvm
