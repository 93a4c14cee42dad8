#pragma once
// Device query. A machine without a usable GPU (no device, no driver, or a driver older than the
// runtime: cudaGetDeviceCount says "CUDA driver version is insufficient for CUDA runtime version")
// is a normal answer here, not an error: device_count() returns 0 and device_status() says why.
#include <string>
#include <string_view>

namespace ruccl::cuda {

/// The number of usable CUDA devices; 0 when there is no GPU or no working driver. Never throws.
int device_count();

/// Whether at least one CUDA device is usable. Never throws.
bool cuda_available();

/// One line for people: "2 CUDA devices: 0: NVIDIA H200 (sm_90, 139.8 GiB), 1: ..." or
/// "no CUDA GPU: cudaGetDeviceCount failed with cudaErrorInsufficientDriver (CUDA driver version
/// is insufficient for CUDA runtime version); is the NVIDIA driver loaded (nvidia-smi)?".
std::string device_status();

/// Throws DeviceError "<op>: expected a CUDA device, got none (<device_status()>)" when
/// cuda_available() is false, or when `index` is not a device of this machine.
void require_device(std::string_view op, int index = 0);

}  // namespace ruccl::cuda
