#include "collective/transport/tcp_link.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "collective/collective_error.h"
#include "collective/transport/crc32c.h"
#include "collective/transport/transport.h"

namespace ruccl {

TcpLink::TcpLink(net::Socket socket, SessionBytes session, int peer, std::string peer_name,
                 std::uint64_t handshake_frames)
    : socket_(std::move(socket)),
      session_(session),
      peer_(peer),
      peer_name_(std::move(peer_name)),
      out_seq_(handshake_frames),
      in_seq_(handshake_frames) {}

CollectiveError TcpLink::malformed(const std::string& why) const {
  return CollectiveError(CollectiveErrorKind::PeerLost,
                         str(peer_name_, " sent a malformed frame: ", why,
                             "; the connection is closed and the group aborted"),
                         {peer_});
}

// ---- sending ------------------------------------------------------------------------------------

void TcpLink::queue_data(std::uint64_t tag, const void* data, std::size_t nbytes, WireFault fault) {
  if (fault.drop) {  // the frames vanish on the wire: the receiver sees the gap in sequence
    out_seq_ += nbytes == 0 ? 1 : (nbytes + kPieceBytes - 1) / kPieceBytes;
    return;
  }
  sends_.push_back(Send{FrameType::Data, tag, static_cast<const std::uint8_t*>(data), nbytes, {}});
  sends_.back().fault = fault;
}

void TcpLink::queue_owned(FrameType type, std::uint64_t tag, std::vector<std::uint8_t> payload) {
  Send s{type, tag, nullptr, payload.size(), std::move(payload)};
  sends_.push_back(std::move(s));
  sends_.back().data = sends_.back().owned.data();
}

std::size_t TcpLink::frame_length(const Send& s) {
  return s.type == FrameType::Data ? std::min(kPieceBytes, s.nbytes - s.frame_begin)
                                   : s.nbytes - s.frame_begin;
}

bool TcpLink::start_frame(Send& s) {
  if (s.started) {
    s.frame_begin += frame_length(s);
    if (s.frame_begin >= s.nbytes) return false;  // a 0-byte message is one empty frame
  }
  s.started = true;
  const std::size_t n = frame_length(s);
  FrameHeader h{};
  h.type = s.type;
  h.payload_bytes = static_cast<std::uint32_t>(n);
  h.session = session_;
  h.seq = ++out_seq_;
  h.tag = s.tag;
  h.message_bytes = s.type == FrameType::Data ? s.nbytes : 0;
  h.payload_crc = crc32c(s.data + s.frame_begin, n);
  if (s.fault.corrupt) {  // what the receiver computes over the payload will differ
    h.payload_crc ^= 0x00010000u;
    s.fault.corrupt = false;
  }
  encode_frame_header(h, s.header);
  s.header_sent = 0;
  s.payload_sent = 0;
  return true;
}

LinkStep TcpLink::flush() {
  while (!sends_.empty()) {
    Send& s = sends_.front();
    const std::size_t n = s.started ? frame_length(s) : 0;
    if (s.started && s.header_sent == kFrameHeaderBytes && s.payload_sent == n &&
        s.fault.duplicate) {
      s.fault.duplicate = false;  // the same frame again, same sequence number
      s.header_sent = 0;
      s.payload_sent = 0;
    }
    if (!s.started || (s.header_sent == kFrameHeaderBytes && s.payload_sent == n)) {
      if (!start_frame(s)) {
        sends_.pop_front();
        continue;
      }
    }
    const std::size_t length = frame_length(s);
    iovec iov[2];
    int count = 0;
    if (s.header_sent < kFrameHeaderBytes) {
      iov[count++] = {s.header.data() + s.header_sent, kFrameHeaderBytes - s.header_sent};
    }
    if (s.payload_sent < length) {
      iov[count++] = {const_cast<std::uint8_t*>(s.data + s.frame_begin + s.payload_sent),
                      length - s.payload_sent};
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<std::size_t>(count);
    const ssize_t k = ::sendmsg(socket_.fd(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return LinkStep::Pending;
      return LinkStep::Closed;  // EPIPE, ECONNRESET, ...
    }
    std::size_t written = static_cast<std::size_t>(k);
    const std::size_t to_header = std::min(written, kFrameHeaderBytes - s.header_sent);
    s.header_sent += to_header;
    s.payload_sent += written - to_header;
  }
  return LinkStep::Done;
}

// ---- receiving ----------------------------------------------------------------------------------

LinkStep TcpLink::read_header() {
  if (in_.has_header) return LinkStep::Done;
  while (in_.header_got < kFrameHeaderBytes) {
    const ssize_t k = ::recv(socket_.fd(), in_.header_bytes.data() + in_.header_got,
                             kFrameHeaderBytes - in_.header_got, MSG_DONTWAIT);
    if (k > 0) {
      in_.header_got += static_cast<std::size_t>(k);
      continue;
    }
    if (k == 0) return LinkStep::Closed;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return LinkStep::Pending;
    return LinkStep::Closed;
  }
  const std::string why = decode_frame_header(
      std::span<const std::uint8_t, kFrameHeaderBytes>(in_.header_bytes.data(), kFrameHeaderBytes),
      session_, in_seq_ + 1, in_.header);
  if (!why.empty()) protocol_error(why);
  ++in_seq_;
  in_.has_header = true;
  in_.payload_got = 0;
  in_.crc = 0;
  return LinkStep::Done;
}

LinkStep TcpLink::read_payload(void* dst) {
  auto* out = static_cast<std::uint8_t*>(dst);
  const std::size_t n = in_.header.payload_bytes;
  while (in_.payload_got < n) {
    const ssize_t k =
        ::recv(socket_.fd(), out + in_.payload_got, n - in_.payload_got, MSG_DONTWAIT);
    if (k > 0) {
      in_.crc = crc32c(out + in_.payload_got, static_cast<std::size_t>(k), in_.crc);
      in_.payload_got += static_cast<std::size_t>(k);
      continue;
    }
    if (k == 0) return LinkStep::Closed;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return LinkStep::Pending;
    return LinkStep::Closed;
  }
  if (in_.crc != in_.header.payload_crc) {
    protocol_error(str("payload CRC-32C mismatch in frame ", in_.header.seq, " (", n,
                       " bytes): the data was corrupted"));
  }
  in_.has_header = false;  // the header stays readable until the next read_header
  in_.header_got = 0;
  return LinkStep::Done;
}

}  // namespace ruccl
