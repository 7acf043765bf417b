// A recursive-descent JSON parser (RFC 8259) with a nesting limit, so a
// hostile header cannot exhaust the stack.
#include "json.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>

#include "nnvm/core/error.h"

namespace nnvm::json {

namespace {

constexpr int kMaxDepth = 64;

class Parser {
 public:
  Parser(std::string_view text, std::string_view context) : text_(text), context_(context) {}

  Value document() {
    Value v = value(0);
    skip_space();
    if (pos_ != text_.size()) fail("trailing characters after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(std::string_view what) const {
    throw Error(detail::concat(context_, ": bad JSON header at byte ", pos_, ": ", what));
  }
  void skip_space() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\r'))
      ++pos_;
  }
  char peek() {
    skip_space();
    if (pos_ >= text_.size()) fail("unexpected end of input");
    return text_[pos_];
  }
  void expect(char c) {
    if (peek() != c) fail(detail::concat("expected '", c, "'"));
    ++pos_;
  }
  bool consume_word(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Value value(int depth) {
    if (depth > kMaxDepth) fail("nesting too deep");
    Value v;
    const char c = peek();
    if (c == '{') {
      v.kind = Value::Kind::Object;
      ++pos_;
      if (peek() == '}') {
        ++pos_;
        return v;
      }
      while (true) {
        if (peek() != '"') fail("expected a string key");
        std::string key = string();
        if (v.find(key) != nullptr) fail(detail::concat("duplicate key \"", key, "\""));
        expect(':');
        v.object.push_back({std::move(key), value(depth + 1)});
        if (peek() == '}') break;
        expect(',');
      }
      ++pos_;
    } else if (c == '[') {
      v.kind = Value::Kind::Array;
      ++pos_;
      if (peek() == ']') {
        ++pos_;
        return v;
      }
      while (true) {
        v.array.push_back(value(depth + 1));
        if (peek() == ']') break;
        expect(',');
      }
      ++pos_;
    } else if (c == '"') {
      v.kind = Value::Kind::String;
      v.string = string();
    } else if (consume_word("true")) {
      v.kind = Value::Kind::Bool;
      v.boolean = true;
    } else if (consume_word("false")) {
      v.kind = Value::Kind::Bool;
    } else if (consume_word("null")) {
      v.kind = Value::Kind::Null;
    } else {
      number(v);
    }
    return v;
  }

  void number(Value& v) {
    const size_t start = pos_;
    bool integral = true;
    if (pos_ < text_.size() && text_[pos_] == '-') ++pos_;
    auto digits = [&] {
      const size_t from = pos_;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      if (pos_ == from) fail("expected a digit");
    };
    if (pos_ < text_.size() && text_[pos_] == '0')
      ++pos_;
    else
      digits();
    if (pos_ < text_.size() && text_[pos_] == '.') {
      integral = false;
      ++pos_;
      digits();
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      integral = false;
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      digits();
    }
    const std::string_view s = text_.substr(start, pos_ - start);
    v.kind = Value::Kind::Number;
    v.number = std::strtod(std::string(s).c_str(), nullptr);
    if (integral) {
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v.integer);
      v.is_integer = ec == std::errc() && end == s.data() + s.size();
    }
  }

  uint32_t hex4() {
    if (pos_ + 4 > text_.size()) fail("truncated \\u escape");
    uint32_t code = 0;
    for (int i = 0; i < 4; ++i) {
      const char h = text_[pos_++];
      code <<= 4;
      if (h >= '0' && h <= '9') code |= uint32_t(h - '0');
      else if (h >= 'a' && h <= 'f') code |= uint32_t(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F') code |= uint32_t(h - 'A' + 10);
      else fail("bad hex digit in \\u escape");
    }
    return code;
  }

  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += char(cp);
    } else if (cp < 0x800) {
      out += char(0xC0 | (cp >> 6));
      out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18));
      out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F));
      out += char(0x80 | (cp & 0x3F));
    }
  }

  std::string string() {
    expect('"');
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) fail("unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size()) fail("unterminated escape");
      switch (const char e = text_[pos_++]) {
        case '"': case '\\': case '/': out += e; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {  // a surrogate pair encodes one code point above U+FFFF
            if (!consume_word("\\u")) fail("unpaired surrogate");
            const uint32_t low = hex4();
            if (low < 0xDC00 || low >= 0xE000) fail("unpaired surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            fail("unpaired surrogate");
          }
          append_utf8(out, cp);
          break;
        }
        default: fail("unknown escape");
      }
    }
  }

  std::string_view text_;
  std::string_view context_;
  size_t pos_ = 0;
};

}  // namespace

const Value* Value::find(std::string_view key) const {
  for (const auto& [k, v] : object)
    if (k == key) return &v;
  return nullptr;
}

Value parse(std::string_view text, std::string_view context) { return Parser(text, context).document(); }

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace nnvm::json
