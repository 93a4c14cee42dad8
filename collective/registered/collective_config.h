#pragma once
// CollectiveConfig and Strategy: the configuration of the registered session API.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>

#include "collective/protocol/call_options.h"

namespace ruccl {

/// A participant of the registered session API (one per device/thread).
struct PeerId {
  std::uint32_t value = 0;
  PeerId() = default;
  /// PeerId(3)
  constexpr PeerId(std::uint32_t v) : value(v) {}  // NOLINT: implicit, like Rust's From<u32>
  friend bool operator==(const PeerId&, const PeerId&) = default;
  friend auto operator<=>(const PeerId&, const PeerId&) = default;
};
std::ostream& operator<<(std::ostream& out, PeerId id);

/// How one level (local devices, or nodes) runs a collective.
class Strategy {
 public:
  enum class Kind : unsigned char { Centralized, Tree, Ring, Auto };
  /// One peer gathers, reduces and sends the result back.
  static Strategy centralized() { return Strategy(Kind::Centralized, 0); }
  /// A tree of the given arity (>= 2; else the config is invalid).
  static Strategy tree(int arity) { return Strategy(Kind::Tree, arity); }
  /// Ring reduce-scatter + all-gather in balanced chunks.
  static Strategy ring() { return Strategy(Kind::Ring, 0); }
  /// The transport's choice by size (Algorithm::Auto): in process direct; over TCP (the global
  /// level) direct below CommunicatorOptions::ring_threshold_bytes (2 MiB; 4 MiB from 3 ranks),
  /// ring at or above.
  static Strategy automatic() { return Strategy(Kind::Auto, 0); }

  Kind kind() const { return kind_; }
  /// The tree arity (0 unless kind() == Tree).
  int arity() const { return arity_; }
  /// "centralized", "tree(2)", "ring", "auto".
  std::string to_string() const;
  /// The Communicator algorithm that runs this strategy (the arity is arity()).
  Algorithm algorithm() const;
  friend bool operator==(const Strategy&, const Strategy&) = default;

 private:
  Strategy(Kind kind, int arity) : kind_(kind), arity_(arity) {}
  Kind kind_;
  int arity_;
};

/// Configuration of a registered session. Default-constructed = the defaults: 1 device, local
/// strategies tree(2), no multi-node level (its strategies: automatic()), default_timeout()
/// (RUCCL_TIMEOUT_MS, else 300 s). Builders return a modified copy:
///
///   auto config = CollectiveConfig().with_num_devices(4)
///                     .with_local_all_reduce_strategy(Strategy::ring());
class CollectiveConfig {
 public:
  CollectiveConfig with_num_devices(int n) const;
  CollectiveConfig with_local_all_reduce_strategy(Strategy s) const;
  CollectiveConfig with_local_reduce_strategy(Strategy s) const;
  CollectiveConfig with_local_broadcast_strategy(Strategy s) const;
  CollectiveConfig with_num_nodes(int n) const;
  CollectiveConfig with_global_address(std::string address) const;
  CollectiveConfig with_node_address(std::string address) const;
  CollectiveConfig with_data_service_port(std::uint16_t port) const;
  CollectiveConfig with_global_all_reduce_strategy(Strategy s) const;
  CollectiveConfig with_global_reduce_strategy(Strategy s) const;
  CollectiveConfig with_global_broadcast_strategy(Strategy s) const;
  CollectiveConfig with_timeout(std::chrono::milliseconds timeout) const;

  /// True when the four global parameters (num_nodes, global_address, node_address,
  /// data_service_port) are all set or all unset, num_devices >= 1, every tree arity >= 2,
  /// num_nodes >= 1 and the timeout > 0.
  bool is_valid() const;
  /// Whether the global (multi-node) level is configured.
  bool is_multi_node() const { return num_nodes.has_value(); }
  /// "num_devices=4 local_all_reduce=ring ..." (for error messages).
  std::string to_string() const;
  friend bool operator==(const CollectiveConfig&, const CollectiveConfig&) = default;

  int num_devices = 1;
  Strategy local_all_reduce_strategy = Strategy::tree(2);
  Strategy local_reduce_strategy = Strategy::tree(2);
  Strategy local_broadcast_strategy = Strategy::tree(2);
  std::optional<int> num_nodes;
  std::optional<std::string> global_address;
  std::optional<std::string> node_address;
  std::optional<std::uint16_t> data_service_port;
  Strategy global_all_reduce_strategy = Strategy::automatic();
  Strategy global_reduce_strategy = Strategy::automatic();
  Strategy global_broadcast_strategy = Strategy::automatic();
  std::chrono::milliseconds timeout{default_timeout()};  ///< RUCCL_TIMEOUT_MS, else 300 s
};

}  // namespace ruccl

template <>
struct std::hash<ruccl::PeerId> {
  std::size_t operator()(ruccl::PeerId id) const noexcept {
    return std::hash<std::uint32_t>()(id.value);
  }
};
