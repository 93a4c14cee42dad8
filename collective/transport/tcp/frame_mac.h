#pragma once
// FrameMac: the authentication tag of every TCP frame under RUCCL_INTEGRITY=mac
// (docs/security.md, "Integrity mode"): AES-128-GCM used as a MAC (GMAC: the header and the
// payload are authenticated data, nothing is encrypted) through OpenSSL's libcrypto, keyed per
// connection and direction (net::frame_keys: the job secret and both handshake nonces), its
// 96-bit nonce the frame's sequence number. A receiver checks the header's sequence number in
// order (tcp_frame.h), so a replayed, reordered or dropped frame fails there, and the MAC ties
// every header field and payload byte to the holder of the key.
//
// GMAC runs at several GB/s per core (AES-NI and carry-less multiply), where HMAC-SHA256 runs at
// about 1.7 GB/s: fast enough to compute as the bytes go (the receiver feeds each piece as it
// arrives, so only the last piece of a frame waits for its tag).
//
//   FrameMac mac(key);
//   mac.begin(seq); mac.update(header); mac.update(payload); FrameTag tag = mac.finish();
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace ruccl {

/// The tag that follows a frame's payload when the frame is flagged kFrameFlagMac.
inline constexpr std::size_t kFrameTagBytes = 16;
using FrameTag = std::array<std::uint8_t, kFrameTagBytes>;
using FrameKey = std::array<std::uint8_t, 16>;

class FrameMac {
 public:
  explicit FrameMac(const FrameKey& key);
  ~FrameMac();
  FrameMac(const FrameMac&) = delete;
  FrameMac& operator=(const FrameMac&) = delete;

  /// Starts the tag of the frame numbered `seq` (each seq at most once per key).
  void begin(std::uint64_t seq);
  /// Adds bytes of the frame (header, then payload, in any number of pieces).
  void update(const std::uint8_t* data, std::size_t n);
  /// The tag of everything given since begin.
  FrameTag finish();

 private:
  void* ctx_;  // EVP_CIPHER_CTX, keyed once
};

/// Whether two tags are equal, in time independent of where they differ.
bool frame_tags_equal(const FrameTag& a, const FrameTag& b);

}  // namespace ruccl
