// The little JSON a safetensors header needs: a parser that keeps object keys
// in order and rejects duplicates, and string escaping for the writer. Private
// to nnvm (not an installed header).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace nnvm::json {

struct Member;

struct Value {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  bool is_integer = false;  // a number written without fraction or exponent that fits int64
  int64_t integer = 0;
  double number = 0;
  std::string string;
  std::vector<Value> array;
  std::vector<Member> object;  // in the document's order

  const Value* find(std::string_view key) const;
};

struct Member {
  std::string key;
  Value value;
};

// Parses one JSON document (whitespace around it allowed); throws nnvm::Error
// naming `context` and the byte offset on malformed input.
Value parse(std::string_view text, std::string_view context);

// `s` as a quoted JSON string.
std::string quote(std::string_view s);

}  // namespace nnvm::json
