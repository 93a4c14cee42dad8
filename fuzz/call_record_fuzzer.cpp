// libFuzzer target: decode_call_record on arbitrary bytes (the agreement record a peer sends in
// every Record frame). Never crashes, never reads past the input, and what it accepts is exactly
// the encoding of what it decoded (no two byte strings mean the same record).
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "collective/protocol/call_record_codec.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::span<const std::uint8_t> bytes(data, size);
  ruccl::CallRecord record;
  if (!ruccl::decode_call_record(bytes, record).empty()) return 0;
  FUZZ_CHECK(size <= ruccl::kMaxEncodedCallRecordBytes);
  std::vector<std::uint8_t> again;
  ruccl::encode_call_record(record, again);
  FUZZ_CHECK(again.size() == size && std::equal(again.begin(), again.end(), data));
  return 0;
}
