// The DAG builder that lowering uses (loop_ir.cpp, lower_int64.cpp);
// internal to those files.
#pragma once

#include <algorithm>
#include <bit>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "nnvm/jit/loop_ir.h"

namespace nnvm::jit::lowering {

// Builds the DAG; identical expressions are shared (a Scalar read twice, the
// 0.5 of two gelus), so the kernel loads each once.
class Builder {
 public:
  Builder(const trace::Trace& t, LoopIR& ir) : t_(t), ir_(ir) {}

  DType dtype(trace::ValueId v) const { return t_.value(v).dtype; }
  const Expr& expr(int32_t e) const { return ir_.exprs[size_t(e)]; }

  int32_t add(Expr e) {
    const std::string key = absl::StrFormat("%d %d %d %d %d %a", int(e.prim), e.a, e.b, e.c, e.arg, e.value);
    auto [it, fresh] = seen_.try_emplace(key, int32_t(ir_.exprs.size()));
    if (fresh) ir_.exprs.push_back(e);
    return it->second;
  }
  int32_t op(Prim p, int32_t a, int32_t b = -1, int32_t c = -1) { return add(Expr{p, a, b, c}); }
  int32_t constant(float v) { return add(Expr{Prim::kConst, -1, -1, -1, -1, v}); }
  int32_t bits(uint32_t v) { return add(Expr{Prim::kBits, -1, -1, -1, int32_t(v)}); }
  // bool(x) as 0/1: x != 0, a NaN included
  int32_t nonzero(int32_t x) { return op(Prim::kNe, x, constant(0)); }

  // Attribute `attr` of node `step`: a run-time argument when it is slotted,
  // else its value now (a Scalar a pass made, like 1/c). The reference
  // kernels read a Scalar as float before computing (scalar_as<float>), or
  // as int64 where they compute in int64 (`part`: that int64's half).
  int32_t scalar(const trace::Node& node, int32_t step, int32_t attr, ScalarPart part = ScalarPart::kFloat) {
    const bool slotted = std::any_of(node.slots.begin(), node.slots.end(),
                                     [&](const trace::ScalarSlot& s) { return s.attr == attr; });
    if (!slotted) {
      const float lane = scalar_lane(ScalarArg{step, attr, part}, node.attrs.s(size_t(attr)));
      return part == ScalarPart::kFloat ? constant(lane) : bits(std::bit_cast<uint32_t>(lane));
    }
    int32_t index = 0;
    while (size_t(index) < ir_.args.size() &&
           (ir_.args[size_t(index)].step != step || ir_.args[size_t(index)].attr != attr ||
            ir_.args[size_t(index)].part != part))
      ++index;
    if (size_t(index) == ir_.args.size()) ir_.args.push_back({step, attr, part});
    return add(Expr{Prim::kArg, -1, -1, -1, index});
  }

 private:
  const trace::Trace& t_;
  LoopIR& ir_;
  absl::flat_hash_map<std::string, int32_t> seen_;
};

}  // namespace nnvm::jit::lowering
