// recv_into / recv_all_into and recv_all_by_copy (the recv_all_with of a copying transport), over
// the in-process transport: the bytes land where they should, in the pieces recv_all_with
// promises, and a failure on either side ends both sides without a hang.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "collective/transport/in_process/in_process_transport.h"
#include "collective/transport/receive_by_copy.h"

using namespace ruccl;
using namespace std::chrono_literals;

namespace {

Deadline soon() { return Deadline::after(10s, "test"); }

std::vector<unsigned char> pattern(std::size_t n, unsigned seed) {
  std::vector<unsigned char> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<unsigned char>(i * 13 + seed);
  return v;
}

struct Trio {
  std::shared_ptr<InProcessHub> hub = std::make_shared<InProcessHub>(3);
  InProcessTransport t0{hub, 0}, t1{hub, 1}, t2{hub, 2};
};

}  // namespace

TEST_CASE("recv_into and recv_all_into land every message in the caller's buffer", "[collective]") {
  Trio trio;
  const std::vector<unsigned char> a = pattern(kPieceBytes * 2 + 3, 1);
  const std::vector<unsigned char> b = pattern(5, 2);
  std::thread s1([&] {
    trio.t1.isend(0, 7, a.data(), a.size(), soon());
    trio.t1.isend(0, 8, a.data(), a.size(), soon());  // waits until the first may be reused
    trio.t1.wait_send(0, soon());
  });
  std::thread s2([&] {
    trio.t2.isend(0, 8, b.data(), b.size(), soon());
    trio.t2.wait_send(0, soon());
  });
  std::vector<unsigned char> got_a(a.size()), again_a(a.size()), got_b(b.size());
  trio.t0.recv_into(1, 7, got_a.data(), a.size(), soon());
  const int peers[2] = {1, 2};
  void* dsts[2] = {again_a.data(), got_b.data()};
  const std::size_t sizes[2] = {a.size(), b.size()};
  trio.t0.recv_all_into(peers, 8, dsts, sizes, soon());
  s1.join();
  s2.join();
  REQUIRE(got_a == a);
  REQUIRE(again_a == a);
  REQUIRE(got_b == b);
}

TEST_CASE("recv_into of a message with another size is a protocol error on both sides",
          "[collective]") {
  Trio trio;
  const std::vector<unsigned char> a = pattern(100, 3);
  std::optional<CollectiveErrorKind> sender_kind;
  std::thread s1([&] {
    trio.t1.isend(0, 1, a.data(), a.size(), soon());
    try {
      trio.t1.wait_send(0, soon());
    } catch (const CollectiveError& e) {
      sender_kind = e.kind();
    }
  });
  std::vector<unsigned char> got(64);
  std::optional<CollectiveErrorKind> receiver_kind;
  std::string message;
  try {
    trio.t0.recv_into(1, 1, got.data(), got.size(), soon());
  } catch (const CollectiveError& e) {
    receiver_kind = e.kind();
    message = e.what();
  }
  s1.join();
  INFO(message);
  REQUIRE(receiver_kind == CollectiveErrorKind::CollectiveKindMismatch);
  REQUIRE(message.find("(64 bytes)") != std::string::npos);
  REQUIRE(message.find("(100 bytes)") != std::string::npos);
  REQUIRE(sender_kind == CollectiveErrorKind::CollectiveKindMismatch);
}

TEST_CASE("recv_all_by_copy hands over messages in lockstep pieces from a reused staging buffer",
          "[collective]") {
  Trio trio;
  const std::vector<std::size_t> sizes = {kPieceBytes + 8, 3 * kPieceAlign + 5};
  const std::vector<std::vector<unsigned char>> messages = {pattern(sizes[0], 4),
                                                            pattern(sizes[1], 5)};
  std::vector<unsigned char> staging;
  const int peers[2] = {1, 2};
  const unsigned char* first_staging = nullptr;
  for (int round = 0; round < 2; ++round) {
    INFO("round " << round);
    auto send = [&](InProcessTransport& t, std::size_t m) {
      t.isend(0, 2, messages[m].data(), sizes[m], soon());
      t.wait_send(0, soon());
    };
    std::thread s1([&] { send(trio.t1, 0); });
    std::thread s2([&] { send(trio.t2, 1); });
    std::vector<std::vector<unsigned char>> got = {std::vector<unsigned char>(sizes[0]),
                                                   std::vector<unsigned char>(sizes[1])};
    std::vector<std::pair<std::size_t, std::size_t>> pieces;
    bool aligned = true;
    recv_all_by_copy(
        trio.t0, peers, 2, sizes,
        [&](std::size_t offset, std::span<const void* const> data, std::size_t n) {
          pieces.emplace_back(offset, n);
          for (std::size_t m = 0; m < 2; ++m) {
            const std::size_t k = piece_bytes(sizes[m], offset, n);
            if (k == 0) continue;  // data[m] is the message's end
            aligned = aligned && reinterpret_cast<std::uintptr_t>(data[m]) % 8 == 0;
            std::memcpy(got[m].data() + offset, data[m], k);
          }
        },
        soon(), staging);
    s1.join();
    s2.join();
    REQUIRE(got[0] == messages[0]);
    REQUIRE(got[1] == messages[1]);
    REQUIRE(pieces.size() == 2);  // the longer message needs two pieces
    REQUIRE(pieces[0] == std::pair<std::size_t, std::size_t>{0, kPieceBytes});
    REQUIRE(pieces[1] == std::pair<std::size_t, std::size_t>{kPieceBytes, 8});
    REQUIRE(aligned);
    if (round == 0) first_staging = staging.data();
    REQUIRE(staging.data() == first_staging);  // the second call reuses the buffer
  }

  // Empty messages: one empty piece.
  std::thread s1([&] {
    trio.t1.isend(0, 3, nullptr, 0, soon());
    trio.t1.wait_send(0, soon());
  });
  std::thread s2([&] {
    trio.t2.isend(0, 3, nullptr, 0, soon());
    trio.t2.wait_send(0, soon());
  });
  const std::size_t empty[2] = {0, 0};
  int calls = 0;
  recv_all_by_copy(
      trio.t0, peers, 3, empty,
      [&](std::size_t offset, std::span<const void* const>, std::size_t n) {
        calls += offset == 0 && n == 0 ? 1 : 100;
      },
      soon(), staging);
  s1.join();
  s2.join();
  REQUIRE(calls == 1);
}

TEST_CASE("A consumer of recv_all_by_copy that throws fails the group for every rank",
          "[collective]") {
  Trio trio;
  const std::vector<unsigned char> a = pattern(10, 6);
  std::optional<CollectiveErrorKind> later_kind;
  std::thread s1([&] {
    trio.t1.isend(0, 1, a.data(), a.size(), soon());
    trio.t1.wait_send(0, soon());
    try {  // rank 1's next wait sees the failure instead of its deadline
      trio.t1.recv_into(0, 2, nullptr, 0, soon());
    } catch (const CollectiveError& e) {
      later_kind = e.kind();
    }
  });
  std::thread s2([&] {
    trio.t2.isend(0, 1, a.data(), a.size(), soon());
    trio.t2.wait_send(0, soon());
  });
  std::vector<unsigned char> staging;
  const int peers[2] = {1, 2};
  const std::size_t sizes[2] = {a.size(), a.size()};
  std::string what;
  try {
    recv_all_by_copy(
        trio.t0, peers, 1, sizes,
        [&](std::size_t, std::span<const void* const>, std::size_t) {
          throw std::runtime_error("the consumer broke");
        },
        soon(), staging);
  } catch (const std::runtime_error& e) {
    what = e.what();
  }
  s1.join();
  s2.join();
  REQUIRE(what == "the consumer broke");
  REQUIRE(trio.t0.failed());
  REQUIRE(later_kind == CollectiveErrorKind::Aborted);
  REQUIRE(std::string(trio.t0.failure().what()).find("the consumer broke") != std::string::npos);
}
