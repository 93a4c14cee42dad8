#include "collective/transport/tcp/tcp_frame_payloads.h"

#include <algorithm>

#include "tensor/core/error.h"

namespace ruccl {

namespace {

constexpr auto kLastErrorKind = static_cast<std::uint8_t>(CollectiveErrorKind::Unsupported);
constexpr std::size_t kAbortFixedBytes = 1 + 2 + 2;  // kind, nranks, message length

void put_le(std::vector<std::uint8_t>& out, std::uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}

// Reads fields front to back; the first failure sticks and every later read returns 0.
class Reader {
 public:
  Reader(std::span<const std::uint8_t> bytes, const char* what) : bytes_(bytes), what_(what) {}

  std::uint64_t le(std::size_t n, const char* field) {
    if (!need(n, field)) return 0;
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < n; ++i) v |= std::uint64_t{bytes_[pos_ + i]} << (8 * i);
    pos_ += n;
    return v;
  }
  std::span<const std::uint8_t> take(std::size_t n, const char* field) {
    if (!need(n, field)) return {};
    auto out = bytes_.subspan(pos_, n);
    pos_ += n;
    return out;
  }
  bool need(std::size_t n, const char* field) {
    if (!error_.empty()) return false;
    if (remaining() < n) {
      error_ =
          str("truncated ", what_, ": ", field, " needs ", n, " bytes, ", remaining(), " left");
      return false;
    }
    return true;
  }
  std::size_t remaining() const { return bytes_.size() - pos_; }
  const std::string& error() const { return error_; }
  bool ok() const { return error_.empty(); }
  // "" when every byte was read, else the complaint about the rest.
  std::string trailing() const {
    if (!ok()) return error_;
    if (remaining() != 0) return str(what_, " has ", remaining(), " unexpected bytes after it");
    return "";
  }

 private:
  std::span<const std::uint8_t> bytes_;
  const char* what_;
  std::size_t pos_ = 0;
  std::string error_;
};

// The length of the well-formed UTF-8 sequence starting at bytes[at] (RFC 3629: no overlong
// forms, no surrogates, nothing above U+10FFFF), or 0 when it is not one.
std::size_t utf8_sequence(std::span<const std::uint8_t> bytes, std::size_t at) {
  const std::uint8_t b = bytes[at];
  if (b < 0x80) return 1;
  std::size_t n = 0;
  std::uint8_t lo = 0x80, hi = 0xBF;  // the range of the second byte
  if (b >= 0xC2 && b <= 0xDF) {
    n = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    n = 3;
    if (b == 0xE0) lo = 0xA0;
    if (b == 0xED) hi = 0x9F;
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4;
    if (b == 0xF0) lo = 0x90;
    if (b == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (bytes.size() - at < n) return 0;
  if (bytes[at + 1] < lo || bytes[at + 1] > hi) return 0;
  for (std::size_t i = 2; i < n; ++i) {
    if (bytes[at + i] < 0x80 || bytes[at + i] > 0xBF) return 0;
  }
  return n;
}

}  // namespace

void encode_hello_payload(const HelloPayload& hello, std::vector<std::uint8_t>& out) {
  put_le(out, hello.version, 2);
  put_le(out, static_cast<std::uint32_t>(hello.rank), 4);
  put_le(out, static_cast<std::uint32_t>(hello.world_size), 4);
  put_le(out, static_cast<std::uint8_t>(hello.channel), 1);
  out.insert(out.end(), hello.session.begin(), hello.session.end());
}

std::string decode_hello_payload(std::span<const std::uint8_t> bytes, HelloPayload& h) {
  if (bytes.size() != kHelloPayloadBytes) {
    return str("Hello payload of ", bytes.size(), " bytes (expected ", kHelloPayloadBytes, ")");
  }
  Reader in(bytes, "Hello");
  h.version = static_cast<std::uint16_t>(in.le(2, "version"));
  const std::uint64_t rank = in.le(4, "rank");
  const std::uint64_t world = in.le(4, "world_size");
  const auto channel = static_cast<std::uint8_t>(in.le(1, "channel"));
  const auto session = in.take(16, "session");
  if (!in.ok()) return in.error();
  if (h.version != kTcpProtocolVersion) {
    return str("unsupported TCP protocol version ", h.version, " in Hello (expected ",
               kTcpProtocolVersion, ")");
  }
  if (world < 1 || world > static_cast<std::uint64_t>(kMaxTcpWorldSize)) {
    return str("Hello world_size ", world, " out of range [1, ", kMaxTcpWorldSize, "]");
  }
  if (rank >= world) return str("Hello rank ", rank, " out of range for world_size ", world);
  if (channel > static_cast<std::uint8_t>(TcpChannel::Data)) {
    return str("Hello channel ", int{channel}, " is neither 0 (control) nor 1 (data)");
  }
  h.rank = static_cast<int>(rank);
  h.world_size = static_cast<int>(world);
  h.channel = static_cast<TcpChannel>(channel);
  std::copy(session.begin(), session.end(), h.session.begin());
  return in.trailing();
}

void encode_abort_payload(const CollectiveError& error, std::vector<std::uint8_t>& out) {
  std::vector<int> ranks = error.ranks();
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  if (ranks.size() > kMaxAbortRanks) ranks.resize(kMaxAbortRanks);

  // The message as well-formed UTF-8, cut at a character boundary to what the frame leaves.
  const std::string_view what = error.what();
  const std::span<const std::uint8_t> text(reinterpret_cast<const std::uint8_t*>(what.data()),
                                           what.size());
  const std::size_t room = kMaxAbortFramePayload - kAbortFixedBytes - 4 * ranks.size();
  const std::string_view ellipsis = "...";
  std::string message;
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t n = utf8_sequence(text, at);
    const std::size_t add = n == 0 ? 1 : n;
    const bool last = at + add == text.size();
    if (message.size() + add + (last ? 0 : ellipsis.size()) > room) {
      message += ellipsis;
      break;
    }
    if (n == 0) {
      message += '?';
    } else {
      message.append(what.data() + at, n);
    }
    at += add;
  }

  put_le(out, static_cast<std::uint8_t>(error.kind()), 1);
  put_le(out, ranks.size(), 2);
  for (int r : ranks) put_le(out, static_cast<std::uint32_t>(r), 4);
  put_le(out, message.size(), 2);
  out.insert(out.end(), message.begin(), message.end());
}

std::string decode_abort_payload(std::span<const std::uint8_t> bytes, int world_size,
                                 AbortPayload& a) {
  if (bytes.size() > kMaxAbortFramePayload) {
    return str("Abort payload of ", bytes.size(), " bytes over the cap ", kMaxAbortFramePayload);
  }
  Reader in(bytes, "Abort");
  const auto kind = static_cast<std::uint8_t>(in.le(1, "kind"));
  const auto nranks = static_cast<std::size_t>(in.le(2, "nranks"));
  if (!in.ok()) return in.error();
  if (kind > kLastErrorKind) return str("Abort kind ", int{kind}, " is no CollectiveErrorKind");
  a.kind = static_cast<CollectiveErrorKind>(kind);
  if (nranks > kMaxAbortRanks) {
    return str("Abort nranks ", nranks, " over the cap ", kMaxAbortRanks);
  }
  if (!in.need(4 * nranks, "the ranks")) return in.error();
  a.ranks.clear();
  a.ranks.reserve(nranks);
  for (std::size_t i = 0; i < nranks; ++i) {
    const auto r = static_cast<std::int32_t>(static_cast<std::uint32_t>(in.le(4, "a rank")));
    if (r < 0 || r >= world_size) {
      return str("Abort rank ", r, " out of range for world_size ", world_size);
    }
    if (!a.ranks.empty() && r <= a.ranks.back()) {
      return str("Abort ranks not strictly increasing: ", r, " after ", a.ranks.back());
    }
    a.ranks.push_back(r);
  }
  const auto length = static_cast<std::size_t>(in.le(2, "the message length"));
  const auto text = in.take(length, "the message");
  if (!in.ok()) return in.error();
  for (std::size_t at = 0; at < text.size();) {
    const std::size_t n = utf8_sequence(text, at);
    if (n == 0) return str("Abort message is not UTF-8 (byte ", at, ")");
    // what() ends at a NUL: a message with one would not survive as the error raised here.
    if (text[at] == 0) return str("Abort message contains a NUL (byte ", at, ")");
    at += n;
  }
  a.message.assign(text.begin(), text.end());
  return in.trailing();
}

}  // namespace ruccl
