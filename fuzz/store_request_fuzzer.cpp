// libFuzzer target for the TCP store's wire protocol (collective/store/store_protocol.h): any
// bytes go to the request decoders and the reply decoder. They must never crash, never read out
// of bounds and never allocate from an unchecked length; what decodes must re-encode to exactly
// the same bytes (the encoding is canonical), or the fuzzer stops here.
//
//   clang++-14 -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -I. (one command line:)
//     fuzz/store_request_fuzzer.cpp collective/store/store_protocol.cpp -o store_request_fuzzer
//   ./store_request_fuzzer -max_total_time=30 fuzz/corpus/store_request
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "collective/store/store_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ruccl;
  const std::span<const std::uint8_t> bytes(data, size);

  StoreRequestHeader header;
  if (decode_store_request_header(bytes, header).empty() &&
      header.body_bytes() > 2 * kMaxStoreValueBytes + kMaxStoreKeyBytes)
    std::abort();  // a checked header never announces more than the caps allow

  StoreRequest request;
  if (decode_store_request(bytes, request).empty()) {
    std::vector<std::uint8_t> again;
    encode_store_request(request, again);
    if (again.size() != size || !std::equal(again.begin(), again.end(), data)) std::abort();
  }

  StoreReply reply;
  if (decode_store_reply(bytes, reply).empty()) {
    std::vector<std::uint8_t> again;
    encode_store_reply(reply, again);
    if (again.size() != size || !std::equal(again.begin(), again.end(), data)) std::abort();
  }

  std::vector<std::string> keys;
  (void)decode_store_key_list(bytes, keys);
  return 0;
}
