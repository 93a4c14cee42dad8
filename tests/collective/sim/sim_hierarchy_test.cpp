// HostHierarchy in the simulated world: 64 ranks on the cluster model's 8-rank hosts, host id =
// the model's host. Exact integer sums, the same bits on every rank, and, in virtual time, a
// small all_reduce faster host by host than the flat Auto (the one-leader hierarchy's case:
// docs/performance.md, "Hierarchical collectives").
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "collective/host_hierarchy.h"
#include "tests/collective/sim/sim_factory.h"
#include "tests/support/rank_harness.h"

using namespace ruccl;
using namespace ruccl::testing;

TEST_CASE(
    "HostHierarchy over 64 simulated ranks on 8 hosts: exact, the same bits everywhere, "
    "and a 4 KiB all_reduce faster than the flat one",
    "[sim]") {
  constexpr int kWorld = 64;
  const LinkModel model = LinkModel::cluster();
  CommunicatorOptions options;
  options.timeout = std::chrono::seconds(120);  // a hang fails the test instead of stalling CI
  options.determinism = Determinism::PerAlgorithm;
  SimGroup group = SimGroup::create(kWorld, model, SimMode::Checking, options);
  struct Out {
    std::vector<std::int64_t> ints;
    std::vector<float> floats;
    double flat_s, hier_s;
  };
  auto out = run_ranks(kWorld, [&](int r) {
    Communicator comm = std::move(group.communicators[static_cast<std::size_t>(r)]);
    HostHierarchy h(comm, model.host_of(r));
    if (h.num_hosts() != 8 || h.host().world_size() != 8) throw std::runtime_error("layout");
    Out o;
    o.ints =
        h.all_reduce(Tensor::from_vector<std::int64_t>({r, 1}, Shape{2})).to_vector<std::int64_t>();
    std::vector<float> f(1024);
    for (std::size_t i = 0; i < f.size(); ++i) f[i] = 1.0f / static_cast<float>(1 + r + i);
    const Tensor t = Tensor::from_vector<float>(f, Shape{1024});
    comm.barrier();
    double t0 = group.clock(r);
    comm.all_reduce(t);
    o.flat_s = group.clock(r) - t0;
    comm.barrier();
    t0 = group.clock(r);
    o.floats = h.all_reduce(t).to_vector<float>();
    o.hier_s = group.clock(r) - t0;
    return o;
  });
  double flat = 0, hier = 0;
  for (int r = 0; r < kWorld; ++r) {
    INFO("rank " << r);
    const Out& o = out[static_cast<std::size_t>(r)].value();
    CHECK(o.ints == std::vector<std::int64_t>{kWorld * (kWorld - 1) / 2, kWorld});
    CHECK(o.floats == out[0].value().floats);
    flat = std::max(flat, o.flat_s);
    hier = std::max(hier, o.hier_s);
  }
  INFO("flat " << flat * 1e6 << " us, hierarchical " << hier * 1e6 << " us (virtual)");
  CHECK(hier < flat);
}
