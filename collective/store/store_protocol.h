#pragma once
// The TCP store's wire protocol: versioned, little-endian, field by field. Written once here and
// fuzzed (fuzz/store_request_fuzzer.cpp). The decoders take bytes from the network: they check
// every field and every length against its cap before anything is allocated from it, never
// crash on any input, and say what was wrong.
//
// Request, version 1 (integers little-endian):
//
//   offset  size  field
//   0       4     magic "RCSQ"
//   4       2     version (1)
//   6       1     op (StoreOp)
//   7       1     reserved, 0
//   8       16    session id (the job's; the server closes the connection on any other)
//   24      8     request id (u64; the reply carries it back)
//   32      4     timeout_ms (Get, Wait: how long the server may park the request; else 0)
//   36      4     key length    (1 .. kMaxStoreKeyBytes; 0 for Hello, Wait, Check)
//   40      4     value length  (<= kMaxStoreValueBytes; Add: 8; Wait/Check: the key list)
//   44      4     extra length  (<= kMaxStoreValueBytes; CompareSet's expected value; else 0)
//   48      ...   key bytes, value bytes, extra bytes
//
// A key list (Wait, Check, and a Timeout reply's missing keys) is a sequence of (u32 length,
// bytes), 1 .. kMaxStoreWaitKeys keys, each key 1 .. kMaxStoreKeyBytes bytes.
//
// Reply, version 1:
//
//   0   4  magic "RCSR"          4   2  version (1)
//   6   1  status (StoreStatus)  7   1  reserved, 0
//   8   8  request id            16  4  value length (<= kMaxStoreValueBytes)
//   20  ...  value: Ok: the op's result (Get/CompareSet: the value; Add: i64; Remove/Check: one
//            byte 0/1; Hello: the server's version as u16; Set/Wait: empty); Timeout: the key
//            list of the keys still missing; InvalidArgument: the message text.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collective/store/store.h"

namespace ruccl {

inline constexpr std::uint16_t kStoreProtocolVersion = 1;
inline constexpr std::array<std::uint8_t, 4> kStoreRequestMagic = {'R', 'C', 'S', 'Q'};
inline constexpr std::array<std::uint8_t, 4> kStoreReplyMagic = {'R', 'C', 'S', 'R'};
inline constexpr std::size_t kStoreRequestHeaderBytes = 48;
inline constexpr std::size_t kStoreReplyHeaderBytes = 20;

enum class StoreOp : std::uint8_t {
  Hello = 1,  ///< the client's first request: proves the session, answers the version
  Set = 2,
  Get = 3,
  Wait = 4,
  Add = 5,
  CompareSet = 6,
  Remove = 7,
  Check = 8,
};
/// "Set", "Get", ...; "?" for a value outside the enum.
const char* store_op_name(StoreOp op);

enum class StoreStatus : std::uint8_t {
  Ok = 0,
  Timeout = 1,          ///< a parked Get/Wait reached its timeout; the value lists missing keys
  InvalidArgument = 2,  ///< the request was well-formed but cannot be served (add to a non-integer)
};

/// The fixed 48 bytes of a request.
struct StoreRequestHeader {
  StoreOp op = StoreOp::Hello;
  SessionId session{};
  std::uint64_t request_id = 0;
  std::uint32_t timeout_ms = 0;
  std::uint32_t key_bytes = 0;
  std::uint32_t value_bytes = 0;
  std::uint32_t extra_bytes = 0;
  /// The bytes that follow the header (each length already checked against its cap).
  std::size_t body_bytes() const {
    return std::size_t{key_bytes} + std::size_t{value_bytes} + std::size_t{extra_bytes};
  }
};

/// A whole request, decoded.
struct StoreRequest {
  StoreRequestHeader header;      ///< encode_store_request sets the lengths from the fields below
  std::string key;                ///< all but Hello, Wait, Check
  StoreValue value;               ///< Set: the value; CompareSet: the desired value
  StoreValue expected;            ///< CompareSet: the expected value
  std::int64_t delta = 0;         ///< Add
  std::vector<std::string> keys;  ///< Wait, Check
};

/// The fixed 20 bytes of a reply.
struct StoreReplyHeader {
  StoreStatus status = StoreStatus::Ok;
  std::uint64_t request_id = 0;
  std::uint32_t value_bytes = 0;
};

struct StoreReply {
  StoreReplyHeader header;
  StoreValue value;
};

/// Whether the TCP store accepts `key` once per attempt (a second, different value is refused):
/// the keys that carry a rank's address or host identity, "<prefix>/addr/<rank>" and
/// "<prefix>/host/<rank>".
bool store_key_is_write_once(std::string_view key);

/// Appends the encoding of `request` (lengths taken from its fields) to `out`.
void encode_store_request(const StoreRequest& request, std::vector<std::uint8_t>& out);
/// Appends the encoding of `reply` (value length from reply.value) to `out`.
void encode_store_reply(const StoreReply& reply, std::vector<std::uint8_t>& out);
/// Appends a key list (see the layout) to `out`.
void encode_store_key_list(std::span<const std::string> keys, std::vector<std::uint8_t>& out);

/// Decodes the first kStoreRequestHeaderBytes of `bytes` (more may follow). Returns "" and fills
/// `header`, or what is wrong: bad magic, another version, an unknown op, a reserved byte set, a
/// length over its cap or not allowed for the op. The session id is not checked here (the server
/// compares it with its own).
std::string decode_store_request_header(std::span<const std::uint8_t> bytes,
                                        StoreRequestHeader& header);
/// Decodes one request that fills `bytes` exactly (header and body). "" on success.
std::string decode_store_request(std::span<const std::uint8_t> bytes, StoreRequest& request);
/// Decodes the first kStoreReplyHeaderBytes of `bytes`. "" on success.
std::string decode_store_reply_header(std::span<const std::uint8_t> bytes,
                                      StoreReplyHeader& header);
/// Decodes one reply that fills `bytes` exactly. "" on success.
std::string decode_store_reply(std::span<const std::uint8_t> bytes, StoreReply& reply);
/// Decodes a key list that fills `bytes` exactly. "" on success.
std::string decode_store_key_list(std::span<const std::uint8_t> bytes,
                                  std::vector<std::string>& keys);

}  // namespace ruccl
