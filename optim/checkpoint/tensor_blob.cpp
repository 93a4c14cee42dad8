#include "optim/checkpoint/tensor_blob.h"

#include <cstring>
#include <limits>

#include "optim/checkpoint/checkpoint_error.h"

namespace ruccl::optim {

TensorBlob TensorBlob::from_tensor(const Tensor& t) {
  RUCCL_CHECK(t.defined(), ValueError, "TensorBlob::from_tensor: expected a defined tensor");
  TensorBlob blob;
  blob.dtype = static_cast<std::uint8_t>(t.dtype());
  blob.shape = t.shape().to_vector();
  const Tensor host = t.to(Device::cpu()).contiguous();
  blob.bytes.resize(host.nbytes());
  if (host.nbytes() > 0) std::memcpy(blob.bytes.data(), host.data_ptr(), host.nbytes());
  return blob;
}

DType TensorBlob::dtype_value() const {
  RUCCL_CHECK(dtype <= static_cast<std::uint8_t>(DType::Bool), CheckpointError,
              "TensorBlob: expected a dtype code in 0..", static_cast<int>(DType::Bool), ", got ",
              static_cast<int>(dtype));
  return static_cast<DType>(dtype);
}

Shape TensorBlob::shape_value() const {
  RUCCL_CHECK(shape.size() <= static_cast<std::size_t>(Shape::kMaxDims), CheckpointError,
              "TensorBlob: expected at most ", Shape::kMaxDims, " dims, got ", shape.size());
  for (std::int64_t d : shape) {
    RUCCL_CHECK(d >= 0, CheckpointError, "TensorBlob: expected sizes >= 0, got ", d);
  }
  try {
    Shape s(shape);
    (void)s.numel();  // throws on overflow
    return s;
  } catch (const Error& e) {
    throw CheckpointError(str("TensorBlob: invalid shape: ", e.what()));
  }
}

void TensorBlob::validate() const {
  const DType dt = dtype_value();
  const Shape s = shape_value();  // sizes >= 0, numel fits int64
  // numel * element size in 64 bits can wrap (2^62 + 20 F32 elements "need" 80 bytes), so the
  // product is checked rather than trusted to match the bytes.
  std::uint64_t expected = 0;
  const bool wraps = __builtin_mul_overflow(static_cast<std::uint64_t>(s.numel()),
                                            static_cast<std::uint64_t>(dtype_size(dt)), &expected);
  RUCCL_CHECK(
      !wraps && expected <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()),
      CheckpointError, "TensorBlob: the byte size of a ", dt, " tensor of shape ", s, " overflows");
  RUCCL_CHECK(expected == bytes.size(), CheckpointError, "TensorBlob: expected ", expected,
              " bytes for a ", dt, " tensor of shape ", s, ", got ", bytes.size());
}

Tensor TensorBlob::to_tensor(Device device) const {
  validate();
  const DType dt = dtype_value();
  const Shape s = shape_value();
  Tensor host = Tensor::empty(s, dt, Device::cpu());
  if (!bytes.empty()) std::memcpy(host.data_ptr(), bytes.data(), bytes.size());
  return device.is_cpu() ? host : host.to(device);
}

}  // namespace ruccl::optim
