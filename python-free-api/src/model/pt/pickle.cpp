// The restricted unpickler of pt/pickle.h. Opcode semantics are those of
// CPython's Lib/pickle.py (_Unpickler): a value stack, a stack of MARK
// positions below which an opcode cannot reach, and a memo. Every value,
// stack slot, memo entry and container element costs at least one byte of
// input, so all of them are bounded by the pickle's size; nothing is
// allocated from a length the input declares before that length is checked
// against the bytes left.
#include "pickle.h"

#include <bit>
#include <cstring>
#include <iterator>
#include <unordered_map>

#include "nnvm/core/error.h"

namespace nnvm::pt {

namespace {

using Kind = PickleValue::Kind;

// What a name from GLOBAL does when REDUCE or NEWOBJ calls it.
enum class Callable : uint8_t {
  RebuildTensor,              // (storage, offset, sizes, strides, requires_grad, hooks[, metadata]) -> tensor
  RebuildParameter,           // (tensor, requires_grad, hooks[, state]) -> the tensor
  OrderedDict,                // () -> an empty dict
  FirstArgument,              // TorchScript's typed-list builders and type tags return their argument
  Storage,                    // only inside a persistent id
  TorchClass,                 // a TorchScript class: an empty object that BUILD gives attributes
};

struct AllowedName {
  std::string_view name;
  Callable callable;
  DType dtype = kFloat32;  // of a Storage
};
constexpr AllowedName kAllowed[] = {
    {"torch._utils._rebuild_tensor_v2", Callable::RebuildTensor},
    {"torch._utils._rebuild_parameter", Callable::RebuildParameter},
    {"torch._utils._rebuild_parameter_with_state", Callable::RebuildParameter},
    {"collections.OrderedDict", Callable::OrderedDict},
    {"torch.jit._pickle.build_intlist", Callable::FirstArgument},
    {"torch.jit._pickle.build_doublelist", Callable::FirstArgument},
    {"torch.jit._pickle.build_boollist", Callable::FirstArgument},
    {"torch.jit._pickle.build_tensorlist", Callable::FirstArgument},
    {"torch.jit._pickle.restore_type_tag", Callable::FirstArgument},
    {"torch.DoubleStorage", Callable::Storage, kFloat64},
    {"torch.FloatStorage", Callable::Storage, kFloat32},
    {"torch.HalfStorage", Callable::Storage, kFloat16},
    {"torch.BFloat16Storage", Callable::Storage, kBFloat16},
    {"torch.LongStorage", Callable::Storage, kInt64},
    {"torch.IntStorage", Callable::Storage, kInt32},
    {"torch.CharStorage", Callable::Storage, kInt8},
    {"torch.ByteStorage", Callable::Storage, kUInt8},
    {"torch.BoolStorage", Callable::Storage, kBool},
};
// A Global's `integer` for a `__torch__.*` class (the others hold their index in kAllowed).
constexpr int64_t kTorchClass = int64_t(std::size(kAllowed));

// Names refused with a reason more useful than "not allowed".
struct RefusedName {
  std::string_view name, reason;
};
constexpr RefusedName kRefused[] = {
    {"torch.ShortStorage", "int16 tensors are not supported (nnvm has no int16 dtype)"},
    {"torch._utils._rebuild_qtensor", "quantized tensors are not supported"},
    {"torch._utils._rebuild_sparse_tensor", "sparse tensors are not supported"},
    {"torch._tensor._rebuild_from_type_v2", "tensor subclasses and tensors with Python attributes are not supported"},
};

enum Opcode : uint8_t {
  kMark = '(', kStop = '.', kPop = '0', kPopMark = '1', kDup = '2', kBinFloat = 'G', kBinInt = 'J', kBinInt1 = 'K',
  kBinInt2 = 'M', kNone = 'N', kPersId = 'P', kBinPersId = 'Q', kReduce = 'R', kBinUnicode = 'X', kEmptyList = ']',
  kAppend = 'a', kBuild = 'b', kGlobal = 'c', kDict = 'd', kAppends = 'e', kBinGet = 'h', kLongBinGet = 'j',
  kList = 'l', kBinPut = 'q', kLongBinPut = 'r', kSetItem = 's', kTuple = 't', kSetItems = 'u', kEmptyDict = '}',
  kEmptyTuple = ')', kBinBytes = 'B', kShortBinBytes = 'C', kProto = 0x80, kNewObj = 0x81, kTuple1 = 0x85,
  kTuple2 = 0x86, kTuple3 = 0x87, kNewTrue = 0x88, kNewFalse = 0x89, kLong1 = 0x8a, kLong4 = 0x8b,
  kShortBinUnicode = 0x8c, kBinUnicode8 = 0x8d, kBinBytes8 = 0x8e, kStackGlobal = 0x93, kMemoize = 0x94, kFrame = 0x95,
};

// Opcodes of the format that are refused, by name for the message.
struct OpcodeName {
  uint8_t code;
  std::string_view name;
};
constexpr OpcodeName kRefusedOpcodes[] = {
    {'i', "INST"},         {'o', "OBJ"},         {0x82, "EXT1"},         {0x83, "EXT2"},        {0x84, "EXT4"},
    {0x92, "NEWOBJ_EX"},   {'I', "INT"},         {'L', "LONG"},          {'F', "FLOAT"},        {'S', "STRING"},
    {'V', "UNICODE"},      {'T', "BINSTRING"},   {'U', "SHORT_BINSTRING"}, {'p', "PUT"},       {'g', "GET"},
    {0x8f, "EMPTY_SET"},   {0x90, "ADDITEMS"},   {0x91, "FROZENSET"},    {0x96, "BYTEARRAY8"}, {0x97, "NEXT_BUFFER"},
    {0x98, "READONLY_BUFFER"},
};

class Unpickler {
 public:
  Unpickler(std::string_view bytes, std::string_view where) : bytes_(bytes), where_(where) {}
  Pickle run();

 private:
  template <class... Pieces> [[noreturn]] void fail(const Pieces&... pieces) const {
    throw Error(detail::concat(where_, ": byte ", at_, ": ", pieces...));
  }
  void step(uint8_t code);
  std::string_view take(uint64_t n);
  uint64_t le(int n);
  std::string_view line();
  const PickleValue& value(size_t i) const { return out_.values[i]; }
  size_t make(Kind kind, int64_t integer = 0, std::string text = {}, std::vector<size_t> items = {});
  void push(size_t v) { stack_.push_back(v); }
  size_t top() const;
  size_t pop();
  std::vector<size_t> pop_to_mark();
  size_t container(Kind kind, std::string_view op);
  void global(std::string_view module, std::string_view name);
  void reduce();
  void newobj();
  void build();
  void persistent_id(size_t pid);
  size_t rebuild_tensor(const std::vector<size_t>& args);
  DimVector ints(size_t tuple, std::string_view what) const;
  void arity(const std::string& name, const std::vector<size_t>& args, size_t lowest, size_t highest) const;

  std::string_view bytes_;
  std::string_view where_;
  size_t pos_ = 0, at_ = 0;  // the next byte; the opcode being run
  Pickle out_;
  std::vector<size_t> stack_, marks_;
  std::unordered_map<uint64_t, size_t> memo_;
};

std::string_view Unpickler::take(uint64_t n) {
  if (n > bytes_.size() - pos_) fail("truncated: ", n, " bytes needed, ", bytes_.size() - pos_, " left");
  const std::string_view s = bytes_.substr(pos_, size_t(n));
  pos_ += size_t(n);
  return s;
}

uint64_t Unpickler::le(int n) {
  const std::string_view s = take(uint64_t(n));
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint64_t(static_cast<unsigned char>(s[size_t(i)])) << (8 * i);
  return v;
}

std::string_view Unpickler::line() {
  const size_t end = bytes_.find('\n', pos_);
  if (end == std::string_view::npos) fail("truncated: a line without its newline");
  const std::string_view s = bytes_.substr(pos_, end - pos_);
  pos_ = end + 1;
  return s;
}

size_t Unpickler::make(Kind kind, int64_t integer, std::string text, std::vector<size_t> items) {
  PickleValue v;
  v.kind = kind;
  v.integer = integer;
  v.text = std::move(text);
  v.items = std::move(items);
  out_.values.push_back(std::move(v));
  return out_.values.size() - 1;
}

size_t Unpickler::top() const {
  if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) fail("the stack is empty");
  return stack_.back();
}

size_t Unpickler::pop() {
  const size_t v = top();
  stack_.pop_back();
  return v;
}

std::vector<size_t> Unpickler::pop_to_mark() {
  if (marks_.empty()) fail("no MARK to pop to");
  std::vector<size_t> items(stack_.begin() + std::ptrdiff_t(marks_.back()), stack_.end());
  stack_.resize(marks_.back());
  marks_.pop_back();
  return items;
}

// The container on top of the stack, which `op` adds to.
size_t Unpickler::container(Kind kind, std::string_view op) {
  const size_t c = top();
  if (value(c).kind != kind) fail(op, " on ", out_.describe(c));
  return c;
}

Pickle Unpickler::run() {
  for (;;) {
    at_ = pos_;
    const uint8_t code = static_cast<uint8_t>(take(1)[0]);
    if (code == kStop) {
      out_.root = pop();
      return std::move(out_);
    }
    step(code);
  }
}

void Unpickler::step(uint8_t code) {
  switch (code) {
    case kProto: {
      const uint64_t protocol = le(1);
      if (protocol < 2 || protocol > 5) fail("pickle protocol ", protocol, " is not supported (2 to 5 are)");
      return;
    }
    case kFrame: le(8); return;  // protocol 4 groups opcodes in frames: nothing to do
    case kMark: marks_.push_back(stack_.size()); return;
    case kPop:
      if (!marks_.empty() && stack_.size() == marks_.back()) marks_.pop_back();  // as pickle.py: pops the mark
      else pop();
      return;
    case kPopMark: pop_to_mark(); return;
    case kDup: push(top()); return;
    case kNone: push(make(Kind::None)); return;
    case kNewTrue: push(make(Kind::Bool, 1)); return;
    case kNewFalse: push(make(Kind::Bool, 0)); return;
    case kBinInt: push(make(Kind::Int, int32_t(uint32_t(le(4))))); return;
    case kBinInt1: push(make(Kind::Int, int64_t(le(1)))); return;
    case kBinInt2: push(make(Kind::Int, int64_t(le(2)))); return;
    case kLong1:
    case kLong4: {
      const uint64_t n = le(code == kLong1 ? 1 : 4);
      if (n > 8) fail("an integer of ", n, " bytes does not fit in 64 bits");
      const std::string_view s = take(n);
      uint64_t v = 0;
      for (size_t i = 0; i < n; ++i) v |= uint64_t(static_cast<unsigned char>(s[i])) << (8 * i);
      if (n > 0 && n < 8 && (v >> (8 * n - 1)) & 1) v |= ~uint64_t(0) << (8 * n);  // two's complement
      push(make(Kind::Int, int64_t(v)));
      return;
    }
    case kBinFloat: {
      uint64_t bits = 0;
      for (const char c : take(8)) bits = bits << 8 | static_cast<unsigned char>(c);  // big-endian
      const size_t v = make(Kind::Float);
      out_.values[v].number = std::bit_cast<double>(bits);
      push(v);
      return;
    }
    case kShortBinUnicode: push(make(Kind::String, 0, std::string(take(le(1))))); return;
    case kBinUnicode: push(make(Kind::String, 0, std::string(take(le(4))))); return;
    case kBinUnicode8: push(make(Kind::String, 0, std::string(take(le(8))))); return;
    case kShortBinBytes: push(make(Kind::Bytes, 0, std::string(take(le(1))))); return;
    case kBinBytes: push(make(Kind::Bytes, 0, std::string(take(le(4))))); return;
    case kBinBytes8: push(make(Kind::Bytes, 0, std::string(take(le(8))))); return;
    case kEmptyTuple: push(make(Kind::Tuple)); return;
    case kTuple1:
    case kTuple2:
    case kTuple3: {
      std::vector<size_t> items(size_t(code - kTuple1 + 1));
      for (size_t i = items.size(); i-- > 0;) items[i] = pop();
      push(make(Kind::Tuple, 0, {}, std::move(items)));
      return;
    }
    case kTuple: push(make(Kind::Tuple, 0, {}, pop_to_mark())); return;
    case kEmptyList: push(make(Kind::List)); return;
    case kList: push(make(Kind::List, 0, {}, pop_to_mark())); return;
    case kEmptyDict: push(make(Kind::Dict)); return;
    case kDict: {
      std::vector<size_t> items = pop_to_mark();
      if (items.size() % 2 != 0) fail("DICT with a key and no value");
      push(make(Kind::Dict, 0, {}, std::move(items)));
      return;
    }
    case kAppend: {
      const size_t v = pop();
      out_.values[container(Kind::List, "APPEND")].items.push_back(v);
      return;
    }
    case kAppends: {
      const std::vector<size_t> items = pop_to_mark();
      std::vector<size_t>& list = out_.values[container(Kind::List, "APPENDS")].items;
      list.insert(list.end(), items.begin(), items.end());
      return;
    }
    case kSetItem: {
      const size_t v = pop(), k = pop();
      std::vector<size_t>& dict = out_.values[container(Kind::Dict, "SETITEM")].items;
      dict.push_back(k);
      dict.push_back(v);
      return;
    }
    case kSetItems: {
      const std::vector<size_t> items = pop_to_mark();
      if (items.size() % 2 != 0) fail("SETITEMS with a key and no value");
      std::vector<size_t>& dict = out_.values[container(Kind::Dict, "SETITEMS")].items;
      dict.insert(dict.end(), items.begin(), items.end());
      return;
    }
    case kBinPut: memo_[le(1)] = top(); return;
    case kLongBinPut: memo_[le(4)] = top(); return;
    case kMemoize: memo_[memo_.size()] = top(); return;
    case kBinGet:
    case kLongBinGet: {
      const uint64_t key = le(code == kBinGet ? 1 : 4);
      const auto found = memo_.find(key);
      if (found == memo_.end()) fail("memo entry ", key, " was never stored");
      push(found->second);
      return;
    }
    case kGlobal: {
      const std::string_view module = line();
      global(module, line());
      return;
    }
    case kStackGlobal: {
      const size_t name = pop(), module = pop();
      if (value(module).kind != Kind::String || value(name).kind != Kind::String)
        fail("STACK_GLOBAL needs two strings, got ", out_.describe(module), " and ", out_.describe(name));
      global(value(module).text, value(name).text);
      return;
    }
    case kReduce: reduce(); return;
    case kNewObj: newobj(); return;
    case kBuild: build(); return;
    case kBinPersId: persistent_id(pop()); return;
    case kPersId: fail("PERSID: a text persistent id '", line(), "' is not a PyTorch storage");
  }
  for (const OpcodeName& refused : kRefusedOpcodes)
    if (refused.code == code) fail("opcode ", refused.name, " is not allowed in a model file");
  fail("unknown opcode 0x", "0123456789abcdef"[code >> 4], "0123456789abcdef"[code & 15]);
}

void Unpickler::global(std::string_view module, std::string_view name) {
  const std::string full = detail::concat(module, ".", name);
  if (module == "__torch__" || module.starts_with("__torch__.")) {
    push(make(Kind::Global, kTorchClass, full));
    return;
  }
  for (size_t i = 0; i < std::size(kAllowed); ++i)
    if (kAllowed[i].name == full) {
      push(make(Kind::Global, int64_t(i), full));
      return;
    }
  for (const RefusedName& refused : kRefused)
    if (refused.name == full) fail("GLOBAL '", full, "' is refused: ", refused.reason);
  if (module == "torch" && name.ends_with("Storage"))
    fail("GLOBAL '", full, "' is refused: nnvm has no tensors of its dtype");
  fail("GLOBAL '", full, "' is not allowed: a model file may name only the functions and classes that rebuild "
       "tensors and modules (docs/NN.md lists them); nothing in it is run");
}

Callable callable_of(const PickleValue& global) {
  return global.integer == kTorchClass ? Callable::TorchClass : kAllowed[size_t(global.integer)].callable;
}

void Unpickler::arity(const std::string& name, const std::vector<size_t>& args, size_t lowest, size_t highest) const {
  if (args.size() < lowest || args.size() > highest)
    fail(name, " takes ", lowest, lowest == highest ? "" : detail::concat(" to ", highest), " arguments, got ",
         args.size());
}

void Unpickler::reduce() {
  const size_t args = pop(), callee = pop();
  if (value(callee).kind != Kind::Global) fail("REDUCE calls ", out_.describe(callee), ", not an allowed GLOBAL");
  const std::string name = value(callee).text;
  if (value(args).kind != Kind::Tuple) fail("REDUCE of ", name, " with ", out_.describe(args), ", not a tuple");
  const std::vector<size_t> a = value(args).items;
  switch (callable_of(value(callee))) {
    case Callable::RebuildTensor: push(rebuild_tensor(a)); return;
    case Callable::RebuildParameter:
      arity(name, a, 3, 4);
      if (value(a[0]).kind != Kind::Tensor) fail(name, " of ", out_.describe(a[0]), ", not a tensor");
      push(a[0]);
      return;
    case Callable::OrderedDict:
      arity(name, a, 0, 0);
      push(make(Kind::Dict));
      return;
    case Callable::FirstArgument:
      arity(name, a, 1, 2);
      push(a[0]);
      return;
    case Callable::TorchClass: push(make(Kind::Object, 0, name)); return;
    case Callable::Storage: fail("REDUCE of ", name, ": a storage class may appear only in a persistent id");
  }
}

void Unpickler::newobj() {
  const size_t args = pop(), cls = pop();
  if (value(cls).kind != Kind::Global || callable_of(value(cls)) != Callable::TorchClass)
    fail("NEWOBJ of ", out_.describe(cls), ": only TorchScript classes (__torch__.*) may be instantiated");
  if (value(args).kind != Kind::Tuple) fail("NEWOBJ of ", value(cls).text, " with ", out_.describe(args));
  push(make(Kind::Object, 0, value(cls).text));
}

void Unpickler::build() {
  const size_t state = pop(), target = top();
  switch (value(target).kind) {
    case Kind::Object: out_.values[target].items = {state}; return;
    case Kind::Dict: return;  // an OrderedDict's attributes: a state dict's _metadata (versions), not entries
    default: fail("BUILD on ", out_.describe(target), "; only TorchScript objects and dicts take a state");
  }
}

void Unpickler::persistent_id(size_t pid) {
  const PickleValue& p = value(pid);
  const auto kind_at = [&](size_t i, Kind kind) { return value(p.items[i]).kind == kind; };
  if (p.kind != Kind::Tuple || p.items.size() != 5 || !kind_at(0, Kind::String) ||
      value(p.items[0]).text != "storage" || !kind_at(1, Kind::Global) || !kind_at(2, Kind::String) ||
      !kind_at(3, Kind::String) || !kind_at(4, Kind::Int))
    fail("persistent id ", out_.describe(pid), " is not a ('storage', type, key, location, numel) tuple");
  const PickleValue& type = value(p.items[1]);
  if (callable_of(type) != Callable::Storage) fail("persistent id names ", type.text, ", not a storage class");
  const int64_t numel = value(p.items[4]).integer;
  if (numel < 0) fail("storage '", value(p.items[2]).text, "' has a negative size ", numel);
  // The location ("cpu", "cuda:0") does not matter: the bytes are the same, and nnvm loads them to the CPU.
  out_.storages.push_back({kAllowed[size_t(type.integer)].dtype, value(p.items[2]).text, numel});
  push(make(Kind::Storage, int64_t(out_.storages.size() - 1)));
}

DimVector Unpickler::ints(size_t tuple, std::string_view what) const {
  const PickleValue& t = value(tuple);
  if (t.kind != Kind::Tuple) fail("a tensor's ", what, " are ", out_.describe(tuple), ", not a tuple");
  DimVector out;
  for (const size_t i : t.items) {
    if (value(i).kind != Kind::Int) fail("a tensor's ", what, " hold ", out_.describe(i), ", not an int");
    out.push_back(value(i).integer);
  }
  return out;
}

size_t Unpickler::rebuild_tensor(const std::vector<size_t>& args) {
  arity("torch._utils._rebuild_tensor_v2", args, 6, 7);
  if (value(args[0]).kind != Kind::Storage) fail("a tensor of ", out_.describe(args[0]), ", not a storage");
  if (value(args[1]).kind != Kind::Int) fail("a tensor's storage offset is ", out_.describe(args[1]));
  if (value(args[4]).kind != Kind::Bool) fail("a tensor's requires_grad is ", out_.describe(args[4]));
  TensorRef t;
  t.storage = size_t(value(args[0]).integer);
  t.offset = value(args[1]).integer;
  t.sizes = ints(args[2], "sizes");
  t.strides = ints(args[3], "strides");
  if (t.sizes.size() != t.strides.size())
    fail("a tensor with ", t.sizes.size(), " sizes and ", t.strides.size(), " strides");
  out_.tensors.push_back(std::move(t));
  return make(Kind::Tensor, int64_t(out_.tensors.size() - 1));
}

}  // namespace

std::string Pickle::describe(size_t i) const {
  const PickleValue& v = values[i];
  switch (v.kind) {
    case Kind::None: return "None";
    case Kind::Bool: return "a bool";
    case Kind::Int: return "an int";
    case Kind::Float: return "a float";
    case Kind::String: return "a string";
    case Kind::Bytes: return "bytes";
    case Kind::Tuple: return detail::concat("a tuple of ", v.items.size());
    case Kind::List: return "a list";
    case Kind::Dict: return "a dict";
    case Kind::Global: return "the name " + v.text;
    case Kind::Storage: return "a storage";
    case Kind::Tensor: return "a tensor";
    case Kind::Object: return "an object of " + v.text;
  }
  return "a value";
}

Pickle unpickle(std::string_view bytes, std::string_view where) { return Unpickler(bytes, where).run(); }

}  // namespace nnvm::pt
