// Where a tensor's storage lives. CPU today; CUDA is reserved for the CUDA backend.
#pragma once

#include <ostream>

namespace nnvm {

enum class DeviceType : uint8_t { CPU, CUDA };

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;
  constexpr Device() = default;
  constexpr Device(DeviceType t, int i = 0) : type(t), index(i) {}  // NOLINT: kCPU converts
  bool operator==(const Device&) const = default;
  bool is_cpu() const { return type == DeviceType::CPU; }
};

inline constexpr DeviceType kCPU = DeviceType::CPU;
inline constexpr DeviceType kCUDA = DeviceType::CUDA;

inline std::ostream& operator<<(std::ostream& os, Device d) {
  return os << (d.type == DeviceType::CPU ? "cpu" : "cuda") << (d.type == DeviceType::CUDA ? ":" : "")
            << (d.type == DeviceType::CUDA ? std::to_string(d.index) : "");
}

}  // namespace nnvm
