// Mesh: row-major layout (last axis fastest), the communicator along each axis, coordinates and
// sizes, and its errors: a shape whose product is not the world size, an unknown axis, duplicate
// or empty names, a size below 1, and ranks that lay out different meshes.
#include <catch2/catch.hpp>

#include "collective/mesh.h"
#include "tests/collective/collective_test_support.h"
#include "tests/collective/error_capture.h"
#include "tests/support/rank_harness.h"

using namespace ruccl;
using namespace ruccl::testing;

namespace {

struct Layout {
  std::vector<int> coordinates;
  std::vector<std::int64_t> tp_members;  // parent ranks along tp, in group rank order
  std::vector<std::int64_t> dp_members;
  int tp_rank = -1;
  int dp_rank = -1;
};

std::vector<std::int64_t> members(Communicator& comm, int parent_rank) {
  return comm.all_gather(Tensor::from_vector<std::int64_t>({parent_rank}))
      .to_vector<std::int64_t>();
}

}  // namespace

TEST_CASE("a 2x3 mesh lays ranks out row-major, the last axis fastest", "[collective]") {
  auto out = run_group(
      6,
      [](Communicator& comm) {
        Mesh mesh(comm, {{"dp", 2}, {"tp", 3}});
        if (mesh.size("dp") != 2 || mesh.size("tp") != 3 || mesh.world().rank() != comm.rank() ||
            mesh.axis_names() != std::vector<std::string>{"dp", "tp"} ||
            mesh.shape() != std::vector<int>{2, 3}) {
          throw std::runtime_error("mesh sizes");
        }
        return Layout{mesh.coordinates(), members(mesh.comm("tp"), comm.rank()),
                      members(mesh.comm("dp"), comm.rank()), mesh.comm("tp").rank(),
                      mesh.comm("dp").rank()};
      },
      short_timeout());
  for (int r = 0; r < 6; ++r) {
    INFO("rank " << r);
    const Layout& l = out[static_cast<std::size_t>(r)].value();
    REQUIRE(l.coordinates == std::vector<int>{r / 3, r % 3});
    const std::int64_t row = r / 3 * 3;
    REQUIRE(l.tp_members == std::vector<std::int64_t>{row, row + 1, row + 2});
    REQUIRE(l.dp_members == std::vector<std::int64_t>{r % 3, r % 3 + 3});
    REQUIRE(l.tp_rank == r % 3);
    REQUIRE(l.dp_rank == r / 3);
  }
}

TEST_CASE("a three-axis mesh gives each axis its groups", "[collective]") {
  auto out = run_group(
      8,
      [](Communicator& comm) {
        Mesh mesh(comm, {{"pp", 2}, {"dp", 2}, {"tp", 2}});
        return std::vector<std::vector<std::int64_t>>{members(mesh.comm("pp"), comm.rank()),
                                                      members(mesh.comm("dp"), comm.rank()),
                                                      members(mesh.comm("tp"), comm.rank())};
      },
      short_timeout());
  for (std::int64_t r = 0; r < 8; ++r) {
    const auto& m = out[static_cast<std::size_t>(r)].value();
    REQUIRE(m[0] == std::vector<std::int64_t>{r % 4, r % 4 + 4});
    REQUIRE(m[1] == std::vector<std::int64_t>{r - (r / 2 % 2) * 2, r - (r / 2 % 2) * 2 + 2});
    REQUIRE(m[2] == std::vector<std::int64_t>{r - r % 2, r - r % 2 + 1});
  }
}

TEST_CASE("Mesh refuses shapes and axis names it cannot lay out, naming what it expected",
          "[collective]") {
  std::vector<Communicator> comms = InProcessGroup::create(1, {}, short_timeout());
  Communicator& c = comms[0];
  using Axes = std::vector<std::pair<std::string, int>>;
  auto message = [&](const Axes& axes) {
    try {
      Mesh mesh(c, axes);
    } catch (const CollectiveError& e) {
      REQUIRE(e.kind() == CollectiveErrorKind::InvalidArgument);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  REQUIRE(message({{"dp", 2}, {"tp", 2}}) ==
          "Mesh: expected axis sizes whose product is the world size 1, got [dp=2, tp=2]");
  REQUIRE(message({{"dp", 1}, {"dp", 1}}) ==
          "Mesh: expected distinct axis names, got \"dp\" twice in [dp=1, dp=1]");
  REQUIRE(message({{"dp", 0}}) == "Mesh: expected a positive size of axis dp, got 0");
  REQUIRE(message({{"", 1}}) == "Mesh: expected a name for axis 0, got \"\"");
  REQUIRE(message({}) == "Mesh: expected at least one axis, got none");
  Mesh mesh(c, {{"dp", 1}, {"tp", 1}});
  REQUIRE_THROWS_WITH(mesh.comm("pp"),
                      "Mesh::comm: expected an axis of the mesh (dp, tp), got \"pp\"");
  REQUIRE_THROWS_WITH(mesh.size("x"),
                      "Mesh::size: expected an axis of the mesh (dp, tp), got \"x\"");
  REQUIRE(mesh.comm("tp").world_size() == 1);
}

TEST_CASE("ranks that lay out different meshes fail together with ArgumentMismatch",
          "[collective]") {
  auto out = run_group(
      4,
      [](Communicator& comm) {
        if (comm.rank() == 0) {
          Mesh mesh(comm, {{"tp", 2}, {"dp", 2}});
        } else {
          Mesh mesh(comm, {{"dp", 2}, {"tp", 2}});
        }
      },
      short_timeout());
  for (int r = 0; r < 4; ++r) {
    INFO("rank " << r << ": " << out[static_cast<std::size_t>(r)].message());
    REQUIRE(error_kind(out[static_cast<std::size_t>(r)]) == CollectiveErrorKind::ArgumentMismatch);
    REQUIRE(contains(out[static_cast<std::size_t>(r)].message(), "mesh shape"));
  }
}
