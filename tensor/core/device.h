#pragma once
// Where a tensor's memory lives. Chosen at run time: one binary holds CPU and CUDA tensors.
#include <cstdint>
#include <ostream>
#include <string>

namespace ruccl {

enum class DeviceType : std::uint8_t { CPU, CUDA };

/// A device: Device::cpu() or Device::cuda(i).
struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;

  static constexpr Device cpu() { return {DeviceType::CPU, 0}; }
  static constexpr Device cuda(int index = 0) { return {DeviceType::CUDA, index}; }
  bool is_cpu() const { return type == DeviceType::CPU; }
  bool is_cuda() const { return type == DeviceType::CUDA; }
  /// "cpu" or "cuda:0".
  std::string to_string() const {
    return is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(index);
  }
  friend bool operator==(const Device&, const Device&) = default;
};

inline std::ostream& operator<<(std::ostream& out, const Device& device) {
  return out << device.to_string();
}

}  // namespace ruccl
