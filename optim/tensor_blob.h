#pragma once
// TensorBlob: a tensor's dtype, shape and bytes in a form cereal can archive. Checkpoints store
// tensors through it, so a file written on a GPU run restores on the CPU and vice versa.
#include <cstdint>
#include <string>
#include <vector>

#include "tensor/core/tensor.h"

namespace ruccl::optim {

/// A host copy of a tensor (contiguous, row-major bytes), archivable with cereal.
struct TensorBlob {
  std::uint8_t dtype = 0;
  std::vector<std::int64_t> shape;
  std::string bytes;

  /// Copies `t` (any device, any strides) to the host.
  static TensorBlob from_tensor(const Tensor& t);
  /// A tensor on `device` with this blob's contents. Throws CheckpointError when the dtype code
  /// is unknown or the byte count does not match the shape (a damaged record).
  Tensor to_tensor(Device device = Device::cpu()) const;
  /// The dtype this blob holds; throws CheckpointError for an unknown code.
  DType dtype_value() const;
  /// The shape as a Shape; throws CheckpointError when it has too many dims or negative sizes.
  Shape shape_value() const;

  template <class Archive>
  void serialize(Archive& archive) {
    archive(dtype, shape, bytes);
  }
};

}  // namespace ruccl::optim
