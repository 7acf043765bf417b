#include "nnvm/trace/signature.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace nnvm::trace {

namespace {

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

// A folded constant is baked into the plan, so its bytes are part of the key:
// a trace folded from other Scalar values must not share this one's plan.
uint64_t content_hash(const Tensor& t) {
  const Tensor c = t.contiguous();
  return fnv1a(std::string_view(static_cast<const char*>(c.data_ptr()), c.nbytes()));
}

// Values by role, not by id: inputs, constants and node outputs may be
// numbered in any interleaving, and two traces whose ids coincide but whose
// roles differ (an input in one, a node output in the other) must differ.
void append_ids(std::string& out, const Trace& t, absl::Span<const ValueId> ids) {
  out += "(";
  for (size_t i = 0; i < ids.size(); ++i) {
    const Value& v = t.value(ids[i]);
    if (i) out += ",";
    if (v.is_input()) absl::StrAppend(&out, "i", v.index);
    else if (v.is_constant()) absl::StrAppend(&out, "c", v.index);
    else absl::StrAppend(&out, v.node, ".", v.index);
  }
  out += ")";
}

}  // namespace

Signature signature(const Trace& t) {
  std::string key;
  for (ValueId v : t.inputs()) {
    const Value& in = t.value(v);
    absl::StrAppend(&key, "in ", std::string(dtype_name(in.dtype)), shape_str(in.shape), shape_str(in.strides), ";");
  }
  for (ValueId v : t.constants()) {
    const Value& c = t.value(v);
    absl::StrAppend(&key, "const ", std::string(dtype_name(c.dtype)), shape_str(c.shape), shape_str(c.strides), "=",
                    absl::Hex(content_hash(t.constant_value(v))), ";");
  }
  for (const Node& n : t.nodes()) {
    absl::StrAppend(&key, n.op->name);
    append_ids(key, t, n.inputs);
    for (size_t i = 0; i < n.attrs.size(); ++i) {
      key += i ? "," : "[";
      append_attr(key, n.attrs[i], /*with_scalar_values=*/false);
    }
    key += n.attrs.size() ? "];" : ";";
  }
  key += "out";
  append_ids(key, t, t.outputs());
  return {fnv1a(key), std::move(key)};
}

std::string explain_difference(const Trace& before, const Trace& now) {
  if (signature(before) == signature(now)) return "";
  if (before.inputs().size() != now.inputs().size() || before.nodes().size() != now.nodes().size())
    return "new structure";
  for (size_t i = 0; i < now.inputs().size(); ++i) {
    const Value &a = before.value(before.inputs()[i]), &b = now.value(now.inputs()[i]);
    if (a.dtype != b.dtype)
      return absl::StrCat("dtype changed at input ", i, ": ", std::string(dtype_name(a.dtype)), " -> ",
                          std::string(dtype_name(b.dtype)));
    if (a.shape != b.shape)
      return absl::StrCat("shape changed at input ", i, ": ", shape_str(a.shape), " -> ", shape_str(b.shape));
    if (a.strides != b.strides)
      return absl::StrCat("layout changed at input ", i, ": strides ", shape_str(a.strides), " -> ",
                          shape_str(b.strides));
  }
  for (size_t n = 0; n < now.nodes().size(); ++n) {
    const Node &a = before.nodes()[n], &b = now.nodes()[n];
    std::string ia, ib;
    append_ids(ia, before, a.inputs);
    append_ids(ib, now, b.inputs);
    if (a.op != b.op || ia != ib) return "new structure";
    std::string ka, kb;
    for (size_t i = 0; i < a.attrs.size(); ++i) append_attr(ka, a.attrs[i], false);
    for (size_t i = 0; i < b.attrs.size(); ++i) append_attr(kb, b.attrs[i], false);
    if (ka != kb) return absl::StrCat("attributes changed at node ", n, " (", b.op->name, ")");
  }
  if (before.constants().size() != now.constants().size()) return "new structure";
  for (size_t i = 0; i < now.constants().size(); ++i) {
    const Value &a = before.value(before.constants()[i]), &b = now.value(now.constants()[i]);
    if (a.dtype != b.dtype || a.shape != b.shape || a.strides != b.strides ||
        content_hash(before.constant_value(before.constants()[i])) != content_hash(now.constant_value(now.constants()[i])))
      return absl::StrCat("constant ", i, " changed");
  }
  return "new structure";  // the outputs differ
}

}  // namespace nnvm::trace
