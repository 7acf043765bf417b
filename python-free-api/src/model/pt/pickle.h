// A restricted unpickler for the data.pkl of PyTorch's archives: it builds a
// small tree of values and runs nothing. pytorch.cpp turns the tree into
// named tensors.
//
// Python's pickle format is a program for a stack machine whose GLOBAL and
// REDUCE opcodes can call any importable function (builtins.eval, os.system).
// This reader knows the opcodes of protocols 2 to 5 that torch.save and
// torch.jit.save emit, and a fixed list of names (pickle.cpp's kAllowed):
// the tensor-rebuilding functions, collections.OrderedDict, the storage
// classes of nnvm's dtypes, TorchScript's list builders, and `__torch__.*`
// classes, which become plain attribute containers. Any other opcode or name
// is an nnvm::Error naming it and its byte offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "nnvm/core/dtype.h"
#include "nnvm/core/shape.h"

namespace nnvm::pt {

// A persistent id ('storage', torch.FloatStorage, key, location, numel): the
// entry data/<key> holds at least `numel` elements of `dtype`.
struct StorageRef {
  DType dtype = kFloat32;
  std::string key;
  int64_t numel = 0;
};

// torch._utils._rebuild_tensor_v2's arguments: a strided view of a storage.
struct TensorRef {
  size_t storage = 0;  // index into Pickle::storages
  int64_t offset = 0;
  DimVector sizes, strides;
};

struct PickleValue {
  enum class Kind : uint8_t {
    None, Bool, Int, Float, String, Bytes, Tuple, List, Dict, Global, Storage, Tensor, Object
  };
  Kind kind = Kind::None;
  // Bool and Int: the value. Storage, Tensor: the index into Pickle::storages
  // or tensors. Global: what the name may do (pickle.cpp's Callable).
  int64_t integer = 0;
  double number = 0;  // Float
  std::string text;   // String, Bytes; Global and Object: the qualified name ("__torch__.Net")
  // Tuple, List: the elements. Dict: key, value, key, value, ... in order.
  // Object: its state once BUILD gave it one (TorchScript: a dict of attributes).
  std::vector<size_t> items;
};

// Values refer to each other by index into `values`, so a pickle whose
// containers hold themselves makes no ownership cycle; readers of the tree
// bound their recursion.
struct Pickle {
  std::vector<PickleValue> values;
  std::vector<StorageRef> storages;
  std::vector<TensorRef> tensors;
  size_t root = 0;

  const PickleValue& operator[](size_t i) const { return values[i]; }
  // "an int", "a dict", "an object of __torch__.Net": for messages.
  std::string describe(size_t i) const;
};

// Throws nnvm::Error("<where>: byte <offset>: ...") on an opcode or a name
// outside the allowed ones, on malformed or truncated input, and on arguments
// of the wrong kind.
Pickle unpickle(std::string_view bytes, std::string_view where);

}  // namespace nnvm::pt
