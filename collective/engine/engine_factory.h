#pragma once
// What a group factory hands the Communicator core to build its engine, and the one result type
// of the engine seam that is not a Tensor. Small on purpose: the public communicator.h includes
// it, so user code sees these two names and nothing else of the engine layer.
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "collective/protocol/call_options.h"
#include "tensor/core/tensor.h"

namespace ruccl {

class Transport;
class CollectiveEngine;

/// Makes a rank's collective engine over its transport (collective/engine/collective_engine.h),
/// which outlives the engine. Empty: the group's default (make_algorithm_engine).
using EngineFactory = std::function<std::unique_ptr<CollectiveEngine>(
    Transport& transport, Device device, const CommunicatorOptions& options)>;

/// Result of all_to_all_v: the received rows (in source-rank order) and how many came from each.
struct AllToAllVResult {
  Tensor output;
  std::vector<std::int64_t> recv_counts;
};

}  // namespace ruccl
