// What a JIT program's per-run launch depends on, flattened so a repeat run
// compares it with the last launch's instead of rebuilding the loop space,
// the variant name and the block geometry (a hot plan replays the same
// layouts run after run). A program describes its key once, as a generic
// lambda over a Key: KeyBuilder writes it (a new launch), KeyMatch compares
// it in place (a repeat run: nothing written, nothing allocated).
#pragma once

#include <algorithm>
#include <cstdint>

#include "absl/container/inlined_vector.h"
#include "nnvm/core/tensor.h"

namespace nnvm::jit {

using LaunchKey = absl::InlinedVector<int64_t, 48>;

class KeyBuilder {
 public:
  explicit KeyBuilder(LaunchKey& key) : key_(key) {}
  void value(int64_t v) { key_.push_back(v); }
  void raw(IntArrayRef v) { key_.insert(key_.end(), v.begin(), v.end()); }

 private:
  LaunchKey& key_;
};

class KeyMatch {
 public:
  explicit KeyMatch(const LaunchKey& key) : at_(key.data()), end_(key.data() + key.size()) {}
  void value(int64_t v) { ok_ = ok_ && at_ != end_ && *at_++ == v; }
  void raw(IntArrayRef v) {
    ok_ = ok_ && size_t(end_ - at_) >= v.size() && std::equal(v.begin(), v.end(), at_);
    if (ok_) at_ += v.size();
  }
  bool matched() const { return ok_ && at_ == end_; }

 private:
  const int64_t* at_;
  const int64_t* end_;
  bool ok_ = true;
};

// A list with its length: two lists never read as one.
template <class Key>
void key_ints(Key& key, IntArrayRef v) {
  key.value(int64_t(v.size()));
  key.raw(v);
}

// An operand's sizes and strides: its data pointer is not part of the key.
template <class Key>
void key_layout(Key& key, const Tensor& x) {
  key_ints(key, x.sizes());
  key.raw(x.strides());
}

// Whether `describe` (a generic lambda over a Key) gives `key`.
template <class Describe>
bool key_matches(const LaunchKey& key, const Describe& describe) {
  KeyMatch match(key);
  describe(match);
  return match.matched();
}

template <class Describe>
LaunchKey key_of(const Describe& describe) {
  LaunchKey key;
  KeyBuilder builder(key);
  describe(builder);
  return key;
}

}  // namespace nnvm::jit
