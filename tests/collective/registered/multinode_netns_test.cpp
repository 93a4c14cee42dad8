// Two "hosts" made of network namespaces joined by a veth pair (netns_pair.h: 10.77.0.1 and
// 10.77.0.2, made and deleted by each test): the registered session API with one node in each
// (the same bytes as on loopback), a node killed with SIGKILL (PeerLost on the other's peers in
// under a second), and the plain Communicator from the environment (RUCCL_* variables and
// RUCCL_SOCKET_IFNAME): a 16 MiB all_reduce, and kill -9 of the remote rank found in under 1 s.
// Where namespaces cannot be made (not root, no `ip`), each test WARNs why and stops.
#include <catch2/catch.hpp>

#include <map>
#include <memory>
#include <set>

#include "collective/store/store.h"
#include "tests/collective/netns_pair.h"
#include "tests/collective/node_process.h"

namespace ruccl {
namespace {

using testing::NetnsPair;
using testing::NodeProcess;

#define RUCCL_REQUIRE_NETNS(pair)                                                  \
  if (!(pair).available()) {                                                       \
    WARN("SKIPPED: two network namespaces cannot be made here: " << (pair).why()); \
    return;                                                                        \
  }

constexpr int kDevices = 2;

/// Node n (0: namespace a, 1: namespace b) of a two-node session, or on loopback when
/// `pair` is null (127.0.0.1 / 127.0.0.2).
std::unique_ptr<NodeProcess> session_node(const NetnsPair* pair, int n, const std::string& scenario,
                                          const std::string& global, std::uint16_t port) {
  std::vector<std::string> args;
  std::string host = str("127.0.0.", n + 1);
  if (pair != nullptr) {
    args = {"ip", "netns", "exec", n == 0 ? pair->a() : pair->b()};
    host = n == 0 ? pair->a_address() : pair->b_address();
  }
  for (const std::string& a :
       {std::string(RUCCL_MULTINODE_NODE), scenario, std::string("2"), global, host, str(port),
        str(kDevices), str(n * kDevices), str(2 * kDevices)}) {
    args.push_back(a);
  }
  return std::make_unique<NodeProcess>(args);
}

std::set<std::string> session_digests(const NetnsPair* pair) {
  std::string global = str(pair ? pair->a_address() : "127.0.0.1", ":29650");
  std::uint16_t port = 29651;
  if (pair == nullptr) {
    global = str("127.0.0.1:", testing::free_port_on("127.0.0.1"));
    port = testing::free_port_on("127.0.0.1");
  }
  std::unique_ptr<NodeProcess> nodes[2] = {session_node(pair, 0, "results", global, port),
                                           session_node(pair, 1, "results", global, port + 1)};
  std::set<std::string> digests;
  int peers = 0;
  for (auto& node : nodes) {
    const int code = node->wait(std::chrono::seconds(90));
    INFO(node->output());
    CHECK(code == 0);
    for (const std::string& line : testing::lines_with_prefix(node->output(), "peer ")) {
      CHECK(line.find(" ok ") != std::string::npos);
      digests.insert(line.substr(line.rfind(' ') + 1));
      ++peers;
    }
  }
  CHECK(peers == 2 * kDevices);
  return digests;
}

TEST_CASE("a registered session over two network namespaces gives the loopback bytes",
          "[collective][session][multinode][netns]") {
  NetnsPair pair;
  RUCCL_REQUIRE_NETNS(pair);
  const std::set<std::string> hosts = session_digests(&pair);
  CHECK(hosts.size() == 2);  // every peer alike, the reduce root also hashes its result
  CHECK(hosts == session_digests(nullptr));
}

TEST_CASE("a node killed with SIGKILL in another namespace fails the peers with PeerLost",
          "[collective][session][multinode][netns]") {
  NetnsPair pair;
  RUCCL_REQUIRE_NETNS(pair);
  const std::string global = pair.a_address() + ":29660";
  std::unique_ptr<NodeProcess> nodes[2] = {session_node(&pair, 0, "loop", global, 29661),
                                           session_node(&pair, 1, "loop", global, 29662)};
  for (auto& node : nodes) {
    INFO(node->output());
    REQUIRE(node->wait_output("started", std::chrono::seconds(60)));
  }
  const auto killed_at = std::chrono::steady_clock::now();
  nodes[1]->kill9();
  const int code = nodes[0]->wait(std::chrono::seconds(10));
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - killed_at)
                      .count();
  INFO(nodes[0]->output());
  CHECK(code == 3);
  CHECK(ms < 1000);
  const auto peers = testing::lines_with_prefix(nodes[0]->output(), "peer ");
  REQUIRE(peers.size() == kDevices);
  for (const std::string& line : peers) {
    CHECK(line.find(" error PeerLost ") != std::string::npos);
    CHECK(line.find("node 1") != std::string::npos);
  }
}

/// Rank r of a two-rank Communicator::from_env job, one rank per namespace, listening on the
/// address of the namespace's veth (RUCCL_SOCKET_IFNAME).
std::unique_ptr<NodeProcess> env_rank(const NetnsPair& pair, int r, const std::string& session,
                                      const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"ip", "netns", "exec", r == 0 ? pair.a() : pair.b(),
                                   RUCCL_TCP_WORKER};
  argv.insert(argv.end(), args.begin(), args.end());
  return std::make_unique<NodeProcess>(
      argv, std::vector<std::string>{
                str("RUCCL_RANK=", r), "RUCCL_WORLD_SIZE=2", "RUCCL_LOCAL_RANK=0",
                "RUCCL_LOCAL_WORLD_SIZE=1", str("RUCCL_NODE_RANK=", r), "RUCCL_NUM_NODES=2",
                "RUCCL_MASTER_ADDR=" + pair.a_address(), "RUCCL_MASTER_PORT=29670",
                "RUCCL_SESSION_ID=" + session,
                "RUCCL_SOCKET_IFNAME=" + (r == 0 ? pair.a_interface() : pair.b_interface())});
}

TEST_CASE("Communicator from_env across two network namespaces all-reduces 16 MiB",
          "[collective][tcp][multinode][netns]") {
  NetnsPair pair;
  RUCCL_REQUIRE_NETNS(pair);
  const std::string session = session_id_to_hex(random_session_id());
  const std::string floats = str(std::int64_t{4} << 20);  // 16 MiB of F32
  std::unique_ptr<NodeProcess> ranks[2] = {env_rank(pair, 0, session, {"sum", floats}),
                                           env_rank(pair, 1, session, {"sum", floats})};
  for (int r = 0; r < 2; ++r) {
    const int code = ranks[r]->wait(std::chrono::seconds(90));
    INFO(ranks[r]->output());
    CHECK(code == 0);
    CHECK(ranks[r]->output().find(str("ok rank ", r, " of 2")) != std::string::npos);
  }
}

TEST_CASE("kill -9 of the remote rank across namespaces fails the other within a second",
          "[collective][tcp][multinode][netns]") {
  NetnsPair pair;
  RUCCL_REQUIRE_NETNS(pair);
  const std::string session = session_id_to_hex(random_session_id());
  const std::string bytes = str(std::int64_t{16} << 20);
  std::unique_ptr<NodeProcess> ranks[2] = {env_rank(pair, 0, session, {"loop", bytes}),
                                           env_rank(pair, 1, session, {"loop", bytes})};
  for (auto& rank : ranks) {
    INFO(rank->output());
    REQUIRE(rank->wait_output("started", std::chrono::seconds(60)));
  }
  const auto killed_at = std::chrono::steady_clock::now();
  ranks[1]->kill9();
  const int code = ranks[0]->wait(std::chrono::seconds(10));
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - killed_at)
                      .count();
  const std::string out = ranks[0]->output();
  INFO(out);
  CHECK(code == 3);
  CHECK(ms < 1000);
  CHECK(out.find("error PeerLost") != std::string::npos);
  CHECK(out.find("rank 1") != std::string::npos);
}

}  // namespace
}  // namespace ruccl
