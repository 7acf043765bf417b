// An insertion-ordered map from names to values, like libtorch's
// torch::OrderedDict: what Module::named_parameters() and state_dict() return,
// so `for (const auto& item : m->named_parameters()) item.key(), item.value()`
// ports unchanged. Lookups are linear: modules hold tens of entries, not millions.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "nnvm/core/error.h"

namespace nnvm {

template <class Key, class Value> class OrderedDict {
 public:
  class Item {
   public:
    Item(Key key, Value value) : pair_(std::move(key), std::move(value)) {}
    const Key& key() const { return pair_.first; }
    Value& value() { return pair_.second; }
    const Value& value() const { return pair_.second; }
    const std::pair<Key, Value>& pair() const { return pair_; }

   private:
    std::pair<Key, Value> pair_;
  };

  OrderedDict() = default;
  explicit OrderedDict(std::string key_description) : key_description_(std::move(key_description)) {}

  // Throws nnvm::Error when `key` is already present.
  Value& insert(Key key, Value value) {
    NNVM_CHECK(find(key) == nullptr, "OrderedDict", key_description_, " '", key, "' already defined");
    items_.emplace_back(std::move(key), std::move(value));
    return items_.back().value();
  }
  Value* find(const Key& key) {
    for (Item& item : items_)
      if (item.key() == key) return &item.value();
    return nullptr;
  }
  const Value* find(const Key& key) const { return const_cast<OrderedDict*>(this)->find(key); }
  bool contains(const Key& key) const { return find(key) != nullptr; }
  // Throws nnvm::Error when `key` is absent.
  Value& operator[](const Key& key) {
    Value* v = find(key);
    NNVM_CHECK(v != nullptr, "OrderedDict", key_description_, " '", key, "' is not defined");
    return *v;
  }
  const Value& operator[](const Key& key) const { return const_cast<OrderedDict&>(*this)[key]; }
  // Removes `key` and returns its value; throws nnvm::Error when `key` is absent.
  Value pop(const Key& key) {
    for (auto it = items_.begin(); it != items_.end(); ++it)
      if (it->key() == key) {
        Value value = std::move(it->value());
        items_.erase(it);
        return value;
      }
    NNVM_CHECK(false, "OrderedDict", key_description_, " '", key, "' is not defined");
    return {};
  }
  void clear() { items_.clear(); }

  std::vector<Key> keys() const {
    std::vector<Key> out;
    for (const Item& item : items_) out.push_back(item.key());
    return out;
  }
  std::vector<Value> values() const {
    std::vector<Value> out;
    for (const Item& item : items_) out.push_back(item.value());
    return out;
  }

  size_t size() const { return items_.size(); }
  bool is_empty() const { return items_.empty(); }
  auto begin() { return items_.begin(); }
  auto end() { return items_.end(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }
  const std::vector<Item>& items() const { return items_; }

 private:
  std::string key_description_ = "Key";
  std::vector<Item> items_;
};

}  // namespace nnvm
