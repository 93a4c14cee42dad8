// The registered session API's global level: the rendezvous of the nodes (see node_level.h).
// The collectives themselves are in node_collectives.cpp.
#include <algorithm>
#include <map>
#include <sstream>
#include <thread>

#include "collective/net/socket.h"
#include "collective/registered/node_level.h"
#include "collective/store/tcp_store.h"
#include "collective/tcp_group.h"

namespace ruccl::session_detail {

namespace {

// A node's record in the store: its endpoint, its config without the per-node fields, its
// PeerIds. Read from the network: every field is checked and capped before use.
constexpr std::size_t kMaxPeersPerNode = 1 << 16;

CollectiveConfig shared_part(CollectiveConfig config) {
  config.node_address.reset();
  config.data_service_port.reset();
  return config;
}

struct NodeRecord {
  std::string endpoint;
  std::string config;
  std::vector<std::uint32_t> peers;
};

std::string encode_record(const NodeRecord& r) {
  std::ostringstream out;
  out << "ruccl-node-v1\n" << r.endpoint << '\n' << r.config << '\n';
  for (const std::uint32_t p : r.peers) out << p << ' ';
  return out.str();
}

NodeRecord decode_record(const std::string& text, const std::string& key) {
  std::istringstream in(text);
  NodeRecord r;
  std::string magic, ids;
  const bool ok = std::getline(in, magic) && magic == "ruccl-node-v1" &&
                  std::getline(in, r.endpoint) && std::getline(in, r.config) &&
                  std::getline(in, ids);
  std::istringstream id_in(ids);
  long long v = 0;
  while (ok && r.peers.size() <= kMaxPeersPerNode && id_in >> v) {
    if (v < 0 || v > 0xFFFFFFFFLL) break;
    r.peers.push_back(static_cast<std::uint32_t>(v));
  }
  if (!ok || !id_in.eof() || r.peers.empty() || r.peers.size() > kMaxPeersPerNode) {
    throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                          str("register_peer: the store key ", key,
                              " does not hold a node record of this library (expected "
                              "ruccl-node-v1, an endpoint, a config and 1..",
                              kMaxPeersPerNode, " PeerIds)"));
  }
  return r;
}

// The process-wide store of the global level: served by this process when its node_address is
// global_address's host, kept for the life of the process (slower nodes and later sessions of
// the same job still reach it).
std::shared_ptr<Store> node_store(const CollectiveConfig& config, const Deadline& deadline) {
  static std::mutex mutex;
  static std::string address;
  static std::shared_ptr<Store> store;
  std::lock_guard<std::mutex> lock(mutex);
  if (store && address == *config.global_address) return store;
  const net::Endpoint at = net::parse_endpoint(*config.global_address);
  const bool serve = at.host == *config.node_address;
  store.reset();
  try {
    store = make_tcp_store(at, session_id_from_seed("ruccl-session:" + *config.global_address),
                           serve, deadline, job_secret_from_env());
  } catch (const CollectiveError& e) {
    throw CollectiveError(
        e.kind(),
        str("register_peer: the session store at ", *config.global_address,
            serve ? " (served by this node: its node_address is that host)" : "", ": ", e.what()));
  }
  address = *config.global_address;
  return store;
}

std::string ids_text(const std::vector<std::uint32_t>& ids) {
  std::ostringstream out;
  out << '[';
  for (std::size_t i = 0; i < ids.size(); ++i) out << (i ? ", " : "") << ids[i];
  out << ']';
  return out.str();
}

}  // namespace

std::string encode_error(const CollectiveError& e);
std::optional<CollectiveError> decode_error(const StoreValue& bytes);

std::shared_ptr<NodeLevel> NodeLevel::connect(const CollectiveConfig& config,
                                              const std::vector<PeerId>& local_peers, Device device,
                                              const std::atomic<bool>& cancelled) {
  const Deadline deadline = Deadline::after(config.timeout, "register_peer (nodes)");
  std::shared_ptr<NodeLevel> level(new NodeLevel());
  level->config_ = config;
  const int num_nodes = *config.num_nodes;
  std::shared_ptr<Store> store = node_store(config, deadline);
  level->store_ = store;
  // Sessions of one job follow each other on the same store: the arrival count says which one
  // this is (every node arrives once per session, so the count agrees on every node).
  std::int64_t arrival = 0;
  try {
    arrival = store->add("ruccl/session/arrivals", 1) - 1;
  } catch (const CollectiveError& e) {
    throw CollectiveError(e.kind(), str("register_peer: the session store at ",
                                        *config.global_address, ": ", e.what()));
  }
  const std::int64_t generation = arrival / num_nodes;
  level->prefix_ = str("ruccl/session/", generation, "/");
  const net::Endpoint me{*config.node_address, *config.data_service_port};
  NodeRecord mine{me.to_string(), shared_part(config).to_string(), {}};
  for (const PeerId p : local_peers) mine.peers.push_back(p.value);
  store->set(str(level->prefix_, "node/", arrival % num_nodes), encode_record(mine));

  // Wait for every node's record, or for an error another node published.
  std::vector<std::string> keys;
  for (int n = 0; n < num_nodes; ++n) keys.push_back(str(level->prefix_, "node/", n));
  const std::string error_key = level->prefix_ + "error";
  while (!store->check(keys)) {
    if (cancelled.load()) {
      throw CollectiveError(CollectiveErrorKind::Aborted,
                            "register_peer: reset_collective() was called while waiting for the "
                            "other nodes");
    }
    if (store->check({error_key})) {
      throw *decode_error(store->get(error_key, deadline));
    }
    if (deadline.expired()) {
      std::vector<std::string> missing;
      for (const std::string& k : keys) {
        if (!store->check({k})) missing.push_back(k);
      }
      throw CollectiveError(
          CollectiveErrorKind::Timeout,
          str("register_peer: timed out after ", config.timeout.count(), " ms waiting for ",
              num_nodes, " nodes at ", *config.global_address, "; ", missing.size(),
              " never registered (store keys ", missing.front(), " ...)"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  std::vector<NodeRecord> records;
  for (const std::string& k : keys) {
    records.push_back(decode_record(store->get_string(k, deadline), k));
  }
  // Node ranks: the order of (node_address, data_service_port), whoever arrived first.
  auto endpoint_of = [](const NodeRecord& r) { return net::parse_endpoint(r.endpoint); };
  std::sort(records.begin(), records.end(), [&](const NodeRecord& a, const NodeRecord& b) {
    const net::Endpoint ea = endpoint_of(a), eb = endpoint_of(b);
    return ea.host != eb.host ? ea.host < eb.host : ea.port < eb.port;
  });
  // Every node checks the same records in the same order: every node raises the same error.
  // The serving node waits (within the deadline) until every node has read the records before
  // it raises one, since its process may end right after and take the store with it.
  const std::string read_key = level->prefix_ + "read";
  store->add(read_key, 1);
  const bool serving = net::parse_endpoint(*config.global_address).host == *config.node_address;
  auto fail = [&](CollectiveErrorKind kind, const std::string& message) {
    CollectiveError error(kind, message);
    while (serving && !deadline.expired() && store->add(read_key, 0) < num_nodes) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    try {
      store->compare_set(error_key, StoreValue{}, [&] {
        const std::string bytes = encode_error(error);
        return StoreValue(bytes.begin(), bytes.end());
      }());
    } catch (const CollectiveError&) {
    }
    throw error;
  };
  std::map<std::uint32_t, std::size_t> owner;
  for (std::size_t n = 0; n < records.size(); ++n) {
    if (n > 0 && records[n].endpoint == records[n - 1].endpoint) {
      fail(CollectiveErrorKind::InvalidConfig,
           str("register_peer: two nodes have node_address:data_service_port ", records[n].endpoint,
               " (expected one node per address and port)"));
    }
    if (records[n].config != records[0].config) {
      fail(CollectiveErrorKind::RegistrationParamsMismatch,
           str("register_peer: the config differs between nodes: expected ", records[0].config,
               " (node ", records[0].endpoint, "), got ", records[n].config, " (node ",
               records[n].endpoint, ")"));
    }
    for (const std::uint32_t p : records[n].peers) {
      const auto [it, fresh] = owner.emplace(p, n);
      if (!fresh) {
        fail(CollectiveErrorKind::DuplicateRegistration,
             str("register_peer: PeerId ", p, " is registered on two nodes: ",
                 records[it->second].endpoint, " ", ids_text(records[it->second].peers), " and ",
                 records[n].endpoint, " ", ids_text(records[n].peers)));
      }
    }
  }
  std::vector<std::uint64_t> node_ids;
  for (std::size_t n = 0; n < records.size(); ++n) {
    level->nodes_.push_back(Node{records[n].endpoint, records[n].peers});
    level->total_peers_ += static_cast<int>(records[n].peers.size());
    if (records[n].endpoint == mine.endpoint) level->node_rank_ = static_cast<int>(n);
    node_ids.push_back(n);
  }

  CommunicatorOptions options;
  options.timeout = config.timeout;
  options.rank_names = RankNames("node", std::move(node_ids));
  TcpTransportOptions transport;
  transport.listen_host = *config.node_address;
  transport.listen_port = *config.data_service_port;
  transport.secret = job_secret_from_env();  // RUCCL_JOB_SECRET: the same on every node
  transport.integrity = integrity_from_env(transport.secret.has_value());  // RUCCL_INTEGRITY
  transport.store_prefix = level->prefix_ + "tcp";
  transport.connect_timeout = config.timeout;
  level->global_ = TcpGroup::connect(
      store, level->node_rank_, num_nodes,
      session_id_from_seed("ruccl-session:" + *config.global_address), device, options, transport);
  return level;
}

std::optional<PeerPlace> NodeLevel::locate(PeerId id) const {
  for (std::size_t n = 0; n < nodes_.size(); ++n) {
    const auto& peers = nodes_[n].peers;
    const auto it = std::find(peers.begin(), peers.end(), id.value);
    if (it != peers.end()) {
      return PeerPlace{static_cast<int>(n), static_cast<int>(it - peers.begin())};
    }
  }
  return std::nullopt;
}

std::string NodeLevel::node_name(int node) const {
  return str("node ", node, " (", nodes_[static_cast<std::size_t>(node)].endpoint, ")");
}

void NodeLevel::abort(const std::string& reason) { global_.abort(reason); }

}  // namespace ruccl::session_detail
