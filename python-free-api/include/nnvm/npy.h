// NumPy's .npy files, read and written by nnvm itself: the magic "\x93NUMPY",
// a format version (1.0, 2.0 or 3.0), a header that is a Python dict literal
// ({'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }), then the raw
// elements (https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html).
//
//   nnvm::Tensor x = nnvm::load_npy("x.npy");   // np.save("x.npy", a)
//   nnvm::save_npy(y, "y.npy");                  // np.load("y.npy")
//
// The dtypes both sides have: <f8 <f4 <f2 <i8 <i4 |i1 |u1 |b1 (float64 ...
// bool). bfloat16 has no .npy name. The header is parsed, never evaluated.
#pragma once

#include <string>
#include <string_view>

#include "nnvm/core/tensor.h"

namespace nnvm {

// A CPU tensor in C order (a fortran_order=True array is reordered). Throws
// nnvm::Error naming the path, or `what`, on a damaged header, big-endian
// data, a dtype nnvm lacks (int16, wider unsigned ints, complex, structured
// and object arrays) or data that does not fill the shape exactly.
Tensor load_npy(const std::string& path);
Tensor npy_from_bytes(std::string_view bytes, std::string_view what);

// Version 1.0 (2.0 when the header is too long for it), C order, any layout
// of `t`. Throws nnvm::Error for bfloat16 and on an I/O failure.
void save_npy(const Tensor& t, const std::string& path);
std::string npy_to_bytes(const Tensor& t);

}  // namespace nnvm
