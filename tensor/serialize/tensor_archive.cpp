// The non-template half of tensor_archive.h: byte order, header validation, tensor assembly.
#include "tensor/serialize/tensor_archive.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

namespace ruccl::serialize_detail {

namespace {

constexpr std::uint8_t kDTypeCount = static_cast<std::uint8_t>(DType::Bool) + 1;

// Reverses each element's bytes on a big-endian host (a no-op on little-endian ones).
void swap_to_little_endian(char* data, std::size_t nbytes, std::size_t element_size) {
  if constexpr (std::endian::native == std::endian::little) {
    (void)data;
    (void)nbytes;
    (void)element_size;
  } else {
    for (std::size_t i = 0; i + element_size <= nbytes; i += element_size) {
      std::reverse(data + i, data + i + element_size);
    }
  }
}

}  // namespace

std::vector<char> little_endian_bytes(const Tensor& t) {
  const Tensor host = t.to(Device::cpu()).contiguous();
  std::vector<char> bytes(host.nbytes());
  if (!bytes.empty()) std::memcpy(bytes.data(), host.data_ptr(), bytes.size());
  swap_to_little_endian(bytes.data(), bytes.size(), host.element_size());
  return bytes;
}

Shape checked_shape(std::uint32_t version, std::uint8_t dtype_code,
                    const std::vector<std::int64_t>& sizes, std::uint64_t nbytes) {
  RUCCL_ASSERT(version == kTensorFormatVersion);
  RUCCL_CHECK(dtype_code < kDTypeCount, DTypeError, "Tensor load: expected a dtype code below ",
              static_cast<int>(kDTypeCount), ", got ", static_cast<int>(dtype_code));
  const auto dtype = static_cast<DType>(dtype_code);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    RUCCL_CHECK(sizes[i] >= 0, ShapeError, "Tensor load: expected non-negative sizes, got ",
                sizes[i], " at dim ", i);
  }
  const Shape shape(sizes);
  const std::int64_t numel = shape.numel();  // throws ShapeError on overflow
  const std::uint64_t element = dtype_size(dtype);
  RUCCL_CHECK(
      static_cast<std::uint64_t>(numel) <= std::numeric_limits<std::uint64_t>::max() / element,
      ShapeError, "Tensor load: byte size of shape ", shape, " overflows");
  RUCCL_CHECK(static_cast<std::uint64_t>(numel) * element == nbytes, SerializationError,
              "Tensor load: expected ", static_cast<std::uint64_t>(numel) * element,
              " bytes of data for ", dtype, " ", shape, ", got a header claiming ", nbytes);
  return shape;
}

Tensor empty_for_load(const Shape& shape, DType dtype) { return Tensor::empty(shape, dtype); }

void finish_load(Tensor& t) {
  swap_to_little_endian(static_cast<char*>(t.data_ptr()), t.nbytes(), t.element_size());
  if (t.dtype() != DType::Bool) return;
  const auto* bytes = static_cast<const std::uint8_t*>(t.data_ptr());
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    RUCCL_CHECK(bytes[i] <= 1, SerializationError,
                "Tensor load: expected Bool bytes of 0 or 1, got ", static_cast<int>(bytes[i]),
                " at element ", i);
  }
}

Tensor tensor_from_bytes(const Shape& shape, DType dtype, std::vector<char>&& bytes) {
  Tensor t = Tensor::empty(shape, dtype);
  RUCCL_ASSERT(bytes.size() == t.nbytes());
  if (!bytes.empty()) std::memcpy(t.data_ptr(), bytes.data(), bytes.size());
  bytes = {};
  finish_load(t);
  return t;
}

}  // namespace ruccl::serialize_detail
