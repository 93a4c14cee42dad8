// Which Backend serves which device type. The CPU backend is always there; the CUDA layer
// registers its backend when it is built and a GPU is present.
#include <array>
#include <atomic>

#include "tensor/backend/backend.h"
#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/core/error.h"

namespace ruccl {

namespace {

std::array<std::atomic<Backend*>, 2>& registry() {
  static cpu::CpuBackend cpu_backend;
  static std::array<std::atomic<Backend*>, 2> backends{&cpu_backend, nullptr};
  return backends;
}

}  // namespace

Backend& backend_for(Device device) {
  Backend* b = registry()[static_cast<std::size_t>(device.type)].load(std::memory_order_acquire);
  RUCCL_CHECK(b != nullptr, DeviceError, "backend_for: expected an available device, got ", device,
              " (this build has no CUDA backend, or no GPU was found)");
  return *b;
}

bool has_backend(DeviceType type) {
  return registry()[static_cast<std::size_t>(type)].load(std::memory_order_acquire) != nullptr;
}

void register_backend(DeviceType type, Backend* backend) {
  registry()[static_cast<std::size_t>(type)].store(backend, std::memory_order_release);
}

std::string_view op_name(Op op) {
  static constexpr std::array<std::string_view, static_cast<std::size_t>(Op::kCount)> kNames = {
      "copy",      "fill",        "neg",         "exp",          "log",    "sqrt",
      "abs",       "tanh",        "sigmoid",     "relu",         "gelu",   "sign",
      "add",       "sub",         "mul",         "div",          "pow",    "maximum",
      "minimum",   "eq",          "ne",          "lt",           "le",     "gt",
      "ge",        "logical_and", "logical_or",  "logical_not",  "where",  "sum",
      "mean",      "prod",        "max",         "min",          "argmax", "argmin",
      "matmul",    "softmax",     "log_softmax", "index_select", "gather", "scatter_add",
      "index_add", "one_hot",     "sgd_update",  "adam_update",  "add_",   "sub_",
      "mul_",      "div_",        "im2col",      "col2im",       "sin",    "cos",
      "silu",      "rsqrt",       "erf",         "log1p",        "expm1",  "isnan",
      "isfinite",  "leaky_relu",  "elu",         "softplus",     "cumsum", "sort",
      "batch_norm"};
  const auto i = static_cast<std::size_t>(op);
  return i < kNames.size() ? kNames[i] : "unknown";
}

}  // namespace ruccl
