// A rank that aborts or dies inside one group wakes, promptly, every rank of every group it
// belongs to and of the parent (and so every group of the family): in process and over TCP (with
// and without shared memory). Death is the fault injection's: in process the rank leaves the hub
// (FaultHooks::kill_rank), over TCP its connections are severed with no goodbye
// (TcpTransport::sever), as if its process died.
#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <thread>

#include "collective/mesh.h"
#include "collective/transport/in_process/in_process_transport.h"
#include "tests/collective/error_capture.h"
#include "tests/collective/group_factories.h"
#include "tests/support/rank_harness.h"

using namespace ruccl;
using namespace ruccl::testing;

namespace {

using Clock = std::chrono::steady_clock;

// A group whose ranks can be killed: comms[r], and kill(r) makes rank r dead to its peers.
struct KillableGroup {
  std::vector<Communicator> comms;
  std::function<void(int)> kill;
};

struct InProcessKillable {
  static KillableGroup make(int world, CommunicatorOptions options) {
    auto hub = std::make_shared<InProcessHub>(world);
    KillableGroup g;
    for (int r = 0; r < world; ++r) {
      g.comms.emplace_back(std::make_unique<InProcessTransport>(hub, r), Device::cpu(), options);
    }
    g.kill = [hub](int r) { hub->leave(r); };
    return g;
  }
};

template <bool kSharedMemory>
struct TcpKillable {
  static KillableGroup make(int world, CommunicatorOptions options) {
    TcpTransportOptions transport;
    if (!kSharedMemory) transport.shared_memory = SharedMemory::Off;
    std::vector<std::unique_ptr<TcpTransport>> transports =
        connect_tcp_loopback_transports(world, transport);
    KillableGroup g;
    std::vector<TcpTransport*> raw;
    for (auto& t : transports) {
      raw.push_back(t.get());
      g.comms.emplace_back(std::move(t), Device::cpu(), options);
    }
    g.kill = [raw](int r) { raw[static_cast<std::size_t>(r)]->sever(); };
    return g;
  }
};
using TcpKillableLoopback = TcpKillable<false>;
using TcpKillableSharedMemory = TcpKillable<true>;

struct Woken {
  Clock::time_point at;
  std::string message;
};

// On a 2x2 mesh: rank 3 aborts its "tp" group (or dies) 100 ms in, while rank 2 waits for it in
// "tp", rank 1 in "dp" and rank 0 in "tp" for rank 1 (which is busy in "dp"). Returns what the
// other ranks saw, and when rank 3 acted.
template <typename Group>
std::pair<std::vector<RankOutcome<Woken>>, Clock::time_point> fail_inside_a_group(bool abort) {
  CommunicatorOptions options;
  options.timeout = std::chrono::seconds(30);
  KillableGroup g = Group::make(4, options);
  Clock::time_point acted;
  auto out = run_ranks(4, [&](int r) -> Woken {
    Communicator parent = g.comms[static_cast<std::size_t>(r)];
    Mesh mesh(parent, {{"dp", 2}, {"tp", 2}});
    const Tensor x = Tensor::ones({1000});
    try {
      if (r == 3) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        acted = Clock::now();
        if (abort) {
          mesh.comm("tp").abort("stopping the tp group");
        } else {
          g.kill(3);
        }
        return Woken{acted, ""};
      }
      mesh.comm(r == 1 ? "dp" : "tp").all_reduce(x);
      mesh.comm(r == 1 ? "tp" : "dp").all_reduce(x);
      parent.barrier();
    } catch (const CollectiveError& e) {
      return Woken{Clock::now(), e.what()};
    }
    return Woken{Clock::now(), "no error"};
  });
  return {std::move(out), acted};
}

}  // namespace

TEMPLATE_TEST_CASE("a rank that aborts inside one group wakes every rank of the family promptly",
                   "[collective]", InProcessKillable, TcpKillableLoopback,
                   TcpKillableSharedMemory) {
  auto [out, acted] = fail_inside_a_group<TestType>(true);
  for (int r = 0; r < 3; ++r) {
    const Woken& w = out[static_cast<std::size_t>(r)].value();
    INFO("rank " << r << ": " << w.message);
    REQUIRE(contains(w.message, "stopping the tp group"));
    REQUIRE(contains(w.message, "group tp of rank(s) [2, 3]: rank 3 aborted"));
    // Promptly: well under the 30 s deadline (milliseconds here; 1 s leaves room for sanitizers).
    const double ms = std::chrono::duration<double, std::milli>(w.at - acted).count();
    WARN("rank " << r << " woke " << ms << " ms after the abort");
    REQUIRE(w.at - acted < std::chrono::seconds(1));
  }
}

TEMPLATE_TEST_CASE("a rank that dies inside one group wakes every rank of the family promptly",
                   "[collective]", InProcessKillable, TcpKillableLoopback,
                   TcpKillableSharedMemory) {
  auto [out, acted] = fail_inside_a_group<TestType>(false);
  for (int r = 0; r < 3; ++r) {
    const Woken& w = out[static_cast<std::size_t>(r)].value();
    INFO("rank " << r << ": " << w.message);
    REQUIRE(w.message != "no error");
    // Named by the rank that saw it die ("lost rank(s) [3]") or by its own ("rank 3").
    REQUIRE((contains(w.message, "rank(s) [3]") || contains(w.message, "rank 3")));
    const double ms = std::chrono::duration<double, std::milli>(w.at - acted).count();
    WARN("rank " << r << " woke " << ms << " ms after the death");
    REQUIRE(w.at - acted < std::chrono::seconds(1));
  }
}
