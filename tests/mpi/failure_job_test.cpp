// Agreement, deadlines, abort and lost peers over MPI processes: every mismatch kind raised on
// every rank (never an MPI hang), a rank that never calls named by everyone's Timeout, an abort
// waking every rank with its reason, a destroyed communicator seen as PeerLost, a send facing a
// collective seen as CollectiveKindMismatch. Every process of the job runs these cases.
#include <atomic>
#include <chrono>
#include <thread>

#include "tests/mpi/mpi_job_support.h"

using namespace ruccl;
using namespace ruccl::testing::mpi_job;
using Kind = CollectiveErrorKind;
using namespace std::chrono_literals;

namespace {

Tensor f32(std::vector<float> v) { return Tensor::from_vector<float>(v); }

/// Runs `call` on this rank's group and requires `kind` here, then Aborted from the next call
/// (the group is finished on every rank).
template <typename Call>
CollectiveError provoke(Call call, Kind kind) {
  Communicator comm = world(10s);
  const CollectiveError e = require_error(kind, [&] { call(comm); });
  const CollectiveError after = require_error(Kind::Aborted, [&] { comm.barrier(); });
  REQUIRE(contains(after.what(), "finished after an earlier error"));
  return e;
}

}  // namespace

TEST_CASE("disagreeing collectives raise the matching error kind on every MPI process", "[mpi]") {
  const int last = job_size() - 1;
  SECTION("different collectives") {
    const CollectiveError e = provoke(
        [](Communicator& c) {
          if (c.rank() == 1)
            c.broadcast(f32({1}), 0);
          else
            c.all_reduce(f32({1}));
        },
        Kind::CollectiveKindMismatch);
    REQUIRE(e.ranks() == std::vector<int>{0, 1});
    REQUIRE(contains(e.what(), "rank 1 has called broadcast"));
  }
  SECTION("shapes") {
    const CollectiveError e = provoke(
        [](Communicator& c) {
          c.all_reduce(c.rank() == 0 ? f32({1, 2}) : f32({1, 2, 3}));
        },
        Kind::ShapeMismatch);
    REQUIRE(contains(e.what(), "rank 0 has [2], rank 1 has [3]"));
  }
  SECTION("dtypes") {
    provoke(
        [](Communicator& c) {
          c.all_reduce(Tensor::zeros({4}, c.rank() == 0 ? DType::F32 : DType::F64));
        },
        Kind::DTypeMismatch);
  }
  SECTION("reduce operations") {
    provoke(
        [&](Communicator& c) {
          c.all_reduce(f32({1}), c.rank() == last ? ReduceOperation::Max : ReduceOperation::Sum);
        },
        Kind::ReduceOperationMismatch);
  }
  SECTION("roots") {
    provoke([](Communicator& c) { c.broadcast(f32({1}), c.rank() == 0 ? 0 : 1); },
            Kind::RootMismatch);
  }
  SECTION("fingerprint words") {
    const CollectiveError e = provoke(
        [](Communicator& c) {
          c.all_gather(f32({1}),
                       CallOptions().with_word("axis", 1).with_word("requires_grad", c.rank()));
        },
        Kind::ArgumentMismatch);
    REQUIRE(contains(e.what(), "'requires_grad'"));
  }
  SECTION("no broadcast sender") {
    provoke([](Communicator& c) { c.broadcast_from_sender(std::nullopt); },
            Kind::NoBroadcastSender);
  }
  SECTION("several broadcast senders") {
    if (last < 2) return;  // needs three ranks: two senders and a receiver
    const CollectiveError e = provoke(
        [](Communicator& c) {
          c.broadcast_from_sender(c.rank() == 1 ? std::nullopt : std::optional<Tensor>(f32({1})));
        },
        Kind::SeveralBroadcastSenders);
    REQUIRE(e.ranks().front() == 0);
  }
  SECTION("an invalid argument on one rank") {
    const CollectiveError e =
        provoke([&](Communicator& c) { c.broadcast(f32({1}), c.rank() == last ? 99 : 0); },
                Kind::InvalidArgument);
    REQUIRE(e.ranks() == std::vector<int>{last});
  }
}

TEST_CASE("an MPI deadline that expires names the rank that never arrived", "[mpi]") {
  Communicator comm = world(10s);
  const int late = comm.world_size() - 1;
  if (comm.rank() == late) {
    std::this_thread::sleep_for(400ms);  // arrives after the others gave up
    const CollectiveError e = require_error(Kind::Aborted, [&] { comm.all_reduce(f32({1})); });
    REQUIRE(contains(e.what(), "timed out"));
    return;
  }
  const CollectiveError e = require_error(Kind::Timeout, [&] {
    comm.all_reduce(f32({1}), ReduceOperation::Sum, CallOptions().with_timeout(100ms));
  });
  REQUIRE(e.ranks() == std::vector<int>{late});
  REQUIRE(contains(e.what(), str("[", late, "]")));
  REQUIRE(contains(e.what(), "never arrived"));
}

TEST_CASE("an MPI abort wakes every waiting process within 100 ms with its reason", "[mpi]") {
  Communicator comm = world(20s);
  const int aborter = comm.world_size() - 1;
  using Clock = std::chrono::steady_clock;
  // Every rank learns when the abort happened from its own clock: the abort is announced by a
  // barrier first, then the aborter waits 150 ms (the others are blocked by then).
  comm.barrier();
  const auto start = Clock::now();
  if (comm.rank() == aborter) {
    std::this_thread::sleep_for(150ms);
    comm.abort("the operator pressed stop");
  }
  const CollectiveError e = require_error(Kind::Aborted, [&] { comm.all_reduce(f32({1})); });
  REQUIRE(contains(e.what(), "the operator pressed stop"));
  if (comm.rank() != aborter) {
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    INFO("woke after " << waited.count() << " ms (the abort came at 150 ms)");
    REQUIRE(waited < 250ms);  // 150 ms until the abort, then at most 100 ms
  }
}

TEST_CASE("a process whose MPI communicator is destroyed makes waiting peers fail with PeerLost",
          "[mpi]") {
  std::optional<Communicator> comm = world(10s);
  comm->barrier();
  MPI_Barrier(MPI_COMM_WORLD);  // every rank is out of the barrier before rank 0 leaves
  if (comm->rank() == 0) {
    comm.reset();  // leaves: its goodbye follows every message it sent
    return;
  }
  // From rank 0's goodbye, or from the notice of a peer that met it first.
  require_failure(Kind::PeerLost, "lost rank 0: it left the group",
                  [&] { comm->all_reduce(f32({1})); });
}

TEST_CASE("a send facing a collective on MPI is a CollectiveKindMismatch, not a wait", "[mpi]") {
  Communicator comm = world(10s);
  if (comm.rank() == 0) {
    // Returns (the transport copied the message), unless rank 1's notice of the mismatch
    // arrives while it finishes.
    const std::optional<CollectiveError> e = error_of([&] { comm.send(f32({1, 2, 3}), 1); });
    if (e) REQUIRE(e->kind() == Kind::CollectiveKindMismatch);
  } else {
    // Rank 1 meets rank 0's message where a record belongs ("can never match"), unless rank 0's
    // next call (a barrier facing the all_reduce) is found first: a mismatch either way, and
    // the others learn of it from a notice.
    const std::optional<CollectiveError> e = error_of([&] { comm.all_reduce(f32({1})); });
    REQUIRE(e.has_value());
    INFO(e->what());
    // Rank 1 is in the call when it finds the mismatch; a rank that learns of it before its call
    // begins gets Aborted naming it.
    if (comm.rank() == 1) REQUIRE(e->kind() == Kind::CollectiveKindMismatch);
    REQUIRE((e->kind() == Kind::CollectiveKindMismatch || e->kind() == Kind::Aborted));
    REQUIRE((contains(e->what(), "can never match") || contains(e->what(), "has called barrier")));
  }
  // Every rank's next call fails with that cause: rank 0's too, which left its send before the
  // mismatch was found (Aborted naming it, or the error itself when it is found in this call).
  const std::optional<CollectiveError> e = error_of([&] { comm.barrier(); });
  REQUIRE(e.has_value());
  INFO(e->what());
  REQUIRE((e->kind() == Kind::Aborted || e->kind() == Kind::CollectiveKindMismatch));
}

TEST_CASE("a receive from an MPI process that never sends times out naming it", "[mpi]") {
  Communicator comm = world(10s);
  if (comm.rank() == 1) {
    const CollectiveError e =
        require_error(Kind::Timeout, [&] { comm.recv(0, CallOptions().with_timeout(100ms)); });
    REQUIRE(e.ranks() == std::vector<int>{0});
  }
  if (comm.rank() == 0) std::this_thread::sleep_for(200ms);
  // Rank 1's timeout reaches everyone: as the cause of the finished group (Aborted), or as
  // the error itself when it arrives while the barrier waits.
  const std::optional<CollectiveError> e = error_of([&] { comm.barrier(); });
  REQUIRE(e.has_value());
  INFO(e->what());
  REQUIRE((e->kind() == Kind::Aborted || e->kind() == Kind::Timeout));
  REQUIRE(contains(e->what(), "rank 1 timed out after 100 ms"));
}
