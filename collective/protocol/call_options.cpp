#include "collective/protocol/call_options.h"

#include <string>

#include "collective/common/collective_error.h"
#include "collective/common/env.h"
#include "collective/protocol/pieces.h"

namespace ruccl {

std::chrono::milliseconds default_timeout_from(const EnvReader& env) {
  return env.milliseconds("RUCCL_TIMEOUT_MS").value_or(std::chrono::seconds(300));
}

std::chrono::milliseconds default_timeout() {
  struct Read {
    std::chrono::milliseconds timeout{0};
    std::string error;  // the InvalidConfig message of a malformed value; "" when none
  };
  static const Read read = [] {
    try {
      return Read{default_timeout_from(EnvReader()), {}};
    } catch (const CollectiveError& e) {
      return Read{std::chrono::milliseconds(0), e.what()};
    }
  }();
  if (!read.error.empty()) throw CollectiveError(CollectiveErrorKind::InvalidConfig, read.error);
  return read.timeout;
}

const char* algorithm_name(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::Auto:
      return "auto";
    case Algorithm::Direct:
      return "direct";
    case Algorithm::Ring:
      return "ring";
    case Algorithm::Tree:
      return "tree";
    case Algorithm::Centralized:
      return "centralized";
    case Algorithm::RecursiveDoubling:
      return "recursive_doubling";
    case Algorithm::HalvingDoubling:
      return "halving_doubling";
  }
  return nullptr;
}

std::string invalid_algorithm_message(Algorithm algorithm) {
  return "expected an Algorithm (Auto, Direct, Ring, Tree, Centralized, RecursiveDoubling, "
         "HalvingDoubling), got Algorithm(" +
         std::to_string(static_cast<int>(algorithm)) + ")";
}

void validate_communicator_options(const CommunicatorOptions& options, const std::string& who) {
  auto invalid = [&](const std::string& message) {
    return CollectiveError(CollectiveErrorKind::InvalidConfig, str(who, ": ", message));
  };
  if (options.tree_arity < 2) {
    throw invalid(str("expected tree_arity >= 2, got ", options.tree_arity));
  }
  for (const Algorithm a :
       {options.all_reduce_algorithm, options.reduce_algorithm, options.broadcast_algorithm}) {
    if (algorithm_name(a) == nullptr) throw invalid(invalid_algorithm_message(a));
  }
  if (options.determinism != Determinism::AlgorithmIndependent &&
      options.determinism != Determinism::PerAlgorithm) {
    throw invalid(
        str("expected a Determinism (AlgorithmIndependent, PerAlgorithm), got "
            "Determinism(",
            static_cast<int>(options.determinism), ")"));
  }
  if (options.broadcast_algorithm == Algorithm::HalvingDoubling) {
    throw invalid(
        "expected a broadcast_algorithm that broadcasts (Auto, Direct, Ring, Tree, "
        "Centralized, RecursiveDoubling), got HalvingDoubling (an all_reduce and reduce "
        "algorithm)");
  }
  for (const Algorithm a : {options.all_reduce_algorithm, options.reduce_algorithm}) {
    if (a == Algorithm::HalvingDoubling && options.determinism != Determinism::PerAlgorithm) {
      throw invalid(str("expected Determinism::PerAlgorithm with HalvingDoubling (its tree fold ",
                        "differs in the last bits from the other algorithms), got ",
                        "Determinism::AlgorithmIndependent"));
    }
  }
  if (options.timeout.count() <= 0) {
    throw invalid(str("expected a positive timeout, got ", options.timeout.count(), " ms"));
  }
  if (options.segment_bytes == 0 || options.segment_bytes % kPieceAlign != 0) {
    throw invalid(str("expected segment_bytes > 0 and a multiple of ", kPieceAlign, ", got ",
                      options.segment_bytes));
  }
}

}  // namespace ruccl
