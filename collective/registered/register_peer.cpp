// The registered session API: one process-wide registry of peers. Registration rounds gather
// config.num_devices peers, then build an in-process group (ranks in PeerId order); the session
// calls forward to that peer's Communicator. With the global level configured (num_nodes ...),
// the thread that completes the round also meets the other nodes (node_level.h) and the calls
// go through the NodeLevel.
#include "collective/registered/register_peer.h"

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "collective/communicator.h"
#include "collective/in_process_group.h"
#include "collective/registered/node_level.h"

namespace ruccl {

namespace {

/// One registration round and, once formed, the session it became.
struct Session {
  CollectiveConfig config;
  std::map<PeerId, Device> pending;  // registered so far (ordered by PeerId)
  bool formed = false;
  std::map<PeerId, Communicator> comms;  // peers still in the session
  std::map<PeerId, int> ranks;
  std::optional<CollectiveError> failure;           // a failed round: every waiting peer raises it
  bool connecting = false;                          // the local round is complete, the nodes meet
  std::atomic<bool> cancelled{false};               // reset_collective while the nodes meet
  std::shared_ptr<session_detail::NodeLevel> node;  // the global level (multi-node only)
};

/// What a session call needs, copied out under the registry lock.
struct PeerHandle {
  Communicator comm;
  CollectiveConfig config;
  std::map<PeerId, int> ranks;
  std::shared_ptr<session_detail::NodeLevel> node;
};

class Registry {
 public:
  static Registry& instance() {
    static Registry registry;
    return registry;
  }

  void register_peer(PeerId id, Device device, const CollectiveConfig& config);
  PeerHandle peer(PeerId id, const char* op);
  void finish(PeerId id);
  void reset();

 private:
  // Fails the round in progress (if any peer waits in it) and starts a fresh one.
  void fail_round(const CollectiveError& error) {
    if (current_ && !current_->formed) {
      current_->failure = error;
      current_.reset();
      changed_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable changed_;
  std::shared_ptr<Session> current_;
};

std::string ids_text(const std::map<PeerId, Device>& peers) {
  std::ostringstream out;
  out << '[';
  bool first = true;
  for (const auto& [id, device] : peers) {
    out << (first ? "" : ", ") << id.value;
    first = false;
  }
  out << ']';
  return out.str();
}

CommunicatorOptions options_from(const CollectiveConfig& config) {
  CommunicatorOptions o;
  o.timeout = config.timeout;
  o.all_reduce_algorithm = config.local_all_reduce_strategy.algorithm();
  o.reduce_algorithm = config.local_reduce_strategy.algorithm();
  o.broadcast_algorithm = config.local_broadcast_strategy.algorithm();
  return o;
}

// Per-call tree arity: each op has its own strategy.
CallOptions call_for(const Strategy& s) {
  CallOptions call;
  if (s.kind() == Strategy::Kind::Tree) call.with_algorithm(Algorithm::Tree, s.arity());
  return call;
}

void Registry::register_peer(PeerId id, Device device, const CollectiveConfig& config) {
  std::unique_lock<std::mutex> lock(mutex_);
  const std::string who = str("register_peer(", id, ")");
  if (!config.is_valid()) {
    CollectiveError error(CollectiveErrorKind::InvalidConfig,
                          str(who,
                              ": invalid CollectiveConfig (the four global parameters must be "
                              "all set or all unset, num_devices >= 1, tree arity >= 2, "
                              "timeout > 0): ",
                              config.to_string()));
    fail_round(error);
    throw error;
  }
  if (current_ && (current_->formed || current_->connecting)) {
    if (current_->comms.count(id) != 0 || current_->ranks.count(id) != 0 ||
        current_->pending.count(id) != 0) {
      throw CollectiveError(CollectiveErrorKind::DuplicateRegistration,
                            str(who, ": already registered in the running session"));
    }
    throw CollectiveError(CollectiveErrorKind::InvalidArgument,
                          str(who, ": a session of ", current_->ranks.size(),
                              " peers is running; every peer must call finish_collective (or "
                              "call reset_collective) before a new session registers"));
  }
  if (!current_) {
    current_ = std::make_shared<Session>();
    current_->config = config;
  }
  std::shared_ptr<Session> session = current_;
  if (session->pending.count(id) != 0) {
    CollectiveError error(CollectiveErrorKind::DuplicateRegistration,
                          str(who, ": PeerId ", id.value, " is already registered (registered: ",
                              ids_text(session->pending), ")"));
    fail_round(error);
    throw error;
  }
  if (!(session->config == config)) {
    CollectiveError error(
        CollectiveErrorKind::RegistrationParamsMismatch,
        str(who, ": config differs from the peers registered before ", ids_text(session->pending),
            ": expected ", session->config.to_string(), ", got ", config.to_string()));
    fail_round(error);
    throw error;
  }
  session->pending.emplace(id, device);
  if (static_cast<int>(session->pending.size()) == config.num_devices && config.is_multi_node()) {
    // Meet the other nodes without the lock (the local peers wait for `connecting` to end).
    session->connecting = true;
    std::vector<PeerId> local_peers;
    for (const auto& [peer, d] : session->pending) local_peers.push_back(peer);
    std::optional<CollectiveError> error;
    lock.unlock();
    try {
      session->node = session_detail::NodeLevel::connect(
          config, local_peers, session->pending.begin()->second, session->cancelled);
    } catch (const CollectiveError& e) {
      error = e;
    }
    lock.lock();
    session->connecting = false;
    if (!error && current_ != session) {
      session->node->abort("reset_collective() was called while the nodes met");
      error = CollectiveError(CollectiveErrorKind::Aborted,
                              str(who, ": reset_collective() was called while the nodes met"));
    }
    if (error) {
      session->failure = error;
      if (current_ == session) current_.reset();
      changed_.notify_all();
      throw *error;
    }
  }
  if (static_cast<int>(session->pending.size()) == config.num_devices) {
    std::vector<Device> devices;
    std::vector<std::uint64_t> ids;  // errors name the PeerIds the callers chose, not ranks
    for (const auto& [peer, d] : session->pending) {
      devices.push_back(d);
      ids.push_back(peer.value);
    }
    CommunicatorOptions options = options_from(config);
    options.rank_names = RankNames("peer", std::move(ids));
    std::vector<Communicator> comms = InProcessGroup::create(config.num_devices, devices, options);
    int rank = 0;
    for (const auto& [peer, d] : session->pending) {
      session->ranks.emplace(peer, rank);
      session->comms.emplace(peer, std::move(comms[static_cast<std::size_t>(rank)]));
      ++rank;
    }
    session->formed = true;
    changed_.notify_all();
    return;
  }
  const auto deadline = std::chrono::steady_clock::now() + config.timeout;
  auto settled = [&] {
    return session->formed || session->failure.has_value() || current_ != session;
  };
  bool done = changed_.wait_until(lock, deadline, settled);
  // The nodes meeting has its own deadline (config.timeout from the last local arrival).
  while (!done && session->connecting) done = changed_.wait_for(lock, config.timeout, settled);
  if (session->failure) throw *session->failure;
  if (session->formed) return;
  if (current_ != session) {
    throw CollectiveError(CollectiveErrorKind::Aborted,
                          str(who, ": reset_collective() was called while waiting for peers"));
  }
  (void)done;
  CollectiveError error(
      CollectiveErrorKind::Timeout,
      str(who, ": timed out after ", config.timeout.count(), " ms waiting for ", config.num_devices,
          " peers; only ", session->pending.size(), " registered: ", ids_text(session->pending)));
  fail_round(error);
  throw error;
}

PeerHandle Registry::peer(PeerId id, const char* op) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!current_ || !current_->formed || current_->comms.count(id) == 0) {
    throw CollectiveError(CollectiveErrorKind::MissingRegistration,
                          str(op, "(", id,
                              "): this peer is not registered in a running session "
                              "(call register_peer first)"));
  }
  return PeerHandle{current_->comms.at(id), current_->config, current_->ranks, current_->node};
}

void Registry::finish(PeerId id) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!current_ || !current_->formed || current_->comms.count(id) == 0) {
    throw CollectiveError(CollectiveErrorKind::MissingRegistration,
                          str("finish_collective(", id,
                              "): this peer is not registered in a "
                              "running session"));
  }
  // Dropping the communicator tells peers still waiting for this one (PeerLost, promptly).
  current_->comms.erase(id);
  if (current_->comms.empty()) current_.reset();
}

void Registry::reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!current_) return;
  if (current_->formed) {
    if (current_->node) current_->node->abort("reset_collective() was called on a node");
    for (auto& [id, comm] : current_->comms) comm.abort("reset_collective() was called");
  } else {
    current_->cancelled = true;
    current_->failure =
        CollectiveError(CollectiveErrorKind::Aborted,
                        "register_peer: reset_collective() was called while waiting "
                        "for peers");
  }
  current_.reset();
  changed_.notify_all();
}

}  // namespace

void register_peer(PeerId id, Device device, const CollectiveConfig& config) {
  Registry::instance().register_peer(id, device, config);
}

Tensor all_reduce(PeerId id, const Tensor& t, ReduceOperation op) {
  PeerHandle peer = Registry::instance().peer(id, "all_reduce");
  if (peer.node) return peer.node->all_reduce(peer.comm, t, op);
  return peer.comm.all_reduce(t, op, call_for(peer.config.local_all_reduce_strategy));
}

Tensor broadcast(PeerId id, const std::optional<Tensor>& t) {
  PeerHandle peer = Registry::instance().peer(id, "broadcast");
  if (peer.node) return peer.node->broadcast(peer.comm, t);
  return peer.comm.broadcast_from_sender(t, call_for(peer.config.local_broadcast_strategy));
}

std::optional<Tensor> reduce(PeerId id, const Tensor& t, ReduceOperation op, PeerId root) {
  PeerHandle peer = Registry::instance().peer(id, "reduce");
  if (peer.node) return peer.node->reduce(peer.comm, t, op, root);
  CallOptions call = call_for(peer.config.local_reduce_strategy);
  const auto it = peer.ranks.find(root);
  if (it == peer.ranks.end()) {
    // Publish the bad root so every peer of this reduce raises InvalidArgument together.
    const std::string label = str("reduce (root ", root, " is not a registered peer)");
    return peer.comm.reduce(t, -1, op, call.with_label(label.c_str()));
  }
  return peer.comm.reduce(t, it->second, op, call);
}

void finish_collective(PeerId id) { Registry::instance().finish(id); }

void reset_collective() { Registry::instance().reset(); }

}  // namespace ruccl
