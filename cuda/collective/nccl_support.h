#pragma once
// What the NCCL engine needs that runs without a GPU (and is tested without one,
// tests/cuda_host/nccl_support_test.cpp): the dtype and reduce-operation mapping, the mapping of
// NCCL result codes onto CollectiveError kinds, and the ncclUniqueId's travel through a Store.
#include <nccl.h>

#include <optional>
#include <string>
#include <string_view>

#include "collective/common/collective_error.h"
#include "collective/common/reduce_operation.h"
#include "collective/protocol/call_record.h"
#include "collective/store/store.h"
#include "tensor/core/dtype.h"

namespace ruccl::cuda {

/// NCCL's element type for `dtype` (every ruCCL dtype but Bool, which moves as ncclUint8 bytes in
/// data movement and cannot be reduced by NCCL).
std::optional<ncclDataType_t> nccl_dtype(DType dtype);
/// NCCL's reduction for `op` on `dtype`: Sum, Prod, Min, Max; Mean is ncclAvg (floating dtypes);
/// nullopt for the bitwise operations (NCCL has none) and for Bool.
std::optional<ncclRedOp_t> nccl_op(ReduceOperation op, DType dtype);
/// Whether NCCL itself runs `kind` on `dtype` with `op` (ignored for data movement): else the NCCL
/// engine's fallback (our algorithms over the control channel) does.
bool nccl_runs(OpKind kind, DType dtype, ReduceOperation op);

/// The CollectiveError kind of a failed NCCL result: ncclRemoteError and ncclSystemError (a peer
/// or the network failed) are PeerLost; ncclInvalidArgument and ncclInvalidUsage are
/// InvalidArgument; ncclUnhandledCudaError and ncclInternalError are Aborted (the communicator is
/// unusable). Success and ncclInProgress are not failures (InvalidArgument: a caller's bug).
CollectiveErrorKind nccl_error_kind(ncclResult_t result);
/// The CollectiveError for `result` in `what` ("ncclAllReduce of all_reduce (call 3)"): its kind,
/// NCCL's name of the code and its text, and `detail` (ncclGetLastError) when not empty.
CollectiveError nccl_collective_error(ncclResult_t result, std::string_view what,
                                      std::string_view detail = {});

/// 2 * NCCL_UNIQUE_ID_BYTES lowercase hex digits.
std::string encode_unique_id(const ncclUniqueId& id);
/// The inverse (either case). InvalidConfig naming the text when it is not exactly that many hex
/// digits.
ncclUniqueId decode_unique_id(std::string_view text);

/// The key under which rank 0 publishes the unique id of this rank's `generation`-th NCCL group.
std::string unique_id_key(std::int64_t generation);
/// Distributes a unique id through `store`: rank 0 calls `make` (ncclGetUniqueId) and publishes
/// the id; every rank returns it. `generation` counts this rank's NCCL groups in the store (the
/// same on every rank that makes its groups in the same order): taken from the store's counter
/// "ruccl/nccl/rank<r>/groups". Timeout (naming the key) when rank 0 never publishes.
ncclUniqueId exchange_unique_id(Store& store, int rank, const Deadline& deadline,
                                ncclUniqueId (*make)());

}  // namespace ruccl::cuda
