// What a creation function makes (libtorch's torch::TensorOptions): a dtype,
// a device and whether the result requires grad, set by chained setters or
// by the free functions nnvm::dtype(), nnvm::device(), nnvm::requires_grad():
//   nnvm::zeros({2, 3}, nnvm::TensorOptions().dtype(nnvm::kFloat64).requires_grad(true));
//   nnvm::randn({4}, nnvm::requires_grad());
#pragma once

#include "nnvm/core/device.h"
#include "nnvm/core/dtype.h"

namespace nnvm {

struct TensorOptions {
  DType dtype_ = kFloat32;
  Device device_;
  bool requires_grad_ = false;
  TensorOptions() = default;
  TensorOptions(DType d) : dtype_(d) {}        // NOLINT: torch::zeros({2}, torch::kInt) style
  TensorOptions(Device d) : device_(d) {}      // NOLINT
  TensorOptions(DeviceType d) : device_(d) {}  // NOLINT
  TensorOptions dtype(DType d) const { auto o = *this; o.dtype_ = d; return o; }
  TensorOptions device(Device d) const { auto o = *this; o.device_ = d; return o; }
  TensorOptions requires_grad(bool on = true) const { auto o = *this; o.requires_grad_ = on; return o; }
  DType dtype() const { return dtype_; }
  Device device() const { return device_; }
  bool requires_grad() const { return requires_grad_; }
};

inline TensorOptions dtype(DType d) { return TensorOptions().dtype(d); }
inline TensorOptions device(Device d) { return TensorOptions().device(d); }
inline TensorOptions requires_grad(bool on = true) { return TensorOptions().requires_grad(on); }

}  // namespace nnvm
