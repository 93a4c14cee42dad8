#pragma once
// CollectiveError: every failure of a collective call, with a machine-readable kind().
//
// Failures are reported on EVERY participant of the failed call (agreement checks run on all
// ranks; a rank that fails locally publishes its error to the others). After any CollectiveError
// the communicator (all ranks of its group) is finished: every later call raises
// CollectiveErrorKind::Aborted naming the first error. Build a new group to continue.
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/core/error.h"

namespace ruccl {

/// What went wrong in a collective call. See docs/collectives.md for when each is raised.
enum class CollectiveErrorKind : unsigned char {
  InvalidConfig,               ///< CollectiveConfig::is_valid() is false, or a bad option value
  DuplicateRegistration,       ///< register_peer with a PeerId already registered
  MissingRegistration,         ///< a session call with a PeerId that is not registered
  RegistrationParamsMismatch,  ///< peers registered with different configs
  CollectiveKindMismatch,      ///< ranks called different collectives at the same position
  ShapeMismatch,               ///< ranks passed shapes that do not agree
  DTypeMismatch,               ///< ranks passed different dtypes
  ReduceOperationMismatch,     ///< ranks passed different ReduceOperations
  RootMismatch,                ///< ranks named different roots
  ArgumentMismatch,            ///< other agreed arguments differ (CallOptions words: axis, ...)
  NoBroadcastSender,           ///< registered broadcast where no peer passed a tensor
  SeveralBroadcastSenders,     ///< registered broadcast where more than one peer passed a tensor
  InvalidArgument,             ///< a bad argument (root out of range, axis 0 not divisible,
                               ///< op not valid for the dtype, wrong device, ...)
  Timeout,                     ///< a deadline expired; ranks() are the ranks that never arrived
  PeerLost,                    ///< a peer's communicator was destroyed while others waited
  Aborted,                     ///< abort(reason) was called, reset_collective() ran, or the
                               ///< communicator is finished after an earlier error
  Unsupported,                 ///< a valid request this build cannot serve yet (multi-node)
};

/// "ShapeMismatch", "Timeout", ...
std::string_view collective_error_kind_name(CollectiveErrorKind kind);
/// Prints collective_error_kind_name(kind).
inline std::ostream& operator<<(std::ostream& out, CollectiveErrorKind kind) {
  return out << collective_error_kind_name(kind);
}

/// The error every collective raises on purpose (derives from ruccl::Error).
///
///   try { comm.all_reduce(t, ReduceOperation::Sum); }
///   catch (const CollectiveError& e) { if (e.kind() == CollectiveErrorKind::Timeout) ... }
class CollectiveError : public Error {
 public:
  /// `ranks`: the ranks the error is about (the missing ranks of a Timeout, the disagreeing ranks
  /// of a mismatch, the rank that failed locally); may be empty.
  CollectiveError(CollectiveErrorKind kind, const std::string& message, std::vector<int> ranks = {})
      : Error(message), kind_(kind), ranks_(std::move(ranks)) {}

  /// Copies own their message: std::runtime_error's copies share one reference-counted buffer,
  /// and the same error is raised on several threads of a rank (every local peer of a failed
  /// session), whose copies must not share state a sanitizer cannot see synchronised.
  CollectiveError(const CollectiveError& other)
      : Error(std::string(other.what())), kind_(other.kind_), ranks_(other.ranks_) {}
  CollectiveError& operator=(const CollectiveError& other) {
    if (this != &other) {
      Error::operator=(Error(std::string(other.what())));
      kind_ = other.kind_;
      ranks_ = other.ranks_;
    }
    return *this;
  }

  /// The machine-readable reason.
  CollectiveErrorKind kind() const { return kind_; }
  /// The ranks the error is about (see the constructor); sorted, may be empty.
  const std::vector<int>& ranks() const { return ranks_; }

 private:
  CollectiveErrorKind kind_;
  std::vector<int> ranks_;
};

/// The exception in flight as the group's failure: itself when it is a CollectiveError, else
/// Aborted "<who> failed: <what>" about `rank` (who names the call and the rank: "all_reduce
/// (call #3): rank 1"). Call inside a catch block.
CollectiveError current_exception_as_collective_error(const std::string& who, int rank);

}  // namespace ruccl
