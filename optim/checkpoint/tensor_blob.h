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
  /// Checks, without allocating anything, that the blob describes a tensor: a known dtype code,
  /// at most Shape::kMaxDims sizes, each >= 0, an element count and a byte count (numel times
  /// the element size, checked for overflow) that fit, and exactly that many bytes. Throws
  /// CheckpointError otherwise (a damaged record).
  void validate() const;
  /// A tensor on `device` with this blob's contents; validate()s first, so a damaged blob is a
  /// CheckpointError before any memory is taken.
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
