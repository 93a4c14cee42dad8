// FrameMac (AES-128-GMAC of a frame under RUCCL_INTEGRITY=mac) and the per-connection frame keys
// (net::frame_keys): a tag depends on the key, the sequence number and every byte, pieces give
// the tag of the whole, and each direction and connection has keys of its own.
#include <catch2/catch.hpp>

#include <numeric>
#include <vector>

#include "collective/net/peer_auth.h"
#include "collective/transport/tcp/frame_mac.h"

namespace ruccl {
namespace {

FrameTag tag_of(const FrameKey& key, std::uint64_t seq, const std::vector<std::uint8_t>& bytes,
                std::size_t piece) {
  FrameMac mac(key);
  mac.begin(seq);
  for (std::size_t at = 0; at < bytes.size(); at += piece) {
    mac.update(bytes.data() + at, std::min(piece, bytes.size() - at));
  }
  return mac.finish();
}

TEST_CASE("a frame MAC depends on the key, the seq and every byte, whatever the pieces",
          "[collective][tcp][security]") {
  FrameKey key{};
  std::iota(key.begin(), key.end(), std::uint8_t{1});
  std::vector<std::uint8_t> bytes(1000);
  std::iota(bytes.begin(), bytes.end(), std::uint8_t{7});
  const FrameTag whole = tag_of(key, 5, bytes, bytes.size());
  for (const std::size_t piece : {std::size_t{1}, std::size_t{13}, std::size_t{64}}) {
    CHECK(frame_tags_equal(tag_of(key, 5, bytes, piece), whole));
  }
  CHECK_FALSE(frame_tags_equal(tag_of(key, 6, bytes, 64), whole));  // another seq
  FrameKey other = key;
  other[15] ^= 1;
  CHECK_FALSE(frame_tags_equal(tag_of(other, 5, bytes, 64), whole));
  for (const std::size_t at : {std::size_t{0}, std::size_t{500}, std::size_t{999}}) {
    std::vector<std::uint8_t> changed = bytes;
    changed[at] ^= 0x01;
    CHECK_FALSE(frame_tags_equal(tag_of(key, 5, changed, 64), whole));
  }
  bytes.pop_back();  // a shorter frame
  CHECK_FALSE(frame_tags_equal(tag_of(key, 5, bytes, 64), whole));
  // One context, many frames: begin() starts afresh.
  FrameMac mac(key);
  mac.begin(9);
  mac.update(bytes.data(), 10);
  mac.begin(5);
  bytes.push_back(static_cast<std::uint8_t>(7 + 999));
  mac.update(bytes.data(), bytes.size());
  CHECK(frame_tags_equal(mac.finish(), whole));
}

TEST_CASE("frame keys differ per direction and per connection, and both ends agree",
          "[collective][tcp][security]") {
  const JobSecret secret = random_job_secret();
  const net::AuthBinding binding{net::AuthPurpose::MeshData, 1, 0, random_session_id()};
  const net::AuthNonces nonces{net::auth_nonce(), net::auth_nonce()};
  const net::FrameKeys keys = net::frame_keys(secret, binding, nonces);
  CHECK(keys.dialer_to_acceptor != keys.acceptor_to_dialer);
  CHECK(net::frame_keys(secret, binding, nonces).dialer_to_acceptor == keys.dialer_to_acceptor);
  net::AuthNonces fresh = nonces;
  fresh.acceptor = net::auth_nonce();
  CHECK(net::frame_keys(secret, binding, fresh).dialer_to_acceptor != keys.dialer_to_acceptor);
  net::AuthBinding control = binding;
  control.purpose = net::AuthPurpose::MeshControl;
  CHECK(net::frame_keys(secret, control, nonces).dialer_to_acceptor != keys.dialer_to_acceptor);
  CHECK(net::frame_keys(random_job_secret(), binding, nonces).dialer_to_acceptor !=
        keys.dialer_to_acceptor);
}

}  // namespace
}  // namespace ruccl
