#include "collective/common/collective_error.h"

namespace ruccl {

std::string_view collective_error_kind_name(CollectiveErrorKind kind) {
  switch (kind) {
    case CollectiveErrorKind::InvalidConfig:
      return "InvalidConfig";
    case CollectiveErrorKind::DuplicateRegistration:
      return "DuplicateRegistration";
    case CollectiveErrorKind::MissingRegistration:
      return "MissingRegistration";
    case CollectiveErrorKind::RegistrationParamsMismatch:
      return "RegistrationParamsMismatch";
    case CollectiveErrorKind::CollectiveKindMismatch:
      return "CollectiveKindMismatch";
    case CollectiveErrorKind::ShapeMismatch:
      return "ShapeMismatch";
    case CollectiveErrorKind::DTypeMismatch:
      return "DTypeMismatch";
    case CollectiveErrorKind::ReduceOperationMismatch:
      return "ReduceOperationMismatch";
    case CollectiveErrorKind::RootMismatch:
      return "RootMismatch";
    case CollectiveErrorKind::ArgumentMismatch:
      return "ArgumentMismatch";
    case CollectiveErrorKind::NoBroadcastSender:
      return "NoBroadcastSender";
    case CollectiveErrorKind::SeveralBroadcastSenders:
      return "SeveralBroadcastSenders";
    case CollectiveErrorKind::InvalidArgument:
      return "InvalidArgument";
    case CollectiveErrorKind::Timeout:
      return "Timeout";
    case CollectiveErrorKind::PeerLost:
      return "PeerLost";
    case CollectiveErrorKind::Aborted:
      return "Aborted";
    case CollectiveErrorKind::Unsupported:
      return "Unsupported";
  }
  return "Unknown";
}

CollectiveError current_exception_as_collective_error(const std::string& who, int rank) {
  try {
    throw;
  } catch (const CollectiveError& e) {
    return e;
  } catch (const std::exception& e) {
    return CollectiveError(CollectiveErrorKind::Aborted, str(who, " failed: ", e.what()), {rank});
  } catch (...) {
    return CollectiveError(CollectiveErrorKind::Aborted, str(who, " failed"), {rank});
  }
}

}  // namespace ruccl
