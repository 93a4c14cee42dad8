// The registered session API over several nodes: one process per node (programs/multinode_node)
// on loopback, each node on its own loopback address (127.0.0.1, .2, .3) with its own
// data_service_port; node 0 (127.0.0.1) serves the store at global_address. Results are exact
// and bit-identical on every peer of every node and across runs; every mismatch between nodes
// (or inside one node) is the right error on every peer of every node; a node killed with
// SIGKILL fails every peer of the others with PeerLost.
#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <set>
#include <thread>

#include "collective/common/job_secret.h"
#include "collective/registered/register_peer.h"
#include "tests/collective/node_process.h"
#include "tests/support/rank_harness.h"

namespace ruccl {
namespace {

using testing::NodeProcess;

struct Cluster {
  int nodes;
  int devices;
  std::vector<std::string> hosts;
  std::vector<std::uint16_t> ports;
  std::string global;
};

Cluster loopback_cluster(int nodes, int devices) {
  Cluster c{nodes, devices, {}, {}, ""};
  for (int n = 0; n < nodes; ++n) {
    c.hosts.push_back(str("127.0.0.", n + 1));
    c.ports.push_back(testing::free_port_on(c.hosts.back()));
  }
  c.global = str("127.0.0.1:", testing::free_port_on("127.0.0.1"));
  return c;
}

/// Starts every node (node `odd_node` gets the "odd" argument).
std::vector<std::unique_ptr<NodeProcess>> start(const Cluster& c, const std::string& scenario,
                                                int odd_node = -1,
                                                const std::vector<std::string>& prefix = {},
                                                const std::vector<std::string>& env = {}) {
  std::vector<std::unique_ptr<NodeProcess>> procs;
  for (int n = 0; n < c.nodes; ++n) {
    std::vector<std::string> args = prefix.empty()
                                        ? std::vector<std::string>{}
                                        : std::vector<std::string>(prefix.begin(), prefix.end());
    for (const std::string& a :
         {std::string(RUCCL_MULTINODE_NODE), scenario, str(c.nodes), c.global,
          c.hosts[static_cast<std::size_t>(n)], str(c.ports[static_cast<std::size_t>(n)]),
          str(c.devices), str(n * c.devices), str(c.nodes * c.devices)}) {
      args.push_back(a);
    }
    if (n == odd_node) args.push_back("odd");
    procs.push_back(std::make_unique<NodeProcess>(args, env));
  }
  return procs;
}

/// Every peer's line, after every node ended (PeerId -> line).
std::map<int, std::string> peer_lines(std::vector<std::unique_ptr<NodeProcess>>& procs) {
  std::map<int, std::string> lines;
  for (auto& p : procs) {
    const int code = p->wait(std::chrono::seconds(90));
    INFO(p->output());
    REQUIRE(code >= 0);
    for (const std::string& line : testing::lines_with_prefix(p->output(), "peer ")) {
      lines[std::stoi(line.substr(5))] = line;
    }
  }
  return lines;
}

std::string digest_of(const std::string& line) {
  const std::size_t at = line.find(" ok ");
  return at == std::string::npos ? "" : line.substr(at + 4);
}

void check_results(int nodes, int devices, std::set<std::string>& digests,
                   const std::string& scenario = "results",
                   const std::vector<std::string>& env = {}) {
  const Cluster c = loopback_cluster(nodes, devices);
  auto procs = start(c, scenario, -1, {}, env);
  const auto lines = peer_lines(procs);
  REQUIRE(static_cast<int>(lines.size()) == nodes * devices);
  for (const auto& [peer, line] : lines) {
    INFO(line);
    CHECK(line.find(" ok ") != std::string::npos);
    digests.insert(digest_of(line));
  }
}

CollectiveConfig one_node(int devices, const std::string& global, std::uint16_t port) {
  return CollectiveConfig()
      .with_num_devices(devices)
      .with_num_nodes(1)
      .with_global_address(global)
      .with_node_address("127.0.0.1")
      .with_data_service_port(port)
      .with_timeout(std::chrono::seconds(20));
}

TEST_CASE("a one-node global level runs in one process session after session",
          "[collective][session][multinode]") {
  const std::string global = str("127.0.0.1:", testing::free_port_on("127.0.0.1"));
  for (int session = 0; session < 3; ++session) {
    const CollectiveConfig config =
        one_node(3, global, testing::free_port_on("127.0.0.1"))
            .with_global_all_reduce_strategy(session == 1 ? Strategy::tree(2) : Strategy::ring());
    auto out = testing::run_ranks(3, [&](int r) {
      const PeerId id(static_cast<std::uint32_t>(5 + r));
      register_peer(id, Device::cpu(), config);
      const Tensor t = Tensor::full(Shape{7}, r + 1.0, DType::F64);
      std::vector<double> got = all_reduce(id, t, ReduceOperation::Mean).to_vector<double>();
      const std::optional<Tensor> sum = reduce(id, t, ReduceOperation::Sum, PeerId(6));
      if (sum) {
        for (const double v : sum->to_vector<double>()) got.push_back(v);
      }
      finish_collective(id);
      return got;
    });
    for (int r = 0; r < 3; ++r) {
      INFO("session " << session << " peer " << r << ": "
                      << out[static_cast<std::size_t>(r)].message());
      REQUIRE(out[static_cast<std::size_t>(r)].ok());
      std::vector<double> want(7, 2.0);
      if (r == 1) want.insert(want.end(), 7, 6.0);  // PeerId 6 is the reduce root
      CHECK(out[static_cast<std::size_t>(r)].value() == want);
    }
  }
}

TEST_CASE("a global store nobody serves makes registration time out naming its address",
          "[collective][session][multinode]") {
  const std::string global = str("127.0.0.1:", testing::free_port_on("127.0.0.1"));
  // node_address 127.0.0.2 is not global_address's host: this node only connects.
  const CollectiveConfig config = one_node(2, global, testing::free_port_on("127.0.0.2"))
                                      .with_node_address("127.0.0.2")
                                      .with_timeout(std::chrono::milliseconds(300));
  auto out = testing::run_ranks(2, [&](int r) {
    register_peer(PeerId(static_cast<std::uint32_t>(r)), Device::cpu(), config);
  });
  for (const auto& o : out) {
    INFO(o.message());
    CHECK(testing::error_kind(o) == CollectiveErrorKind::Timeout);
    CHECK(o.message().find(global) != std::string::npos);
  }
  reset_collective();
}

TEST_CASE("a node that never comes makes registration time out on every peer",
          "[collective][session][multinode]") {
  const std::string global = str("127.0.0.1:", testing::free_port_on("127.0.0.1"));
  const CollectiveConfig config = one_node(2, global, testing::free_port_on("127.0.0.1"))
                                      .with_num_nodes(2)
                                      .with_timeout(std::chrono::milliseconds(300));
  auto out = testing::run_ranks(2, [&](int r) {
    register_peer(PeerId(static_cast<std::uint32_t>(r)), Device::cpu(), config);
  });
  for (const auto& o : out) {
    INFO(o.message());
    CHECK(testing::error_kind(o) == CollectiveErrorKind::Timeout);
    CHECK(o.message().find("waiting for 2 nodes") != std::string::npos);
  }
  reset_collective();
}

TEST_CASE("reset_collective while the nodes meet fails every registering peer with Aborted",
          "[collective][session][multinode]") {
  const std::string global = str("127.0.0.1:", testing::free_port_on("127.0.0.1"));
  const CollectiveConfig config =
      one_node(2, global, testing::free_port_on("127.0.0.1")).with_num_nodes(2);
  const auto started = std::chrono::steady_clock::now();
  std::thread resetter([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    reset_collective();
  });
  auto out = testing::run_ranks(2, [&](int r) {
    register_peer(PeerId(static_cast<std::uint32_t>(r)), Device::cpu(), config);
  });
  resetter.join();
  for (const auto& o : out) {
    INFO(o.message());
    CHECK(testing::error_kind(o) == CollectiveErrorKind::Aborted);
  }
  // Well before the 20 s registration deadline.
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(5));
}

TEST_CASE("registered sessions over two and three node processes give exact results on every peer",
          "[collective][session][multinode]") {
  std::set<std::string> two;
  check_results(2, 2, two);
  // Every peer of every node holds the same bytes except the reduce root (it also hashes the
  // reduce result), so at most two digests.
  INFO(two.size());
  CHECK(two.size() == 2);
  // The same job again (other ports, other arrival order): the same bytes.
  std::set<std::string> again;
  check_results(2, 2, again);
  CHECK(again == two);
  std::set<std::string> three;
  check_results(3, 2, three);
  CHECK(three.size() == 2);
  std::set<std::string> single_device;
  check_results(3, 1, single_device);
  CHECK(single_device.size() == 2);
}

TEST_CASE(
    "registered sessions over node processes with a job secret, and with RUCCL_INTEGRITY=mac, "
    "give the bytes of a job without",
    "[collective][session][multinode][security]") {
  std::set<std::string> plain;
  check_results(2, 2, plain);
  const std::string secret = "RUCCL_JOB_SECRET=" + job_secret_to_hex(random_job_secret());
  std::set<std::string> with_secret;
  check_results(2, 2, with_secret, "results", {secret});
  CHECK(with_secret == plain);
  std::set<std::string> mac;
  check_results(2, 2, mac, "results", {secret, "RUCCL_INTEGRITY=mac"});
  CHECK(mac == plain);
}

TEST_CASE("every global strategy gives the same bytes over three node processes",
          "[collective][session][multinode]") {
  std::set<std::string> automatic;
  check_results(3, 2, automatic);
  for (const char* scenario : {"results_ring", "results_tree", "results_centralized"}) {
    std::set<std::string> digests;
    check_results(3, 2, digests, scenario);
    INFO(scenario);
    CHECK(digests == automatic);
  }
}

TEST_CASE(
    "a mismatch between nodes or inside one node fails every peer of every node with its kind",
    "[collective][session][multinode]") {
  const std::pair<const char*, const char*> cases[] = {
      {"shape", "ShapeMismatch"},
      {"local_shape", "ShapeMismatch"},
      {"dtype", "DTypeMismatch"},
      {"op", "ReduceOperationMismatch"},
      {"kind", "CollectiveKindMismatch"},
      {"config", "RegistrationParamsMismatch"},
      {"no_sender", "NoBroadcastSender"},
      {"two_senders", "SeveralBroadcastSenders"},
      {"local_two_senders", "SeveralBroadcastSenders"},
      {"bad_root", "InvalidArgument"},
      {"int_mean", "InvalidArgument"},
  };
  // The odd node is the one serving the store (whose process may end first) or the other.
  for (const int odd : {1, 0}) {
    for (const auto& [scenario, kind] : cases) {
      const Cluster c = loopback_cluster(2, 2);
      auto procs = start(c, scenario, odd);
      const auto lines = peer_lines(procs);
      REQUIRE(lines.size() == 4);
      for (const auto& [peer, line] : lines) {
        INFO(scenario << " (odd node " << odd << "): " << line);
        CHECK(line.find(str(" error ", kind, " ")) != std::string::npos);
      }
    }
  }
}

TEST_CASE("a node killed with SIGKILL fails every peer of the other nodes with PeerLost",
          "[collective][session][multinode]") {
  const Cluster c = loopback_cluster(3, 2);
  auto procs = start(c, "loop");
  for (auto& p : procs) {
    INFO(p->output());
    REQUIRE(p->wait_output("started", std::chrono::seconds(60)));
  }
  const auto killed_at = std::chrono::steady_clock::now();
  procs[2]->kill9();
  for (int n = 0; n < 2; ++n) {
    const int code = procs[static_cast<std::size_t>(n)]->wait(std::chrono::seconds(10));
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - killed_at)
                        .count();
    const std::string out = procs[static_cast<std::size_t>(n)]->output();
    INFO(out);
    CHECK(code == 3);
    CHECK(ms < 1000);
    const auto peers = testing::lines_with_prefix(out, "peer ");
    REQUIRE(peers.size() == 2);
    for (const std::string& line : peers) {
      INFO(line);
      CHECK(line.find(" error PeerLost ") != std::string::npos);
      CHECK(line.find("node 2") != std::string::npos);
    }
  }
}

}  // namespace
}  // namespace ruccl
