#include "collective/store/store_protocol.h"

#include <algorithm>
#include <cstring>

#include "tensor/core/error.h"

namespace ruccl {

namespace {

constexpr std::uint8_t kFirstOp = static_cast<std::uint8_t>(StoreOp::Hello);
constexpr std::uint8_t kLastOp = static_cast<std::uint8_t>(StoreOp::Check);
constexpr std::uint8_t kLastStatus = static_cast<std::uint8_t>(StoreStatus::InvalidArgument);

void put_le(std::vector<std::uint8_t>& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void put_bytes(std::vector<std::uint8_t>& out, std::span<const std::uint8_t> b) {
  out.insert(out.end(), b.begin(), b.end());
}
std::span<const std::uint8_t> bytes_of(const std::string& s) {
  return {reinterpret_cast<const std::uint8_t*>(s.data()), s.size()};
}
std::uint64_t get_le(std::span<const std::uint8_t> b, std::size_t at, int bytes) {
  std::uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= std::uint64_t{b[at + static_cast<std::size_t>(i)]} << (8 * i);
  return v;
}

bool has_magic(std::span<const std::uint8_t> b, const std::array<std::uint8_t, 4>& magic) {
  return std::equal(magic.begin(), magic.end(), b.begin());
}

std::string magic_text(std::span<const std::uint8_t> b) {
  return str("0x", std::hex, get_le(b, 0, 4));
}

// The lengths an op may carry, checked against the caps before any body byte is looked at.
std::string check_lengths(const StoreRequestHeader& h) {
  const char* op = store_op_name(h.op);
  if (h.key_bytes > kMaxStoreKeyBytes)
    return str("store request ", op, ": key length ", h.key_bytes, " over the cap of ",
               kMaxStoreKeyBytes);
  if (h.value_bytes > kMaxStoreValueBytes)
    return str("store request ", op, ": value length ", h.value_bytes, " over the cap of ",
               kMaxStoreValueBytes);
  if (h.extra_bytes > kMaxStoreValueBytes)
    return str("store request ", op, ": extra length ", h.extra_bytes, " over the cap of ",
               kMaxStoreValueBytes);
  const bool keyless = h.op == StoreOp::Hello || h.op == StoreOp::Wait || h.op == StoreOp::Check;
  if (keyless && h.key_bytes != 0)
    return str("store request ", op, ": expected no key, got a key length of ", h.key_bytes);
  if (!keyless && h.key_bytes == 0)
    return str("store request ", op, ": expected a key, got a key length of 0");
  if (h.op != StoreOp::CompareSet && h.extra_bytes != 0)
    return str("store request ", op, ": expected no extra bytes, got ", h.extra_bytes);
  const bool parks = h.op == StoreOp::Get || h.op == StoreOp::Wait;
  if (!parks && h.timeout_ms != 0)
    return str("store request ", op, ": expected a timeout of 0, got ", h.timeout_ms, " ms");
  switch (h.op) {
    case StoreOp::Hello:
    case StoreOp::Get:
    case StoreOp::Remove:
      if (h.value_bytes != 0)
        return str("store request ", op, ": expected no value, got ", h.value_bytes, " bytes");
      break;
    case StoreOp::Add:
      if (h.value_bytes != 8)
        return str("store request Add: expected an 8-byte delta, got ", h.value_bytes, " bytes");
      break;
    case StoreOp::Wait:
    case StoreOp::Check:
      if (h.value_bytes < 5)
        return str("store request ", op, ": expected a key list of at least 5 bytes, got ",
                   h.value_bytes);
      break;
    default:
      break;
  }
  return {};
}

}  // namespace

const char* store_op_name(StoreOp op) {
  switch (op) {
    case StoreOp::Hello:
      return "Hello";
    case StoreOp::Set:
      return "Set";
    case StoreOp::Get:
      return "Get";
    case StoreOp::Wait:
      return "Wait";
    case StoreOp::Add:
      return "Add";
    case StoreOp::CompareSet:
      return "CompareSet";
    case StoreOp::Remove:
      return "Remove";
    case StoreOp::Check:
      return "Check";
  }
  return "?";
}

void encode_store_key_list(std::span<const std::string> keys, std::vector<std::uint8_t>& out) {
  for (const std::string& k : keys) {
    put_le(out, k.size(), 4);
    put_bytes(out, bytes_of(k));
  }
}

void encode_store_request(const StoreRequest& r, std::vector<std::uint8_t>& out) {
  std::vector<std::uint8_t> value;
  std::span<const std::uint8_t> value_bytes = r.value;
  if (r.header.op == StoreOp::Add) {
    put_le(value, static_cast<std::uint64_t>(r.delta), 8);
    value_bytes = value;
  } else if (r.header.op == StoreOp::Wait || r.header.op == StoreOp::Check) {
    encode_store_key_list(r.keys, value);
    value_bytes = value;
  }
  out.reserve(out.size() + kStoreRequestHeaderBytes + r.key.size() + value_bytes.size() +
              r.expected.size());
  put_bytes(out, kStoreRequestMagic);
  put_le(out, kStoreProtocolVersion, 2);
  put_le(out, static_cast<std::uint8_t>(r.header.op), 1);
  put_le(out, 0, 1);
  put_bytes(out, r.header.session);
  put_le(out, r.header.request_id, 8);
  put_le(out, r.header.timeout_ms, 4);
  put_le(out, r.key.size(), 4);
  put_le(out, value_bytes.size(), 4);
  put_le(out, r.expected.size(), 4);
  put_bytes(out, bytes_of(r.key));
  put_bytes(out, value_bytes);
  put_bytes(out, r.expected);
}

void encode_store_reply(const StoreReply& r, std::vector<std::uint8_t>& out) {
  out.reserve(out.size() + kStoreReplyHeaderBytes + r.value.size());
  put_bytes(out, kStoreReplyMagic);
  put_le(out, kStoreProtocolVersion, 2);
  put_le(out, static_cast<std::uint8_t>(r.header.status), 1);
  put_le(out, 0, 1);
  put_le(out, r.header.request_id, 8);
  put_le(out, r.value.size(), 4);
  put_bytes(out, r.value);
}

std::string decode_store_request_header(std::span<const std::uint8_t> b, StoreRequestHeader& h) {
  if (b.size() < kStoreRequestHeaderBytes)
    return str("truncated store request: the header needs ", kStoreRequestHeaderBytes,
               " bytes, got ", b.size());
  if (!has_magic(b, kStoreRequestMagic))
    return str("not a store request: magic ", magic_text(b), " (expected \"RCSQ\")");
  const auto version = static_cast<std::uint16_t>(get_le(b, 4, 2));
  if (version != kStoreProtocolVersion)
    return str("unsupported store protocol version ", version, " (expected ", kStoreProtocolVersion,
               ")");
  const std::uint8_t op = b[6];
  if (op < kFirstOp || op > kLastOp)
    return str("unknown store op ", int{op}, " (expected ", int{kFirstOp}, " to ", int{kLastOp},
               ")");
  if (b[7] != 0) return str("store request: reserved byte is ", int{b[7]}, " (expected 0)");
  h.op = static_cast<StoreOp>(op);
  std::copy_n(b.begin() + 8, h.session.size(), h.session.begin());
  h.request_id = get_le(b, 24, 8);
  h.timeout_ms = static_cast<std::uint32_t>(get_le(b, 32, 4));
  h.key_bytes = static_cast<std::uint32_t>(get_le(b, 36, 4));
  h.value_bytes = static_cast<std::uint32_t>(get_le(b, 40, 4));
  h.extra_bytes = static_cast<std::uint32_t>(get_le(b, 44, 4));
  return check_lengths(h);
}

std::string decode_store_key_list(std::span<const std::uint8_t> b, std::vector<std::string>& keys) {
  keys.clear();
  std::size_t at = 0;
  while (at < b.size()) {
    if (keys.size() == kMaxStoreWaitKeys)
      return str("store key list: more than ", kMaxStoreWaitKeys, " keys");
    if (b.size() - at < 4)
      return str("truncated store key list: a key length needs 4 bytes, ", b.size() - at, " left");
    const std::uint64_t n = get_le(b, at, 4);
    at += 4;
    if (n == 0 || n > kMaxStoreKeyBytes)
      return str("store key list: key ", keys.size(), " has length ", n, " (expected 1 to ",
                 kMaxStoreKeyBytes, ")");
    if (b.size() - at < n)
      return str("truncated store key list: key ", keys.size(), " needs ", n, " bytes, ",
                 b.size() - at, " left");
    keys.emplace_back(reinterpret_cast<const char*>(b.data() + at), static_cast<std::size_t>(n));
    at += static_cast<std::size_t>(n);
  }
  if (keys.empty()) return "store key list: expected at least one key, got none";
  return {};
}

std::string decode_store_request(std::span<const std::uint8_t> b, StoreRequest& r) {
  if (std::string e = decode_store_request_header(b, r.header); !e.empty()) return e;
  const StoreRequestHeader& h = r.header;
  const std::size_t body = b.size() - kStoreRequestHeaderBytes;
  if (body != h.body_bytes())
    return str(body < h.body_bytes() ? "truncated" : "oversized", " store request ",
               store_op_name(h.op), ": the header announces ", h.body_bytes(), " body bytes, got ",
               body);
  const std::uint8_t* p = b.data() + kStoreRequestHeaderBytes;
  r.key.assign(reinterpret_cast<const char*>(p), h.key_bytes);
  p += h.key_bytes;
  const std::span<const std::uint8_t> value(p, h.value_bytes);
  p += h.value_bytes;
  r.value.clear();
  r.keys.clear();
  r.delta = 0;
  r.expected.assign(p, p + h.extra_bytes);
  switch (h.op) {
    case StoreOp::Add:
      r.delta = static_cast<std::int64_t>(get_le(value, 0, 8));
      break;
    case StoreOp::Wait:
    case StoreOp::Check:
      return decode_store_key_list(value, r.keys);
    default:
      r.value.assign(value.begin(), value.end());
      break;
  }
  return {};
}

std::string decode_store_reply_header(std::span<const std::uint8_t> b, StoreReplyHeader& h) {
  if (b.size() < kStoreReplyHeaderBytes)
    return str("truncated store reply: the header needs ", kStoreReplyHeaderBytes, " bytes, got ",
               b.size());
  if (!has_magic(b, kStoreReplyMagic))
    return str("not a store reply: magic ", magic_text(b), " (expected \"RCSR\")");
  const auto version = static_cast<std::uint16_t>(get_le(b, 4, 2));
  if (version != kStoreProtocolVersion)
    return str("unsupported store reply version ", version, " (expected ", kStoreProtocolVersion,
               ")");
  if (b[6] > kLastStatus)
    return str("unknown store reply status ", int{b[6]}, " (expected 0 to ", int{kLastStatus}, ")");
  if (b[7] != 0) return str("store reply: reserved byte is ", int{b[7]}, " (expected 0)");
  h.status = static_cast<StoreStatus>(b[6]);
  h.request_id = get_le(b, 8, 8);
  h.value_bytes = static_cast<std::uint32_t>(get_le(b, 16, 4));
  if (h.value_bytes > kMaxStoreValueBytes)
    return str("store reply: value length ", h.value_bytes, " over the cap of ",
               kMaxStoreValueBytes);
  return {};
}

std::string decode_store_reply(std::span<const std::uint8_t> b, StoreReply& r) {
  if (std::string e = decode_store_reply_header(b, r.header); !e.empty()) return e;
  const std::size_t body = b.size() - kStoreReplyHeaderBytes;
  if (body != r.header.value_bytes)
    return str(body < r.header.value_bytes ? "truncated" : "oversized",
               " store reply: the header announces ", r.header.value_bytes, " value bytes, got ",
               body);
  r.value.assign(b.begin() + kStoreReplyHeaderBytes, b.end());
  return {};
}

bool store_key_is_write_once(std::string_view key) {
  const std::size_t last = key.rfind('/');
  if (last == std::string_view::npos || last + 1 == key.size()) return false;
  for (const char c : key.substr(last + 1)) {
    if (c < '0' || c > '9') return false;
  }
  const std::string_view head = key.substr(0, last);
  const std::string_view kind = head.substr(head.rfind('/') + 1);
  return kind == "addr" || kind == "host";
}

}  // namespace ruccl
