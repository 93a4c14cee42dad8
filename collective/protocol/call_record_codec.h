#pragma once
// The wire encoding of a CallRecord: what every transport that crosses a process sends for the
// agreement exchange. Versioned and little-endian, field by field (never a memcpy of the struct,
// which has padding and host byte order). A decoder of bytes from another process checks every
// field and length before it trusts one, and says what was wrong.
//
// Layout, version 2 (all integers little-endian; strings are a u8 length, then the bytes, no NUL;
// version 1 had no engine name):
//
//   offset  size  field
//   0       2     version (2)
//   2       2     length of everything that follows (so a reader can skip a whole record)
//   4       8     seq (u64)
//   12      1     kind (OpKind)             13  1  dtype (DType or 0xFF)
//   14      1     reduce_op (0xFF: none)     15  1  has_tensor (0 or 1)
//   16      1     algorithm                  17  1  error_kind (CollectiveErrorKind or 0xFF)
//   18      1     ndim + 1 (0: no shape)     19  1  num_words
//   20      4     root (i32)                 24  4  tree_arity (i32)
//   28      8*    dims[ndim] (i64), then words[num_words] (i64)
//   ...           num_words word names, the label, the engine, the error message (strings)
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "collective/protocol/call_record.h"

namespace ruccl {

inline constexpr std::uint16_t kCallRecordWireVersion = 2;
/// The largest encoding (every field at its maximum): a receiver's bound for one record.
inline constexpr std::size_t kMaxEncodedCallRecordBytes =
    28 + 8 * (Shape::kMaxDims + CallRecord::kMaxWords) +
    CallRecord::kMaxWords * CallRecord::kWordNameBytes + CallRecord::kLabelBytes +
    CallRecord::kEngineBytes + CallRecord::kMessageBytes;

/// Appends the version-2 encoding of `record` to `out`.
void encode_call_record(const CallRecord& record, std::vector<std::uint8_t>& out);

/// Decodes one record that fills `bytes` exactly. Returns "" and sets `record` on success, else
/// a description of the first thing wrong ("unsupported CallRecord version 7 (expected 2)",
/// "CallRecord ndim 12 out of range [0, 8]", "truncated: ..."), leaving `record` unspecified.
std::string decode_call_record(std::span<const std::uint8_t> bytes, CallRecord& record);

}  // namespace ruccl
