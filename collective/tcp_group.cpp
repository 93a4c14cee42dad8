#include "collective/tcp_group.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <optional>
#include <utility>

#include "collective/launch/launch_env.h"
#include "collective/store/tcp_store.h"
#include "collective/transport/tcp/tcp_transport.h"

namespace ruccl {

namespace {

std::uint64_t mix(std::uint64_t x) {  // the murmur3 finaliser
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

std::uint64_t fnv1a(std::string_view text, std::uint64_t h) {
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

/// A positive integer from environment variable `name` (`unit` names it in the error), when set.
std::optional<long long> read_positive(const char* name, const char* unit, long long least = 1) {
  const char* text = std::getenv(name);
  if (text == nullptr) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < least) {
    throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                          str(name, ": expected a ", least > 0 ? "positive" : "non-negative",
                              " number of ", unit, ", got \"", text, "\""));
  }
  return v;
}

/// One of `choices` (its spelling, its value) from environment variable `name`, when set;
/// InvalidConfig naming the variable and the spellings otherwise.
template <typename E>
void read_choice(const char* name, std::initializer_list<std::pair<std::string_view, E>> choices,
                 E& out) {
  const char* text = std::getenv(name);
  if (text == nullptr) return;
  std::string expected;
  std::size_t i = 0;
  for (const auto& [spelling, value] : choices) {
    if (spelling == text) {
      out = value;
      return;
    }
    expected += str(i == 0 ? "" : (i + 1 == choices.size() ? " or " : ", "), spelling);
    ++i;
  }
  throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                        str(name, ": expected ", expected, ", got \"", text, "\""));
}

void read_ms(const char* name, std::chrono::milliseconds& out) {
  if (const auto v = read_positive(name, "milliseconds")) out = std::chrono::milliseconds(*v);
}

}  // namespace

SessionId session_id_from_seed(std::string_view seed) {
  const std::uint64_t halves[2] = {mix(fnv1a(seed, 0xcbf29ce484222325ULL)),
                                   mix(fnv1a(seed, 0x84222325cbf29ce4ULL) ^ seed.size())};
  SessionId id{};
  for (int i = 0; i < 16; ++i) {
    id[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(halves[i / 8] >> (8 * (i % 8)));
  }
  return id;
}

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
  const LaunchEnv env = read_launch_env();
  read_ms("RUCCL_HEARTBEAT_INTERVAL_MS", transport.control.heartbeat_interval);
  read_ms("RUCCL_HEARTBEAT_TIMEOUT_MS", transport.control.heartbeat_timeout);
  read_ms("RUCCL_CONNECT_TIMEOUT_MS", transport.connect_timeout);
  transport.local_ranks = env.local_world_size;
  if (const auto us = read_positive("RUCCL_TCP_SPIN_US", "microseconds")) {
    transport.spin = std::chrono::microseconds(*us);
  }
  if (const auto us = read_positive("RUCCL_TCP_YIELD_US", "microseconds", 0)) {
    transport.yield = std::chrono::microseconds(*us);
  }
  if (const auto bytes = read_positive("RUCCL_TCP_SOCKET_BUFFER_BYTES", "bytes", 0)) {
    if (*bytes > INT_MAX) {
      throw CollectiveError(
          CollectiveErrorKind::InvalidConfig,
          str("RUCCL_TCP_SOCKET_BUFFER_BYTES: expected at most ", INT_MAX, " bytes, got ", *bytes));
    }
    transport.socket_buffer_bytes = static_cast<int>(*bytes);
  }
  read_choice(
      "RUCCL_TCP_PAYLOAD_CHECKSUM",
      {{"auto", PayloadChecksum::Auto}, {"on", PayloadChecksum::On}, {"off", PayloadChecksum::Off}},
      transport.payload_checksum);
  read_choice("RUCCL_TCP_SHARED_MEMORY", {{"auto", SharedMemory::Auto}, {"off", SharedMemory::Off}},
              transport.shared_memory);
  if (const auto bytes = read_positive("RUCCL_TCP_SHARED_MEMORY_RING_BYTES", "bytes")) {
    transport.shared_memory_ring_bytes = static_cast<std::size_t>(*bytes);
  }
  const SessionId session =
      env.session_id ? *env.session_id : session_id_from_seed(env.session_seed);
  const net::Endpoint master{env.master_addr, env.master_port};
  std::shared_ptr<Store> store =
      make_tcp_store(master, session, env.rank == 0,
                     Deadline::after(transport.connect_timeout, "Communicator::from_env"));
  Communicator comm = connect(std::move(store), env.rank, env.world_size, session, device,
                              std::move(options), std::move(transport), engine);
  comm.barrier(CallOptions().with_label("Communicator::from_env"));
  return comm;
}

}  // namespace ruccl
