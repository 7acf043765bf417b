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
#include <tuple>
#include <unistd.h>

#include "json.h"
#include "nnvm/core/autograd.h"
#include "nnvm/core/functions.h"
#include "nnvm/core/mode.h"

namespace nnvm::nn {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian; nnvm assumes a "
                                                          "little-endian host");

namespace {

constexpr std::string_view kMetadataKey = "__metadata__";
constexpr std::string_view kKindKey = "nnvm";
// The reference implementation's limit: a larger header is a corrupt (or hostile) file.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

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

Entry parse_entry(const std::string& path, const std::string& name, const json::Value& v) {
  if (v.kind != json::Value::Kind::Object) bad(path, "entry \"" + name + "\" is not an object");
  const json::Value* dtype = v.find("dtype");
  const json::Value* shape = v.find("shape");
  const json::Value* offsets = v.find("data_offsets");
  if (!dtype || !shape || !offsets)
    bad(path, "entry \"" + name + "\" needs \"dtype\", \"shape\" and \"data_offsets\"");
  Entry e{name, kFloat32, {}, 0, 0};
  const auto known = std::find_if(std::begin(kDTypeNames), std::end(kDTypeNames), [&](const DTypeName& d) {
    return dtype->kind == json::Value::Kind::String && d.name == dtype->string;
  });
  if (known == std::end(kDTypeNames))
    bad(path, "entry \"" + name + "\" has an unsupported dtype " +
                  (dtype->kind == json::Value::Kind::String ? "\"" + dtype->string + "\"" : "(not a string)"));
  e.dtype = known->dtype;
  if (shape->kind != json::Value::Kind::Array) bad(path, "entry \"" + name + "\": shape is not an array");
  uint64_t numel = 1;
  for (const json::Value& d : shape->array) {
    if (d.kind != json::Value::Kind::Number || !d.is_integer || d.integer < 0)
      bad(path, "entry \"" + name + "\": shape must hold non-negative integers");
    if (d.integer != 0 && numel > (uint64_t(1) << 62) / uint64_t(d.integer))
      bad(path, "entry \"" + name + "\": shape is too large");
    numel *= uint64_t(d.integer);
    e.shape.push_back(d.integer);
  }
  if (offsets->kind != json::Value::Kind::Array || offsets->array.size() != 2)
    bad(path, "entry \"" + name + "\": data_offsets must be [begin, end]");
  for (const json::Value& o : offsets->array)
    if (o.kind != json::Value::Kind::Number || !o.is_integer || o.integer < 0)
      bad(path, "entry \"" + name + "\": data_offsets must be non-negative integers");
  e.begin = uint64_t(offsets->array[0].integer);
  e.end = uint64_t(offsets->array[1].integer);
  const uint64_t nbytes = numel * itemsize(e.dtype);
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
    header += json::quote(kMetadataKey) + ":{";
    for (auto it = metadata.begin(); it != metadata.end(); ++it) {
      if (it != metadata.begin()) header += ",";
      header += detail::concat(json::quote(it->first), ":", json::quote(it->second));
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
    header += detail::concat(json::quote(name), ":{\"dtype\":\"", name_of(c.dtype()), "\",\"shape\":[", shape,
                             "],\"data_offsets\":[", offset, ",", offset + c.nbytes(), "]}");
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
  if (header_len > kMaxHeaderBytes || header_len > bytes.size() - 8)
    bad(path, detail::concat("header length ", header_len, " exceeds the file (", bytes.size(), " bytes)"));
  const std::string_view header(bytes.data() + 8, header_len);
  if (header.empty() || header[0] != '{') bad(path, "the header is not a JSON object");
  const json::Value root = json::parse(header, "load_safetensors: " + path);
  if (root.kind != json::Value::Kind::Object) bad(path, "the header is not a JSON object");

  SafetensorsFile file;
  std::vector<Entry> entries;
  for (const auto& [key, value] : root.object) {
    if (key != kMetadataKey) {
      entries.push_back(parse_entry(path, key, value));
      continue;
    }
    if (value.kind != json::Value::Kind::Object) bad(path, "__metadata__ is not an object");
    for (const auto& [k, v] : value.object) {
      if (v.kind != json::Value::Kind::String) bad(path, "__metadata__ value \"" + k + "\" is not a string");
      file.metadata[k] = v.string;
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
