// Sweep cases of the reductions, scans, softmax and sorting.
#include "sweep/sweep.h"

#include "absl/strings/str_cat.h"

namespace nnvm::sweep {
namespace {

// An input shape and the dims reduced: rows, columns, two of three dims
// (kept), everything, a scalar, empty rows, rows of one element, rows and
// columns longer than the JIT's unrolled loops.
struct Reduced {
  DimVector shape;
  DimVector dims;
  bool keepdim = false;
};
const Reduced kReduced[] = {{{3, 33}, {1}}, {{3, 33}, {0}},        {{2, 3, 5}, {0, 2}, true},
                            {{7}, {}},      {{}, {}},              {{0, 4}, {1}},
                            {{1, 1}, {1}, true}, {{3, 1029}, {1}}, {{1029, 3}, {0}}};
// One dim at a time: scans, softmax, sorting.
const std::pair<DimVector, int64_t> kAlongDim[] = {{{3, 33}, 1}, {{3, 33}, 0}, {{2, 3, 5}, 1}, {{7}, 0},
                                                   {{1}, 0},     {{0, 4}, 1},  {{4, 0}, 1},    {{2, 1029}, 1}};

std::string label_of(const Reduced& r) {
  return absl::StrCat(shape_str(r.shape), " dims ", shape_str(r.dims), r.keepdim ? " keepdim" : "");
}

}  // namespace

void add_reduction_cases(std::vector<Case>& cases) {
  // Reductions whose attributes are (dims, keepdim, extra...), the out= form included.
  struct Plain {
    const char* name;
    Attrs extra = {};
    const std::vector<DType>* dtypes = &kNumbers;
    bool empty = true;  // defined over no elements
  };
  const Plain plain[] = {{"amax", {}, &kNumbers, false}, {"amin", {}, &kNumbers, false},
                         {"argmax", {}, &kNumbers, false}, {"argmin", {}, &kNumbers, false},
                         {"all", {}, &kAll}, {"any", {}, &kAll}, {"var", {int64_t(1)}, &kFloats},
                         {"std", {int64_t(0)}, &kFloats}, {"var_mean", {int64_t(1)}, &kFloats},
                         {"logsumexp", {}, &kFloats}, {"norm", {Scalar(2.0)}, &kFloats},
                         {"max", {}, &kNumbers, false}, {"min", {}, &kNumbers, false}};
  for (const Plain& p : plain)
    for (const Reduced& r : kReduced) {
      const std::string name = p.name;
      const bool whole = name == "max" || name == "min";  // no dims: the whole tensor
      const bool one_dim = name == "argmax" || name == "argmin";
      if ((whole && !r.dims.empty()) || (one_dim && r.dims.size() > 1)) continue;
      if (!p.empty && numel_of(r.shape) == 0) continue;
      Attrs attrs{r.dims, r.keepdim};
      for (size_t k = 0; k < p.extra.size(); ++k) attrs.push_back(p.extra[k]);
      cases.push_back(op_case(name, {{r.shape}}, std::move(attrs), *p.dtypes, label_of(r)));
    }
  // Reductions with a dtype attribute: the input's own (widened for integers), as the API picks.
  for (const Reduced& r : kReduced) {
    const std::string label = label_of(r);
    const DimVector d = r.dims;
    const bool keep = r.keepdim;
    cases.push_back(program_case("sum", {{r.shape}}, [d, keep](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{in[0].sum(d, keep)};
    }, kAll, label));
    cases.push_back(program_case("mean", {{r.shape}}, [d, keep](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{in[0].mean(d, keep)};
    }, kFloats, label));
    if (d.size() <= 1)
      cases.push_back(program_case("prod", {{r.shape, Kind::Values, 0.5, 1.5}}, [d, keep](const std::vector<Tensor>& in) {
        return std::vector<Tensor>{d.empty() ? in[0].prod() : in[0].prod(d[0], keep)};
      }, kNumbers, label));
    if (d.size() == 1 && numel_of(r.shape) > 0)
      for (const char* name : {"max.dim", "min.dim"})
        cases.push_back(op_case(name, {{r.shape}}, {r.dims, r.keepdim}, kNumbers, label));
  }
  for (const auto& [shape, dim] : kAlongDim) {
    const std::string label = absl::StrCat(shape_str(shape), " dim ", dim);
    const int64_t d = dim;
    cases.push_back(program_case("cumsum", {{shape}}, [d](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{in[0].cumsum(d)};
    }, kNumbers, label));
    cases.push_back(program_case("cumsum_reverse", {{shape}}, [d](const std::vector<Tensor>& in) {
      static const OpDef& op = find_op("cumsum_reverse");
      return std::vector<Tensor>{call1(op, in[0], {d, in[0].dtype()})};
    }, kFloats, label));
    cases.push_back(program_case("softmax", {{shape}}, [d](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{softmax(in[0], d)};
    }, kNumbers, label));
    cases.push_back(program_case("log_softmax", {{shape}}, [d](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{log_softmax(in[0], d)};
    }, kNumbers, label));
    for (bool descending : {false, true})
      cases.push_back(op_case("sort", {{shape}}, {d, descending}, kNumbers,
                              label + (descending ? " descending" : "")));
    const int64_t n = shape.empty() ? 1 : shape[size_t(d)];
    for (bool largest : {false, true})
      cases.push_back(op_case("topk", {{shape}}, {std::min<int64_t>(n, 3), d, largest, true}, kNumbers,
                              label + (largest ? " largest" : " smallest")));
  }
}

}  // namespace nnvm::sweep
