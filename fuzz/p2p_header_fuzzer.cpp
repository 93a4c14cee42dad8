// libFuzzer target: decode_p2p_header on arbitrary bytes (the dtype and shape a point-to-point
// sender announces, which the receiver allocates from). Never crashes, and what it accepts is
// exactly the encoding of what it decoded, with a byte size that fits int64.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "collective/protocol/p2p_header.h"
#include "fuzz/fuzz_check.h"
#include "tensor/core/checked_arithmetic.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size != ruccl::kP2PHeaderBytes) return 0;
  const std::span<const std::uint8_t, ruccl::kP2PHeaderBytes> bytes(data, size);
  ruccl::DType dtype{};
  ruccl::Shape shape;
  if (!ruccl::decode_p2p_header(bytes, dtype, shape).empty()) return 0;
  const ruccl::P2PHeaderBytes again = ruccl::encode_p2p_header(dtype, shape);
  FUZZ_CHECK(std::equal(again.begin(), again.end(), data));
  std::int64_t count = 1;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    FUZZ_CHECK(shape[d] >= 0 && !ruccl::mul_overflows(count, shape[d], count));
  }
  std::int64_t nbytes = 0;
  FUZZ_CHECK(!ruccl::byte_size_overflows(count, ruccl::dtype_size(dtype), nbytes));
  return 0;
}
