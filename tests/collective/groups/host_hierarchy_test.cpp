// HostHierarchy over a declared host layout (threads of one process, and TCP with shared memory
// between the ranks): hierarchical all_reduce, broadcast and reduce give the same bits on every
// rank, integer sums exactly the flat all_reduce's, floating sums within rounding of it; and its
// errors (a communicator without Determinism::PerAlgorithm, a negative host id, Mean of integers).
#include <catch2/catch.hpp>

#include <cmath>

#include "collective/host_hierarchy.h"
#include "tests/collective/collective_test_support.h"
#include "tests/collective/error_capture.h"
#include "tests/collective/group_factories.h"
#include "tests/support/rank_harness.h"

using namespace ruccl;
using namespace ruccl::testing;

namespace {

// Six ranks on three hosts of uneven sizes, the ids neither dense nor in rank order: hosts
// {0, 2}, {1, 3, 4}, {5}.
constexpr int kWorld = 6;
const int kHostId[kWorld] = {7, 3, 7, 3, 3, 11};

CommunicatorOptions per_algorithm() {
  CommunicatorOptions o = short_timeout();
  o.determinism = Determinism::PerAlgorithm;
  return o;
}

struct Results {
  std::vector<std::int64_t> int_sum, int_flat;
  std::vector<float> f32_sum, f32_flat;
  std::vector<double> f64_mean, f64_max, bcast, bcast_from_leader;
  std::optional<std::vector<double>> reduced, reduced_at_leader;
  int hosts = 0, host_size = 0, host_of_5 = -1;
  bool leader = false;
};

Results exercise(Communicator& comm) {
  const int r = comm.rank();
  HostHierarchy h(comm, kHostId[r]);
  Results out;
  out.hosts = h.num_hosts();
  out.host_size = h.host().world_size();
  out.host_of_5 = h.host_of(5);
  out.leader = h.is_leader();
  const Tensor ints = Tensor::from_vector<std::int64_t>(
      {(std::int64_t{1} << 40) + r, -3 * r, r * r, 0, 1}, Shape{5});
  out.int_sum = h.all_reduce(ints).to_vector<std::int64_t>();
  out.int_flat = comm.all_reduce(ints).to_vector<std::int64_t>();
  std::vector<float> f(37);
  for (std::size_t i = 0; i < f.size(); ++i) f[i] = std::sin(0.37f * i + 1.3f * r) * (1 + r);
  const Tensor floats = Tensor::from_vector<float>(f, Shape{37});
  out.f32_sum = h.all_reduce(floats).to_vector<float>();
  out.f32_flat = comm.all_reduce(floats).to_vector<float>();
  const Tensor d = Tensor::from_vector<double>({r + 0.5, -2.0 * r, 1.0}, Shape{3});
  out.f64_mean = h.all_reduce(d, ReduceOperation::Mean).to_vector<double>();
  out.f64_max = h.all_reduce(d, ReduceOperation::Max).to_vector<double>();
  // Root 3 is not its host's leader (rank 1 is).
  out.bcast = h.broadcast(r == 3 ? d : Tensor::zeros({3}, DType::F64), 3).to_vector<double>();
  // Root 1 leads its host {1, 3, 4}.
  out.bcast_from_leader =
      h.broadcast(r == 1 ? d : Tensor::zeros({3}, DType::F64), 1).to_vector<double>();
  if (auto v = h.reduce(d, 4, ReduceOperation::Sum)) out.reduced = v->to_vector<double>();
  if (auto v = h.reduce(d, 1, ReduceOperation::Max)) out.reduced_at_leader = v->to_vector<double>();
  return out;
}

}  // namespace

TEMPLATE_TEST_CASE(
    "HostHierarchy folds host by host: the same bits on every rank, integer sums "
    "exact, floating sums within rounding of the flat all_reduce",
    "[collective]", InProcess, TcpSharedMemory) {
  auto out = run_group_with(TestType::make, kWorld, exercise, per_algorithm());
  const Results& first = out[0].value();
  for (int r = 0; r < kWorld; ++r) {
    INFO(TestType::kName << ", rank " << r);
    const Results& got = out[static_cast<std::size_t>(r)].value();
    CHECK(got.hosts == 3);
    CHECK(got.host_size == (kHostId[r] == 3 ? 3 : kHostId[r] == 7 ? 2 : 1));
    CHECK(got.host_of_5 == 2);
    CHECK(got.leader == (r == 0 || r == 1 || r == 5));
    CHECK(got.int_sum == got.int_flat);  // integer sums: exact whatever the order
    CHECK(got.int_sum[0] == 6 * (std::int64_t{1} << 40) + 15);
    CHECK(got.f32_sum == first.f32_sum);  // bit-identical on every rank
    for (std::size_t i = 0; i < got.f32_sum.size(); ++i) {
      CHECK(std::fabs(got.f32_sum[i] - got.f32_flat[i]) <=
            1e-5f * (1 + std::fabs(got.f32_flat[i])));
    }
    CHECK(got.f64_mean == first.f64_mean);
    CHECK(got.f64_mean[0] == Approx((0.5 + 1.5 + 2.5 + 3.5 + 4.5 + 5.5) / 6));
    CHECK(got.f64_mean[2] == Approx(1.0));
    CHECK(got.f64_max == std::vector<double>{5.5, 0.0, 1.0});
    CHECK(got.bcast == std::vector<double>{3.5, -6.0, 1.0});
    CHECK(got.bcast_from_leader == std::vector<double>{1.5, -2.0, 1.0});
    CHECK(got.reduced_at_leader.has_value() == (r == 1));
    if (got.reduced_at_leader) CHECK(*got.reduced_at_leader == std::vector<double>{5.5, 0.0, 1.0});
    CHECK(got.reduced.has_value() == (r == 4));
    if (got.reduced) CHECK(*got.reduced == std::vector<double>{18.0, -30.0, 6.0});
  }
}

TEST_CASE("HostHierarchy with every rank on its own host or all on one gives the flat sums",
          "[collective]") {
  for (const bool one_host : {false, true}) {
    auto out = run_group(
        4,
        [&](Communicator& comm) {
          HostHierarchy h(comm, one_host ? 0 : comm.rank());
          const Tensor t = Tensor::from_vector<std::int32_t>({comm.rank(), 1}, Shape{2});
          return std::pair(h.num_hosts(), h.all_reduce(t).to_vector<std::int32_t>());
        },
        per_algorithm());
    for (auto& o : out) {
      CHECK(o.value().first == (one_host ? 1 : 4));
      CHECK(o.value().second == std::vector<std::int32_t>{6, 4});
    }
  }
}

TEST_CASE("HostHierarchy's errors reach every rank", "[collective]") {
  SECTION("a communicator without Determinism::PerAlgorithm") {
    auto out = run_group(
        3, [](Communicator& comm) { HostHierarchy h(comm, 0); }, short_timeout());
    for (auto& o : out) {
      const CollectiveError e = error_of([&] { o.value(); });
      CHECK(e.kind() == CollectiveErrorKind::InvalidArgument);
      CHECK(contains(e.what(), "expected a communicator made with Determinism::PerAlgorithm"));
    }
  }
  SECTION("a negative host id") {
    auto out = run_group(
        3, [](Communicator& comm) { HostHierarchy h(comm, comm.rank() == 2 ? -1 : 0); },
        per_algorithm());
    for (auto& o : out) {
      const CollectiveError e = error_of([&] { o.value(); });
      CHECK(e.kind() == CollectiveErrorKind::InvalidArgument);
      CHECK(contains(e.what(), "expected a non-negative host id on every rank, got -1 on rank 2"));
    }
  }
  SECTION("Mean of integers") {
    auto out = run_group(
        4,
        [](Communicator& comm) {
          HostHierarchy h(comm, comm.rank() / 2);
          h.all_reduce(Tensor::ones({2}, DType::I32), ReduceOperation::Mean);
        },
        per_algorithm());
    for (auto& o : out) {
      REQUIRE(error_kind(o) == CollectiveErrorKind::InvalidArgument);
      CHECK(contains(o.message(), "Mean"));
    }
  }
}
