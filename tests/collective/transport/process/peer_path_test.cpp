// The peer paths of the process transport (transport/peer_path.h): each peer's path chosen at
// connect (shared memory where a pair can map a segment, TCP elsewhere) with both kinds in one
// group, the wire-fault decorator on the TCP paths of one rank beside shared memory between the
// others, what Transport::traits() says of each transport, and the poll set the paths share.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <thread>

#include "collective/collective.h"
#include "collective/store/in_memory_store.h"
#include "collective/transport/fault/fault_injecting_transport.h"
#include "collective/transport/in_process/in_process_transport.h"
#include "collective/transport/process/process_transport.h"
#include "collective/transport/shm/shm_connect.h"
#include "tests/collective/collective_test_support.h"

namespace ruccl {
namespace {

using testing::short_timeout;

/// A `world`-rank process group on loopback (one thread per rank), rank r's options set by
/// `customize`.
std::vector<std::unique_ptr<TcpTransport>> connect_group(
    int world, const SessionId& session,
    const std::function<void(int, TcpTransportOptions&)>& customize = {}) {
  auto store = std::make_shared<InMemoryStore>();
  std::vector<std::unique_ptr<TcpTransport>> out(static_cast<std::size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      TcpTransportOptions options;
      options.listen_host = "127.0.0.1";
      options.local_ranks = world;
      if (customize) customize(r, options);
      out[static_cast<std::size_t>(r)] = TcpTransport::connect(*store, r, world, session, options);
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

/// The name of the segment ranks `low` and `high` of `session` would create (shm_connect.h:
/// "/ruccl-<group name>-<low>-<high>"), made first so theirs fails.
std::string take_segment(const SessionId& session, int low, int high) {
  const std::string name =
      str("/ruccl-", shared_memory_group_name(session, TcpTransportOptions{}), "-", low, "-", high);
  const int fd = ::shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  REQUIRE(fd >= 0);
  ::close(fd);
  return name;
}

/// Every collective of `comms` over a few algorithms, each rank checking its closed-form result.
std::vector<int> run_exact(std::vector<std::unique_ptr<TcpTransport>> transports) {
  const int world = static_cast<int>(transports.size());
  std::vector<Communicator> comms;
  for (auto& t : transports) comms.emplace_back(std::move(t), Device::cpu(), short_timeout());
  std::vector<int> ok(static_cast<std::size_t>(world), 0);
  const double sum = world * (world + 1) / 2.0;
  run_ranks(std::move(comms), [&](Communicator& c) {
    const Tensor in = Tensor::full(Shape{300001}, c.rank() + 1.0, DType::F32);  // 2+ pieces
    bool good = true;
    for (const Algorithm a : {Algorithm::Ring, Algorithm::Direct, Algorithm::Tree}) {
      const auto v = c.all_reduce(in, ReduceOperation::Sum, CallOptions().with_algorithm(a))
                         .to_vector<float>();
      good = good && v.front() == sum && v[150000] == sum && v.back() == sum;
      const auto b = c.broadcast(in, world - 1, CallOptions().with_algorithm(a)).to_vector<float>();
      good = good && b.front() == world && b.back() == world;
    }
    const auto g =
        c.all_gather(Tensor::full(Shape{3}, c.rank(), DType::I64)).to_vector<std::int64_t>();
    for (int r = 0; r < world; ++r) good = good && g[static_cast<std::size_t>(3 * r + 2)] == r;
    ok[static_cast<std::size_t>(c.rank())] = good;
  });
  return ok;
}

TEST_CASE("process transport chooses each peer's path: shared memory and tcp in one group",
          "[collective][tcp][shm]") {
  // 4 ranks on one host; the segment of ranks 1 and 3 cannot be made: that pair takes TCP,
  // every other pair shared memory.
  const SessionId session = random_session_id();
  const std::string taken = take_segment(session, 1, 3);
  auto transports = connect_group(4, session);
  ::shm_unlink(taken.c_str());
  for (int r = 0; r < 4; ++r) {
    for (int p = 0; p < 4; ++p) {
      if (p == r) continue;
      INFO("rank " << r << " to " << p);
      const bool tcp = (r == 1 && p == 3) || (r == 3 && p == 1);
      CHECK(transports[static_cast<std::size_t>(r)]->path_to(p) ==
            (tcp ? LinkKind::Copying : LinkKind::SharedMemory));
    }
    // Not every pair shares memory: the group copies (Auto's TCP thresholds on every rank).
    CHECK(transports[static_cast<std::size_t>(r)]->traits().link == LinkKind::Copying);
  }
  CHECK(run_exact(std::move(transports)) == std::vector<int>(4, 1));
}

TEST_CASE("process transport whose every pair shares memory says so in its traits",
          "[collective][tcp][shm]") {
  auto shared = connect_group(3, random_session_id());
  auto tcp = connect_group(3, random_session_id(), [](int, TcpTransportOptions& o) {
    o.shared_memory = SharedMemory::Off;
  });
  for (int r = 0; r < 3; ++r) {
    const TransportTraits s = shared[static_cast<std::size_t>(r)]->traits();
    CHECK(s.link == LinkKind::SharedMemory);
    CHECK_FALSE(s.same_address_space);
    const TransportTraits t = tcp[static_cast<std::size_t>(r)]->traits();
    CHECK(t.link == LinkKind::Copying);
    CHECK_FALSE(t.same_address_space);
  }
}

TEST_CASE("wire faults decorate the tcp paths of their rank while the others share memory",
          "[collective][tcp][shm]") {
  // Rank 0 has a plan: it shares memory with nobody; ranks 1 and 2 still do with each other.
  int kills = 0;
  auto transports = connect_group(3, random_session_id(), [&](int r, TcpTransportOptions& o) {
    if (r != 0) return;
    o.wire_faults.add(
        FaultRule::on_message(FaultAction::Delay, 2, 1).with_delay(std::chrono::milliseconds(20)));
    // A call fault acts once for the rank, not once per path: the kill hook counts.
    o.wire_faults.add(FaultRule::on_call(FaultAction::KillRank, 0));
    o.kill = [&kills] { ++kills; };
  });
  CHECK(transports[0]->path_to(1) == LinkKind::Copying);
  CHECK(transports[0]->path_to(2) == LinkKind::Copying);
  CHECK(transports[1]->path_to(2) == LinkKind::SharedMemory);
  CHECK(transports[2]->path_to(1) == LinkKind::SharedMemory);
  CHECK(transports[1]->path_to(0) == LinkKind::Copying);
  CHECK(run_exact(std::move(transports)) == std::vector<int>(3, 1));
  CHECK(kills == 1);
}

TEST_CASE("wire faults on a rank without shared memory are caught on the wire",
          "[collective][tcp]") {
  // A corrupted payload from rank 0 (checksums on): rank 1 refuses it; every rank fails.
  auto transports = connect_group(3, random_session_id(), [](int r, TcpTransportOptions& o) {
    o.payload_checksum = PayloadChecksum::On;
    if (r == 0) o.wire_faults.add(FaultRule::on_message(FaultAction::Corrupt, 1, 0));
  });
  std::vector<Communicator> comms;
  for (auto& t : transports) comms.emplace_back(std::move(t), Device::cpu(), short_timeout());
  std::vector<std::string> errors(3);
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      try {
        comms[static_cast<std::size_t>(r)].all_reduce(
            Tensor::full(Shape{1000}, 1.0, DType::F32), ReduceOperation::Sum,
            CallOptions().with_algorithm(Algorithm::Direct));
        comms[static_cast<std::size_t>(r)].barrier();
      } catch (const CollectiveError& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  INFO(errors[1]);
  CHECK_THAT(errors[1], Catch::Contains("rank 0 sent a malformed frame: payload CRC-32C mismatch"));
}

TEST_CASE("traits say the link kind and whether ranks share the address space",
          "[collective][transport]") {
  auto hub = std::make_shared<InProcessHub>(2);
  const TransportTraits in_process = InProcessTransport(hub, 0).traits();
  CHECK(in_process.link == LinkKind::InProcess);
  CHECK(in_process.same_address_space);
  // A copying wrapper copies, but its ranks are still threads of this process.
  FaultInjectingTransport copying(std::make_unique<InProcessTransport>(hub, 1), {}, {}, true);
  CHECK(copying.traits().link == LinkKind::Copying);
  CHECK(copying.traits().same_address_space);
  FaultInjectingTransport pass(std::make_unique<InProcessTransport>(hub, 1), {}, {}, false);
  CHECK(pass.traits().link == LinkKind::InProcess);
}

TEST_CASE("poll set adds a shared descriptor once and hands its events to one path",
          "[collective][transport]") {
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  PollSet set;
  const std::size_t a = set.add_shared(fds[0], POLLIN);
  const std::size_t b = set.add(fds[1], POLLOUT);
  CHECK(set.add_shared(fds[0], POLLIN) == a);
  CHECK(b != a);
  REQUIRE(::write(fds[1], "x", 1) == 1);
  set.wait(100);
  CHECK((set.revents(b) & POLLOUT) != 0);
  CHECK((set.take(a) & POLLIN) != 0);
  CHECK(set.take(a) == 0);  // the second path sees nothing: the first one drained it
  ::close(fds[0]);
  ::close(fds[1]);
}

}  // namespace
}  // namespace ruccl
