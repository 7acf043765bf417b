#include "nnvm/trace/pass_manager.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace nnvm::trace {

namespace {

std::string layout_str(DType dtype, IntArrayRef shape, IntArrayRef strides) {
  return absl::StrCat(std::string(dtype_name(dtype)), shape_str(shape), " strides ", shape_str(strides));
}

void check_layout(const Value& v, ValueId id, DType dtype, IntArrayRef shape, IntArrayRef strides,
                  const std::string& where) {
  NNVM_CHECK(v.dtype == dtype && IntArrayRef(v.shape) == shape && IntArrayRef(v.strides) == strides, "verify",
             where, ": %", id, " is recorded as ", layout_str(v.dtype, v.shape, v.strides), " but is ",
             layout_str(dtype, shape, strides));
}

}  // namespace

void verify(const Trace& t) {
  const auto& values = t.values();
  auto valid = [&](ValueId v) { return v >= 0 && size_t(v) < values.size(); };
  for (ValueId v : t.inputs()) NNVM_CHECK(valid(v) && t.value(v).is_input(), "verify", "input %", v, " is not an input value");
  for (ValueId v : t.constants()) {
    NNVM_CHECK(valid(v) && t.value(v).is_constant(), "verify", "constant %", v, " is not a constant value");
    const Tensor& c = t.constant_value(v);
    check_layout(t.value(v), v, c.dtype(), c.sizes(), c.strides(), "constant");
  }
  for (size_t n = 0; n < t.nodes().size(); ++n) {
    const Node& node = t.nodes()[n];
    const std::string where = absl::StrCat("node ", n, " (", node.op->name, ")");
    std::vector<Tensor> metas;
    for (ValueId in : node.inputs) {
      NNVM_CHECK(valid(in), "verify", where, ": input %", in, " does not exist");
      const Value& v = t.value(in);
      NNVM_CHECK(v.node < int32_t(n), "verify", where, ": input %", in, " is defined by a later node ", v.node);
      metas.push_back(meta_tensor(v));
    }
    for (size_t k = 0; k < node.outputs.size(); ++k)
      NNVM_CHECK(valid(node.outputs[k]) && t.value(node.outputs[k]).node == int32_t(n) &&
                     t.value(node.outputs[k]).index == int32_t(k),
                 "verify", where, ": output %", node.outputs[k], " does not name this node as its producer");
    try {
      if (node.op->view) {
        NNVM_CHECK(node.outputs.size() == 1 && metas.size() == 1, "verify", where, ": a view has one input and one output");
        const ViewSpec s = node.op->view(metas[0], node.attrs);
        check_layout(t.value(node.outputs[0]), node.outputs[0], metas[0].dtype(), s.shape, s.strides, where);
      } else {
        const OutputSpecs specs = node.op->infer(metas, node.attrs);
        NNVM_CHECK(specs.size() == node.outputs.size(), "verify", where, ": the op infers ", specs.size(),
                   " outputs but the node has ", node.outputs.size());
        for (size_t k = 0; k < specs.size(); ++k)
          check_layout(t.value(node.outputs[k]), node.outputs[k], specs[k].dtype, specs[k].shape,
                       contiguous_strides(specs[k].shape), where);
      }
    } catch (const Error& e) {
      const std::string what = e.what();
      if (what.rfind("verify: ", 0) == 0) throw;
      throw Error(absl::StrCat("verify: ", where, ": its inputs no longer fit the op: ", what));
    }
  }
  for (ValueId v : t.outputs()) NNVM_CHECK(valid(v), "verify", "output %", v, " does not exist");
}

PassManager& PassManager::add(std::string name, PassFn pass) {
  passes_.emplace_back(std::move(name), std::move(pass));
  return *this;
}

std::vector<PassStats> PassManager::run(Trace& t) {
  std::vector<PassStats> run_stats;
  for (auto& [name, pass] : passes_) {
    PassStats s;
    s.name = name;
    s.nodes_before = int64_t(t.nodes().size());
    const auto start = std::chrono::steady_clock::now();
    s.changes = pass(t);
    s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    s.nodes_after = int64_t(t.nodes().size());
    if (verify_each_pass) {
      try {
        verify(t);
      } catch (const Error& e) {
        throw Error(absl::StrCat("pass '", name, "' broke the trace: ", e.what()));
      }
    }
    run_stats.push_back(s);
    stats_.push_back(std::move(s));
  }
  return run_stats;
}

std::string PassManager::stats_to_string() const {
  std::string out;
  for (const PassStats& s : stats_)
    absl::StrAppend(&out, absl::StrFormat("%-12s changes %4d  nodes %4d -> %4d  %8.1f us\n", s.name, s.changes,
                                          s.nodes_before, s.nodes_after, s.seconds * 1e6));
  return out;
}

}  // namespace nnvm::trace
