#include "collective/registered/collective_config.h"

#include <sstream>

namespace ruccl {

std::ostream& operator<<(std::ostream& out, PeerId id) {
  return out << "PeerId(" << id.value << ")";
}

Algorithm Strategy::algorithm() const {
  switch (kind_) {
    case Kind::Centralized:
      return Algorithm::Centralized;
    case Kind::Tree:
      return Algorithm::Tree;
    case Kind::Ring:
      return Algorithm::Ring;
    case Kind::Auto:
      return Algorithm::Auto;
  }
  return Algorithm::Auto;
}

std::string Strategy::to_string() const {
  switch (kind_) {
    case Kind::Centralized:
      return "centralized";
    case Kind::Tree:
      return "tree(" + std::to_string(arity_) + ")";
    case Kind::Ring:
      return "ring";
    case Kind::Auto:
      return "auto";
  }
  return "unknown";
}

#define RUCCL_CONFIG_SETTER(method, field, Type)                \
  CollectiveConfig CollectiveConfig::method(Type value) const { \
    CollectiveConfig copy = *this;                              \
    copy.field = std::move(value);                              \
    return copy;                                                \
  }

RUCCL_CONFIG_SETTER(with_num_devices, num_devices, int)
RUCCL_CONFIG_SETTER(with_local_all_reduce_strategy, local_all_reduce_strategy, Strategy)
RUCCL_CONFIG_SETTER(with_local_reduce_strategy, local_reduce_strategy, Strategy)
RUCCL_CONFIG_SETTER(with_local_broadcast_strategy, local_broadcast_strategy, Strategy)
RUCCL_CONFIG_SETTER(with_num_nodes, num_nodes, int)
RUCCL_CONFIG_SETTER(with_global_address, global_address, std::string)
RUCCL_CONFIG_SETTER(with_node_address, node_address, std::string)
RUCCL_CONFIG_SETTER(with_data_service_port, data_service_port, std::uint16_t)
RUCCL_CONFIG_SETTER(with_global_all_reduce_strategy, global_all_reduce_strategy, Strategy)
RUCCL_CONFIG_SETTER(with_global_reduce_strategy, global_reduce_strategy, Strategy)
RUCCL_CONFIG_SETTER(with_global_broadcast_strategy, global_broadcast_strategy, Strategy)
RUCCL_CONFIG_SETTER(with_timeout, timeout, std::chrono::milliseconds)

#undef RUCCL_CONFIG_SETTER

namespace {
bool strategy_valid(const Strategy& s) {
  return s.kind() != Strategy::Kind::Tree || s.arity() >= 2;
}
}  // namespace

bool CollectiveConfig::is_valid() const {
  const int set = int(num_nodes.has_value()) + int(global_address.has_value()) +
                  int(node_address.has_value()) + int(data_service_port.has_value());
  if (set != 0 && set != 4) return false;
  if (num_devices < 1 || timeout.count() <= 0) return false;
  if (num_nodes.has_value() && *num_nodes < 1) return false;
  for (const Strategy* s :
       {&local_all_reduce_strategy, &local_reduce_strategy, &local_broadcast_strategy,
        &global_all_reduce_strategy, &global_reduce_strategy, &global_broadcast_strategy}) {
    if (!strategy_valid(*s)) return false;
  }
  return true;
}

std::string CollectiveConfig::to_string() const {
  std::ostringstream out;
  out << "num_devices=" << num_devices
      << " local_all_reduce=" << local_all_reduce_strategy.to_string()
      << " local_reduce=" << local_reduce_strategy.to_string()
      << " local_broadcast=" << local_broadcast_strategy.to_string();
  if (num_nodes) out << " num_nodes=" << *num_nodes;
  if (global_address) out << " global_address=" << *global_address;
  if (node_address) out << " node_address=" << *node_address;
  if (data_service_port) out << " data_service_port=" << *data_service_port;
  out << " global_all_reduce=" << global_all_reduce_strategy.to_string()
      << " global_reduce=" << global_reduce_strategy.to_string()
      << " global_broadcast=" << global_broadcast_strategy.to_string()
      << " timeout_ms=" << timeout.count();
  return out.str();
}

}  // namespace ruccl
