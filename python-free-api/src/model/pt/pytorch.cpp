// load_state_dict (nnvm/pytorch.h): a PyTorch archive to named tensors.
//
// torch.save and torch.jit.save write a zip whose one directory (named after
// the file) holds data.pkl, the pickled object, and data/<key>, the raw
// little-endian bytes of each storage a tensor in the pickle refers to by
// key. pt/zip.h reads the zip, pt/pickle.h turns data.pkl into a value tree
// without running it, and this file names the tensors in that tree: the
// entries of a dict (a state dict), or the tensor attributes of a TorchScript
// module and its submodules, dotted ("features.0.weight"), as state_dict()
// names them in PyTorch.
#include "nnvm/pytorch.h"

#include <cstring>
#include <deque>
#include <map>
#include <tuple>

#include "nnvm/core/autograd.h"
#include "nnvm/core/functions.h"
#include "nnvm/core/mode.h"
#include "pickle.h"
#include "pytorch.h"
#include "zip.h"

namespace nnvm {

namespace {
constexpr std::string_view kOp = "load_state_dict";
}  // namespace

namespace pt {

namespace {

using Kind = PickleValue::Kind;

constexpr uint64_t kLimit = uint64_t(1) << 62;  // no count or element index reaches it
// Copied-out tensors take more bytes than the storages they view only where
// views overlap (an expand()ed tensor, several views of one storage). A
// pickle can make a thousand views of one storage in a few bytes each, so
// that excess is bounded: at most the storages' bytes again plus this.
constexpr uint64_t kMaxOverlapBytes = uint64_t(64) << 20;
constexpr int kMaxModuleDepth = 100;

// Copies a strided view's elements, in row-major order, to `out`.
void gather(const char* base, size_t item, IntArrayRef sizes, IntArrayRef strides, char* out) {
  if (is_contiguous_layout(sizes, strides)) {
    std::memcpy(out, base, size_t(numel_of(sizes)) * item);
    return;
  }
  const size_t rank = sizes.size();  // >= 1: a 0-d view is contiguous
  const int64_t inner = sizes[rank - 1], inner_stride = strides[rank - 1];
  DimVector index(rank - 1, 0);
  for (int64_t row = 0, rows = numel_of(sizes) / inner; row < rows; ++row) {
    int64_t at = 0;
    for (size_t d = 0; d + 1 < rank; ++d) at += index[d] * strides[d];
    for (int64_t i = 0; i < inner; ++i, out += item)
      std::memcpy(out, base + size_t(at + i * inner_stride) * item, item);
    for (size_t d = rank - 1; d-- > 0;) {
      if (++index[d] < sizes[d]) break;
      index[d] = 0;
    }
  }
}

class ArchiveReader {
 public:
  ArchiveReader(std::string_view bytes, const std::string& where);
  OrderedDict<std::string, Tensor> read();

 private:
  template <class... Pieces> [[noreturn]] void fail(const Pieces&... pieces) const {
    throw Error(detail::concat(where_, ": ", pieces...));
  }
  const ZipEntry& find_pickle() const;
  void add(const std::string& name, size_t tensor_value);
  void add_module(size_t object, const std::string& prefix, int depth);
  Tensor tensor(const TensorRef& ref, const std::string& name);
  std::string_view storage(const StorageRef& s, const std::string& name);

  std::string where_;
  ZipArchive zip_;
  std::string directory_;  // "archive/"
  Pickle pickle_;
  OrderedDict<std::string, Tensor> out_;
  size_t visits_left_ = 0, name_bytes_left_ = 0;
  std::map<std::string, std::string_view> storages_;  // by key, read once
  std::deque<std::string> inflated_;                  // what deflated storages' views point into
  std::map<std::tuple<std::string, DType, int64_t, DimVector, DimVector>, Tensor> views_;
  uint64_t storage_bytes_ = 0, copied_bytes_ = 0;
};

ArchiveReader::ArchiveReader(std::string_view bytes, const std::string& where) : where_(where), zip_(bytes, where) {
  const ZipEntry& pkl = find_pickle();
  directory_ = pkl.name.substr(0, pkl.name.size() - std::string_view("data.pkl").size());
  std::string scratch;
  if (const ZipEntry* order = zip_.find(directory_ + "byteorder")) {
    const std::string_view byteorder = zip_.read(*order, scratch);
    if (byteorder != "little") fail("the file's byteorder is '", byteorder, "'; only little-endian files load");
  }
  pickle_ = unpickle(zip_.read(pkl, scratch), where_ + ": " + pkl.name);
  // Walking a TorchScript module visits each attribute, and spells each
  // name, once unless modules are shared; a pickle that shares them to
  // multiply the walk or the names' bytes is refused.
  visits_left_ = pickle_.values.size() + 4096;
  name_bytes_left_ = 64 * size_t(pkl.size) + (size_t(1) << 20);
}

const ZipEntry& ArchiveReader::find_pickle() const {
  const ZipEntry* found = nullptr;
  for (const ZipEntry& e : zip_.entries()) {
    const size_t slash = e.name.find('/');
    if (slash == std::string::npos || std::string_view(e.name).substr(slash + 1) != "data.pkl") continue;
    if (found != nullptr) fail("two pickles, ", found->name, " and ", e.name);
    found = &e;
  }
  if (found == nullptr) fail("no <archive>/data.pkl entry: not a file written by torch.save or torch.jit.save");
  return *found;
}

OrderedDict<std::string, Tensor> ArchiveReader::read() {
  const PickleValue& root = pickle_[pickle_.root];
  if (root.kind == Kind::Object) {
    add_module(pickle_.root, "", 0);
  } else if (root.kind == Kind::Dict) {
    for (size_t i = 0; i + 1 < root.items.size(); i += 2) {
      const PickleValue& key = pickle_[root.items[i]];
      if (key.kind != Kind::String) fail("the dict has ", pickle_.describe(root.items[i]), " as a key");
      if (pickle_[root.items[i + 1]].kind != Kind::Tensor)
        fail("entry '", key.text, "' holds ", pickle_.describe(root.items[i + 1]),
             ", not a tensor (a checkpoint that nests the state dict, such as {\"model\": ...}, is not supported: "
             "save model.state_dict() itself)");
      add(key.text, root.items[i + 1]);
    }
  } else {
    fail("data.pkl holds ", pickle_.describe(pickle_.root), ", not a state dict or a TorchScript module");
  }
  return std::move(out_);
}

void ArchiveReader::add(const std::string& name, size_t tensor_value) {
  if (out_.contains(name)) fail("entry '", name, "' appears twice");
  out_.insert(name, tensor(pickle_.tensors[size_t(pickle_[tensor_value].integer)], name));
}

// A TorchScript object's state is a dict of its attributes: tensors are its
// parameters and buffers, objects its submodules; the rest (training flags,
// hyper-parameters) names nothing.
void ArchiveReader::add_module(size_t object, const std::string& prefix, int depth) {
  const PickleValue& o = pickle_[object];
  if (depth > kMaxModuleDepth) fail("modules nest more than ", kMaxModuleDepth, " deep (a module that holds itself?)");
  const std::string label = prefix.empty() ? "the root module" : "module '" + prefix.substr(0, prefix.size() - 1) + "'";
  if (o.items.empty()) return;  // never given a state: no attributes
  const PickleValue& state = pickle_[o.items[0]];
  if (state.kind != Kind::Dict)
    fail(label, " (", o.text, ") has ", pickle_.describe(o.items[0]),
         " as its state, not a dict of attributes (a class with __setstate__), so its tensors have no names");
  for (size_t i = 0; i + 1 < state.items.size(); i += 2) {
    if (visits_left_-- == 0) fail("the modules name more attributes than data.pkl holds values (shared submodules?)");
    const PickleValue& key = pickle_[state.items[i]];
    if (key.kind != Kind::String) fail(label, " has ", pickle_.describe(state.items[i]), " as an attribute name");
    const Kind kind = pickle_[state.items[i + 1]].kind;
    if (kind != Kind::Tensor && kind != Kind::Object) continue;
    const std::string name = prefix + key.text;
    if (name.size() > name_bytes_left_) fail("the modules' names take more bytes than data.pkl could spell out");
    name_bytes_left_ -= name.size();
    if (kind == Kind::Tensor) add(name, state.items[i + 1]);
    if (kind == Kind::Object) add_module(state.items[i + 1], name + ".", depth + 1);
  }
}

// The bytes of `s`, which entry `name` views.
std::string_view ArchiveReader::storage(const StorageRef& s, const std::string& name) {
  if (const auto found = storages_.find(s.key); found != storages_.end()) return found->second;
  const std::string path = directory_ + "data/" + s.key;
  const ZipEntry* entry = zip_.find(path);
  if (entry == nullptr) fail("entry '", name, "': its storage '", s.key, "' has no zip entry ", path);
  const std::string_view bytes = zip_.read(*entry, inflated_.emplace_back());
  storage_bytes_ += bytes.size();
  storages_.emplace(s.key, bytes);
  return bytes;
}

Tensor ArchiveReader::tensor(const TensorRef& ref, const std::string& name) {
  const StorageRef& s = pickle_.storages[ref.storage];
  auto view = std::make_tuple(s.key, s.dtype, ref.offset, ref.sizes, ref.strides);
  if (const auto found = views_.find(view); found != views_.end()) return found->second;

  const size_t item = itemsize(s.dtype);
  const std::string_view bytes = storage(s, name);
  if (uint64_t(s.numel) > bytes.size() / item)
    fail("entry '", name, "': storage '", s.key, "' holds ", bytes.size(), " bytes, fewer than its ", s.numel,
         " elements of ", s.dtype);
  const std::string layout = detail::concat("entry '", name, "': a tensor of sizes ", shape_str(ref.sizes),
                                            ", strides ", shape_str(ref.strides), " and offset ", ref.offset,
                                            " in storage '", s.key, "' of ", s.numel, " elements");
  uint64_t numel = 1;
  for (size_t d = 0; d < ref.sizes.size(); ++d) {
    if (ref.sizes[d] < 0 || ref.strides[d] < 0) fail(layout, ": negative sizes and strides are not supported");
    if (ref.sizes[d] > 0 && numel > kLimit / uint64_t(ref.sizes[d])) fail(layout, ": too many elements");
    numel *= uint64_t(ref.sizes[d]);
  }
  if (ref.offset < 0) fail(layout, ": a negative offset");
  if (numel > 0) {
    uint64_t last = uint64_t(ref.offset);  // the element the view reads last
    for (size_t d = 0; d < ref.sizes.size(); ++d) {
      const uint64_t steps = uint64_t(ref.sizes[d] - 1), stride = uint64_t(ref.strides[d]);
      if (steps > 0 && stride > (kLimit - last) / steps) fail(layout, ": reads past the storage");
      last += steps * stride;
    }
    if (last >= uint64_t(s.numel)) fail(layout, ": reads element ", last, ", past the storage");
  }
  if (numel > kLimit / 8 || (copied_bytes_ += numel * item) > 2 * storage_bytes_ + kMaxOverlapBytes)
    fail(layout, ": the file's overlapping views would copy out to more than ", 2 * storage_bytes_ + kMaxOverlapBytes,
         " bytes");

  Tensor t = empty(IntArrayRef(ref.sizes), s.dtype);
  if (numel > 0) {
    char* out = static_cast<char*>(t.data_ptr());
    gather(bytes.data() + size_t(ref.offset) * item, item, ref.sizes, ref.strides, out);
    if (s.dtype == kBool)
      for (uint64_t i = 0; i < numel; ++i)
        if (static_cast<unsigned char>(out[i]) > 1) fail(layout, ": a bool other than 0 or 1");
  }
  views_.emplace(std::move(view), t);
  return t;
}

}  // namespace

OrderedDict<std::string, Tensor> load_state_dict_from_bytes(std::string_view bytes, const std::string& where) {
  // The legacy format (torch.save before 1.6, or _use_new_zipfile_serialization=False) is pickles back to back.
  if (!bytes.starts_with("PK") && !bytes.empty() && static_cast<unsigned char>(bytes[0]) == 0x80)
    throw Error(detail::concat(where, ": a legacy torch.save file (PyTorch before 1.6, or "
                                      "_use_new_zipfile_serialization=False); save it again with a current PyTorch"));
  return ArchiveReader(bytes, where).read();
}

}  // namespace pt

OrderedDict<std::string, Tensor> load_state_dict(const std::string& path) {
  const pt::MappedFile file(path, kOp);
  return pt::load_state_dict_from_bytes(file.bytes(), detail::concat(kOp, ": ", path));
}

void load_state_dict(nn::Module& module, const std::string& path, bool strict) {
  const OrderedDict<std::string, Tensor> file = load_state_dict(path);
  const OrderedDict<std::string, Tensor> own = module.state_dict();
  for (const auto& item : own) {
    const Tensor& dst = item.value();
    const Tensor* src = file.find(item.key());
    NNVM_CHECK(src != nullptr || !strict, kOp, path, ": missing entry '", item.key(), "' (the module's is ",
               dst.dtype(), " of shape ", shape_str(dst.sizes()), "; strict = false leaves it as it is)");
    if (src == nullptr) continue;
    NNVM_CHECK(src->sizes() == dst.sizes(), kOp, path, ": entry '", item.key(), "' has shape ",
               shape_str(src->sizes()), " but the module expects ", shape_str(dst.sizes()));
    NNVM_CHECK(src->dtype() == dst.dtype() || (is_floating(src->dtype()) && is_floating(dst.dtype())), kOp, path,
               ": entry '", item.key(), "' is ", src->dtype(), " but the module's is ", dst.dtype(),
               " (only floating dtypes convert into each other)");
  }
  if (strict)
    for (const auto& item : file)
      NNVM_CHECK(own.contains(item.key()), kOp, path, ": unexpected entry '", item.key(), "' of shape ",
                 shape_str(item.value().sizes()), ": the module has no such parameter or buffer (strict = false "
                 "ignores it)");
  {
    NoGradGuard no_grad;
    for (const auto& item : own)
      if (const Tensor* src = file.find(item.key())) Tensor(item.value()).copy_(*src);
  }
  mark_step();  // the copies run now, as nn::load's do: the next trace is the caller's own
}

}  // namespace nnvm
