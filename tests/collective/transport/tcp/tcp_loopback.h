#pragma once
// TCP loopback groups for tests: one thread per rank, each with its own TcpTransport (its own
// sockets on 127.0.0.1), meeting in an InMemoryStore.
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "collective/store/in_memory_store.h"
#include "collective/tcp_group.h"
#include "collective/transport/fault/fault_injecting_transport.h"
#include "collective/transport/process/process_transport.h"

namespace ruccl::testing {

/// One Communicator per rank of a `world`-rank TCP group on loopback (connected concurrently).
/// `customize(r, options)`: rank r's own transport options (wire faults).
inline std::vector<Communicator> make_tcp_loopback_group(
    int world, CommunicatorOptions options = {}, TcpTransportOptions transport = {},
    const std::function<void(int, TcpTransportOptions&)>& customize = {}) {
  if (world < 1) {
    throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                          str("make_tcp_loopback_group: expected a world size >= 1, got ", world));
  }
  auto store = std::make_shared<InMemoryStore>();
  const SessionId session = random_session_id();
  transport.listen_host = "127.0.0.1";
  transport.local_ranks = world;
  std::vector<Communicator> comms(static_cast<std::size_t>(world));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
        TcpTransportOptions mine = transport;
        if (customize) customize(r, mine);
        comms[static_cast<std::size_t>(r)] =
            TcpGroup::connect(store, r, world, session, Device::cpu(), options, std::move(mine));
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return comms;
}

/// One TcpTransport per rank of a `world`-rank group on loopback (connected concurrently), for
/// tests that act on a rank's transport itself (sever, cut_link).
inline std::vector<std::unique_ptr<TcpTransport>> connect_tcp_loopback_transports(
    int world, TcpTransportOptions options = {}) {
  auto store = std::make_shared<InMemoryStore>();
  const SessionId session = random_session_id();
  options.listen_host = "127.0.0.1";
  options.local_ranks = world;
  std::vector<std::unique_ptr<TcpTransport>> transports(static_cast<std::size_t>(world));
  std::vector<std::thread> threads;
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      transports[static_cast<std::size_t>(r)] =
          TcpTransport::connect(*store, r, world, session, options);
    });
  }
  for (auto& t : threads) t.join();
  return transports;
}

/// A TCP loopback group whose rank r runs over a FaultInjectingTransport with plans(r): KillRank
/// severs the rank's connections with no Goodbye (as if its process died), Cut shuts one data
/// connection down.
inline std::vector<Communicator> make_tcp_loopback_group_with_faults(
    int world, CommunicatorOptions options, const std::function<FaultPlan(int rank)>& plans) {
  std::vector<std::unique_ptr<TcpTransport>> transports = connect_tcp_loopback_transports(world);
  std::vector<Communicator> comms;
  for (int r = 0; r < world; ++r) {
    TcpTransport* tcp = transports[static_cast<std::size_t>(r)].get();
    FaultHooks hooks{[tcp] { tcp->sever(); }, [tcp](int peer) { tcp->cut_link(peer); }};
    comms.emplace_back(
        std::make_unique<FaultInjectingTransport>(
            std::move(transports[static_cast<std::size_t>(r)]), plans(r), std::move(hooks), false),
        Device::cpu(), options);
  }
  return comms;
}

/// Whether `comm` is finished within `limit`: a rank whose own calls ended before the failure
/// learns of it from its watcher thread, a moment later.
inline bool finished_within(const Communicator& comm,
                            std::chrono::milliseconds limit = std::chrono::seconds(2)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!comm.finished() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return comm.finished();
}

/// The TCP transport on loopback, every message over TCP, for the group-factory test list
/// (group_factories.h).
struct TcpLoopback {
  static constexpr const char* kName = "tcp loopback";
  static std::vector<Communicator> make(int world, CommunicatorOptions options) {
    TcpTransportOptions transport;
    transport.shared_memory = SharedMemory::Off;
    return make_tcp_loopback_group(world, options, transport);
  }
};

/// The TCP transport on loopback with its shared-memory data path (the default between ranks of
/// one host): agreement records and messages through the rings, heartbeats and failures over TCP.
struct TcpSharedMemory {
  static constexpr const char* kName = "tcp with shared memory";
  static std::vector<Communicator> make(int world, CommunicatorOptions options) {
    return make_tcp_loopback_group(world, options);
  }
};

}  // namespace ruccl::testing
