// TcpLink over a socketpair with a small send buffer: batched writes (several frames in one
// sendmsg) that the socket takes only in part, and reads through the read-ahead buffer, across
// every boundary that matters (empty payloads, one byte, a header's length, the read-ahead size
// and its half, several frames of one message), arrive intact and in order. Over a loopback TCP
// connection with a raw sender: the SO_RCVLOWAT mark of arm_wakeup holds a sleeper until the
// bytes its next step needs have come, and a closed connection still wakes it at once.
#include <poll.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <numeric>
#include <vector>

#include "collective/common/crc32c.h"
#include "collective/net/socket.h"
#include "collective/transport/tcp/tcp_link.h"
#include "collective/transport/transport.h"

using namespace ruccl;

namespace {

struct Pair {
  TcpLink a;
  TcpLink b;
};

Pair make_pair(int send_buffer_bytes, bool a_checks = true, bool b_checks = true) {
  int fds[2];
  REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
  REQUIRE(::setsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &send_buffer_bytes, sizeof(int)) == 0);
  SessionId session{};
  session[0] = 7;
  return Pair{TcpLink(net::Socket(fds[0]), session, 1, "rank 1", a_checks),
              TcpLink(net::Socket(fds[1]), session, 0, "rank 0", b_checks)};
}

std::vector<std::uint8_t> pattern(std::size_t n, std::uint8_t seed) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(seed + i * 31);
  return v;
}

// Reads one whole message (frames of at most kPieceBytes) of `type` from `link`, flushing
// `sender` while the receiver waits (one thread plays both sides).
std::vector<std::uint8_t> read_message(TcpLink& link, TcpLink& sender, FrameType type,
                                       std::uint64_t tag, std::size_t nbytes) {
  std::vector<std::uint8_t> out(nbytes);
  std::size_t got = 0;
  do {
    LinkStep step;
    while ((step = link.read_header()) == LinkStep::Pending)
      REQUIRE(sender.flush() != LinkStep::Closed);
    REQUIRE(step == LinkStep::Done);
    const FrameHeader& h = link.incoming().header;
    REQUIRE(h.type == type);
    REQUIRE(h.tag == tag);
    if (type == FrameType::Data) REQUIRE(h.message_bytes == nbytes);
    const std::size_t frame = h.payload_bytes;
    REQUIRE(got + frame <= nbytes);
    while ((step = link.read_payload(out.data() + got)) == LinkStep::Pending) {
      REQUIRE(sender.flush() != LinkStep::Closed);
    }
    REQUIRE(step == LinkStep::Done);
    got += frame;
  } while (got < nbytes);
  return out;
}

}  // namespace

TEST_CASE("tcp link batches queued frames and reassembles every size across partial writes",
          "[collective][tcp]") {
  const std::vector<std::size_t> sizes = {0,
                                          1,
                                          63,
                                          64,
                                          65,
                                          4096,
                                          8191,
                                          8192,
                                          8193,
                                          16384,
                                          16448,
                                          40000,
                                          1,
                                          kPieceBytes,
                                          kPieceBytes + 1,
                                          3 * kPieceBytes - 5};
  for (const int buffer : {4096, 1 << 20}) {
    Pair pair = make_pair(buffer);
    std::vector<std::vector<std::uint8_t>> data;
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      data.push_back(pattern(sizes[i], static_cast<std::uint8_t>(i)));
    }
    // Interleave owned records and borrowed data, all queued before anything is read.
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      pair.a.queue_owned(FrameType::Record, 1000 + i, pattern(i % 3 == 0 ? 0 : 100 + i, 9));
      pair.a.queue_data(i, data[i].data(), data[i].size());
    }
    REQUIRE(pair.a.flush() != LinkStep::Closed);
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      INFO("send buffer " << buffer << ", message " << i << " of " << sizes[i] << " bytes");
      const std::size_t record = i % 3 == 0 ? 0 : 100 + i;
      CHECK(read_message(pair.b, pair.a, FrameType::Record, 1000 + i, record) ==
            pattern(record, 9));
      CHECK(read_message(pair.b, pair.a, FrameType::Data, i, sizes[i]) == data[i]);
    }
    while (pair.a.flush() == LinkStep::Pending) {
    }
    CHECK(pair.a.drained());
  }
}

TEST_CASE("tcp link borrows a caller's buffer only while its data is queued", "[collective][tcp]") {
  Pair pair = make_pair(1 << 20);
  pair.a.queue_owned(FrameType::Record, 1, pattern(50, 1));
  CHECK_FALSE(pair.a.borrows());  // the link's own copy
  const std::vector<std::uint8_t> payload = pattern(1000, 2);
  pair.a.queue_data(5, payload.data(), payload.size());
  CHECK(pair.a.borrows());
  REQUIRE(pair.a.flush() == LinkStep::Done);  // both frames fit the socket at once
  CHECK_FALSE(pair.a.borrows());
  CHECK(pair.a.drained());
  CHECK(read_message(pair.b, pair.a, FrameType::Record, 1, 50) == pattern(50, 1));
  CHECK(read_message(pair.b, pair.a, FrameType::Data, 5, 1000) == payload);
}

TEST_CASE("tcp link without payload checksums sends unchecked Data frames, records still checked",
          "[collective][tcp]") {
  Pair pair = make_pair(1 << 20, /*a_checks=*/false, /*b_checks=*/false);
  const std::vector<std::uint8_t> payload = pattern(kPieceBytes + 77, 3);
  pair.a.queue_owned(FrameType::Record, 1, pattern(40, 4));
  pair.a.queue_data(9, payload.data(), payload.size());
  REQUIRE(pair.a.flush() != LinkStep::Closed);
  CHECK(read_message(pair.b, pair.a, FrameType::Record, 1, 40) == pattern(40, 4));
  CHECK_FALSE(pair.b.incoming().header.unchecked_payload);
  CHECK(pair.b.incoming().header.payload_crc != 0);
  CHECK(read_message(pair.b, pair.a, FrameType::Data, 9, payload.size()) == payload);
  CHECK(pair.b.incoming().header.unchecked_payload);
  CHECK(pair.b.incoming().header.payload_crc == 0);
}

TEST_CASE("tcp link that checks payloads refuses a Data frame without a checksum, naming the peer",
          "[collective][tcp]") {
  Pair pair = make_pair(1 << 20, /*a_checks=*/false, /*b_checks=*/true);
  const std::vector<std::uint8_t> payload = pattern(100, 5);
  pair.a.queue_data(2, payload.data(), payload.size());
  REQUIRE(pair.a.flush() == LinkStep::Done);
  try {
    while (pair.b.read_header() == LinkStep::Pending) {
    }
    FAIL("expected a refusal, got a header read that returned");
  } catch (const CollectiveError& e) {
    CHECK(e.kind() == CollectiveErrorKind::PeerLost);
    CHECK(e.ranks() == std::vector<int>{0});
    CHECK_THAT(e.what(), Catch::StartsWith("rank 0 sent a malformed frame: expected a payload "
                                           "CRC-32C (this rank checks payloads on this link"));
  }
}

namespace {

// A receiving TcpLink on one end of a loopback TCP connection, and the other end as a raw
// socket, so that a test writes a frame's bytes exactly where it wants them to stop.
struct RawSender {
  net::Socket raw;
  TcpLink link;
  SessionId session;
};

RawSender make_raw_sender() {
  using namespace std::chrono_literals;
  net::Socket listener = net::listen_tcp("127.0.0.1", 0);
  net::Socket raw = net::connect_tcp(net::local_endpoint(listener), Deadline::after(5s));
  net::Socket server = net::accept_tcp(listener, Deadline::after(5s));
  SessionId session{};
  session[0] = 9;
  return RawSender{std::move(raw), TcpLink(std::move(server), session, 1, "rank 1"), session};
}

// The 64 header bytes of Data frame `seq` carrying `payload` whole (one-frame message).
std::vector<std::uint8_t> data_header(const SessionId& session, std::uint64_t seq,
                                      const std::vector<std::uint8_t>& payload) {
  FrameHeader h;
  h.type = FrameType::Data;
  h.payload_bytes = static_cast<std::uint32_t>(payload.size());
  h.session = session;
  h.seq = seq;
  h.tag = 3;
  h.message_bytes = payload.size();
  h.payload_crc = crc32c(payload.data(), payload.size());
  std::vector<std::uint8_t> out(kFrameHeaderBytes);
  encode_frame_header(h, std::span<std::uint8_t, kFrameHeaderBytes>(out.data(), kFrameHeaderBytes));
  return out;
}

void write_bytes(const net::Socket& s, const std::uint8_t* data, std::size_t n) {
  using namespace std::chrono_literals;
  net::write_all(s, data, n, Deadline::after(5s));
}

// Whether the kernel reports `link` readable within `ms` (poll(), as the transport sleeps).
bool readable_within(const TcpLink& link, int ms) {
  pollfd p{link.fd(), POLLIN, 0};
  return ::poll(&p, 1, ms) == 1;
}

// Reads the current frame's payload into `dst` until at least `n` bytes of it have come (the
// frame stays incomplete: every read is Pending), waiting as the transport does.
void read_payload_until(TcpLink& link, std::uint8_t* dst, std::size_t n) {
  while (link.incoming().payload_got < n) {
    REQUIRE(link.read_payload(dst) == LinkStep::Pending);
    if (link.incoming().payload_got < n) REQUIRE(readable_within(link, 5000));
  }
}

}  // namespace

TEST_CASE("tcp link armed mid-frame is woken when the frame is complete, not per packet",
          "[collective][tcp]") {
  RawSender s = make_raw_sender();
  const std::vector<std::uint8_t> payload = pattern(kPieceBytes, 5);  // the largest frame
  const std::vector<std::uint8_t> header = data_header(s.session, 2, payload);
  std::vector<std::uint8_t> got(payload.size());

  // Nothing has come: armed, the link sleeps through half a header.
  s.link.arm_wakeup();
  write_bytes(s.raw, header.data(), kFrameHeaderBytes / 2);
  CHECK_FALSE(readable_within(s.link, 50));
  write_bytes(s.raw, header.data() + kFrameHeaderBytes / 2, kFrameHeaderBytes / 2);
  REQUIRE(readable_within(s.link, 5000));
  REQUIRE(s.link.read_header() == LinkStep::Done);

  // A third of the payload: the step reads it and needs the rest; armed, the link sleeps
  // through another third and wakes once the last byte has come.
  const std::size_t third = payload.size() / 3;
  write_bytes(s.raw, payload.data(), third);
  read_payload_until(s.link, got.data(), third);
  s.link.arm_wakeup();
  write_bytes(s.raw, payload.data() + third, third);
  CHECK_FALSE(readable_within(s.link, 50));
  write_bytes(s.raw, payload.data() + 2 * third, payload.size() - 2 * third);
  REQUIRE(readable_within(s.link, 5000));
  REQUIRE(s.link.read_payload(got.data()) == LinkStep::Done);
  CHECK(got == payload);
}

TEST_CASE("tcp link armed mid-frame is woken at once when the peer closes", "[collective][tcp]") {
  RawSender s = make_raw_sender();
  const std::vector<std::uint8_t> payload = pattern(100000, 8);
  const std::vector<std::uint8_t> header = data_header(s.session, 2, payload);
  std::vector<std::uint8_t> got(payload.size());
  write_bytes(s.raw, header.data(), header.size());
  write_bytes(s.raw, payload.data(), 1000);
  REQUIRE(readable_within(s.link, 5000));
  REQUIRE(s.link.read_header() == LinkStep::Done);
  read_payload_until(s.link, got.data(), 1000);
  s.link.arm_wakeup();  // 99000 bytes to go: a truncated frame the peer never finishes
  CHECK_FALSE(readable_within(s.link, 50));
  s.raw.close();
  CHECK(readable_within(s.link, 1000));
  CHECK(s.link.read_payload(got.data()) == LinkStep::Closed);
}
