// One node of a multi-node registered-session test
// (tests/collective/registered/multinode_session_test.cpp starts one per node). It registers
// DEVICES peers (threads) with PeerIds FIRST .. FIRST+DEVICES-1 and the node's global config, runs
// one scenario on each and prints one line per peer:
//   "peer <id> ok <digest>"               the scenario passed its own exact checks; <digest>: an
//                                          FNV-1a hash of every result's bytes
//   "peer <id> error <Kind> <message>"    a CollectiveError
// Exit status 0 when every peer is ok, 3 otherwise.
//
//   multinode_node SCENARIO NODES GLOBAL_ADDR NODE_ADDR PORT DEVICES FIRST TOTAL [odd]
//
// PeerIds over all nodes are 0 .. TOTAL-1; peer p contributes (p + 1) * (i % 7 + 1) at index i.
// Scenarios: results[_ring|_tree|_centralized] (global strategies; Sum/Mean/Prod/Max in F32, F64
// and I64, a large ring all_reduce, reduce to peer TOTAL-1, broadcast from peer 0, each checked in
// closed form), loop (all_reduce 4 MiB until an error; "started" once), and mismatches where a node
// given `odd` differs: shape, dtype, op, kind, config, no_sender, two_senders, bad_root (and
// local_shape, local_two_senders, int_mean: inside the odd node).
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "collective/common/collective_error.h"
#include "collective/common/hash.h"
#include "collective/registered/register_peer.h"
#include "tensor/core/error.h"

namespace {

using namespace ruccl;

struct Args {
  std::string scenario, global_address, node_address;
  int nodes = 0, devices = 0, first = 0, total = 0;
  std::uint16_t port = 0;
  bool odd = false;
};

std::uint64_t fnv(std::uint64_t h, const Tensor& t) {
  const Tensor c = t.contiguous();
  const auto* bytes = static_cast<const unsigned char*>(c.data_ptr());
  const std::size_t n = static_cast<std::size_t>(c.numel()) * dtype_size(c.dtype());
  return fnv1a64(std::string_view(reinterpret_cast<const char*>(bytes), n), h);
}

Tensor contribution(int peer, std::int64_t n, DType dtype) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = (peer + 1.0) * (i % 7 + 1);
  return Tensor::from_vector<double>(v, Shape{n}, Device::cpu()).to(dtype);
}

void expect(const Tensor& got, const std::vector<double>& want, const char* what) {
  const std::vector<double> g = got.to(DType::F64).to_vector<double>();
  if (g.size() != want.size()) throw Error(str(what, ": expected ", want.size(), " elements"));
  for (std::size_t i = 0; i < g.size(); ++i) {
    if (g[i] != want[i]) {
      throw Error(str(what, ": index ", i, ": expected ", want[i], ", got ", g[i]));
    }
  }
}

// The exact value of `op` over peers 0..T-1 at index i: sum_p (p+1) * k = k * T(T+1)/2, etc.
std::vector<double> closed_form(const std::string& op, int total, std::int64_t n) {
  std::vector<double> out(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const double k = static_cast<double>(i % 7 + 1);
    double v = 0;
    if (op == "sum") v = k * total * (total + 1) / 2.0;
    if (op == "mean") v = k * (total + 1) / 2.0;
    if (op == "max") v = k * total;
    if (op == "prod") {
      v = 1;
      for (int p = 1; p <= total; ++p) v *= p * k;
    }
    out[static_cast<std::size_t>(i)] = v;
  }
  return out;
}

std::uint64_t run_results(const Args& a, PeerId id) {
  const int p = static_cast<int>(id.value);
  std::uint64_t h = kFnv1a64Basis;
  for (const DType dtype : {DType::F32, DType::F64, DType::I64}) {
    const Tensor t = contribution(p, 33, dtype);
    Tensor sum = all_reduce(id, t, ReduceOperation::Sum);
    expect(sum, closed_form("sum", a.total, 33), "all_reduce Sum");
    Tensor max = all_reduce(id, t, ReduceOperation::Max);
    expect(max, closed_form("max", a.total, 33), "all_reduce Max");
    h = fnv(fnv(h, sum), max);
    if (dtype != DType::I64) {
      Tensor mean = all_reduce(id, t, ReduceOperation::Mean);
      expect(mean, closed_form("mean", a.total, 33), "all_reduce Mean");
      h = fnv(h, mean);
    }
  }
  const Tensor small = contribution(p, 5, DType::F64);
  Tensor prod = all_reduce(id, small, ReduceOperation::Prod);
  expect(prod, closed_form("prod", a.total, 5), "all_reduce Prod");
  // Large enough for the ring's several chunks and segments over TCP (1 MiB of F32).
  const Tensor big = contribution(p, std::int64_t{1} << 18, DType::F32);
  Tensor big_sum = all_reduce(id, big, ReduceOperation::Sum);
  expect(big_sum, closed_form("sum", a.total, std::int64_t{1} << 18), "large all_reduce Sum");
  h = fnv(fnv(h, prod), big_sum);
  const PeerId root(static_cast<std::uint32_t>(a.total - 1));
  std::optional<Tensor> red =
      reduce(id, contribution(p, 9, DType::F32), ReduceOperation::Mean, root);
  if ((id == root) != red.has_value()) throw Error("reduce: only the root gets a result");
  if (red) {
    expect(*red, closed_form("mean", a.total, 9), "reduce Mean");
    h = fnv(h, *red);
  }
  const std::optional<Tensor> mine =
      p == 0 ? std::optional<Tensor>(contribution(41, 11, DType::I64)) : std::nullopt;
  Tensor got = broadcast(id, mine);
  expect(got, contribution(41, 11, DType::I64).to(DType::F64).to_vector<double>(), "broadcast");
  return fnv(h, got);
}

void run_scenario(const Args& a, PeerId id) {
  const int p = static_cast<int>(id.value);
  const std::string& s = a.scenario;
  const Tensor t = contribution(p, 16, DType::F32);
  if (s == "shape")
    all_reduce(id, a.odd ? contribution(p, 17, DType::F32) : t, ReduceOperation::Sum);
  if (s == "dtype") all_reduce(id, a.odd ? t.to(DType::F64) : t, ReduceOperation::Sum);
  if (s == "op") all_reduce(id, t, a.odd ? ReduceOperation::Mean : ReduceOperation::Sum);
  if (s == "kind") {
    if (a.odd) {
      broadcast(id, p == 0 ? std::optional<Tensor>(t) : std::nullopt);
    } else {
      all_reduce(id, t, ReduceOperation::Sum);
    }
  }
  if (s == "no_sender") broadcast(id, std::nullopt);
  if (s == "two_senders") {
    broadcast(id, p == a.first ? std::optional<Tensor>(t) : std::nullopt);  // one per node
  }
  if (s == "local_shape") {
    all_reduce(id, a.odd && p == a.first + 1 ? contribution(p, 17, DType::F32) : t,
               ReduceOperation::Sum);
  }
  if (s == "local_two_senders") broadcast(id, a.odd ? std::optional<Tensor>(t) : std::nullopt);
  if (s == "int_mean") all_reduce(id, a.odd ? t.to(DType::I32) : t, ReduceOperation::Mean);
  if (s == "bad_root") reduce(id, t, ReduceOperation::Sum, PeerId(1000));
  if (s == "loop") {
    const Tensor big = Tensor::ones(Shape{std::int64_t{1} << 20}, DType::F32);
    for (long long i = 0;; ++i) {
      all_reduce(id, big, ReduceOperation::Sum);
      if (i == 0 && p == a.first) {
        std::printf("started\n");
        std::fflush(stdout);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace ruccl;
  if (argc < 9) {
    std::fprintf(stderr,
                 "usage: multinode_node SCENARIO NODES GLOBAL NODE_ADDR PORT DEVICES "
                 "FIRST TOTAL [odd]\n");
    return 2;
  }
  Args a;
  a.scenario = argv[1];
  a.nodes = std::atoi(argv[2]);
  a.global_address = argv[3];
  a.node_address = argv[4];
  a.port = static_cast<std::uint16_t>(std::atoi(argv[5]));
  a.devices = std::atoi(argv[6]);
  a.first = std::atoi(argv[7]);
  a.total = std::atoi(argv[8]);
  a.odd = argc > 9 && std::string(argv[9]) == "odd";
  CollectiveConfig config = CollectiveConfig()
                                .with_num_devices(a.devices)
                                .with_num_nodes(a.nodes)
                                .with_global_address(a.global_address)
                                .with_node_address(a.node_address)
                                .with_data_service_port(a.port)
                                .with_timeout(std::chrono::seconds(30));
  // results_ring, results_tree, results_centralized: every global strategy set to that one.
  const std::map<std::string, Strategy> strategies = {
      {"results_ring", Strategy::ring()},
      {"results_tree", Strategy::tree(2)},
      {"results_centralized", Strategy::centralized()}};
  if (const auto it = strategies.find(a.scenario); it != strategies.end()) {
    config = config.with_global_all_reduce_strategy(it->second)
                 .with_global_reduce_strategy(it->second)
                 .with_global_broadcast_strategy(it->second);
  }
  if (a.scenario == "config" && a.odd)
    config = config.with_global_all_reduce_strategy(Strategy::tree(3));
  std::mutex mutex;
  std::vector<std::string> lines(static_cast<std::size_t>(a.devices));
  std::vector<std::thread> threads;
  for (int d = 0; d < a.devices; ++d) {
    threads.emplace_back([&, d] {
      const PeerId id(static_cast<std::uint32_t>(a.first + d));
      std::string line;
      try {
        register_peer(id, Device::cpu(), config);
        std::uint64_t digest = 0;
        if (a.scenario.rfind("results", 0) == 0) {
          digest = run_results(a, id);
        } else {
          run_scenario(a, id);
        }
        finish_collective(id);
        line = str("peer ", id.value, " ok ", digest);
      } catch (const CollectiveError& e) {
        line =
            str("peer ", id.value, " error ", collective_error_kind_name(e.kind()), " ", e.what());
      } catch (const std::exception& e) {
        line = str("peer ", id.value, " failed ", e.what());
      }
      std::lock_guard<std::mutex> lock(mutex);
      lines[static_cast<std::size_t>(d)] = line;
    });
  }
  for (std::thread& t : threads) t.join();
  bool ok = true;
  for (const std::string& line : lines) {
    std::printf("%s\n", line.c_str());
    ok = ok && line.find(" ok ") != std::string::npos;
  }
  std::fflush(stdout);
  return ok ? 0 : 3;
}
