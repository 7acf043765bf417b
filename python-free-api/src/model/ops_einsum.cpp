// Einsum: an equation such as "bij,bjk->bik" mapped onto nnvm's ops.
//
// Each operand first takes its diagonals (a label repeated in one term) and
// sums out the labels no other term or the output names. Operands then
// combine left to right: labels both name and a later term or the output
// needs are batch dims, labels only these two name are contracted, and the
// pair becomes one batched matmul over [batch, left, contracted] and
// [batch, contracted, right] (a broadcast product when nothing is
// contracted). Last, the result sums out what remains unnamed and is
// permuted to the output's order. "..." stands for the same broadcast dims
// in every term, numpy-style.
#include <algorithm>
#include <cctype>

#include "ops_nn.h"

namespace nnvm::model_detail {
namespace {

// A label is a letter's code, or kEllipsis + k for the k-th broadcast dim
// counted from the left of the widest "...".
constexpr int kEllipsis = 256;

struct Operand {
  Tensor t;
  std::vector<int> labels;  // one per dim of t
};

struct Equation {
  std::vector<std::vector<int>> inputs;
  std::vector<int> output;
};

Equation parse(const OpContext& ctx, const std::string& text, const std::vector<int64_t>& ranks) {
  std::string eq;
  for (char c : text)
    if (!std::isspace(static_cast<unsigned char>(c))) eq += c;
  auto fail = [&](const std::string& why) { return Error(ctx.where() + ": equation '" + text + "' " + why); };
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ranks.size())
    throw fail("has " + std::to_string(terms.size()) + " terms for " + std::to_string(ranks.size()) + " inputs");
  // Letters and the position of "..." in a term; -1 when it has none.
  auto split = [&](const std::string& term, std::vector<int>& letters) {
    int64_t ellipsis = -1;
    for (size_t i = 0; i < term.size(); ++i) {
      if (term.compare(i, 3, "...") == 0 && ellipsis < 0) {
        ellipsis = int64_t(letters.size());
        i += 2;
      } else if (std::isalpha(static_cast<unsigned char>(term[i]))) {
        letters.push_back(term[i]);
      } else {
        throw fail("has '" + std::string(1, term[i]) + "', which is neither a letter nor one '...' per term");
      }
    }
    return ellipsis;
  };
  std::vector<std::vector<int>> letters(terms.size());
  std::vector<int64_t> ellipsis(terms.size());
  int64_t broadcast = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    ellipsis[i] = split(terms[i], letters[i]);
    const int64_t extra = ranks[i] - int64_t(letters[i].size());
    if (extra < 0 || (extra > 0 && ellipsis[i] < 0))
      throw fail("names " + std::to_string(letters[i].size()) + " dims of input " + std::to_string(i) + ", which has " +
                 std::to_string(ranks[i]));
    broadcast = std::max(broadcast, ellipsis[i] < 0 ? 0 : extra);
  }
  auto expand = [&](const std::vector<int>& named, int64_t at, int64_t extra) {
    std::vector<int> labels(named.begin(), named.end());
    if (at < 0) return labels;
    std::vector<int> dots;
    for (int64_t k = broadcast - extra; k < broadcast; ++k) dots.push_back(kEllipsis + int(k));
    labels.insert(labels.begin() + at, dots.begin(), dots.end());
    return labels;
  };
  Equation e;
  std::map<int, int> uses;
  for (size_t i = 0; i < terms.size(); ++i) {
    e.inputs.push_back(expand(letters[i], ellipsis[i], ranks[i] - int64_t(letters[i].size())));
    for (int l : letters[i]) ++uses[l];
  }
  if (arrow == std::string::npos) {  // implicit: the broadcast dims, then the letters used once, sorted
    e.output = expand({}, 0, broadcast);
    for (const auto& [l, n] : uses)
      if (n == 1) e.output.push_back(l);
    return e;
  }
  std::vector<int> out_letters;
  const int64_t at = split(eq.substr(arrow + 2), out_letters);
  e.output = expand(out_letters, at, broadcast);
  for (int l : out_letters) {
    if (!uses.count(l)) throw fail("names '" + std::string(1, char(l)) + "' in the output but in no input");
    if (std::count(out_letters.begin(), out_letters.end(), l) > 1)
      throw fail("names '" + std::string(1, char(l)) + "' twice in the output");
  }
  return e;
}

bool has(const std::vector<int>& labels, int l) { return std::find(labels.begin(), labels.end(), l) != labels.end(); }

// Sums out the dims of o whose labels `keep` rejects.
void sum_unneeded(Operand& o, const std::function<bool(int)>& keep) {
  std::vector<int64_t> dims;
  std::vector<int> kept;
  for (size_t d = 0; d < o.labels.size(); ++d) {
    if (keep(o.labels[d]))
      kept.push_back(o.labels[d]);
    else
      dims.push_back(int64_t(d));
  }
  if (dims.empty()) return;
  o.t = o.t.sum(dims);
  o.labels = kept;
}

// Takes the diagonal of every label o names twice.
void take_diagonals(Operand& o) {
  for (bool again = true; again;) {
    again = false;
    for (size_t i = 0; i < o.labels.size() && !again; ++i)
      for (size_t j = i + 1; j < o.labels.size() && !again; ++j) {
        if (o.labels[i] != o.labels[j]) continue;
        const int l = o.labels[i];
        o.t = o.t.diagonal(0, int64_t(i), int64_t(j));  // the diagonal becomes the last dim
        o.labels.erase(o.labels.begin() + int64_t(j));
        o.labels.erase(o.labels.begin() + int64_t(i));
        o.labels.push_back(l);
        again = true;
      }
  }
}

// a and b combined over their shared labels; `needed` says which labels later terms or the output use.
Operand combine(const OpContext& ctx, const Operand& a, const Operand& b, const std::function<bool(int)>& needed) {
  std::vector<int> batch, left, right, contracted;
  for (int l : a.labels) {
    if (!has(b.labels, l))
      left.push_back(l);
    else if (needed(l))
      batch.push_back(l);
    else
      contracted.push_back(l);
  }
  for (int l : b.labels)
    if (!has(a.labels, l)) right.push_back(l);
  std::map<int, int64_t> size;
  for (const Operand* o : {&a, &b})
    for (size_t d = 0; d < o->labels.size(); ++d) {
      const int64_t n = o->t.size(int64_t(d));
      auto [it, fresh] = size.emplace(o->labels[d], n);
      NNVM_CHECK(fresh || it->second == n || it->second == 1 || n == 1, ctx.where(), "a label of equation '",
                 ctx.attr_string("equation"), "' has sizes ", it->second, " and ", n);
      it->second = std::max(it->second, n);
    }
  // Each operand permuted to [groups...], broadcast, and viewed as one dim per group.
  auto arrange = [&](const Operand& o, std::initializer_list<const std::vector<int>*> groups) {
    std::vector<int64_t> perm, shape, flat;
    for (const std::vector<int>* g : groups) {
      int64_t n = 1;
      for (int l : *g) {
        perm.push_back(int64_t(std::find(o.labels.begin(), o.labels.end(), l) - o.labels.begin()));
        shape.push_back(size[l]);
        n *= size[l];
      }
      flat.push_back(n);
    }
    return o.t.permute(perm).expand(shape).reshape(flat);
  };
  Tensor y;
  if (contracted.empty()) {
    const std::vector<int> none;
    y = arrange(a, {&batch, &left, &none}) * arrange(b, {&batch, &none, &right});
  } else {
    y = arrange(a, {&batch, &left, &contracted}).matmul(arrange(b, {&batch, &contracted, &right}));
  }
  Operand out;
  std::vector<int64_t> shape;
  for (const std::vector<int>* g : {&batch, &left, &right})
    for (int l : *g) {
      out.labels.push_back(l);
      shape.push_back(size[l]);
    }
  out.t = y.reshape(shape);
  return out;
}

Tensor einsum(const OpContext& ctx) {
  const std::string text = ctx.attr_string("equation");
  std::vector<int64_t> ranks;
  for (int64_t i = 0; i < ctx.num_inputs(); ++i) ranks.push_back(ctx.input(i).dim());
  NNVM_CHECK(!ranks.empty(), ctx.where(), "needs at least one input");
  const Equation e = parse(ctx, text, ranks);
  std::vector<Operand> ops;
  for (int64_t i = 0; i < ctx.num_inputs(); ++i) ops.push_back({ctx.input(i), e.inputs[size_t(i)]});
  // Whether a label is used by the output or by an operand from `from` on.
  auto used_from = [&](size_t from, int l) {
    if (has(e.output, l)) return true;
    for (size_t k = from; k < ops.size(); ++k)
      if (has(ops[k].labels, l)) return true;
    return false;
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    take_diagonals(ops[i]);
    sum_unneeded(ops[i], [&](int l) {
      if (has(e.output, l)) return true;
      for (size_t k = 0; k < ops.size(); ++k)
        if (k != i && has(ops[k].labels, l)) return true;
      return false;
    });
  }
  Operand acc = ops[0];
  for (size_t i = 1; i < ops.size(); ++i) acc = combine(ctx, acc, ops[i], [&](int l) { return used_from(i + 1, l); });
  sum_unneeded(acc, [&](int l) { return has(e.output, l); });
  std::vector<int64_t> perm;
  for (int l : e.output) {
    const auto it = std::find(acc.labels.begin(), acc.labels.end(), l);
    NNVM_CHECK(it != acc.labels.end(), ctx.where(), "equation '", text, "' cannot be computed: an output dim is lost");
    perm.push_back(int64_t(it - acc.labels.begin()));
  }
  return acc.t.permute(perm);
}

}  // namespace

void add_einsum_op(OpTable& table) {
  add(table, "Einsum", [](const OpContext& ctx) { return std::vector<Tensor>{einsum(ctx)}; });
}

}  // namespace nnvm::model_detail
