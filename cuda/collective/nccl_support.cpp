#include "cuda/collective/nccl_support.h"

#include <cstring>

#include "tensor/core/error.h"

namespace ruccl::cuda {

std::optional<ncclDataType_t> nccl_dtype(DType dtype) {
  switch (dtype) {
    case DType::F16:
      return ncclFloat16;
    case DType::BF16:
      return ncclBfloat16;
    case DType::F32:
      return ncclFloat32;
    case DType::F64:
      return ncclFloat64;
    case DType::I32:
      return ncclInt32;
    case DType::I64:
      return ncclInt64;
    case DType::Bool:
      return std::nullopt;
  }
  return std::nullopt;
}

std::optional<ncclRedOp_t> nccl_op(ReduceOperation op, DType dtype) {
  if (!nccl_dtype(dtype)) return std::nullopt;
  switch (op) {
    case ReduceOperation::Sum:
      return ncclSum;
    case ReduceOperation::Prod:
      return ncclProd;
    case ReduceOperation::Min:
      return ncclMin;
    case ReduceOperation::Max:
      return ncclMax;
    case ReduceOperation::Mean:
      if (is_floating(dtype)) return ncclAvg;
      return std::nullopt;
    case ReduceOperation::BitAnd:
    case ReduceOperation::BitOr:
    case ReduceOperation::BitXor:
      return std::nullopt;
  }
  return std::nullopt;
}

bool nccl_runs(OpKind kind, DType dtype, ReduceOperation op) {
  switch (kind) {
    case OpKind::AllReduce:
    case OpKind::Reduce:
    case OpKind::ReduceScatter:
      return nccl_op(op, dtype).has_value();
    default:
      return true;  // data movement: bytes, any dtype
  }
}

CollectiveErrorKind nccl_error_kind(ncclResult_t result) {
  switch (result) {
    case ncclRemoteError:
    case ncclSystemError:
      return CollectiveErrorKind::PeerLost;
    case ncclUnhandledCudaError:
    case ncclInternalError:
      return CollectiveErrorKind::Aborted;
    default:
      return CollectiveErrorKind::InvalidArgument;
  }
}

namespace {

const char* result_name(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "ncclSuccess";
    case ncclUnhandledCudaError:
      return "ncclUnhandledCudaError";
    case ncclSystemError:
      return "ncclSystemError";
    case ncclInternalError:
      return "ncclInternalError";
    case ncclInvalidArgument:
      return "ncclInvalidArgument";
    case ncclInvalidUsage:
      return "ncclInvalidUsage";
    case ncclRemoteError:
      return "ncclRemoteError";
    case ncclInProgress:
      return "ncclInProgress";
    default:
      return "an unknown NCCL result";
  }
}

}  // namespace

CollectiveError nccl_collective_error(ncclResult_t result, std::string_view what,
                                      std::string_view detail) {
  std::string message = str(what, " failed with ", result_name(result), " (",
                            static_cast<int>(result), ": ", ncclGetErrorString(result), ")");
  if (!detail.empty()) message += str(": ", detail);
  if (nccl_error_kind(result) == CollectiveErrorKind::PeerLost) {
    message += "; a peer or the network failed, the NCCL communicator was aborted";
  }
  return CollectiveError(nccl_error_kind(result), message);
}

std::string encode_unique_id(const ncclUniqueId& id) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * sizeof id.internal);
  for (char c : id.internal) {
    const auto b = static_cast<unsigned char>(c);
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

ncclUniqueId decode_unique_id(std::string_view text) {
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  ncclUniqueId id;
  const std::size_t bytes = sizeof id.internal;
  auto bad = [&] {
    const std::string shown = text.size() > 40 ? str(text.substr(0, 40), "...") : std::string(text);
    return CollectiveError(CollectiveErrorKind::InvalidConfig,
                           str("NCCL unique id: expected ", 2 * bytes, " hex digits, got ",
                               text.size(), " characters \"", shown, "\""));
  };
  if (text.size() != 2 * bytes) throw bad();
  for (std::size_t i = 0; i < bytes; ++i) {
    const int hi = digit(text[2 * i]);
    const int lo = digit(text[2 * i + 1]);
    if (hi < 0 || lo < 0) throw bad();
    id.internal[i] = static_cast<char>((hi << 4) | lo);
  }
  return id;
}

std::string unique_id_key(std::int64_t generation) {
  return str("ruccl/nccl/", generation, "/unique_id");
}

ncclUniqueId exchange_unique_id(Store& store, int rank, const Deadline& deadline,
                                ncclUniqueId (*make)()) {
  const std::int64_t generation = store.add(str("ruccl/nccl/rank", rank, "/groups"), 1);
  const std::string key = unique_id_key(generation);
  if (rank == 0) {
    const ncclUniqueId id = make();
    store.set(key, encode_unique_id(id));
    return id;
  }
  return decode_unique_id(store.get_string(key, deadline));
}

}  // namespace ruccl::cuda
