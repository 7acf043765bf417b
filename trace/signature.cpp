#include "nnvm/trace/signature.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace nnvm::trace {

namespace {

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

// signature_hash's words go round-robin into four lanes, each a
// multiply-xorshift chain, so consecutive words do not wait on each other's
// multiply; the lanes are folded in order and finished by splitmix64.
class WordHash {
 public:
  void add(uint64_t w) {
    uint64_t& h = lanes_[n_++ & 3];
    h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 32;
  }
  // The bytes eight at a time (little-endian, the tail zero-padded), after their count.
  void add(std::string_view s) {
    add(s.size());
    for (size_t at = 0; at < s.size(); at += 8) {
      uint64_t w = 0;  // assembled in a register: a short memcpy into w would stall the load of w
      for (size_t k = 0; k < 8 && at + k < s.size(); ++k) w |= uint64_t(uint8_t(s[at + k])) << (8 * k);
      add(w);
    }
  }
  void add(IntArrayRef v) {
    add(v.size());
    for (int64_t x : v) add(uint64_t(x));
  }
  uint64_t finish() const {
    uint64_t z = n_;
    for (uint64_t lane : lanes_) {
      z = (z ^ lane) * 0x9e3779b97f4a7c15ull;
      z ^= z >> 32;
    }
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

 private:
  uint64_t lanes_[4] = {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull, 0x100000001b3ull, 0x1b300000001ull};
  uint64_t n_ = 0;  // words so far
};

// A folded constant is baked into the plan, so its bytes are part of the key:
// a trace folded from other Scalar values must not share this one's plan.
// Its layout is keyed beside it, so a broadcast dim (stride 0) counts once:
// a scalar expanded to a [4, T, 64] gradient hashes one element, not 256 T.
uint64_t content_hash(const Tensor& t) {
  Tensor c = t;
  for (int64_t d = 0; d < c.dim(); ++d)
    if (c.stride(d) == 0 && c.size(d) > 1) c = c.narrow(d, 0, 1);
  c = c.contiguous();
  const char* bytes = static_cast<const char*>(c.data_ptr());
  const size_t n = size_t(c.nbytes());
  WordHash h;
  h.add(uint64_t(n));
  size_t at = 0;
  for (; at + 8 <= n; at += 8) {
    uint64_t w;
    std::memcpy(&w, bytes + at, 8);
    h.add(w);
  }
  if (at < n) h.add(std::string_view(bytes + at, n - at));
  return h.finish();
}

// A value by role, as append_ids writes it.
uint64_t role(const Trace& t, ValueId id) {
  const Value& v = t.value(id);
  if (v.is_input()) return uint64_t(v.index) << 2 | 1;
  if (v.is_constant()) return uint64_t(v.index) << 2 | 2;
  return (uint64_t(v.node) << 24 | uint64_t(v.index)) << 2 | 3;
}

void add_ids(WordHash& h, const Trace& t, absl::Span<const ValueId> ids) {
  h.add(ids.size());
  for (ValueId v : ids) h.add(role(t, v));
}

// An attribute as append_attrs writes it: Scalars by kind and pinned constant.
void add_attr(WordHash& h, const AttrValue& a) {
  h.add(a.index());
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, int64_t>) h.add(uint64_t(x));
        else if constexpr (std::is_same_v<T, bool>) h.add(uint64_t(x));
        else if constexpr (std::is_same_v<T, Scalar>)
          h.add(uint64_t(x.is_floating() ? 0 : x.is_integral() ? 1 : 2) | uint64_t(pinned_constant(x) + 1) << 8);
        else if constexpr (std::is_same_v<T, DimVector>) h.add(IntArrayRef(x));
        else if constexpr (std::is_same_v<T, DType>) h.add(uint64_t(x));
        else h.add(std::string_view(x));
      },
      a);
}

// A size as a shape class counts it: 0, 1, two or more; negative as itself.
uint64_t size_class(int64_t x) { return uint64_t(x < 2 ? x : 2); }

void add_size_classes(WordHash& h, IntArrayRef v) {
  h.add(v.size());
  for (int64_t x : v) h.add(size_class(x));
}

// An attribute as add_attr hashes it, its integers by size class.
void add_attr_class(WordHash& h, const AttrValue& a) {
  if (const int64_t* i = std::get_if<int64_t>(&a)) {
    h.add(a.index());
    h.add(size_class(*i));
  } else if (const DimVector* v = std::get_if<DimVector>(&a)) {
    h.add(a.index());
    add_size_classes(h, IntArrayRef(*v));
  } else {
    add_attr(h, a);
  }
}

bool same_layout(const Value& a, const Value& b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.strides == b.strides;
}

bool same_ids(const Trace& a, absl::Span<const ValueId> ia, const Trace& b, absl::Span<const ValueId> ib) {
  if (ia.size() != ib.size()) return false;
  for (size_t i = 0; i < ia.size(); ++i)
    if (role(a, ia[i]) != role(b, ib[i])) return false;
  return true;
}

// Structural attribute k, a Scalar by kind, and a pinned constant (trace/ir.h)
// by its index: passes may rely on it, so it is part of the key.
void append_attrs(std::string& out, const Node& n, size_t k) {
  append_attr(out, n.attrs[k], /*with_scalar_values=*/false);
  if (std::holds_alternative<Scalar>(n.attrs[k]))
    if (const int pin = pinned_constant(n.attrs.s(k)); pin >= 0) absl::StrAppend(&out, "=p", pin);
}

// Every attribute of n, as append_attrs writes each.
void append_attrs(std::string& out, const Node& n) {
  for (size_t i = 0; i < n.attrs.size(); ++i) {
    out += i ? "," : "[";
    append_attrs(out, n, i);
  }
  if (n.attrs.size()) out += "]";
}

}  // namespace

bool same_attr(const AttrValue& a, const AttrValue& b) {
  if (a.index() != b.index()) return false;
  return std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        const T& y = std::get<T>(b);
        if constexpr (std::is_same_v<T, Scalar>)
          return x.is_floating() == y.is_floating() && x.is_integral() == y.is_integral() &&
                 pinned_constant(x) == pinned_constant(y);
        else return x == y;
      },
      a);
}

bool same_attrs(const Node& x, const Node& y) {
  if (x.attrs.size() != y.attrs.size()) return false;
  for (size_t k = 0; k < x.attrs.size(); ++k)
    if (!same_attr(x.attrs[k], y.attrs[k])) return false;
  return true;
}

namespace {

// signature_hash's words, or shape_class_hash's (`by_size_class`: input
// dims, strides and attribute integers by size class). A template: the
// signature's is every flush's.
template <bool by_size_class>
uint64_t hash_trace(const Trace& t) {
  WordHash h;
  auto add_dims = [&](IntArrayRef v) {
    if constexpr (by_size_class) add_size_classes(h, v);
    else h.add(v);
  };
  for (ValueId v : t.inputs()) {
    const Value& in = t.value(v);
    h.add(uint64_t(in.dtype));
    add_dims(IntArrayRef(in.shape));
    add_dims(IntArrayRef(in.strides));
  }
  for (ValueId v : t.constants()) {
    const Value& c = t.value(v);
    h.add(uint64_t(c.dtype) | 0x100);
    h.add(IntArrayRef(c.shape));
    h.add(IntArrayRef(c.strides));
    h.add(content_hash(t.constant_value(v)));
  }
  for (const Node& n : t.nodes()) {
    h.add(std::string_view(n.op->name));
    add_ids(h, t, n.inputs);
    h.add(n.attrs.size());
    for (size_t i = 0; i < n.attrs.size(); ++i) {
      if constexpr (by_size_class) add_attr_class(h, n.attrs[i]);
      else add_attr(h, n.attrs[i]);
    }
  }
  h.add(std::string_view("out"));
  add_ids(h, t, t.outputs());
  return h.finish();
}

}  // namespace

uint64_t signature_hash(const Trace& t) { return hash_trace<false>(t); }

uint64_t shape_class_hash(const Trace& t) { return hash_trace<true>(t); }

uint64_t structure_hash(const Trace& t) {
  WordHash h;
  h.add(t.inputs().size());
  for (const Node& n : t.nodes()) {
    h.add(std::string_view(n.op->name));
    h.add(n.inputs.size());
    for (ValueId v : n.inputs) h.add(uint64_t(v));
  }
  h.add(t.outputs().size());
  for (ValueId v : t.outputs()) h.add(uint64_t(v));
  return h.finish();
}

bool same_signature(const Trace& a, const Trace& b) {
  if (a.inputs().size() != b.inputs().size() || a.constants().size() != b.constants().size() ||
      a.nodes().size() != b.nodes().size() || !same_ids(a, a.outputs(), b, b.outputs()))
    return false;
  for (size_t i = 0; i < a.inputs().size(); ++i)
    if (!same_layout(a.value(a.inputs()[i]), b.value(b.inputs()[i]))) return false;
  for (size_t n = 0; n < a.nodes().size(); ++n) {
    const Node &x = a.nodes()[n], &y = b.nodes()[n];
    if ((x.op != y.op && x.op->name != y.op->name) || !same_ids(a, x.inputs, b, y.inputs) || !same_attrs(x, y))
      return false;
  }
  for (size_t i = 0; i < a.constants().size(); ++i) {
    const ValueId ca = a.constants()[i], cb = b.constants()[i];
    if (!same_layout(a.value(ca), b.value(cb)) ||
        content_hash(a.constant_value(ca)) != content_hash(b.constant_value(cb)))
      return false;
  }
  return true;
}

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
    append_attrs(key, n);
    key += ";";
  }
  key += "out";
  append_ids(key, t, t.outputs());
  return {signature_hash(t), std::move(key)};
}

std::vector<SignatureDifference> signature_differences(const Trace& before, const Trace& now) {
  std::vector<SignatureDifference> out;
  if (same_signature(before, now)) return out;
  auto add = [&](std::string where, std::string was, std::string is, std::string summary) {
    out.push_back({std::move(where), std::move(was), std::move(is), std::move(summary)});
  };
  if (before.inputs().size() != now.inputs().size())
    add("inputs", absl::StrCat(before.inputs().size()), absl::StrCat(now.inputs().size()), "new structure");
  if (before.nodes().size() != now.nodes().size())
    add("nodes", absl::StrCat(before.nodes().size()), absl::StrCat(now.nodes().size()), "new structure");
  for (size_t i = 0; i < now.inputs().size() && i < before.inputs().size(); ++i) {
    const Value &a = before.value(before.inputs()[i]), &b = now.value(now.inputs()[i]);
    const std::string at = absl::StrCat("input ", i);
    if (a.dtype != b.dtype) {
      const std::string x(dtype_name(a.dtype)), y(dtype_name(b.dtype));
      add(at + " dtype", x, y, absl::StrCat("dtype changed at ", at, ": ", x, " -> ", y));
    }
    if (a.shape != b.shape)
      add(at + " shape", shape_str(a.shape), shape_str(b.shape),
          absl::StrCat("shape changed at ", at, ": ", shape_str(a.shape), " -> ", shape_str(b.shape)));
    if (a.strides != b.strides)
      add(at + " strides", shape_str(a.strides), shape_str(b.strides),
          absl::StrCat("layout changed at ", at, ": strides ", shape_str(a.strides), " -> ", shape_str(b.strides)));
  }
  for (size_t n = 0; n < now.nodes().size() && n < before.nodes().size(); ++n) {
    const Node &a = before.nodes()[n], &b = now.nodes()[n];
    const std::string at = absl::StrCat("node ", n, " (", b.op->name, ")");
    if (a.op != b.op && a.op->name != b.op->name) {
      add(absl::StrCat("node ", n, " op"), a.op->name, b.op->name, "new structure");
      continue;
    }
    std::string ia, ib;
    append_ids(ia, before, a.inputs);
    append_ids(ib, now, b.inputs);
    if (ia != ib) add(at + " inputs", ia, ib, "new structure");
    for (size_t k = 0; k < std::max(a.attrs.size(), b.attrs.size()); ++k) {
      std::string ka, kb;
      if (k < a.attrs.size()) append_attrs(ka, a, k);
      if (k < b.attrs.size()) append_attrs(kb, b, k);
      if (ka != kb) add(absl::StrCat(at, " attribute ", k), ka, kb, absl::StrCat("attributes changed at ", at));
    }
  }
  if (before.constants().size() != now.constants().size())
    add("constants", absl::StrCat(before.constants().size()), absl::StrCat(now.constants().size()), "new structure");
  for (size_t i = 0; i < now.constants().size() && i < before.constants().size(); ++i) {
    const ValueId ca = before.constants()[i], cb = now.constants()[i];
    const Value &a = before.value(ca), &b = now.value(cb);
    const uint64_t ha = content_hash(before.constant_value(ca)), hb = content_hash(now.constant_value(cb));
    if (a.dtype != b.dtype || a.shape != b.shape || a.strides != b.strides || ha != hb)
      add(absl::StrCat("constant ", i), absl::StrCat(std::string(dtype_name(a.dtype)), shape_str(a.shape), "=", absl::Hex(ha)),
          absl::StrCat(std::string(dtype_name(b.dtype)), shape_str(b.shape), "=", absl::Hex(hb)),
          absl::StrCat("constant ", i, " changed"));
  }
  std::string oa, ob;
  append_ids(oa, before, before.outputs());
  append_ids(ob, now, now.outputs());
  if (oa != ob) add("outputs", oa, ob, "new structure");
  return out;
}

// The first difference in the order a miss is best explained by: the
// structure, then the inputs, the nodes, the constants, the outputs.
std::string explain_difference(const Trace& before, const Trace& now) {
  const std::vector<SignatureDifference> d = signature_differences(before, now);
  if (d.empty()) return "";
  for (const SignatureDifference& x : d)
    if (x.where == "inputs" || x.where == "nodes") return x.summary;
  return d.front().summary;
}

}  // namespace nnvm::trace
