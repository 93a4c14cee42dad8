// libFuzzer target for peer authentication's message (collective/net/peer_auth_codec.h): the
// first bytes anyone who connects to a store or a rank of a job with a secret sends. Any bytes go
// to the decoder; it must never crash, and what decodes must re-encode to exactly the same bytes
// (the encoding is canonical).
//
//   clang++-14 -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined -I. (one command line:)
//     fuzz/peer_auth_fuzzer.cpp collective/net/peer_auth_codec.cpp -o peer_auth_fuzzer
//   ./peer_auth_fuzzer -max_total_time=30 fuzz/corpus/peer_auth
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>

#include "collective/net/peer_auth_codec.h"
#include "fuzz/fuzz_check.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace ruccl::net;
  AuthMessage message;
  if (decode_auth_message(std::span<const std::uint8_t>(data, size), message).empty()) {
    FUZZ_CHECK(size == kAuthMessageBytes);
    FUZZ_CHECK(message.from_rank >= -1 && message.to_rank >= -1);
    const auto again = encode_auth_message(message);
    FUZZ_CHECK(std::equal(again.begin(), again.end(), data));
  }
  // A prefix of a whole message, as a stream delivers it piece by piece, never decodes.
  if (size > 0) {
    FUZZ_CHECK(
        size - 1 == kAuthMessageBytes ||
        !decode_auth_message(std::span<const std::uint8_t>(data, size - 1), message).empty());
  }
  return 0;
}
