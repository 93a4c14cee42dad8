// broadcast, all_gather, gather, scatter, all_to_all, all_to_all_v, send/recv, barrier: values in
// rank order, shapes, dtypes, empty and non-contiguous tensors, inputs left unchanged.
#include <catch2/catch.hpp>

#include <chrono>

#include "tests/collective/collective_test_support.h"
#include "tests/support/rank_harness.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::testing;

namespace {

// Rank r's block of `rows` x 2 values: 100 * r + i, in `dtype`.
Tensor block(int rank, std::int64_t rows, DType dtype) {
  std::vector<double> v;
  for (std::int64_t i = 0; i < rows * 2; ++i) v.push_back(100.0 * rank + static_cast<double>(i));
  return tensor_of(v, Shape{rows, 2}, dtype);
}

// The rank-order concatenation of block(r, rows) for r < world.
Tensor concatenated(int world, std::int64_t rows, DType dtype) {
  std::vector<double> v;
  for (int r = 0; r < world; ++r) {
    for (std::int64_t i = 0; i < rows * 2; ++i) v.push_back(100.0 * r + static_cast<double>(i));
  }
  return tensor_of(v, Shape{rows * world, 2}, dtype);
}

const std::vector<DType> kMoveDTypes = {DType::F16, DType::BF16, DType::F32,
                                        DType::F64, DType::I32,  DType::I64};

}  // namespace

TEST_CASE("broadcast delivers root's tensor to every rank with every algorithm", "[collective]") {
  for (const AlgorithmConfig& config : algorithm_configs()) {
    for (int world : kWorldSizes) {
      auto out = run_group(
          world,
          [&](Communicator& comm) {
            std::vector<Tensor> got;
            for (int root = 0; root < world; ++root) {
              for (std::int64_t rows : {0, 1, 300}) {
                // Non-roots pass an undefined tensor or one of the right shape.
                const Tensor mine = comm.rank() == root    ? block(root, rows, DType::F32)
                                    : comm.rank() % 2 == 0 ? Tensor()
                                                           : Tensor::zeros({rows, 2});
                got.push_back(comm.broadcast(mine, root));
              }
            }
            got.push_back(comm.broadcast(Tensor::full({3}, comm.rank(), DType::I64), world - 1));
            return got;
          },
          config.options);
      for (int r = 0; r < world; ++r) {
        const auto& got = out[static_cast<std::size_t>(r)].value();
        std::size_t k = 0;
        for (int root = 0; root < world; ++root) {
          for (std::int64_t rows : {0, 1, 300}) {
            INFO(config.name << ", world " << world << ", rank " << r << ", root " << root
                             << ", rows " << rows);
            REQUIRE_THAT(got[k++], TensorEqual(block(root, rows, DType::F32)));
          }
        }
        REQUIRE_THAT(got[k], TensorEqual(Tensor::full({3}, world - 1, DType::I64)));
      }
    }
  }
}

TEST_CASE("broadcast_from_sender delivers the one sender's tensor", "[collective]") {
  auto out = run_group(3, [](Communicator& comm) {
    std::optional<Tensor> mine;
    if (comm.rank() == 1) mine = block(1, 2, DType::BF16);
    return comm.broadcast_from_sender(mine);
  });
  for (auto& o : out) REQUIRE_THAT(o.value(), TensorEqual(block(1, 2, DType::BF16)));
}

TEST_CASE("all_gather and gather concatenate along axis 0 in rank order", "[collective]") {
  for (int world : kWorldSizes) {
    auto out = run_group(world, [&](Communicator& comm) {
      std::vector<std::optional<Tensor>> got;
      for (DType dtype : kMoveDTypes) {
        for (std::int64_t rows : {0, 1, 3}) {
          const Tensor in = block(comm.rank(), rows, dtype);
          got.push_back(comm.all_gather(in));
          got.push_back(comm.gather(in, world / 2));
        }
      }
      // A non-contiguous input (a transposed view) and a 0-d tensor.
      const Tensor t = block(comm.rank(), 2, DType::F64).transpose(0, 1);  // [2, 2]
      got.push_back(comm.all_gather(t));
      got.push_back(comm.all_gather(Tensor::scalar(comm.rank(), DType::I32)));
      return got;
    });
    for (int r = 0; r < world; ++r) {
      const auto& got = out[static_cast<std::size_t>(r)].value();
      std::size_t k = 0;
      for (DType dtype : kMoveDTypes) {
        for (std::int64_t rows : {0, 1, 3}) {
          INFO("world " << world << ", rank " << r << ", " << dtype << ", rows " << rows);
          REQUIRE_THAT(*got[k], TensorEqual(concatenated(world, rows, dtype)));
          REQUIRE(got[k + 1].has_value() == (r == world / 2));
          if (got[k + 1]) REQUIRE_THAT(*got[k + 1], TensorEqual(concatenated(world, rows, dtype)));
          k += 2;
        }
      }
      std::vector<double> expected_t;
      std::vector<double> expected_scalar;
      for (int q = 0; q < world; ++q) {
        for (double v : {0.0, 2.0, 1.0, 3.0}) expected_t.push_back(100.0 * q + v);
        expected_scalar.push_back(q);
      }
      REQUIRE_THAT(*got[k], TensorEqual(Tensor::from_vector<double>(expected_t, {2 * world, 2})));
      REQUIRE_THAT(*got[k + 1], TensorEqual(tensor_of(expected_scalar, Shape{world}, DType::I32)));
    }
  }
}

TEST_CASE("scatter gives rank r row block r of root's tensor", "[collective]") {
  for (int world : kWorldSizes) {
    auto out = run_group(world, [&](Communicator& comm) {
      std::vector<Tensor> got;
      for (std::int64_t rows : {0, 1, 3}) {
        const int root = world - 1;
        const Tensor full = concatenated(world, rows, DType::I64);
        got.push_back(comm.scatter(comm.rank() == root ? full : Tensor(), root));
        got.push_back(full);
      }
      return got;
    });
    for (int r = 0; r < world; ++r) {
      const auto& got = out[static_cast<std::size_t>(r)].value();
      std::size_t k = 0;
      for (std::int64_t rows : {0, 1, 3}) {
        INFO("world " << world << ", rank " << r << ", rows " << rows);
        REQUIRE_THAT(got[k], TensorEqual(block(r, rows, DType::I64)));
        REQUIRE_THAT(got[k + 1], TensorEqual(concatenated(world, rows, DType::I64)));
        k += 2;
      }
    }
  }
}

TEST_CASE("all_to_all sends block j to rank j; all_to_all_v with uneven counts", "[collective]") {
  for (int world : kWorldSizes) {
    auto out = run_group(world, [&](Communicator& comm) {
      const int r = comm.rank();
      // Row j of rank r's input is 1000 * r + j, two columns.
      std::vector<double> v;
      for (int j = 0; j < world * 2; ++j) v.insert(v.end(), {1000.0 * r + j, -1.0 * j});
      const Tensor in = Tensor::from_vector<double>(v, {world * 2, 2});
      std::vector<Tensor> got{comm.all_to_all(in)};
      // all_to_all_v: rank r sends (r + j) % 3 rows to rank j.
      std::vector<std::int64_t> counts;
      std::int64_t total = 0;
      for (int j = 0; j < world; ++j) {
        counts.push_back((r + j) % 3);
        total += counts.back();
      }
      std::vector<double> w;
      for (std::int64_t i = 0; i < total; ++i) w.push_back(1000.0 * r + static_cast<double>(i));
      AllToAllVResult res = comm.all_to_all_v(Tensor::from_vector<double>(w, {total}), counts);
      got.push_back(res.output);
      got.push_back(Tensor::from_vector<std::int64_t>(res.recv_counts));
      return got;
    });
    for (int r = 0; r < world; ++r) {
      INFO("world " << world << ", rank " << r);
      const auto& got = out[static_cast<std::size_t>(r)].value();
      std::vector<double> expected;
      for (int q = 0; q < world; ++q) {
        for (int j = 2 * r; j < 2 * r + 2; ++j)
          expected.insert(expected.end(), {1000.0 * q + j, -1.0 * j});
      }
      REQUIRE_THAT(got[0], TensorEqual(Tensor::from_vector<double>(expected, {world * 2, 2})));
      std::vector<double> expected_v;
      std::vector<std::int64_t> expected_counts;
      for (int q = 0; q < world; ++q) {
        std::int64_t offset = 0;  // rows rank q sends before its block for rank r
        for (int j = 0; j < r; ++j) offset += (q + j) % 3;
        const std::int64_t n = (q + r) % 3;
        for (std::int64_t i = 0; i < n; ++i)
          expected_v.push_back(1000.0 * q + static_cast<double>(offset + i));
        expected_counts.push_back(n);
      }
      REQUIRE_THAT(got[1], TensorEqual(Tensor::from_vector<double>(
                               expected_v, {static_cast<std::int64_t>(expected_v.size())})));
      REQUIRE(got[2].to_vector<std::int64_t>() == expected_counts);
    }
  }
}

TEST_CASE("send and recv move a tensor of any shape and dtype between two ranks", "[collective]") {
  for (int world : {2, 3, 5}) {
    auto out = run_group(world, [&](Communicator& comm) {
      const int r = comm.rank();
      const int next = (r + 1) % world;
      const int prev = (r + world - 1) % world;
      std::vector<Tensor> got;
      // A ring of messages; even ranks send first so nobody deadlocks.
      const Tensor mine = block(r, r + 1, DType::BF16).transpose(0, 1);  // non-contiguous
      if (r % 2 == 0) {
        comm.send(mine, next);
        got.push_back(comm.recv(prev));
      } else {
        got.push_back(comm.recv(prev));
        comm.send(mine, next);
      }
      comm.barrier();  // collectives interleave with point-to-point traffic
      if (r == 0) got.push_back(comm.recv(world - 1));
      if (r == world - 1) comm.send(Tensor::zeros({0, 3}, DType::I64), 0);
      return got;
    });
    for (int r = 0; r < world; ++r) {
      INFO("world " << world << ", rank " << r);
      const auto& got = out[static_cast<std::size_t>(r)].value();
      const int prev = (r + world - 1) % world;
      REQUIRE_THAT(got[0],
                   TensorEqual(block(prev, prev + 1, DType::BF16).transpose(0, 1).contiguous()));
      if (r == 0) REQUIRE_THAT(got[1], TensorEqual(Tensor::zeros({0, 3}, DType::I64)));
    }
  }
}

TEST_CASE("point-to-point calls to oneself or out of range are InvalidArgument", "[collective]") {
  auto out = run_group(2, [](Communicator& comm) {
    if (comm.rank() == 0)
      comm.send(Tensor::zeros({1}), 0);
    else
      comm.recv(0);  // fails promptly once rank 0's error finishes the group
  });
  REQUIRE(error_kind(out[0]) == CollectiveErrorKind::InvalidArgument);
  // Rank 1 fails with the same kind if its recv was pending, or Aborted ("finished after an
  // earlier error") if it started after rank 0's error; both carry rank 0's reason.
  const auto kind1 = error_kind(out[1]);
  REQUIRE((kind1 == CollectiveErrorKind::InvalidArgument || kind1 == CollectiveErrorKind::Aborted));
  REQUIRE(out[1].message().find("expected a peer rank") != std::string::npos);
}

TEST_CASE("barrier returns on every rank, many times in a row", "[collective]") {
  for (int world : kWorldSizes) {
    auto out = run_group(world, [](Communicator& comm) {
      for (int i = 0; i < 200; ++i) comm.barrier();
      return comm.all_reduce(Tensor::full({1}, 1.0)).item<float>();
    });
    for (auto& o : out) REQUIRE(o.value() == static_cast<float>(world));
  }
}

TEST_CASE("send/recv that can never match raise CollectiveKindMismatch instead of hanging",
          "[collective]") {
  CommunicatorOptions options;
  options.timeout = std::chrono::seconds(30);  // the test fails by time if detection is missing
  const auto start = std::chrono::steady_clock::now();
  SECTION("both ranks send to each other") {
    auto out = run_group(
        2, [](Communicator& comm) { comm.send(Tensor::zeros({4}), 1 - comm.rank()); }, options);
    for (auto& o : out) REQUIRE(error_kind(o) == CollectiveErrorKind::CollectiveKindMismatch);
  }
  SECTION("both ranks receive from each other") {
    auto out = run_group(
        2, [](Communicator& comm) { comm.recv(1 - comm.rank()); }, options);
    for (auto& o : out) REQUIRE(error_kind(o) == CollectiveErrorKind::CollectiveKindMismatch);
  }
  SECTION("one rank sends while its peer is in a collective") {
    auto out = run_group(
        3,
        [](Communicator& comm) {
          if (comm.rank() == 0)
            comm.send(Tensor::zeros({4}), 1);
          else
            comm.barrier();
        },
        options);
    REQUIRE(error_kind(out[0]) == CollectiveErrorKind::CollectiveKindMismatch);
    REQUIRE(error_kind(out[1]) == CollectiveErrorKind::CollectiveKindMismatch);
    // Rank 2's barrier was pending (same kind) or started after the failure (Aborted).
    INFO(out[2].message());
    REQUIRE((error_kind(out[2]) == CollectiveErrorKind::CollectiveKindMismatch ||
             error_kind(out[2]) == CollectiveErrorKind::Aborted));
    REQUIRE(out[2].message().find("rank 0 is in send to rank 1") != std::string::npos);
  }
  REQUIRE(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
}
