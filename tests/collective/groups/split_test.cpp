// Communicator::split: MPI_Comm_split's meaning (one group per color, ranked by key, ties by
// parent rank; a negative color joins none), splits of splits, disjoint groups busy at once, a
// parent and its groups used in each rank's program order (blocking and asynchronous), a mismatch
// in a group named with the group and its ranks as parent ranks, and no new socket or file. Over
// every transport of tests/collective/group_factories.h.
#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <thread>

#include "tests/collective/collective_test_support.h"
#include "tests/collective/error_capture.h"
#include "tests/collective/group_factories.h"
#include "tests/support/rank_harness.h"

using namespace ruccl;
using namespace ruccl::testing;

namespace {

// The parent ranks of `comm`'s group, in its rank order (an all_gather of the parent ranks).
std::vector<std::int64_t> members(Communicator& comm, int parent_rank) {
  return comm.all_gather(Tensor::from_vector<std::int64_t>({parent_rank}))
      .to_vector<std::int64_t>();
}

struct Seen {
  int rank = -1;
  int world = 0;
  std::vector<std::int64_t> members;
};

}  // namespace

TEMPLATE_TEST_CASE(
    "split groups ranks by color, orders them by key then parent rank, and a "
    "negative color joins none",
    "[collective]", RUCCL_GROUP_FACTORIES) {
  const std::vector<int> colors = {0, 1, 0, 1, 0, -1};
  const std::vector<int> keys = {2, 7, 1, 7, 1, 0};
  auto out = run_group_with(
      TestType::make, 6,
      [&](Communicator& comm) -> std::optional<Seen> {
        const int r = comm.rank();
        std::optional<Communicator> g =
            comm.split(colors[static_cast<std::size_t>(r)], keys[static_cast<std::size_t>(r)]);
        // The parent stays usable beside its groups.
        const Tensor sum = comm.all_reduce(Tensor::full({2}, static_cast<double>(r)));
        if (sum.to_vector<double>() != std::vector<double>{15, 15}) {
          throw std::runtime_error("parent all_reduce after split");
        }
        if (!g) return std::nullopt;
        return Seen{g->rank(), g->world_size(), members(*g, r)};
      },
      short_timeout());
  const std::vector<std::int64_t> even = {2, 4, 0};  // keys 1, 1 (tie: parent rank), 2
  const std::vector<std::int64_t> odd = {1, 3};      // keys 7, 7
  const std::vector<int> expected_rank = {2, 0, 0, 1, 1, -1};
  for (int r = 0; r < 6; ++r) {
    INFO("parent rank " << r);
    const std::optional<Seen>& seen = out[static_cast<std::size_t>(r)].value();
    if (r == 5) {
      REQUIRE_FALSE(seen.has_value());
      continue;
    }
    REQUIRE(seen.has_value());
    REQUIRE(seen->rank == expected_rank[static_cast<std::size_t>(r)]);
    REQUIRE(seen->members == (r % 2 == 0 ? even : odd));
    REQUIRE(seen->world == static_cast<int>(seen->members.size()));
  }
}

TEMPLATE_TEST_CASE("a split of a split is a group of the grandparent's ranks", "[collective]",
                   RUCCL_GROUP_FACTORIES) {
  auto out = run_group_with(
      TestType::make, 8,
      [&](Communicator& comm) {
        const int r = comm.rank();
        Communicator half = *comm.split(r / 4, r);                    // {0..3}, {4..7}
        Communicator pair = *half.split(half.rank() % 2, -r);         // by descending rank
        Communicator single = *pair.split(pair.rank(), 0, "single");  // one rank each
        std::vector<std::int64_t> seen = members(pair, r);
        const Tensor one = single.all_reduce(Tensor::full({3}, 2.0));
        seen.push_back(static_cast<std::int64_t>(one.to_vector<double>()[0]));
        seen.push_back(static_cast<std::int64_t>(
            half.all_reduce(Tensor::full({1}, 1.0)).to_vector<double>()[0]));
        return seen;
      },
      short_timeout());
  const std::vector<std::vector<std::int64_t>> pairs = {{2, 0}, {3, 1}, {6, 4}, {7, 5}};
  for (int r = 0; r < 8; ++r) {
    INFO("parent rank " << r);
    std::vector<std::int64_t> expected = pairs[static_cast<std::size_t>((r / 4) * 2 + r % 2)];
    expected.push_back(2);  // a group of one reduces to its own input
    expected.push_back(4);  // four ranks in half
    REQUIRE(out[static_cast<std::size_t>(r)].value() == expected);
  }
}

TEMPLATE_TEST_CASE("two disjoint groups run at once: one finishes while the other waits",
                   "[collective]", RUCCL_GROUP_FACTORIES) {
  using Clock = std::chrono::steady_clock;
  // Group A {0, 1}: rank 1 arrives 400 ms late. Group B {2, 3}: 20 calls meanwhile. With any lock
  // shared by the groups, B would wait for A.
  auto out = run_group_with(
      TestType::make, 4,
      [&](Communicator& comm) {
        Communicator g = *comm.split(comm.rank() / 2, 0);
        if (comm.rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(400));
        const int calls = comm.rank() < 2 ? 1 : 20;
        for (int k = 0; k < calls; ++k) g.all_reduce(Tensor::full({64}, 1.0f));
        return Clock::now();
      },
      short_timeout());
  const Clock::time_point a_done = out[0].value();
  REQUIRE(out[2].value() < a_done);
  REQUIRE(out[3].value() < a_done);
}

TEMPLATE_TEST_CASE(
    "a parent and its groups run each rank's calls in its program order, "
    "blocking and asynchronous",
    "[collective]", RUCCL_GROUP_FACTORIES) {
  auto out = run_group_with(
      TestType::make, 4,
      [&](Communicator& comm) {
        const int r = comm.rank();
        Communicator row = *comm.split(r / 2, r, "row");     // {0,1} {2,3}
        Communicator col = *comm.split(r % 2, r, "column");  // {0,2} {1,3}
        const Tensor x = Tensor::full({5}, static_cast<double>(r + 1));
        Work a = row.all_reduce_async(x);
        Work b = col.all_gather_async(x);
        const Tensor p = comm.all_reduce(x);  // blocking, behind both
        Work c = row.broadcast_async(x, 1);
        const Tensor d = col.reduce_scatter(Tensor::full({4}, static_cast<double>(r)));
        b.wait();
        a.wait();
        c.wait();
        return std::vector<double>{a.result().to_vector<double>()[0],
                                   b.result().to_vector<double>()[5], p.to_vector<double>()[0],
                                   c.result().to_vector<double>()[0], d.to_vector<double>()[0]};
      },
      short_timeout());
  for (int r = 0; r < 4; ++r) {
    INFO("rank " << r);
    const double row_sum = r < 2 ? 1 + 2 : 3 + 4;
    const double col_second = r % 2 == 0 ? 3 : 4;  // rank 2 or 3's value
    const double row_root = r < 2 ? 2 : 4;
    const double col_sum = r % 2 == 0 ? 0 + 2 : 1 + 3;
    REQUIRE(out[static_cast<std::size_t>(r)].value() ==
            std::vector<double>{row_sum, col_second, 10, row_root, col_sum});
  }
}

TEMPLATE_TEST_CASE(
    "a mismatch in a group names the group and its ranks as parent ranks, and "
    "finishes the parent",
    "[collective]", RUCCL_GROUP_FACTORIES) {
  auto out = run_group_with(
      TestType::make, 4,
      [&](Communicator& comm) {
        const int r = comm.rank();
        Communicator tp = *comm.split(r / 2, r, "tp");
        if (r >= 2) tp.all_reduce(Tensor::zeros({r == 3 ? 3 : 2}));
        comm.barrier();  // ranks 0 and 1 wait here for 2 and 3
      },
      short_timeout());
  for (int r = 2; r < 4; ++r) {
    INFO("rank " << r);
    REQUIRE(error_kind(out[static_cast<std::size_t>(r)]) == CollectiveErrorKind::ShapeMismatch);
    const std::string message = out[static_cast<std::size_t>(r)].message();
    REQUIRE(contains(message, "group tp of rank(s) [2, 3]: all_reduce (call #1): shape mismatch"));
    REQUIRE(contains(message, "rank 2 has [2]"));
    REQUIRE(contains(message, "rank 3 has [3]"));
  }
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r << ": " << out[static_cast<std::size_t>(r)].message());
    REQUIRE_FALSE(out[static_cast<std::size_t>(r)].ok());
    REQUIRE(contains(out[static_cast<std::size_t>(r)].message(), "group tp of rank(s) [2, 3]"));
  }
}

TEMPLATE_TEST_CASE("split and Mesh open no socket and no file", "[collective]",
                   RUCCL_GROUP_FACTORIES) {
  auto open_files = [] {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& entry :
         std::filesystem::directory_iterator("/proc/self/fd")) {
      ++n;
    }
    return n;
  };
  std::vector<Communicator> comms = TestType::make(4, short_timeout());
  const std::size_t before = open_files();
  auto meshes = run_ranks(4, [&](int r) {
    Mesh mesh(comms[static_cast<std::size_t>(r)], {{"dp", 2}, {"tp", 2}});
    mesh.comm("tp").all_reduce(Tensor::ones({4}));
    mesh.comm("dp").all_reduce(Tensor::ones({4}));
    return mesh;
  });
  const std::size_t after = open_files();
  for (auto& m : meshes) REQUIRE(m.ok());
  REQUIRE(after == before);
}

TEMPLATE_TEST_CASE("a group's deadline names the group and the missing rank as a parent rank",
                   "[collective]", RUCCL_GROUP_FACTORIES) {
  auto out = run_group_with(
      TestType::make, 4,
      [&](Communicator& comm) {
        const int r = comm.rank();
        Communicator tp = *comm.split(r / 2, r, "tp");
        if (r == 3) {  // never calls; stays alive past the others' deadline
          std::this_thread::sleep_for(std::chrono::milliseconds(600));
          return;
        }
        if (r == 2) {
          tp.all_reduce(Tensor::ones({4}), ReduceOperation::Sum,
                        CallOptions().with_timeout(std::chrono::milliseconds(200)));
        }
      },
      short_timeout());
  REQUIRE(out[0].ok());
  REQUIRE(out[1].ok());
  REQUIRE(out[3].ok());
  INFO(out[2].message());
  REQUIRE(error_kind(out[2]) == CollectiveErrorKind::Timeout);
  REQUIRE(contains(out[2].message(), "group tp of rank(s) [2, 3]: "));
  REQUIRE(contains(out[2].message(), "all_reduce (call #1)"));  // the group's call number
  REQUIRE(contains(out[2].message(), "waiting for a message from rank(s) [3]"));
  REQUIRE(error_ranks(out[2]) == std::vector<int>{1});  // the group's rank of parent rank 3
}
