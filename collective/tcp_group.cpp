#include "collective/tcp_group.h"

#include <climits>
#include <utility>

#include "collective/common/env.h"
#include "collective/launch/launch_env.h"
#include "collective/store/tcp_store.h"
#include "collective/transport/process/process_transport.h"

namespace ruccl {

Communicator TcpGroup::connect(std::shared_ptr<Store> store, int rank, int world_size,
                               const SessionId& session, Device device, CommunicatorOptions options,
                               TcpTransportOptions transport, const StoreEngineFactory& engine) {
  validate_communicator_options(options, "TcpGroup::connect");
  if (!options.rank_names.ids().empty() &&
      static_cast<int>(options.rank_names.ids().size()) != world_size) {
    throw CollectiveError(
        CollectiveErrorKind::InvalidConfig,
        str("TcpGroup::connect: expected ", world_size, " rank names (one per rank) or none, got ",
            options.rank_names.ids().size()));
  }
  if (transport.names == RankNames{}) transport.names = options.rank_names;
  const Deadline deadline = Deadline::after(transport.connect_timeout, "TcpGroup::connect");
  std::unique_ptr<TcpTransport> link =
      TcpTransport::connect(*store, rank, world_size, session, std::move(transport));
  if (engine) {
    const EngineFactory make = engine(*store, *link, rank, world_size, device, deadline);
    link->keep_alive(std::move(store));
    return Communicator(std::move(link), device, std::move(options), make);
  }
  link->keep_alive(std::move(store));
  return Communicator(std::move(link), device, std::move(options));
}

Communicator TcpGroup::from_env(Device device, CommunicatorOptions options,
                                TcpTransportOptions transport, const StoreEngineFactory& engine) {
  if (!transport.secret) transport.secret = job_secret_from_env();  // RUCCL_REQUIRE_SECRET first
  const LaunchEnv job = read_launch_env();
  const EnvReader env;
  transport.integrity = integrity_from_env(transport.secret.has_value(), transport.integrity);
  if (const auto ms = env.milliseconds("RUCCL_HEARTBEAT_INTERVAL_MS")) {
    transport.control.heartbeat_interval = *ms;
  }
  if (const auto ms = env.milliseconds("RUCCL_HEARTBEAT_TIMEOUT_MS")) {
    transport.control.heartbeat_timeout = *ms;
  }
  if (const auto ms = env.milliseconds("RUCCL_CONNECT_TIMEOUT_MS")) transport.connect_timeout = *ms;
  transport.local_ranks = job.local_world_size;
  if (const auto us = env.positive("RUCCL_TCP_SPIN_US", "microseconds")) {
    transport.spin = std::chrono::microseconds(*us);
  }
  if (const auto us = env.non_negative("RUCCL_TCP_YIELD_US", "microseconds")) {
    transport.yield = std::chrono::microseconds(*us);
  }
  if (const auto bytes = env.non_negative("RUCCL_TCP_SOCKET_BUFFER_BYTES", "bytes", INT_MAX)) {
    transport.socket_buffer_bytes = static_cast<int>(*bytes);
  }
  transport.payload_checksum = env.choice(
      "RUCCL_TCP_PAYLOAD_CHECKSUM",
      {{"auto", PayloadChecksum::Auto}, {"on", PayloadChecksum::On}, {"off", PayloadChecksum::Off}},
      transport.payload_checksum);
  transport.shared_memory = env.choice("RUCCL_TCP_SHARED_MEMORY",
                                       {{"auto", SharedMemory::Auto}, {"off", SharedMemory::Off}},
                                       transport.shared_memory);
  if (const auto bytes = env.positive("RUCCL_TCP_SHARED_MEMORY_RING_BYTES", "bytes")) {
    transport.shared_memory_ring_bytes = static_cast<std::size_t>(*bytes);
  }
  const SessionId session =
      job.session_id ? *job.session_id : session_id_from_seed(job.session_seed);
  const net::Endpoint master{job.master_addr, job.master_port};
  std::shared_ptr<Store> store =
      make_tcp_store(master, session, job.rank == 0,
                     Deadline::after(transport.connect_timeout, "Communicator::from_env"),
                     transport.secret, job.rank);
  Communicator comm = connect(std::move(store), job.rank, job.world_size, session, device,
                              std::move(options), std::move(transport), engine);
  comm.barrier(CallOptions().with_label("Communicator::from_env"));
  return comm;
}

}  // namespace ruccl
