// .npy reading and writing (nnvm/npy.h). The header is read by a parser of
// exactly the dict numpy.lib.format writes (three keys; strings, True/False
// and a tuple of ints as values), so nothing in it is evaluated.
#include "nnvm/npy.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <iterator>

#include "nnvm/core/functions.h"
#include "pt/zip.h"

namespace nnvm {

static_assert(std::endian::native == std::endian::little, ".npy data is read as little-endian");

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr size_t kAlignment = 64;  // numpy pads the header so the data starts 64-byte aligned
constexpr size_t kGrowthDigits = 21;
constexpr uint64_t kLimit = uint64_t(1) << 62;

struct NpyType {
  std::string_view code;  // the descr without its byte-order character
  DType dtype;
};
constexpr NpyType kTypes[] = {{"f8", kFloat64}, {"f4", kFloat32}, {"f2", kFloat16}, {"i8", kInt64},
                              {"i4", kInt32},   {"i1", kInt8},    {"u1", kUInt8},   {"b1", kBool}};

struct Header {
  DType dtype = kFloat32;
  bool fortran_order = false;
  DimVector shape;
};

// The header dict, e.g. {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& where) : text_(text), where_(where) {}

  Header parse() {
    Header h;
    bool seen[3] = {false, false, false};
    expect('{');
    while (!skip_to('}')) {
      const std::string_view key = quoted();
      expect(':');
      if (key == "descr") {
        h.dtype = dtype(descr());
        seen[0] = true;
      } else if (key == "fortran_order") {
        h.fortran_order = boolean();
        seen[1] = true;
      } else if (key == "shape") {
        h.shape = shape();
        seen[2] = true;
      } else {
        fail("unknown header key '", key, "'");
      }
      if (!skip_to('}')) expect(',');
    }
    ++pos_;
    for (; pos_ < text_.size(); ++pos_)
      if (text_[pos_] != ' ' && text_[pos_] != '\n') fail("text after the header dict");
    if (!seen[0] || !seen[1] || !seen[2]) fail("the header needs 'descr', 'fortran_order' and 'shape'");
    return h;
  }

 private:
  template <class... Pieces> [[noreturn]] void fail(const Pieces&... pieces) const {
    throw Error(detail::concat(where_, ": ", pieces..., " (header ", text_.substr(0, 120), ")"));
  }
  void skip() {
    while (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
  }
  // Whether `c` comes next (left unread).
  bool skip_to(char c) {
    skip();
    return pos_ < text_.size() && text_[pos_] == c;
  }
  void expect(char c) {
    if (!skip_to(c)) fail("expected '", c, "' at header byte ", pos_);
    ++pos_;
  }
  std::string_view quoted() {
    skip();
    const char quote = pos_ < text_.size() ? text_[pos_] : '\0';
    if (quote != '\'' && quote != '"') fail("expected a quoted string at header byte ", pos_);
    const size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) fail("an unterminated string");
    const std::string_view s = text_.substr(pos_ + 1, end - pos_ - 1);
    pos_ = end + 1;
    return s;
  }
  std::string_view descr() {
    if (skip_to('[')) fail("structured arrays are not supported");
    return quoted();
  }
  DType dtype(std::string_view descr) const {
    const std::string_view code = descr.empty() ? descr : descr.substr(1);
    for (const NpyType& t : kTypes) {
      if (t.code != code) continue;
      if (descr[0] == '>' && itemsize(t.dtype) > 1)
        fail("big-endian data ('", descr, "') is not supported; save it as little-endian ('<", code, "')");
      if (descr[0] == '<' || descr[0] == '|' || descr[0] == '=') return t.dtype;
    }
    fail("dtype '", descr, "' is not one nnvm reads (<f8 <f4 <f2 <i8 <i4 |i1 |u1 |b1)");
  }
  bool boolean() {
    skip();
    for (const bool value : {true, false}) {
      const std::string_view word = value ? "True" : "False";
      if (text_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    }
    fail("fortran_order is not True or False");
  }
  DimVector shape() {
    DimVector dims;
    uint64_t numel = 1;
    expect('(');
    while (!skip_to(')')) {
      uint64_t d = 0;
      const size_t start = pos_;
      for (; pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9'; ++pos_) {
        if (d > kLimit / 10) fail("a dimension is too large");
        d = d * 10 + uint64_t(text_[pos_] - '0');
      }
      if (pos_ == start) fail("expected a dimension at header byte ", pos_);
      if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;  // Python 2's long
      if (d > 0 && numel > kLimit / d) fail("the shape has too many elements");
      numel *= d;
      dims.push_back(int64_t(d));
      if (!skip_to(')')) expect(',');
    }
    ++pos_;
    return dims;
  }

  std::string_view text_;
  const std::string& where_;
  size_t pos_ = 0;
};

Tensor parse_npy(std::string_view bytes, const std::string& where) {
  const auto fail = [&](const auto&... pieces) { throw Error(detail::concat(where, ": ", pieces...)); };
  if (!bytes.starts_with(kMagic) || bytes.size() < kMagic.size() + 4) fail("not a .npy file (no \\x93NUMPY magic)");
  const int major = static_cast<unsigned char>(bytes[6]);
  if (major < 1 || major > 3)
    fail("format version ", major, ".", int(static_cast<unsigned char>(bytes[7])),
         " is not supported (1.0 to 3.0 are)");
  const size_t length_size = major == 1 ? 2 : 4;
  if (bytes.size() < 8 + length_size) fail("truncated header");
  uint64_t header_size = 0;
  for (size_t i = 0; i < length_size; ++i) header_size |= uint64_t(static_cast<unsigned char>(bytes[8 + i])) << (8 * i);
  const size_t data_at = 8 + length_size;
  if (header_size > bytes.size() - data_at) fail("the header of ", header_size, " bytes runs past the file");
  const Header h = HeaderParser(bytes.substr(data_at, size_t(header_size)), where).parse();
  const std::string_view data = bytes.substr(data_at + size_t(header_size));
  const uint64_t numel = uint64_t(numel_of(h.shape)), item = itemsize(h.dtype);
  if (numel > data.size() / item || numel * item != data.size())
    fail("shape ", shape_str(h.shape), " of ", h.dtype, " needs ", numel, " elements but the file holds ",
         data.size(), " data bytes");
  if (h.dtype == kBool)
    for (const char c : data)
      if (static_cast<unsigned char>(c) > 1) fail("a bool other than 0 or 1");

  // A Fortran-order array is the C-order array of the reversed shape, transposed.
  DimVector stored = h.shape, order;
  if (h.fortran_order) std::reverse(stored.begin(), stored.end());
  for (size_t d = stored.size(); d-- > 0;) order.push_back(int64_t(d));
  Tensor t = empty(stored, h.dtype);
  if (!data.empty()) std::memcpy(t.data_ptr(), data.data(), data.size());
  return h.fortran_order && stored.size() > 1 ? t.permute(order).contiguous() : t;
}

}  // namespace

Tensor npy_from_bytes(std::string_view bytes, std::string_view what) {
  return parse_npy(bytes, detail::concat("npy_from_bytes: ", what));
}

Tensor load_npy(const std::string& path) {
  const pt::MappedFile file(path, "load_npy");
  return parse_npy(file.bytes(), "load_npy: " + path);
}

std::string npy_to_bytes(const Tensor& t) {
  NNVM_CHECK(t.defined(), "npy_to_bytes", "the tensor is undefined");
  NNVM_CHECK(t.device().type == DeviceType::CPU, "npy_to_bytes", "the tensor is on ", t.device(),
             "; move it to the CPU first");
  const auto type =
      std::find_if(std::begin(kTypes), std::end(kTypes), [&](const NpyType& n) { return n.dtype == t.dtype(); });
  NNVM_CHECK(type != std::end(kTypes), "npy_to_bytes", t.dtype(),
             " has no .npy dtype; convert it first (t.to(nnvm::kFloat32))");
  std::string shape;
  for (const int64_t d : t.sizes()) shape += detail::concat(d, ", ");
  if (t.dim() > 1) shape.resize(shape.size() - 2);  // numpy writes (3,) but (2, 3)
  if (t.dim() == 1) shape.pop_back();
  std::string header = detail::concat("{'descr': '", itemsize(t.dtype()) == 1 ? '|' : '<', type->code,
                                      "', 'fortran_order': False, 'shape': (", shape, "), }");
  // As numpy.lib.format writes it, byte for byte: room for the first dim to
  // grow to 21 digits, then spaces (1 to 64) and a newline up to the alignment.
  if (t.dim() > 0) header.append(kGrowthDigits - std::to_string(t.size(0)).size(), ' ');
  const int major = header.size() + 12 + kAlignment > 65535 ? 2 : 1;  // 1.0's length field has 16 bits
  const size_t prefix = kMagic.size() + 2 + (major == 1 ? 2 : 4);
  header.append(kAlignment - (prefix + header.size() + 1) % kAlignment, ' ');
  header += '\n';

  const Tensor c = t.detach().contiguous();
  std::string out(kMagic);
  out += char(major);
  out += '\0';
  for (size_t i = 0; i < prefix - kMagic.size() - 2; ++i) out += char((header.size() >> (8 * i)) & 0xff);
  out += header;
  if (c.nbytes() > 0) out.append(static_cast<const char*>(c.data_ptr()), c.nbytes());
  return out;
}

void save_npy(const Tensor& t, const std::string& path) {
  const std::string bytes = npy_to_bytes(t);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  NNVM_CHECK(out.good(), "save_npy", "cannot create ", path);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  out.flush();
  NNVM_CHECK(out.good(), "save_npy", "error writing ", path);
}

}  // namespace nnvm
