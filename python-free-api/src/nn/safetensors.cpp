// safetensors reading and writing, and nnvm's checkpoints on top: nn::save / nn::load
// and the kind each checkpoint names in its metadata.
//
// Reading trusts nothing in the file: the header length is checked against
// the file size, every offset against the data size, and the tensors must tile
// the data exactly (the reference implementation's rule), so a truncated or
// corrupted file is an nnvm::Error, never an out-of-bounds read.
#include "nnvm/nn/serialize.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <tuple>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "nnvm/core/autograd.h"
#include "nnvm/core/functions.h"
#include "nnvm/core/mode.h"

namespace nnvm::nn {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian; nnvm assumes a "
                                                          "little-endian host");

namespace {

using Json = nlohmann::json;

constexpr std::string_view kMetadataKey = "__metadata__";
constexpr std::string_view kKindKey = "nnvm";
// What a real checkpoint needs: each tensor's entry is its name and about 70
// bytes of dtype, shape and offsets, some 100 to 200 bytes in all, and the
// largest single files hold a few thousand tensors (the models with more are
// sharded); the metadata's free-form strings rarely pass a few hundred KB.
// 16 MiB is room for some 100,000 tensors. The reference implementation
// allows 100 MB; a header that large is a hostile file, which the parser's
// document (several times the header's size in memory) should not serve.
constexpr uint64_t kMaxHeaderBytes = uint64_t(16) << 20;
// Deeper nesting than any header has (an entry is two levels deep).
constexpr size_t kMaxDepth = 64;

struct DTypeName {
  DType dtype;
  std::string_view name;
};
constexpr DTypeName kDTypeNames[] = {{kFloat64, "F64"}, {kFloat32, "F32"}, {kFloat16, "F16"}, {kBFloat16, "BF16"},
                                     {kInt64, "I64"},   {kInt32, "I32"},   {kInt8, "I8"},     {kUInt8, "U8"},
                                     {kBool, "BOOL"}};

std::string_view name_of(DType dtype) {
  for (const DTypeName& d : kDTypeNames)
    if (d.dtype == dtype) return d.name;
  throw Error(detail::concat("save_safetensors: dtype ", dtype, " has no safetensors name"));
}

// `s` as a quoted JSON string; `what` names it if it is not UTF-8 (JSON text
// is, and a reader rejects anything else).
std::string quote(std::string_view s, std::string_view what) {
  try {
    return Json(s).dump();
  } catch (const Json::type_error&) {
    throw Error(detail::concat("save_safetensors: ", what, " is not valid UTF-8"));
  }
}

// Everything about one tensor the header says, checked.
struct Entry {
  std::string name;
  DType dtype;
  DimVector shape;
  uint64_t begin, end;
};

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw Error(detail::concat("load_safetensors: ", path, ": ", what));
}

// Builds the header's document from nlohmann-json's SAX events (the way its
// own DOM parser does), refusing what that parser lets through: a repeated key
// (it keeps the last; the reference implementation refuses the file) and
// nesting deeper than kMaxDepth. Objects are std::maps, so finding a repeated
// key costs a look-up in the object being built: the parse stays O(n log n).
class HeaderBuilder {
 public:
  explicit HeaderBuilder(Json& root) : root_(root) {}

  bool null() { return put(nullptr); }
  bool boolean(bool b) { return put(b); }
  bool number_integer(Json::number_integer_t v) { return put(v); }
  bool number_unsigned(Json::number_unsigned_t v) { return put(v); }
  bool number_float(Json::number_float_t v, const Json::string_t&) { return put(v); }
  bool string(Json::string_t& s) { return put(std::move(s)); }
  bool binary(Json::binary_t&) { return fail("bad JSON header: binary data"); }  // JSON text has none
  bool start_object(std::size_t) { return open(Json::object()); }
  bool start_array(std::size_t) { return open(Json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(Json::string_t& k) {
    auto [it, inserted] = open_.back()->get_ref<Json::object_t&>().try_emplace(k);
    if (!inserted) return fail(detail::concat("bad JSON header: duplicate key \"", k, "\""));
    slot_ = &it->second;
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error ...": the byte
    // offset says where in a binary file better than a line and column
    std::string_view what = e.what();
    if (const size_t colon = what.find(": "); what.starts_with("[json.exception.parse_error.") && colon != what.npos)
      what.remove_prefix(colon + 2);
    return fail(detail::concat("bad JSON header at byte ", position, ": ", what));
  }

  const std::string& error() const { return error_; }

 private:
  bool fail(std::string what) {
    error_ = std::move(what);
    return false;
  }
  // The new value's place: the root, the open array's end, or the last key's slot.
  template <typename T>
  Json* place(T&& v) {
    if (open_.empty()) return &(root_ = std::forward<T>(v));
    Json& parent = *open_.back();
    if (parent.is_array()) {
      parent.get_ref<Json::array_t&>().emplace_back(std::forward<T>(v));
      return &parent.get_ref<Json::array_t&>().back();
    }
    return &(*slot_ = std::forward<T>(v));
  }
  template <typename T>
  bool put(T&& v) {
    place(std::forward<T>(v));
    return true;
  }
  // An array's elements may move when it grows, but only the innermost open
  // container grows, and its open ancestors are not its elements.
  bool open(Json container) {
    if (open_.size() >= kMaxDepth)
      return fail(detail::concat("bad JSON header: nesting too deep (over ", kMaxDepth, " levels)"));
    open_.push_back(place(std::move(container)));
    return true;
  }
  bool close() {
    open_.pop_back();
    return true;
  }

  Json& root_;
  std::vector<Json*> open_;  // the containers being filled, outermost first
  Json* slot_ = nullptr;     // the innermost object's last key's value
  std::string error_;
};

Json parse_header(const std::string& path, std::string_view header) {
  Json root;
  HeaderBuilder builder(root);
  if (!Json::sax_parse(header.begin(), header.end(), &builder)) bad(path, builder.error());
  return root;
}

// A dimension or an offset: a JSON integer in [0, 2^63).
std::optional<int64_t> index_of(const Json& v) {
  if (!v.is_number_integer()) return std::nullopt;
  const int64_t i = v.get<int64_t>();  // an unsigned value past INT64_MAX wraps negative
  return i >= 0 ? std::optional<int64_t>(i) : std::nullopt;
}

Entry parse_entry(const std::string& path, const std::string& name, const Json& v) {
  if (!v.is_object()) bad(path, "entry \"" + name + "\" is not an object");
  const auto dtype = v.find("dtype"), shape = v.find("shape"), offsets = v.find("data_offsets");
  if (dtype == v.end() || shape == v.end() || offsets == v.end())
    bad(path, "entry \"" + name + "\" needs \"dtype\", \"shape\" and \"data_offsets\"");
  Entry e{name, kFloat32, {}, 0, 0};
  const Json::string_t* dtype_name = dtype->get_ptr<const Json::string_t*>();
  const auto known = std::find_if(std::begin(kDTypeNames), std::end(kDTypeNames),
                                  [&](const DTypeName& d) { return dtype_name && d.name == *dtype_name; });
  if (known == std::end(kDTypeNames))
    bad(path, "entry \"" + name + "\" has an unsupported dtype " +
                  (dtype_name ? "\"" + *dtype_name + "\"" : std::string("(not a string)")));
  e.dtype = known->dtype;
  if (!shape->is_array()) bad(path, "entry \"" + name + "\": shape is not an array");
  for (const Json& d : *shape) {
    const std::optional<int64_t> n = index_of(d);
    if (!n) bad(path, "entry \"" + name + "\": shape must hold non-negative integers");
    e.shape.push_back(*n);
  }
  // The product of the non-zero dims bounds every stride, even an empty
  // tensor's, and the byte count is the element count times the item size:
  // both must fit 64 bits before the offsets are compared with them.
  int64_t extent = 1;
  bool empty = false;
  for (const int64_t d : e.shape) {
    empty = empty || d == 0;
    if (d != 0 && __builtin_mul_overflow(extent, d, &extent))
      bad(path, detail::concat("entry \"", name, "\": shape ", shape_str(e.shape), " multiplies past 2^63"));
  }
  uint64_t nbytes = 0;
  if (!empty && __builtin_mul_overflow(uint64_t(extent), uint64_t(itemsize(e.dtype)), &nbytes))
    bad(path, detail::concat("entry \"", name, "\": a ", e.dtype, " tensor of shape ", shape_str(e.shape),
                             " has 2^64 bytes or more"));
  if (!offsets->is_array() || offsets->size() != 2)
    bad(path, "entry \"" + name + "\": data_offsets must be [begin, end]");
  const std::optional<int64_t> begin = index_of((*offsets)[0]), end = index_of((*offsets)[1]);
  if (!begin || !end) bad(path, "entry \"" + name + "\": data_offsets must be non-negative integers");
  e.begin = uint64_t(*begin);
  e.end = uint64_t(*end);
  if (e.end < e.begin || e.end - e.begin != nbytes)
    bad(path, detail::concat("entry \"", name, "\": data_offsets [", e.begin, ", ", e.end, "] do not span the ",
                             nbytes, " bytes of a ", e.dtype, " tensor of shape ", shape_str(e.shape)));
  return e;
}

// What each kind of checkpoint holds, for messages about the wrong one.
std::string describe(std::string_view kind) {
  if (kind == "module") return "a module's state dict (nnvm::save(module))";
  if (kind == "optimizer") return "an optimizer's state (nnvm::save(optimizer))";
  if (kind == "tensor") return "one tensor (nnvm::save(Tensor))";
  if (kind == "tensors") return "a vector of tensors (nnvm::save(std::vector<Tensor>))";
  return detail::concat("an unknown kind \"", kind, "\"");
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  NNVM_CHECK(in.good(), "load_safetensors", "cannot open ", path);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  NNVM_CHECK(!in.bad(), "load_safetensors", "error reading ", path);
  return bytes;
}

}  // namespace

void save_safetensors(const std::map<std::string, Tensor>& tensors, const std::string& path,
                      const std::map<std::string, std::string>& metadata) {
  std::vector<Tensor> data;
  std::string header = "{";
  if (!metadata.empty()) {
    header += quote(kMetadataKey, "the name __metadata__") + ":{";
    for (auto it = metadata.begin(); it != metadata.end(); ++it) {
      if (it != metadata.begin()) header += ",";
      header += detail::concat(quote(it->first, "a metadata key"), ":",
                               quote(it->second, detail::concat("metadata \"", it->first, "\"")));
    }
    header += "}";
  }
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    NNVM_CHECK(name != kMetadataKey, "save_safetensors", "the name \"", kMetadataKey, "\" is reserved");
    NNVM_CHECK(t.defined(), "save_safetensors", "tensor \"", name, "\" is undefined");
    NNVM_CHECK(t.device().type == DeviceType::CPU, "save_safetensors", "tensor \"", name, "\" is on ", t.device(),
               "; move it to the CPU first");
    const Tensor c = t.detach().contiguous();
    std::string shape;
    for (const int64_t d : c.sizes()) {
      if (!shape.empty()) shape += ",";
      shape += std::to_string(d);
    }
    if (header.size() > 1) header += ",";
    header += detail::concat(quote(name, "a tensor name"), ":{\"dtype\":\"", name_of(c.dtype()), "\",\"shape\":[",
                             shape, "],\"data_offsets\":[", offset, ",", offset + c.nbytes(), "]}");
    offset += c.nbytes();
    data.push_back(c);
  }
  header += "}";
  header.append((8 - header.size() % 8) % 8, ' ');  // the data starts 8-byte aligned

  static std::atomic<uint64_t> counter{0};
  const std::string tmp = detail::concat(path, ".tmp.", ::getpid(), ".", counter++);
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    NNVM_CHECK(out.good(), "save_safetensors", "cannot create ", tmp);
    unsigned char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(uint64_t(header.size()) >> (8 * i));
    out.write(reinterpret_cast<const char*>(len), 8);
    out.write(header.data(), std::streamsize(header.size()));
    for (const Tensor& c : data) out.write(static_cast<const char*>(c.data_ptr()), std::streamsize(c.nbytes()));
    out.flush();
    if (!out.good()) {
      out.close();
      std::filesystem::remove(tmp);
      throw Error(detail::concat("save_safetensors: error writing ", tmp));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp);
    throw Error(detail::concat("save_safetensors: cannot rename ", tmp, " to ", path, ": ", ec.message()));
  }
}

SafetensorsFile read_safetensors(const std::string& path) {
  const std::string bytes = read_file(path);
  if (bytes.size() < 8) bad(path, detail::concat("file of ", bytes.size(), " bytes is too short for a header"));
  uint64_t header_len = 0;
  for (int i = 0; i < 8; ++i) header_len |= uint64_t(static_cast<unsigned char>(bytes[size_t(i)])) << (8 * i);
  if (header_len > bytes.size() - 8)
    bad(path, detail::concat("header length ", header_len, " exceeds the file (", bytes.size(), " bytes)"));
  if (header_len > kMaxHeaderBytes)
    bad(path, detail::concat("header length ", header_len, " exceeds the limit of ", kMaxHeaderBytes,
                             " bytes (room for some 100,000 tensors; a corrupt or hostile file)"));
  const std::string_view header(bytes.data() + 8, header_len);
  if (header.empty() || header[0] != '{') bad(path, "the header is not a JSON object");
  const Json root = parse_header(path, header);
  if (!root.is_object()) bad(path, "the header is not a JSON object");

  SafetensorsFile file;
  std::vector<Entry> entries;
  for (const auto& [key, value] : root.get_ref<const Json::object_t&>()) {
    if (key != kMetadataKey) {
      entries.push_back(parse_entry(path, key, value));
      continue;
    }
    if (!value.is_object()) bad(path, "__metadata__ is not an object");
    for (const auto& [k, v] : value.get_ref<const Json::object_t&>()) {
      if (!v.is_string()) bad(path, "__metadata__ value \"" + k + "\" is not a string");
      file.metadata[k] = v.get_ref<const Json::string_t&>();
    }
  }

  // The tensors must tile the data exactly: no overlap, no gap, nothing past the end.
  const uint64_t data_size = bytes.size() - 8 - header_len;
  std::vector<const Entry*> by_offset;
  for (const Entry& e : entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const Entry* a, const Entry* b) { return std::tie(a->begin, a->end) < std::tie(b->begin, b->end); });
  uint64_t expected = 0;
  for (const Entry* e : by_offset) {
    if (e->begin != expected)
      bad(path, detail::concat("entry \"", e->name, "\" starts at byte ", e->begin, " of the data but byte ",
                               expected, " was expected (overlapping or missing data)"));
    if (e->end > data_size)
      bad(path, detail::concat("entry \"", e->name, "\" ends at byte ", e->end, " but the data has ", data_size,
                               " bytes (truncated file?)"));
    expected = e->end;
  }
  if (expected != data_size)
    bad(path, detail::concat("the tensors cover ", expected, " of the ", data_size, " data bytes"));

  const char* data = bytes.data() + 8 + header_len;
  for (const Entry& e : entries) {
    Tensor t = empty(e.shape, e.dtype);
    if (e.end > e.begin) std::memcpy(t.data_ptr(), data + e.begin, e.end - e.begin);
    if (e.dtype == kBool)
      for (uint64_t i = e.begin; i < e.end; ++i)
        if (static_cast<unsigned char>(data[i]) > 1) bad(path, "entry \"" + e.name + "\" holds a bool other than 0/1");
    file.tensors.emplace(e.name, std::move(t));
  }
  return file;
}

std::map<std::string, Tensor> load_safetensors(const std::string& path) { return read_safetensors(path).tensors; }

void save_checkpoint(const std::map<std::string, Tensor>& tensors, const std::string& path, std::string_view kind,
                     std::map<std::string, std::string> metadata) {
  metadata["format"] = "pt";  // the tensors are laid out as PyTorch's (the convention of safetensors' writers)
  metadata[std::string(kKindKey)] = kind;
  save_safetensors(tensors, path, metadata);
}

SafetensorsFile read_checkpoint(const std::string& path, std::string_view kind, std::string_view op) {
  SafetensorsFile file = read_safetensors(path);
  const auto held = file.metadata.find(std::string(kKindKey));
  if (held == file.metadata.end()) {
    NNVM_CHECK(kind == "module", op, path, " has no \"nnvm\" metadata entry (not written by nnvm::save); expected ",
               describe(kind));
  } else {
    NNVM_CHECK(held->second == kind, op, path, " holds ", describe(held->second), "; expected ", describe(kind));
  }
  return file;
}

void save(const Module& module, const std::string& path) {
  std::map<std::string, Tensor> tensors;
  for (const auto& item : module.state_dict()) tensors.emplace(item.key(), item.value());
  save_checkpoint(tensors, path, "module");
}

void load(Module& module, const std::string& path) {
  OrderedDict<std::string, Tensor> state;
  for (auto& [name, t] : read_checkpoint(path, "module", "nn::load").tensors) state.insert(name, t);
  try {
    module.load_state_dict(state);
  } catch (const Error& e) {
    throw Error(detail::concat("nn::load: ", path, ": ", e.what()));
  }
  // The copies run now rather than in the next step's trace, which then has
  // the signature the saving run's had: a resumed run replays its plans.
  mark_step();
}

}  // namespace nnvm::nn
