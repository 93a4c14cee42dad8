// The in-process transport's buffer-lifetime contract: a receiver reads the sender's memory in
// bounded pieces; when the group fails, a reader stops at the next piece and the sender's
// withdraw_sends() returns only once no reader touches its buffer, on every path.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "collective/transport/in_process/in_process_transport.h"

using namespace ruccl;
using namespace std::chrono_literals;

namespace {

struct Pair {
  std::shared_ptr<InProcessHub> hub = std::make_shared<InProcessHub>(2);
  InProcessTransport rank0{hub, 0};
  InProcessTransport rank1{hub, 1};
};

Deadline soon() { return Deadline::after(10s, "test"); }

CollectiveError aborted(const char* why) {
  return CollectiveError(CollectiveErrorKind::Aborted, why);
}

}  // namespace

TEST_CASE("A failing sender's withdraw waits for the reader inside its buffer", "[collective]") {
  Pair pair;
  constexpr std::size_t kBytes = std::size_t{4} << 20;  // 16 pieces
  std::vector<unsigned char> buffer(kBytes, 0xAB);
  std::atomic<bool> reader_done{false};
  bool withdraw_after_reader = false;
  bool sender_threw = false;
  std::thread sender([&] {
    pair.rank0.isend(1, 5, buffer.data(), kBytes, soon());
    try {
      pair.rank0.wait_send(1, soon());
    } catch (const CollectiveError&) {
      sender_threw = true;
      pair.rank0.withdraw_sends();
      withdraw_after_reader = reader_done.load();
      std::memset(buffer.data(), 0, kBytes);  // what freeing and reusing the buffer would do
    }
  });
  int pieces = 0;
  bool piece_intact = true;
  bool receiver_threw = false;
  try {
    pair.rank1.recv_with(
        0, 5, kBytes,
        [&](std::size_t offset, const void* data, std::size_t n) {
          ++pieces;
          REQUIRE(offset == 0);  // the group fails during the first piece: no second one
          pair.rank1.fail(aborted("failed while rank 1 reads"));
          std::this_thread::sleep_for(50ms);  // a long piece: the sender must wait for it
          const auto* bytes = static_cast<const unsigned char*>(data);
          for (std::size_t i = 0; i < n; i += 4096) piece_intact = piece_intact && bytes[i] == 0xAB;
          reader_done = true;
        },
        soon());
  } catch (const CollectiveError& e) {
    receiver_threw = e.kind() == CollectiveErrorKind::Aborted;
  }
  sender.join();
  REQUIRE(pieces == 1);
  REQUIRE(receiver_threw);
  REQUIRE(sender_threw);
  REQUIRE(piece_intact);
  REQUIRE(withdraw_after_reader);
}

TEST_CASE("A withdrawn message is never read", "[collective]") {
  Pair pair;
  std::vector<unsigned char> buffer(1000, 1);
  pair.rank0.isend(1, 9, buffer.data(), buffer.size(), soon());
  pair.rank0.fail(aborted("sender failed"));
  pair.rank0.withdraw_sends();  // returns at once: nobody reads
  bool consumed = false;
  REQUIRE_THROWS_AS(pair.rank1.recv_with(
                        0, 9, buffer.size(),
                        [&](std::size_t, const void*, std::size_t) { consumed = true; }, soon()),
                    CollectiveError);
  REQUIRE_FALSE(consumed);
}

TEST_CASE("Messages arrive in element-aligned pieces of bounded size", "[collective]") {
  Pair pair;
  std::vector<unsigned char> a(kPieceBytes * 2 + 100);
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<unsigned char>(i * 7);
  std::vector<unsigned char> got(a.size(), 0);
  std::vector<std::pair<std::size_t, std::size_t>> pieces;
  std::thread sender([&] {
    pair.rank0.isend(1, 3, a.data(), a.size(), soon());
    pair.rank0.wait_send(1, soon());
  });
  pair.rank1.recv_with(
      0, 3, a.size(),
      [&](std::size_t offset, const void* data, std::size_t n) {
        pieces.emplace_back(offset, n);
        std::memcpy(got.data() + offset, data, n);
      },
      soon());
  sender.join();
  REQUIRE(got == a);
  REQUIRE(pieces.size() == 3);
  std::size_t next = 0;
  for (std::size_t i = 0; i < pieces.size(); ++i) {
    REQUIRE(pieces[i].first == next);
    REQUIRE(pieces[i].second <= kPieceBytes);
    if (i + 1 < pieces.size()) REQUIRE(pieces[i].second % kPieceAlign == 0);
    next += pieces[i].second;
  }
  REQUIRE(next == a.size());

  // An empty message is one empty piece.
  std::thread empty_sender([&] {
    pair.rank0.isend(1, 4, nullptr, 0, soon());
    pair.rank0.wait_send(1, soon());
  });
  int empty_pieces = 0;
  pair.rank1.recv_with(
      0, 4, 0, [&](std::size_t, const void*, std::size_t n) { empty_pieces += n == 0 ? 1 : 100; },
      soon());
  empty_sender.join();
  REQUIRE(empty_pieces == 1);
}

TEST_CASE("recv_all_with hands messages of different sizes over in lockstep pieces",
          "[collective]") {
  auto hub = std::make_shared<InProcessHub>(3);
  InProcessTransport t0(hub, 0), t1(hub, 1), t2(hub, 2);
  const std::vector<std::size_t> sizes = {kPieceBytes + 8, 3 * kPieceAlign + 5};
  std::vector<std::vector<unsigned char>> messages;
  for (std::size_t m = 0; m < 2; ++m) {
    messages.emplace_back(sizes[m]);
    for (std::size_t i = 0; i < sizes[m]; ++i) {
      messages[m][i] = static_cast<unsigned char>(i * 13 + m);
    }
  }
  auto send = [&](InProcessTransport& t, std::size_t m) {
    t.isend(0, 2, messages[m].data(), sizes[m], soon());
    t.wait_send(0, soon());
  };
  std::thread s1([&] { send(t1, 0); });
  std::thread s2([&] { send(t2, 1); });
  std::vector<std::vector<unsigned char>> got = {std::vector<unsigned char>(sizes[0]),
                                                 std::vector<unsigned char>(sizes[1])};
  const int peers[2] = {1, 2};
  int calls = 0;
  t0.recv_all_with(
      peers, 2, sizes,
      [&](std::size_t offset, std::span<const void* const> data, std::size_t n) {
        ++calls;
        for (std::size_t m = 0; m < 2; ++m) {
          std::memcpy(got[m].data() + std::min(offset, sizes[m]), data[m],
                      piece_bytes(sizes[m], offset, n));
        }
      },
      soon());
  s1.join();
  s2.join();
  REQUIRE(calls == 2);  // the longer message needs two pieces
  REQUIRE(got[0] == messages[0]);
  REQUIRE(got[1] == messages[1]);
}

TEST_CASE("piece_bytes clips a shorter message to its own bytes", "[collective]") {
  REQUIRE(piece_bytes(100, 0, 64) == 64);
  REQUIRE(piece_bytes(100, 64, 64) == 36);
  REQUIRE(piece_bytes(100, 128, 64) == 0);
  REQUIRE(piece_bytes(0, 0, 0) == 0);
}
