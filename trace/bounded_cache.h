// A map with a fixed capacity that evicts its least recently used entry
// (docs/DESIGN.md §3.6: both caches are bounded). The trace cache keeps its entries
// and its structure index in one each; the kernel cache is meant to reuse it.
// Not thread-safe: its owner holds the lock.
#pragma once

#include <cstddef>
#include <list>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"

namespace nnvm::trace {

template <typename Key, typename Value>
class BoundedCache {
 public:
  explicit BoundedCache(size_t capacity) : capacity_(capacity > 0 ? capacity : 1) {}

  // The value under `key`, now the most recently used; null if absent.
  Value* find(const Key& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return &it->second->second;
  }

  // The value under `key`, its place in the order unchanged; null if absent.
  const Value* peek(const Key& key) const {
    auto it = index_.find(key);
    return it == index_.end() ? nullptr : &it->second->second;
  }

  // Inserts or replaces `key` as the most recently used entry. Returns the
  // entry evicted to make room, if any.
  std::optional<std::pair<Key, Value>> put(const Key& key, Value value) {
    if (Value* old = find(key)) {
      *old = std::move(value);
      return std::nullopt;
    }
    std::optional<std::pair<Key, Value>> evicted;
    if (order_.size() == capacity_) {
      evicted = std::move(order_.back());
      index_.erase(evicted->first);
      order_.pop_back();
    }
    order_.emplace_front(key, std::move(value));
    index_.emplace(key, order_.begin());
    return evicted;
  }

  // Calls f(key, value) for every entry, the most recently used first.
  template <typename F>
  void for_each(F&& f) const {
    for (const auto& [key, value] : order_) f(key, value);
  }

  size_t size() const { return order_.size(); }
  size_t capacity() const { return capacity_; }

 private:
  size_t capacity_;
  std::list<std::pair<Key, Value>> order_;  // most recently used first
  absl::flat_hash_map<Key, typename std::list<std::pair<Key, Value>>::iterator> index_;
};

}  // namespace nnvm::trace
