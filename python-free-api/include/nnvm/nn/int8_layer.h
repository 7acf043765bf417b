// What Linear and Conv2d share to run in INT8 (nnvm/quantized.h,
// docs/QUANTIZATION.md): a layer runs in float32 until told otherwise, then
// either watches its inputs (calibration), or multiplies in INT8 with its
// input quantized from each input's own range (dynamic) or by parameters
// calibrated beforehand (static). Its weight and bias stay float parameters;
// the packed int8 copy is remade when the weight's storage or version changes.
#pragma once

#include <cstdint>
#include <memory>

namespace nnvm::quantization {
class ObserverBase;
}

namespace nnvm::nn {

class Int8Layer {
 public:
  virtual ~Int8Layer() = default;

  // INT8 from now on, the input quantized from its own range on each call;
  // use_int8(false): float32 again.
  void use_int8(bool on = true);
  // INT8 from now on, the input quantized with this scale and zero point (uint8).
  void use_int8(double input_scale, int64_t input_zero_point);
  // float32 from now on, each input shown to `observer` first (calibration).
  void observe_inputs(std::shared_ptr<quantization::ObserverBase> observer);

  bool uses_int8() const;
  bool observes_inputs() const;
  const std::shared_ptr<quantization::ObserverBase>& input_observer() const;
  int64_t inputs_observed() const;  // the inputs shown to the observer so far

  struct State;  // python-free-api/src/quantized.cpp

 protected:
  // Throws nnvm::Error when the layer cannot run in INT8 (a grouped convolution).
  virtual void check_int8() const {}
  std::shared_ptr<State> int8_;
};

}  // namespace nnvm::nn
