// A raw-socket client plays rank 1 of a two-rank TCP group and sends rank 0 what a broken or
// hostile peer might: garbage, a wrong version or session, lengths over the cap, CRC
// mismatches, frames out of order, a truncated frame. Every one closes the connection and fails
// rank 0's pending collective with PeerLost naming rank 1 and the reason; nothing crashes,
// nothing waits for the deadline. A Hello of another session is closed without a reply.
#include <catch2/catch.hpp>

#include <future>
#include <thread>

#include "collective/collective.h"
#include "collective/common/crc32c.h"
#include "collective/store/in_memory_store.h"
#include "collective/transport/process/process_transport.h"
#include "collective/transport/tcp/tcp_frame_payloads.h"

namespace ruccl {
namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes frame(FrameType type, const SessionId& session, std::uint64_t seq, const Bytes& payload,
            std::uint64_t tag = 0, std::uint64_t message_bytes = 0) {
  FrameHeader h{};
  h.type = type;
  h.payload_bytes = static_cast<std::uint32_t>(payload.size());
  h.session = session;
  h.seq = seq;
  h.tag = tag;
  h.message_bytes = message_bytes;
  h.payload_crc = crc32c(payload.data(), payload.size());
  Bytes out(kFrameHeaderBytes);
  encode_frame_header(h, std::span<std::uint8_t, kFrameHeaderBytes>(out.data(), kFrameHeaderBytes));
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

Bytes hello(const SessionId& session, int rank, TcpChannel channel) {
  HelloPayload p{};
  p.rank = rank;
  p.world_size = 2;
  p.channel = channel;
  p.session = session;
  Bytes payload;
  encode_hello_payload(p, payload);
  return frame(FrameType::Hello, session, 1, payload);
}

/// Rank 0 (a real TcpTransport in a thread) and a fake rank 1 whose sockets the test drives.
struct FakePeer {
  std::shared_ptr<InMemoryStore> store = std::make_shared<InMemoryStore>();
  SessionId session = random_session_id();
  std::future<std::unique_ptr<TcpTransport>> rank0;
  net::Socket control, data;
  net::Endpoint endpoint;

  FakePeer() {
    TcpTransportOptions options;
    options.listen_host = "127.0.0.1";
    options.connect_timeout = std::chrono::seconds(10);
    rank0 = std::async(std::launch::async, [this, options] {
      return TcpTransport::connect(*store, 0, 2, session, options);
    });
    endpoint = net::parse_endpoint(
        store->get_string("ruccl/tcp/addr/0", Deadline::after(std::chrono::seconds(10))));
    store->set("ruccl/tcp/host/1", "");  // the fake rank shares memory with nobody
  }
  net::Socket dial(TcpChannel channel, const SessionId& as) {
    const Deadline deadline = Deadline::after(std::chrono::seconds(5));
    net::Socket s = net::connect_tcp(endpoint, deadline);
    const Bytes h = hello(as, 1, channel);
    net::write_all(s, h.data(), h.size(), deadline);
    return s;
  }
  void read_hello_reply(const net::Socket& s) {
    Bytes reply(kFrameHeaderBytes + kHelloPayloadBytes);
    net::read_exact(s, reply.data(), reply.size(), Deadline::after(std::chrono::seconds(5)));
  }
  /// Completes the handshake; returns rank 0's communicator.
  Communicator connect() {
    control = dial(TcpChannel::Control, session);
    read_hello_reply(control);
    data = dial(TcpChannel::Data, session);
    read_hello_reply(data);
    CommunicatorOptions options;
    options.timeout = std::chrono::seconds(20);
    return Communicator(rank0.get(), Device::cpu(), options);
  }
};

/// Sends `bytes` on rank 1's data connection while rank 0 is in an all_reduce; returns rank 0's
/// error (and how long it took).
CollectiveError garbage_on_data(const std::function<Bytes(const SessionId&)>& make,
                                bool close_after = false) {
  FakePeer peer;
  Communicator comm = peer.connect();
  auto call = std::async(std::launch::async, [&] {
    try {
      comm.all_reduce(Tensor::ones(Shape{4}, DType::F32));
    } catch (const CollectiveError& e) {
      return e;
    }
    return CollectiveError(CollectiveErrorKind::Unsupported, "no error");
  });
  const Bytes bytes = make(peer.session);
  net::write_all(peer.data, bytes.data(), bytes.size(), Deadline::after(std::chrono::seconds(5)));
  if (close_after) peer.data.close();
  REQUIRE(call.wait_for(std::chrono::seconds(5)) == std::future_status::ready);
  return call.get();
}

void check_refused(const CollectiveError& e, const std::string& reason) {
  INFO(e.what());
  CHECK(e.kind() == CollectiveErrorKind::PeerLost);
  CHECK(e.ranks() == std::vector<int>{1});
  CHECK_THAT(e.what(), Catch::Contains("rank 1"));
  CHECK_THAT(e.what(), Catch::Contains(reason, Catch::CaseSensitive::No));
}

TEST_CASE("tcp garbage instead of a frame is refused naming the peer", "[collective][tcp]") {
  check_refused(garbage_on_data([](const SessionId&) { return Bytes(64, 0xAB); }), "magic");
}

TEST_CASE("tcp frame of another version is refused", "[collective][tcp]") {
  check_refused(garbage_on_data([](const SessionId& s) {
                  Bytes f = frame(FrameType::Heartbeat, s, 2, {});
                  f[4] = 9;  // version
                  return f;
                }),
                "version");
}

TEST_CASE("tcp frame with a corrupted header fails its CRC", "[collective][tcp]") {
  check_refused(garbage_on_data([](const SessionId& s) {
                  Bytes f = frame(FrameType::Record, s, 2, Bytes(40, 1), 1);
                  f[41] ^= 0x10;  // a bit of the tag
                  return f;
                }),
                "crc");
}

TEST_CASE("tcp frame of another session is refused", "[collective][tcp]") {
  check_refused(garbage_on_data([](const SessionId& s) {
                  SessionId other = s;
                  other[0] ^= 1;
                  return frame(FrameType::Record, other, 2, Bytes(40, 1), 1);
                }),
                "session");
}

TEST_CASE("tcp frame length over the cap is refused before anything is allocated",
          "[collective][tcp]") {
  check_refused(garbage_on_data([](const SessionId& s) {
                  // A valid header, then its payload length patched and its CRC redone
                  // (the encoder refuses to write such a header itself).
                  Bytes f = frame(FrameType::Data, s, 2, {}, 0, 16);
                  for (int i = 12; i < 16; ++i) f[static_cast<std::size_t>(i)] = 0xFF;
                  const std::uint32_t crc = crc32c(f.data(), 60);
                  for (int i = 0; i < 4; ++i)
                    f[60 + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(crc >> (8 * i));
                  return f;
                }),
                "cap");
}

TEST_CASE("tcp payload that fails its CRC is never consumed", "[collective][tcp]") {
  check_refused(garbage_on_data([](const SessionId& s) {
                  Bytes f = frame(FrameType::Record, s, 2, Bytes(40, 1), 1);
                  f.back() ^= 0x01;  // the payload, after its CRC was computed
                  return f;
                }),
                "crc");
}

TEST_CASE("tcp frame out of sequence is refused", "[collective][tcp]") {
  check_refused(garbage_on_data([](const SessionId& s) {
                  return frame(FrameType::Record, s, 5, Bytes(40, 1), 1);
                }),
                "order");
}

TEST_CASE("tcp record that does not decode is refused", "[collective][tcp]") {
  check_refused(garbage_on_data([](const SessionId& s) {
                  return frame(FrameType::Record, s, 2, Bytes(40, 0xEE), 1);
                }),
                "record");
}

TEST_CASE("tcp truncated frame then close is a lost peer", "[collective][tcp]") {
  const CollectiveError e = garbage_on_data(
      [](const SessionId& s) {
        Bytes f = frame(FrameType::Record, s, 2, Bytes(40, 1), 1);
        f.resize(30);
        return f;
      },
      true);
  INFO(e.what());
  CHECK(e.kind() == CollectiveErrorKind::PeerLost);
  CHECK_THAT(e.what(), Catch::Contains("rank 1"));
}

TEST_CASE("tcp hello of another session is closed without a reply and rank 0 keeps accepting",
          "[collective][tcp]") {
  FakePeer peer;
  SessionId other = peer.session;
  other[15] ^= 0x80;
  net::Socket stranger = peer.dial(TcpChannel::Control, other);
  std::uint8_t byte = 0;
  try {
    net::read_exact(stranger, &byte, 1, Deadline::after(std::chrono::seconds(5)));
    FAIL("the stranger got a reply");
  } catch (const CollectiveError& e) {
    CHECK(e.kind() == CollectiveErrorKind::PeerLost);  // EOF: closed, nothing learnt
  }
  Communicator comm = peer.connect();  // the real rank 1 still gets in
  CHECK(comm.world_size() == 2);
}

}  // namespace
}  // namespace ruccl
