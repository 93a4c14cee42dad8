#pragma once
// The coverage table (tests/collective/coverage_table.h) on the groups of a mesh: every rank of a
// parent group (made by a GroupFactory, one thread per rank) builds Mesh(comm, axes) and runs the
// same calls on its communicator along one axis, all groups of that axis at once; the main thread
// then checks each rank's results against the closed forms for its group's size and its rank in
// the group (its coordinate on the axis), and that every input is unchanged.
#include <string>
#include <utility>
#include <vector>

#include "collective/mesh.h"
#include "tests/collective/coverage_table.h"

namespace ruccl::testing::coverage {

using Axes = std::vector<std::pair<std::string, int>>;

/// What one rank saw: its group's size and its rank there, and each call's outcome.
struct GroupRun {
  int world = 0;
  int rank = -1;
  int coordinate = -1;
  std::vector<CallResult> results;
};

inline int mesh_world(const Axes& axes) {
  int w = 1;
  for (const auto& axis : axes) w *= axis.second;
  return w;
}

/// Runs `calls` (blocking or all started asynchronously) on the groups along `axis` of a mesh of
/// `axes` over a parent made by `make`, and checks every rank's results.
inline void run_and_check_on_mesh(const GroupFactory& make, const Axes& axes,
                                  const std::string& axis, const std::vector<Call>& calls,
                                  CommunicatorOptions options = {}, Mode mode = Mode::Blocking) {
  const int parent_world = mesh_world(axes);
  auto out = run_group_with(
      make, parent_world,
      [&](Communicator& parent) {
        Mesh mesh(parent, axes);
        Communicator& comm = mesh.comm(axis);
        GroupRun run{comm.world_size(), comm.rank(), mesh.coordinate(axis), {}};
        run.results.resize(calls.size());
        std::vector<std::vector<Work>> works(calls.size());
        for (std::size_t k = 0; k < calls.size(); ++k) {
          const Call& c = calls[k];
          const Shape shape = input_shape(c, run.world);
          const Tensor in = laid_out(input_values(c, run.world, run.rank, shape.numel()), shape,
                                     c.dtype, c.layout);
          run.results[k].input = in;
          if (mode == Mode::Blocking) {
            run.results[k].outputs = run_call(comm, c, in);
          } else {
            works[k] = start_call(comm, c, in);
          }
        }
        for (std::size_t k = calls.size(); mode == Mode::Async && k-- > 0;) {
          run.results[k].outputs = finish_call(calls[k], works[k]);
        }
        return run;
      },
      options);
  int size = 0;
  for (const auto& a : axes) size = a.first == axis ? a.second : size;
  for (int r = 0; r < parent_world; ++r) {
    INFO("parent rank " << r << ", axis " << axis);
    const GroupRun& run = out[static_cast<std::size_t>(r)].value();
    REQUIRE(run.world == size);
    REQUIRE(run.rank == run.coordinate);
    REQUIRE(run.results.size() == calls.size());
    for (std::size_t k = 0; k < calls.size(); ++k) {
      const Call& c = calls[k];
      INFO("call " << k << ": " << describe(c));
      const Shape shape = input_shape(c, run.world);
      const CallValues values = call_values(c, run.world, shape.numel());
      const Outputs expected = expected_outputs(c, run.world, run.rank, values);
      const CallResult& got = run.results[k];
      REQUIRE(got.outputs.size() == expected.size());
      for (std::size_t i = 0; i < expected.size(); ++i) {
        REQUIRE(got.outputs[i].has_value() == expected[i].has_value());
        if (expected[i]) require_equal(*got.outputs[i], *expected[i]);
      }
      require_equal(got.input, tensor_of_ints(values.inputs[static_cast<std::size_t>(run.rank)],
                                              shape, c.dtype));
    }
  }
}

}  // namespace ruccl::testing::coverage
