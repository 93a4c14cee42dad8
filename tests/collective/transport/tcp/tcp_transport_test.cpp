// The TCP transport between threads of one process (each rank its own sockets on loopback):
// results bit-identical to the in-process transport, multi-frame messages, and every failure
// (mismatch, timeout, abort, a rank that leaves) on every rank. Malformed frames from a raw
// socket: tcp_malformed_frame_test.cpp; processes and kill -9: tcp_process_test.cpp.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>

#include "collective/collective.h"
#include "tensor/random/generator.h"
#include "tests/collective/collective_test_support.h"
#include "tests/collective/transport/tcp/tcp_loopback.h"
#include "tests/support/tensor_matchers.h"

namespace ruccl {
namespace {

using testing::make_tcp_loopback_group;
using testing::short_timeout;
using testing::tensor_bytes;

Tensor random_input(int rank, std::int64_t count, DType dtype) {
  Generator gen(1000 + static_cast<std::uint64_t>(rank));
  return Tensor::randn(Shape{count}, gen).to(dtype);
}

/// Every rank's all_reduce result, as bytes, over `comms`.
std::vector<std::vector<std::uint8_t>> all_reduce_bytes(std::vector<Communicator> comms,
                                                        std::int64_t count, DType dtype,
                                                        ReduceOperation op, Algorithm algorithm) {
  // Catch2's assertions are not thread-safe: ranks record, the test thread checks.
  std::vector<std::vector<std::uint8_t>> out(comms.size());
  std::vector<int> unchanged(comms.size(), 0);
  run_ranks(std::move(comms), [&](Communicator& comm) {
    const Tensor in = random_input(comm.rank(), count, dtype);
    const Tensor before = in.clone();
    const Tensor result = comm.all_reduce(in, op, CallOptions().with_algorithm(algorithm));
    unchanged[static_cast<std::size_t>(comm.rank())] = tensor_bytes(in) == tensor_bytes(before);
    out[static_cast<std::size_t>(comm.rank())] = tensor_bytes(result);
  });
  CHECK(unchanged == std::vector<int>(unchanged.size(), 1));  // inputs are never modified
  return out;
}

TEST_CASE("tcp all_reduce is bit-identical to the in-process transport for every algorithm",
          "[collective][tcp]") {
  for (const int world : {2, 3, 4}) {
    for (const std::int64_t count : {std::int64_t{0}, std::int64_t{1}, std::int64_t{257},
                                     std::int64_t{200003}}) {  // 200003 floats: several frames
      for (const Algorithm a :
           {Algorithm::Direct, Algorithm::Ring, Algorithm::Tree, Algorithm::Centralized}) {
        INFO("world " << world << " count " << count << " " << algorithm_name(a));
        const auto tcp = all_reduce_bytes(make_tcp_loopback_group(world, short_timeout()), count,
                                          DType::F32, ReduceOperation::Sum, a);
        const auto local = all_reduce_bytes(InProcessGroup::create(world, {}, short_timeout()),
                                            count, DType::F32, ReduceOperation::Sum, a);
        for (int r = 0; r < world; ++r) {
          CHECK(tcp[static_cast<std::size_t>(r)] == local[0]);
        }
      }
    }
  }
}

TEST_CASE("tcp data movement collectives and point-to-point deliver exact rows",
          "[collective][tcp]") {
  const int world = 3;
  struct Seen {
    std::vector<double> gathered, broadcast;
    std::vector<std::int64_t> shard;
    std::vector<float> a2a, received;
  };
  std::vector<Seen> seen(
      world);  // ranks record, the test thread checks (Catch2 is not thread-safe)
  run_ranks(make_tcp_loopback_group(world, short_timeout()), [&](Communicator& comm) {
    const int r = comm.rank();
    Seen& mine_seen = seen[static_cast<std::size_t>(r)];
    const Tensor mine = Tensor::full(Shape{2, 3}, static_cast<double>(r), DType::F64);
    mine_seen.gathered = comm.all_gather(mine).to_vector<double>();
    mine_seen.broadcast = comm.broadcast(r == 1 ? mine : Tensor(), 1).to_vector<double>();
    mine_seen.shard = comm.reduce_scatter(Tensor::arange(0, 6, 1, DType::I64), ReduceOperation::Sum)
                          .to_vector<std::int64_t>();
    mine_seen.a2a = comm.all_to_all(Tensor::full(Shape{3}, static_cast<double>(r), DType::F32))
                        .to_vector<float>();
    if (r == 0) comm.send(Tensor::full(Shape{4}, 7.0, DType::F32), 2);
    if (r == 2) mine_seen.received = comm.recv(0).to_vector<float>();
    comm.barrier();
  });
  for (int r = 0; r < world; ++r) {
    const Seen& got = seen[static_cast<std::size_t>(r)];
    REQUIRE(got.gathered.size() == 18);
    for (int i = 0; i < 6; ++i) CHECK(got.gathered[static_cast<std::size_t>(i * 3)] == i / 2);
    CHECK(got.broadcast == std::vector<double>(6, 1.0));
    CHECK(got.shard == std::vector<std::int64_t>{2 * r * 3, (2 * r + 1) * 3});
    CHECK(got.a2a == std::vector<float>{0, 1, 2});
  }
  CHECK(seen[2].received == std::vector<float>(4, 7.0f));
}

TEST_CASE("tcp agreement mismatch raises the right kind on every rank", "[collective][tcp]") {
  std::vector<CollectiveErrorKind> kinds(2);
  std::vector<std::string> messages(2);
  auto comms = make_tcp_loopback_group(2, short_timeout());
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      try {
        comms[static_cast<std::size_t>(r)].all_reduce(Tensor::zeros(Shape{r + 2}, DType::F32));
      } catch (const CollectiveError& e) {
        kinds[static_cast<std::size_t>(r)] = e.kind();
        messages[static_cast<std::size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(kinds[0] == CollectiveErrorKind::ShapeMismatch);
  CHECK(kinds[1] == CollectiveErrorKind::ShapeMismatch);
  CHECK(comms[0].finished());
  // Sticky: the next call on either rank is Aborted.
  try {
    comms[1].barrier();
    FAIL("expected Aborted");
  } catch (const CollectiveError& e) {
    CHECK(e.kind() == CollectiveErrorKind::Aborted);
  }
}

TEST_CASE("tcp deadline names the rank that never arrived", "[collective][tcp]") {
  auto comms = make_tcp_loopback_group(3, short_timeout(std::chrono::milliseconds(300)));
  std::vector<std::string> messages(3);
  std::vector<std::vector<int>> ranks(3);
  std::vector<CollectiveErrorKind> kinds(3, CollectiveErrorKind::Unsupported);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {  // rank 2 never calls
    threads.emplace_back([&, r] {
      try {
        comms[static_cast<std::size_t>(r)].all_reduce(Tensor::ones(Shape{8}, DType::F32));
      } catch (const CollectiveError& e) {
        kinds[static_cast<std::size_t>(r)] = e.kind();
        messages[static_cast<std::size_t>(r)] = e.what();
        ranks[static_cast<std::size_t>(r)] = e.ranks();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < 2; ++r) {
    INFO(messages[static_cast<std::size_t>(r)]);
    CHECK(kinds[static_cast<std::size_t>(r)] == CollectiveErrorKind::Timeout);
    CHECK(ranks[static_cast<std::size_t>(r)] == std::vector<int>{2});
    CHECK_THAT(messages[static_cast<std::size_t>(r)], Catch::Contains("rank(s) [2]"));
  }
  CHECK(testing::finished_within(comms[2]));  // the failure reached the absent rank too
}

TEST_CASE("tcp abort from another thread wakes every rank promptly", "[collective][tcp]") {
  auto comms = make_tcp_loopback_group(3, short_timeout(std::chrono::seconds(30)));
  std::vector<CollectiveErrorKind> kinds(3, CollectiveErrorKind::Unsupported);
  std::vector<std::string> messages(3);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int r = 0; r < 3; ++r) {
    threads.emplace_back([&, r] {
      try {
        if (r == 0) {  // ranks 1 and 2 wait in the call, rank 0 never joins it
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
          comms[0].abort("operator asked");
          return;
        }
        comms[static_cast<std::size_t>(r)].all_reduce(Tensor::ones(Shape{1000}, DType::F32));
      } catch (const CollectiveError& e) {
        kinds[static_cast<std::size_t>(r)] = e.kind();
        messages[static_cast<std::size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const int r : {1, 2}) {
    CHECK(kinds[static_cast<std::size_t>(r)] == CollectiveErrorKind::Aborted);
    CHECK_THAT(messages[static_cast<std::size_t>(r)], Catch::Contains("operator asked"));
  }
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}

TEST_CASE("tcp rank that leaves fails its waiting peers with PeerLost naming it",
          "[collective][tcp]") {
  auto comms = make_tcp_loopback_group(2, short_timeout(std::chrono::seconds(30)));
  std::string message;
  CollectiveErrorKind kind = CollectiveErrorKind::Unsupported;
  std::vector<int> lost;
  std::thread waiter([&] {
    try {
      comms[0].all_reduce(Tensor::ones(Shape{4}, DType::F32));
    } catch (const CollectiveError& e) {
      kind = e.kind();
      lost = e.ranks();
      message = e.what();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto start = std::chrono::steady_clock::now();
  comms[1] = Communicator();  // destroys rank 1's transport: a Goodbye, then close
  waiter.join();
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
  CHECK(kind == CollectiveErrorKind::PeerLost);
  CHECK(lost == std::vector<int>{1});
  CHECK_THAT(message, Catch::Contains("rank 1"));
}

TEST_CASE("tcp point-to-point against a collective can never match and says so",
          "[collective][tcp]") {
  auto comms = make_tcp_loopback_group(2, short_timeout(std::chrono::seconds(5)));
  std::vector<CollectiveErrorKind> kinds(2, CollectiveErrorKind::Unsupported);
  std::vector<std::string> messages(2);
  std::thread t0([&] {
    try {
      // Over TCP a send returns once its bytes are written (the buffer may be reused), so the
      // mismatch may reach rank 0 only at its next call.
      comms[0].send(Tensor::ones(Shape{3}, DType::F32), 1);
      comms[0].barrier();
    } catch (const CollectiveError& e) {
      kinds[0] = e.kind();
      messages[0] = e.what();
    }
  });
  std::thread t1([&] {
    try {
      comms[1].barrier();
    } catch (const CollectiveError& e) {
      kinds[1] = e.kind();
    }
  });
  t0.join();
  t1.join();
  CHECK(kinds[1] == CollectiveErrorKind::CollectiveKindMismatch);
  // Rank 0's calls can both complete (its barrier gets rank 1's record, sent before rank 1 read
  // the stray message); the failure then reaches it through its watcher, promptly.
  INFO(messages[0]);
  CHECK((kinds[0] == CollectiveErrorKind::Unsupported ||  // no error: both calls completed
         kinds[0] == CollectiveErrorKind::CollectiveKindMismatch ||
         kinds[0] == CollectiveErrorKind::Aborted));
  CHECK(testing::finished_within(comms[0]));
}

}  // namespace
}  // namespace ruccl
