#pragma once
// The always-on agreement check: every rank compares every rank's CallRecord of the same call.
// The check is a pure function of the records, so every rank raises the same error.
#include <optional>
#include <span>

#include "collective/collective_error.h"
#include "collective/transport/call_record.h"

namespace ruccl {

/// Stores `kind` and `message` as the record's local error unless one is already set.
void set_local_error(CallRecord& record, CollectiveErrorKind kind, const std::string& message);

/// The error every rank must raise for these records (index = rank), or nullopt when they agree.
/// Checked in order: collective kind, local errors, root, reduce operation, broadcast senders,
/// dtype, shape, CallOptions words. `label` names the call in messages; `me` is the checking rank
/// (its word names are used).
std::optional<CollectiveError> check_agreement(std::span<const CallRecord> all, int me,
                                               const char* label);

}  // namespace ruccl
