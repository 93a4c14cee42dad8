#pragma once
// The always-on agreement check: every rank compares every rank's CallRecord of the same call.
// The check is a pure function of the records, so every rank raises the same error.
#include <optional>
#include <span>

#include "collective/common/collective_error.h"
#include "collective/common/rank_names.h"
#include "collective/protocol/call_record.h"

namespace ruccl {

/// Stores `kind` and `message` as the record's local error unless one is already set.
void set_local_error(CallRecord& record, CollectiveErrorKind kind, const std::string& message);

/// The error every rank must raise for these records (index = rank), or nullopt when they agree.
/// Checked in order: collective kind, local errors, root, reduce operation, broadcast senders,
/// dtype, shape, CallOptions words. The message depends only on the records and `names`, so
/// every rank raises the same text: it starts with the call's label when every rank gave the
/// same ("all_reduce (call #3): "), else with "call #3: ".
std::optional<CollectiveError> check_agreement(std::span<const CallRecord> all,
                                               const RankNames& names);

}  // namespace ruccl
