#include "collective/protocol/p2p_header.h"

#include "tensor/core/checked_arithmetic.h"
#include "tensor/core/error.h"

namespace ruccl {

namespace {

void put_i64(std::uint8_t* at, std::int64_t v) {
  const auto u = static_cast<std::uint64_t>(v);
  for (int i = 0; i < 8; ++i) at[i] = static_cast<std::uint8_t>(u >> (8 * i));
}

std::int64_t get_i64(const std::uint8_t* at) {
  std::uint64_t u = 0;
  for (int i = 0; i < 8; ++i) u |= std::uint64_t{at[i]} << (8 * i);
  return static_cast<std::int64_t>(u);
}

}  // namespace

P2PHeaderBytes encode_p2p_header(DType dtype, const Shape& shape) {
  P2PHeaderBytes out{};
  out[0] = kP2PHeaderVersion;
  out[1] = static_cast<std::uint8_t>(dtype);
  out[2] = static_cast<std::uint8_t>(shape.size());
  for (std::int64_t d = 0; d < shape.size(); ++d) {
    put_i64(out.data() + 8 + 8 * static_cast<std::size_t>(d), shape[d]);
  }
  return out;
}

std::string decode_p2p_header(std::span<const std::uint8_t, kP2PHeaderBytes> bytes, DType& dtype,
                              Shape& shape) {
  if (bytes[0] != kP2PHeaderVersion) {
    return str("version ", int{bytes[0]}, " (expected ", int{kP2PHeaderVersion}, ")");
  }
  if (bytes[1] > static_cast<std::uint8_t>(DType::Bool)) {
    return str("dtype ", int{bytes[1]}, " is no DType");
  }
  const int ndim = bytes[2];
  if (ndim > Shape::kMaxDims) {
    return str("ndim ", ndim, " out of range [0, ", Shape::kMaxDims, "]");
  }
  for (std::size_t i = 3; i < 8; ++i) {
    if (bytes[i] != 0) return str("reserved byte ", i, " is ", int{bytes[i]}, " (expected 0)");
  }
  dtype = static_cast<DType>(bytes[1]);
  shape = Shape();
  std::int64_t count = 1;
  for (int d = 0; d < Shape::kMaxDims; ++d) {
    const std::int64_t v = get_i64(bytes.data() + 8 + 8 * d);
    if (d >= ndim) {
      if (v != 0) return str("dim ", d, " past ndim ", ndim, " is ", v, " (expected 0)");
      continue;
    }
    if (v < 0) return str("dim ", d, " is ", v);
    if (mul_overflows(count, v, count)) return "the tensor's element count overflows";
    shape.push_back(v);
  }
  std::int64_t nbytes = 0;
  if (byte_size_overflows(count, dtype_size(dtype), nbytes)) {
    return "the tensor's byte size overflows";
  }
  return "";
}

}  // namespace ruccl
