// What the TCP transport does differently when its ranks outnumber the cores
// (docs/performance-history.md, "TCP waits: spin, yield, sleep"): waits yield the core before they
// sleep, and the ring all-reduce / reduce move 256 KiB segments over TCP, 64 KiB ones through
// shared memory from world 3 up (ring_segment_bytes). Results stay bit-identical to the in-process
// transport at every segment boundary, and deadlines and aborts still reach ranks that wait by
// yielding.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <thread>

#include "collective/algorithms/selection.h"
#include "collective/collective.h"
#include "tensor/random/generator.h"
#include "tests/collective/collective_test_support.h"
#include "tests/collective/transport/tcp/tcp_loopback.h"
#include "tests/support/tensor_matchers.h"

namespace ruccl {
namespace {

using namespace std::chrono_literals;
using testing::make_tcp_loopback_group;
using testing::short_timeout;
using testing::tensor_bytes;

// Every rank's result of one all_reduce (or, with `reduce`, root 1's reduce) over `comms`.
std::vector<std::vector<std::uint8_t>> run_reduction(std::vector<Communicator> comms,
                                                     std::int64_t count, DType dtype,
                                                     Algorithm algorithm, bool reduce = false) {
  std::vector<std::vector<std::uint8_t>> out(comms.size());
  run_ranks(std::move(comms), [&](Communicator& comm) {
    Generator gen(77 + static_cast<std::uint64_t>(comm.rank()));
    const Tensor in = Tensor::randn(Shape{count}, gen).to(dtype);
    const CallOptions call = CallOptions().with_algorithm(algorithm);
    if (reduce) {
      const auto result = comm.reduce(in, 1, ReduceOperation::Sum, call);
      if (result) out[static_cast<std::size_t>(comm.rank())] = tensor_bytes(*result);
      return;
    }
    out[static_cast<std::size_t>(comm.rank())] =
        tensor_bytes(comm.all_reduce(in, ReduceOperation::Sum, call));
  });
  return out;
}

TEST_CASE(
    "ring segments over a copying transport are capped at one frame, at 64 KiB through shared "
    "memory from world 3 up",
    "[collective][tcp]") {
  CommunicatorOptions o;
  REQUIRE(o.segment_bytes == CommunicatorOptions::kDefaultSegmentBytes);
  REQUIRE(kCopyingRingSegmentBytes == kPieceBytes);
  REQUIRE(kSharedMemoryRingSegmentBytes == std::size_t{64} << 10);
  for (const int world : {1, 2}) {
    CHECK(ring_segment_bytes(o, world, LinkKind::Copying) == kCopyingRingSegmentBytes);
    CHECK(ring_segment_bytes(o, world, LinkKind::SharedMemory) == o.segment_bytes);
    CHECK(ring_segment_bytes(o, world, LinkKind::InProcess) == o.segment_bytes);
  }
  for (const int world : {3, 4, 8}) {
    CHECK(ring_segment_bytes(o, world, LinkKind::Copying) == kCopyingRingSegmentBytes);
    CHECK(ring_segment_bytes(o, world, LinkKind::SharedMemory) == kSharedMemoryRingSegmentBytes);
    CHECK(ring_segment_bytes(o, world, LinkKind::InProcess) ==
          o.segment_bytes);  // in process: as set
  }
  o.segment_bytes = 192;  // smaller than the cap: kept (tests reach the multi-segment paths)
  CHECK(ring_segment_bytes(o, 4, LinkKind::Copying) == 192);
  CHECK(ring_segment_bytes(o, 4, LinkKind::SharedMemory) == 192);
}

TEST_CASE(
    "Auto over a copying transport switches to Ring at 2 MiB, at 4 MiB from world 3 (16 KiB, 64 "
    "KiB through shared memory)",
    "[collective][tcp]") {
  const CommunicatorOptions o;
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  for (const int world : {2, 3, 4}) {
    for (const OpKind kind : {OpKind::AllReduce, OpKind::Reduce, OpKind::Broadcast}) {
      INFO("world " << world << " kind " << static_cast<int>(kind));
      const bool wide = world >= 3 && kind != OpKind::Broadcast;
      const std::size_t threshold = wide ? 4 * kMiB : 2 * kMiB;
      CHECK(auto_algorithm(kind, threshold - 1, LinkKind::Copying, o, world) == Algorithm::Direct);
      CHECK(auto_algorithm(kind, threshold, LinkKind::Copying, o, world) == Algorithm::Ring);
      CHECK(auto_algorithm(kind, 1 << 30, LinkKind::InProcess, o, world) ==
            Algorithm::Direct);  // in process
      // Through shared memory everywhere: 16 KiB, and 64 KiB from world 3.
      const std::size_t shm = wide ? 64 << 10 : 16 << 10;
      CHECK(auto_algorithm(kind, shm - 1, LinkKind::SharedMemory, o, world) == Algorithm::Direct);
      CHECK(auto_algorithm(kind, shm, LinkKind::SharedMemory, o, world) == Algorithm::Ring);
    }
  }
  // Over TCP the group resolves Auto with its world size (3 ranks: 3 MiB is still Direct, 6 MiB
  // is a Ring of 2 MiB chunks in 8 segments of 256 KiB), as its trace records; through shared
  // memory 32 KiB is Direct and 768 KiB a Ring of 256 KiB chunks in 4 segments of 64 KiB.
  for (const bool shared : {false, true}) {
    INFO("shared memory " << shared);
    TcpTransportOptions transport;
    transport.shared_memory = shared ? SharedMemory::Auto : SharedMemory::Off;
    auto comms = make_tcp_loopback_group(3, short_timeout(), transport);
    std::vector<std::vector<TraceEvent>> events(3);
    const std::int64_t small = shared ? 8 * 1024 : 3 * 1024 * 256;
    const std::int64_t large = shared ? 3 * 64 * 1024 : 6 * 1024 * 256;
    run_ranks(std::move(comms), [&](Communicator& comm) {
      comm.trace().enable();
      comm.all_reduce(Tensor::ones(Shape{small}, DType::F32));
      comm.all_reduce(Tensor::ones(Shape{large}, DType::F32));
      events[static_cast<std::size_t>(comm.rank())] = comm.trace().events();
    });
    for (const auto& e : events) {
      REQUIRE(e.size() == 2);
      CHECK(static_cast<Algorithm>(e[0].algorithm) == Algorithm::Direct);
      CHECK(static_cast<Algorithm>(e[1].algorithm) == Algorithm::Ring);
      CHECK(e[1].segments == (shared ? 4 : 8));
    }
  }
}

TEST_CASE(
    "tcp ring all_reduce and reduce in 256 KiB segments (64 KiB through shared memory) are "
    "bit-identical at the boundaries",
    "[collective][tcp]") {
  // F32 chunks of exactly one segment's elements are one segment; one element more is a second
  // segment of one element; one less leaves the last chunk short by one (its segment too).
  for (const bool shared : {false, true}) {
    TcpTransportOptions transport;
    transport.shared_memory = shared ? SharedMemory::Auto : SharedMemory::Off;
    const auto segment = static_cast<std::int64_t>(
        (shared ? kSharedMemoryRingSegmentBytes : kCopyingRingSegmentBytes) / 4);
    for (const int world : {2, 3, 4}) {
      if (shared && world == 2) continue;  // 2 ranks through shared memory keep segment_bytes
      for (const std::int64_t count : {world * segment - 1, world * segment, world * segment + 1,
                                       world * (2 * segment) + world - 1}) {
        INFO("shared memory " << shared << " world " << world << " count " << count);
        const auto tcp = run_reduction(make_tcp_loopback_group(world, short_timeout(), transport),
                                       count, DType::F32, Algorithm::Ring);
        const auto local = run_reduction(InProcessGroup::create(world, {}, short_timeout()), count,
                                         DType::F32, Algorithm::Direct);
        REQUIRE(local[0].size() == static_cast<std::size_t>(count) * 4);
        for (int r = 0; r < world; ++r) CHECK(tcp[static_cast<std::size_t>(r)] == local[0]);
        const auto tcp_reduce =
            run_reduction(make_tcp_loopback_group(world, short_timeout(), transport), count,
                          DType::F64, Algorithm::Ring, true);
        const auto local_reduce = run_reduction(InProcessGroup::create(world, {}, short_timeout()),
                                                count, DType::F64, Algorithm::Direct, true);
        CHECK(tcp_reduce[1] == local_reduce[1]);
        CHECK(tcp_reduce[1].size() == static_cast<std::size_t>(count) * 8);
      }
    }
  }
}

// Ranks that wait by yielding (as when they outnumber the cores) for far longer than any wait.
TcpTransportOptions yielding() {
  TcpTransportOptions t;
  t.spin = std::chrono::nanoseconds(1000);
  t.yield = std::chrono::seconds(5);
  return t;
}

TEST_CASE("tcp ranks that wait by yielding reduce exactly and still time out and abort",
          "[collective][tcp]") {
  SECTION("small and large all_reduce, every algorithm") {
    for (const std::int64_t count : {std::int64_t{1}, std::int64_t{1024}, std::int64_t{100003}}) {
      for (const Algorithm a : {Algorithm::Direct, Algorithm::Ring, Algorithm::Tree}) {
        INFO("count " << count << " " << algorithm_name(a));
        const auto tcp = run_reduction(make_tcp_loopback_group(3, short_timeout(), yielding()),
                                       count, DType::F32, a);
        const auto local = run_reduction(InProcessGroup::create(3, {}, short_timeout()), count,
                                         DType::F32, Algorithm::Direct);
        for (int r = 0; r < 3; ++r) CHECK(tcp[static_cast<std::size_t>(r)] == local[0]);
      }
    }
  }
  SECTION("a deadline names the rank that never arrived") {
    auto comms = make_tcp_loopback_group(3, short_timeout(300ms), yielding());
    std::vector<CollectiveErrorKind> kinds(2, CollectiveErrorKind::Unsupported);
    std::vector<std::vector<int>> ranks(2);
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r) {  // rank 2 never calls
      threads.emplace_back([&, r] {
        try {
          comms[static_cast<std::size_t>(r)].all_reduce(Tensor::ones(Shape{8}, DType::F32));
        } catch (const CollectiveError& e) {
          kinds[static_cast<std::size_t>(r)] = e.kind();
          ranks[static_cast<std::size_t>(r)] = e.ranks();
        }
      });
    }
    for (auto& t : threads) t.join();
    // The 5 s yield window never outlasts the deadline: the wait checks it between yields.
    CHECK(std::chrono::steady_clock::now() - start < 3s);
    for (int r = 0; r < 2; ++r) {
      CHECK(kinds[static_cast<std::size_t>(r)] == CollectiveErrorKind::Timeout);
      CHECK(ranks[static_cast<std::size_t>(r)] == std::vector<int>{2});
    }
  }
  SECTION("an abort reaches the ranks yielding in a call") {
    auto comms = make_tcp_loopback_group(3, short_timeout(30s), yielding());
    std::vector<CollectiveErrorKind> kinds(2, CollectiveErrorKind::Unsupported);
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r) {
      threads.emplace_back([&, r] {
        try {
          comms[static_cast<std::size_t>(r)].all_reduce(Tensor::ones(Shape{8}, DType::F32));
        } catch (const CollectiveError& e) {
          kinds[static_cast<std::size_t>(r)] = e.kind();
        }
      });
    }
    std::this_thread::sleep_for(50ms);
    const auto start = std::chrono::steady_clock::now();
    comms[2].abort("stop");
    for (auto& t : threads) t.join();
    CHECK(std::chrono::steady_clock::now() - start < 2s);
    for (int r = 0; r < 2; ++r)
      CHECK(kinds[static_cast<std::size_t>(r)] == CollectiveErrorKind::Aborted);
  }
}

}  // namespace
}  // namespace ruccl
