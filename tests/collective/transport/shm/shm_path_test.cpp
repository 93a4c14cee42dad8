// The shared-memory paths of the process transport (shm_channel.h, shm_connect.h, shm_path.h): the
// ring itself (pieces, wrap-around, the sleep flags that decide who rings whom), the segment's
// checks, which pairs use it and that both sides of a pair always agree, a fallback to TCP, and
// collectives whose messages are many times the ring (the writer waits for slots). The coverage
// table runs over it too (TcpSharedMemory in group_factories.h); processes: tcp_process_test.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <numeric>
#include <thread>
#include <tuple>

#include "collective/collective.h"
#include "collective/store/in_memory_store.h"
#include "collective/transport/process/process_transport.h"
#include "collective/transport/shm/shm_channel.h"
#include "collective/transport/shm/shm_connect.h"
#include "tests/collective/collective_test_support.h"
#include "tests/collective/transport/shm/dev_shm.h"
#include "tests/collective/transport/tcp/tcp_loopback.h"

namespace ruccl {
namespace {

using testing::make_tcp_loopback_group;
using testing::short_timeout;

std::string unique_name(const char* what) {
  static int n = 0;
  return str("/ruccl-test-", ::getpid(), "-", what, "-", n++);
}

SessionId session_of(std::uint8_t fill) {
  SessionId s{};
  s.fill(fill);
  return s;
}

using testing::dev_shm_has;

TEST_CASE("shm channel carries pieces in order across the ring's end", "[collective][tcp][shm]") {
  const std::string name = unique_name("ring");
  const SessionId session = session_of(7);
  auto low = ShmChannel::create(name, session, 0, 1, 2 * kPieceBytes);  // 2 slots
  auto high = ShmChannel::open(name, session, 1, 0, 2 * kPieceBytes);
  ShmChannel::unlink(name);

  // 5 pieces through 2 slots: the writer stops when the ring is full, the reader frees slots.
  std::vector<std::uint8_t> message(4 * kPieceBytes + 100);
  std::iota(message.begin(), message.end(), std::uint8_t{0});
  low->start_send(42, message.data(), message.size());
  CHECK_FALSE(low->pump());  // nobody sleeps: no wake-up
  CHECK(low->sending());     // 2 of 5 pieces in
  std::vector<std::uint8_t> got;
  while (got.size() < message.size()) {
    const ShmPiece* piece = high->peek();
    REQUIRE(piece != nullptr);
    CHECK(piece->tag == 42);
    CHECK(piece->message_bytes == message.size());
    CHECK(piece->offset == got.size());
    CHECK(piece->nbytes == std::min(kPieceBytes, message.size() - got.size()));
    got.insert(got.end(), piece->data, piece->data + piece->nbytes);
    CHECK_FALSE(high->release());
    low->pump();
  }
  CHECK(got == message);
  CHECK_FALSE(low->sending());
  CHECK(high->peek() == nullptr);

  // The other direction, and an empty message (one empty piece).
  high->start_send(9, nullptr, 0);
  high->pump();
  const ShmPiece* empty = low->peek();
  REQUIRE(empty != nullptr);
  CHECK(empty->nbytes == 0);
  CHECK(empty->message_bytes == 0);
  low->release();
}

TEST_CASE("shm channel puts a call's record where a TCP stream would: before the call's messages",
          "[collective][tcp][shm]") {
  const std::string name = unique_name("records");
  const SessionId session = session_of(6);
  auto low = ShmChannel::create(name, session, 0, 1, 2 * kPieceBytes);  // 2 slots
  auto high = ShmChannel::open(name, session, 1, 0, 2 * kPieceBytes);
  ShmChannel::unlink(name);
  const std::vector<std::uint8_t> record{1, 2, 3, 4, 5};
  std::vector<std::uint8_t> message(kPieceBytes + 8, 7);
  // What the reader sees next: (record?, tag, bytes), each piece freed after it is read.
  auto next = [&] {
    const ShmPiece* piece = high->peek();
    REQUIRE(piece != nullptr);
    const auto seen = std::make_tuple(piece->record, piece->tag, piece->nbytes);
    if (piece->record) {
      CHECK(std::vector<std::uint8_t>(piece->data, piece->data + piece->nbytes) == record);
      CHECK(piece->message_bytes == piece->nbytes);
      CHECK(piece->offset == 0);
    }
    high->release();
    low->pump();
    return seen;
  };
  using Seen = std::tuple<bool, std::uint64_t, std::uint64_t>;

  // Queued before the message: it goes first, and one wake-up covers both (not one between).
  CHECK_FALSE(high->sleep_reading());
  low->queue_record(3, record);
  low->start_send(11, message.data(), message.size());
  CHECK(low->pump());  // the reader sleeps: ring once, after the record and the first piece
  CHECK(low->sending());
  CHECK(low->has_output());
  high->woke();
  CHECK(next() == Seen{true, 3, record.size()});
  CHECK(next() == Seen{false, 11, kPieceBytes});
  CHECK(next() == Seen{false, 11, 8});
  CHECK_FALSE(low->has_output());

  // Queued while a message is being copied (3 pieces through 2 slots): it goes after that
  // message, and still before the next one when that one starts while the record waits for a
  // slot.
  std::vector<std::uint8_t> long_message(2 * kPieceBytes + 8, 5);
  std::vector<std::uint8_t> spare(16, 9);
  low->start_send(12, long_message.data(), long_message.size());
  low->pump();
  CHECK(low->sending());  // 2 of 3 pieces in
  low->queue_record(4, record);
  CHECK(next() == Seen{false, 12, kPieceBytes});
  CHECK_FALSE(low->sending());  // the third piece took the freed slot, not the record
  CHECK(low->record_pending());
  low->start_send(13, spare.data(), spare.size());
  CHECK(next() == Seen{false, 12, kPieceBytes});
  CHECK(next() == Seen{false, 12, 8});
  CHECK(next() == Seen{true, 4, record.size()});
  CHECK(next() == Seen{false, 13, 16});
  CHECK(high->peek() == nullptr);
  CHECK_FALSE(low->has_output());
}

TEST_CASE("shm channel's sleep flags make the other side ring exactly when needed",
          "[collective][tcp][shm]") {
  const std::string name = unique_name("flags");
  const SessionId session = session_of(8);
  auto a = ShmChannel::create(name, session, 0, 1, 2 * kPieceBytes);
  auto b = ShmChannel::open(name, session, 1, 0, 2 * kPieceBytes);
  ShmChannel::unlink(name);
  std::vector<std::uint8_t> piece(kPieceBytes, 1);

  // A reader about to sleep on an empty ring sleeps; the writer's next piece must ring it.
  CHECK_FALSE(b->sleep_reading());
  a->start_send(1, piece.data(), piece.size());
  CHECK(a->pump());
  CHECK(b->sleep_reading());  // something arrived: do not sleep
  b->woke();

  // A writer about to sleep on a full ring: the reader's release must ring it.
  a->start_send(2, piece.data(), piece.size());
  CHECK_FALSE(a->pump());  // slot 2 of 2, the reader is awake
  a->start_send(3, piece.data(), piece.size());
  a->pump();
  CHECK(a->sending());  // full
  CHECK_FALSE(a->sleep_writing());
  REQUIRE(b->peek() != nullptr);
  CHECK(b->release());        // the writer sleeps: ring it
  CHECK(a->sleep_writing());  // a slot is free: do not sleep
  a->woke();
  a->pump();
  CHECK_FALSE(a->sending());
}

TEST_CASE("shm segment of another session, pair or size is refused naming what differs",
          "[collective][tcp][shm]") {
  const std::string name = unique_name("checks");
  auto low = ShmChannel::create(name, session_of(1), 2, 5, 4 * kPieceBytes);
  auto refused = [&](const SessionId& s, int rank, int peer, std::size_t bytes) {
    try {
      ShmChannel::open(name, s, rank, peer, bytes);
    } catch (const CollectiveError& e) {
      CHECK(e.kind() == CollectiveErrorKind::InvalidConfig);
      CHECK_THAT(e.what(), Catch::Contains(name));
      return std::string(e.what());
    }
    FAIL("opened");
    return std::string();
  };
  CHECK_THAT(refused(session_of(2), 5, 2, 4 * kPieceBytes), Catch::Contains("another session"));
  CHECK_THAT(refused(session_of(1), 6, 2, 4 * kPieceBytes),
             Catch::Contains("ranks 2 and 5 (expected 2 and 6)"));
  CHECK_THAT(refused(session_of(1), 5, 2, 2 * kPieceBytes), Catch::Contains("expected"));
  CHECK_NOTHROW(ShmChannel::open(name, session_of(1), 5, 2, 4 * kPieceBytes));
  // A name that exists already is not taken over.
  CHECK_THROWS_AS(ShmChannel::create(name, session_of(1), 2, 5, 4 * kPieceBytes), CollectiveError);
  ShmChannel::unlink(name);
  CHECK_THROWS_WITH(ShmChannel::open(name, session_of(1), 5, 2, 4 * kPieceBytes),
                    Catch::Contains("shm_open failed"));
}

/// A `world`-rank TCP group on loopback with these options, as transports (for their state).
std::vector<std::unique_ptr<TcpTransport>> connect_transports(int world, const SessionId& session,
                                                              TcpTransportOptions options) {
  auto store = std::make_shared<InMemoryStore>();
  options.listen_host = "127.0.0.1";
  options.local_ranks = world;
  std::vector<std::unique_ptr<TcpTransport>> out(static_cast<std::size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      out[static_cast<std::size_t>(r)] = TcpTransport::connect(*store, r, world, session, options);
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

TEST_CASE("tcp ranks of one host share memory unless told not to, and leave nothing in /dev/shm",
          "[collective][tcp][shm]") {
  const SessionId session = random_session_id();
  auto shared = connect_transports(3, session, {});
  for (int r = 0; r < 3; ++r) {
    for (int p = 0; p < 3; ++p) {
      if (p != r) CHECK(shared[static_cast<std::size_t>(r)]->shares_memory_with(p));
    }
  }
  CHECK_FALSE(dev_shm_has(str("ruccl-", shared_memory_group_name(session, {}))));  // unlinked
  CHECK_FALSE(dev_shm_has(session_id_to_hex(session)));  // names never show the session id

  TcpTransportOptions off;
  off.shared_memory = SharedMemory::Off;
  auto tcp = connect_transports(3, random_session_id(), off);
  TcpTransportOptions faulty;  // wire faults are faults of TCP: every message goes over it
  faulty.wire_faults.add(FaultRule::on_message(FaultAction::Delay, -1, 1000000));
  auto wired = connect_transports(2, random_session_id(), faulty);
  for (int r = 0; r < 3; ++r) {
    for (int p = 0; p < 3; ++p) {
      if (p != r) CHECK_FALSE(tcp[static_cast<std::size_t>(r)]->shares_memory_with(p));
    }
  }
  CHECK_FALSE(wired[0]->shares_memory_with(1));
  CHECK_FALSE(wired[1]->shares_memory_with(0));
}

TEST_CASE("tcp rings of one host shrink to the budget, and a host over it uses TCP alone",
          "[collective][tcp][shm]") {
  // 3 ranks: 6 rings. 6 x 2 slots fit exactly; one byte less and no ring fits its 2 slots.
  for (const std::size_t budget : {6 * 2 * kPieceBytes, 6 * 2 * kPieceBytes - 1}) {
    INFO("budget " << budget);
    TcpTransportOptions options;
    options.shared_memory_budget_bytes = budget;
    auto transports = connect_transports(3, random_session_id(), options);
    const bool fits = budget == 6 * 2 * kPieceBytes;
    for (int r = 0; r < 3; ++r) {
      for (int p = 0; p < 3; ++p) {
        if (p != r) CHECK(transports[static_cast<std::size_t>(r)]->shares_memory_with(p) == fits);
      }
    }
    // Either way exact, the shrunken rings (2 slots) many times over.
    std::vector<Communicator> comms;
    for (auto& t : transports) comms.emplace_back(std::move(t), Device::cpu(), short_timeout());
    std::vector<int> ok(3, 0);
    run_ranks(std::move(comms), [&](Communicator& comm) {
      const Tensor in = Tensor::full(Shape{1000000}, comm.rank() + 1.0, DType::F32);
      const auto v = comm.all_reduce(in, ReduceOperation::Sum).to_vector<float>();
      ok[static_cast<std::size_t>(comm.rank())] = v.front() == 6.0F && v.back() == 6.0F;
    });
    CHECK(ok == std::vector<int>(3, 1));
  }
}

TEST_CASE("tcp pair whose segment cannot be made falls back to TCP on both sides",
          "[collective][tcp][shm]") {
  const SessionId session = random_session_id();
  TcpTransportOptions options;
  // Take the name of the segment of ranks 0 and 2 first (as this user: a leftover, not a
  // stranger's): its creation fails.
  const std::string taken = str("/ruccl-", shared_memory_group_name(session, options), "-0-2");
  const int fd = ::shm_open(taken.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  REQUIRE(fd >= 0);
  ::close(fd);
  auto transports = connect_transports(3, session, options);
  ::shm_unlink(taken.c_str());
  CHECK_FALSE(transports[0]->shares_memory_with(2));
  CHECK_FALSE(transports[2]->shares_memory_with(0));
  CHECK(transports[0]->shares_memory_with(1));
  CHECK(transports[1]->shares_memory_with(2));

  // The mixed group still computes exact results, through both paths.
  std::vector<Communicator> comms;
  for (auto& t : transports) comms.emplace_back(std::move(t), Device::cpu(), short_timeout());
  std::vector<std::vector<float>> out(3);
  run_ranks(std::move(comms), [&](Communicator& comm) {
    const Tensor in = Tensor::full(Shape{300000}, comm.rank() + 1.0, DType::F32);
    for (const Algorithm a : {Algorithm::Ring, Algorithm::Direct, Algorithm::Tree}) {
      const auto v = comm.all_reduce(in, ReduceOperation::Sum, CallOptions().with_algorithm(a))
                         .to_vector<float>();
      if (a == Algorithm::Ring) out[static_cast<std::size_t>(comm.rank())] = v;
      for (const float x : v) {
        if (x != 6.0F) throw std::runtime_error(str("wrong value ", x));
      }
    }
  });
  for (const auto& v : out) CHECK(v == std::vector<float>(300000, 6.0F));
}

TEST_CASE("tcp messages many times the shared-memory ring arrive exact", "[collective][tcp][shm]") {
  TcpTransportOptions transport;
  transport.shared_memory_ring_bytes = 2 * kPieceBytes;  // writers wait for slots constantly
  for (const int world : {2, 3}) {
    INFO("world " << world);
    const std::int64_t count =
        3 * static_cast<std::int64_t>(kPieceBytes) + 11;  // 3 MiB + 44 B: 6 rings
    std::vector<int> ok(static_cast<std::size_t>(world), 0);
    run_ranks(make_tcp_loopback_group(world, short_timeout(), transport), [&](Communicator& c) {
      const double r = c.rank();
      const Tensor in = Tensor::arange(0, count, 1, DType::F32).add(r);
      bool good = true;
      for (const Algorithm a : {Algorithm::Ring, Algorithm::Direct}) {
        const auto max = c.all_reduce(in, ReduceOperation::Max, CallOptions().with_algorithm(a))
                             .to_vector<float>();
        for (std::int64_t i = 0; i < count; i += 4099) {
          good = good && max[static_cast<std::size_t>(i)] ==
                             static_cast<float>(i) + static_cast<float>(world - 1);
        }
        good = good && max.back() == static_cast<float>(count - 1 + world - 1);
      }
      const auto got = c.broadcast(in, 1).to_vector<float>();
      good = good && got[7] == 8.0F && got.back() == static_cast<float>(count);
      if (c.rank() == 0) c.send(in, 1);
      if (c.rank() == 1) {
        const auto p2p = c.recv(0).to_vector<float>();
        good = good && p2p[123456] == 123456.0F;
      }
      ok[static_cast<std::size_t>(c.rank())] = good;
    });
    CHECK(ok == std::vector<int>(static_cast<std::size_t>(world), 1));
  }
}

}  // namespace
}  // namespace ruccl
