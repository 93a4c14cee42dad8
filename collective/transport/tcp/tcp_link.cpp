#include "collective/transport/tcp/tcp_link.h"

#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "collective/common/collective_error.h"
#include "collective/common/crc32c.h"
#include "collective/transport/transport.h"

namespace ruccl {

TcpLink::TcpLink(net::Socket socket, SessionId session, int peer, std::string peer_name,
                 bool check_payloads, std::uint64_t handshake_frames)
    : socket_(std::move(socket)),
      check_payloads_(check_payloads),
      session_(session),
      peer_(peer),
      peer_name_(std::move(peer_name)),
      out_seq_(handshake_frames),
      in_seq_(handshake_frames),
      ahead_(new std::uint8_t[kReadAheadBytes]) {}

void TcpLink::enable_mac(const FrameKey& send, const FrameKey& receive) {
  send_mac_ = std::make_unique<FrameMac>(send);
  receive_mac_ = std::make_unique<FrameMac>(receive);
}

CollectiveError TcpLink::malformed(const std::string& why) const {
  return CollectiveError(CollectiveErrorKind::PeerLost,
                         str(peer_name_, " sent a malformed frame: ", why,
                             "; the connection is closed and the group aborted"),
                         {peer_});
}

// ---- sending ------------------------------------------------------------------------------------

void TcpLink::queue_data(std::uint64_t tag, const void* data, std::size_t nbytes, WireFault fault) {
  if (fault.drop) {  // the frames vanish on the wire: the receiver sees the gap in sequence
    Send gap{FrameType::Data, tag, nullptr, 0, {}};
    gap.skip_frames = nbytes == 0 ? 1 : (nbytes + kPieceBytes - 1) / kPieceBytes;
    sends_.push_back(std::move(gap));
    return;
  }
  sends_.push_back(Send{FrameType::Data, tag, static_cast<const std::uint8_t*>(data), nbytes, {}});
  sends_.back().fault = fault;
}

const std::uint8_t* TcpLink::frame_payload(const Send& s) {
  return s.changed.empty() ? s.data + s.frame_begin : s.changed.data();
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
  // Data frames without a checksum when this link's policy says so, or when a MAC covers them;
  // control frames always carry one (they are small).
  h.unchecked_payload = (!check_payloads_ || send_mac_) && s.type == FrameType::Data;
  h.payload_crc = h.unchecked_payload ? 0 : crc32c(s.data + s.frame_begin, n);
  h.mac = send_mac_ != nullptr;
  encode_frame_header(h, s.header);
  s.mac_bytes = 0;
  if (send_mac_) {
    send_mac_->begin(h.seq);
    send_mac_->update(s.header.data(), kFrameHeaderBytes);
    send_mac_->update(s.data + s.frame_begin, n);
    s.mac = send_mac_->finish();
    s.mac_bytes = kFrameTagBytes;
  }
  s.changed.clear();
  if (s.fault.corrupt && s.fault.corrupt_offset >= s.frame_begin &&
      s.fault.corrupt_offset < s.frame_begin + n) {  // the wire changes a byte of this frame
    s.changed.assign(s.data + s.frame_begin, s.data + s.frame_begin + n);
    s.changed[s.fault.corrupt_offset - s.frame_begin] ^= s.fault.corrupt_mask;
    s.fault.corrupt = false;
  }
  s.header_sent = 0;
  s.payload_sent = 0;
  s.mac_sent = 0;
  return true;
}

bool TcpLink::frame_written(const Send& s) {
  return s.header_sent == kFrameHeaderBytes && s.payload_sent == frame_length(s) &&
         s.mac_sent == s.mac_bytes;
}

bool TcpLink::finished(const Send& s) {
  return s.started && frame_written(s) && !s.fault.duplicate &&
         s.frame_begin + frame_length(s) >= s.nbytes;
}

LinkStep TcpLink::flush() {
  for (;;) {
    while (!sends_.empty() && finished(sends_.front())) sends_.pop_front();
    if (sends_.empty()) return LinkStep::Done;
    // The current frame of each of the first queued messages, in order; a message with more
    // frames to come ends the batch (its next frame starts once this one is written).
    iovec iov[3 * kBatchSends];
    std::size_t count = 0;
    std::size_t batched = 0;
    for (Send& s : sends_) {
      if (batched == kBatchSends) break;
      if (s.skip_frames != 0) {  // in queue order, so the gap lands where the message was
        out_seq_ += s.skip_frames;
        s.skip_frames = 0;
        s.started = true;  // now finished: an empty, written frame
        s.header_sent = kFrameHeaderBytes;
      }
      if (s.started && finished(s)) {
        ++batched;  // credited nothing below
        continue;
      }
      if (!s.started || frame_written(s)) {
        if (s.started && s.fault.duplicate) {  // the same frame again, same sequence number
          s.fault.duplicate = false;
          s.header_sent = 0;
          s.payload_sent = 0;
          s.mac_sent = 0;
        } else {
          [[maybe_unused]] const bool more = start_frame(s);
          RUCCL_ASSERT(more, "a finished send left in the queue");
        }
      }
      const std::size_t n = frame_length(s);
      if (s.header_sent < kFrameHeaderBytes) {
        iov[count++] = {s.header.data() + s.header_sent, kFrameHeaderBytes - s.header_sent};
      }
      if (s.payload_sent < n) {
        iov[count++] = {const_cast<std::uint8_t*>(frame_payload(s) + s.payload_sent),
                        n - s.payload_sent};
      }
      if (s.mac_sent < s.mac_bytes) {
        iov[count++] = {s.mac.data() + s.mac_sent, s.mac_bytes - s.mac_sent};
      }
      ++batched;
      if (s.frame_begin + n < s.nbytes || s.fault.duplicate) break;
    }
    if (count == 0) continue;  // only gaps: popped above
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = count;
    const ssize_t k = ::sendmsg(socket_.fd(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return LinkStep::Pending;
      return LinkStep::Closed;  // EPIPE, ECONNRESET, ...
    }
    // Credit what was written to the batched frames, in order.
    sent_ += static_cast<std::uint64_t>(k);
    auto left = static_cast<std::size_t>(k);
    for (auto it = sends_.begin(); left > 0 && batched > 0; ++it, --batched) {
      Send& s = *it;
      const std::size_t to_header = std::min(left, kFrameHeaderBytes - s.header_sent);
      s.header_sent += to_header;
      left -= to_header;
      const std::size_t to_payload = std::min(left, frame_length(s) - s.payload_sent);
      s.payload_sent += to_payload;
      left -= to_payload;
      const std::size_t to_mac = std::min(left, s.mac_bytes - s.mac_sent);
      s.mac_sent += to_mac;
      left -= to_mac;
    }
  }
}

// ---- receiving ----------------------------------------------------------------------------------

LinkStep TcpLink::fill() {
  RUCCL_ASSERT(ahead_begin_ == ahead_end_, "read-ahead refilled before it was consumed");
  ahead_begin_ = 0;
  ahead_end_ = 0;
  for (;;) {
    const ssize_t k = ::recv(socket_.fd(), ahead_.get(), kReadAheadBytes, MSG_DONTWAIT);
    if (k > 0) {
      ahead_end_ = static_cast<std::size_t>(k);
      received_ += static_cast<std::uint64_t>(k);
      return LinkStep::Done;
    }
    if (k == 0) return LinkStep::Closed;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return LinkStep::Pending;
    return LinkStep::Closed;
  }
}

std::size_t TcpLink::take(std::uint8_t* dst, std::size_t n) {
  const std::size_t k = std::min(n, ahead_end_ - ahead_begin_);
  if (k != 0) std::memcpy(dst, ahead_.get() + ahead_begin_, k);
  ahead_begin_ += k;
  return k;
}

LinkStep TcpLink::read_header() {
  if (in_.has_header) return LinkStep::Done;
  while (in_.header_got < kFrameHeaderBytes) {
    in_.header_got +=
        take(in_.header_bytes.data() + in_.header_got, kFrameHeaderBytes - in_.header_got);
    if (in_.header_got == kFrameHeaderBytes) break;
    const LinkStep step = fill();
    if (step != LinkStep::Done) return step;
  }
  const std::string why = decode_frame_header(
      std::span<const std::uint8_t, kFrameHeaderBytes>(in_.header_bytes.data(), kFrameHeaderBytes),
      session_, in_seq_ + 1, in_.header);
  if (!why.empty()) protocol_error(why);
  if (in_.header.mac != (receive_mac_ != nullptr)) {
    protocol_error(receive_mac_
                       ? str("expected a MAC (this rank runs RUCCL_INTEGRITY=mac), got ",
                             frame_type_name(in_.header.type), " frame ", in_.header.seq,
                             " without one (the peer's RUCCL_INTEGRITY is off)")
                       : str("a ", frame_type_name(in_.header.type), " frame ", in_.header.seq,
                             " with a MAC (the peer runs RUCCL_INTEGRITY=mac, this rank "
                             "does not): every rank needs the same RUCCL_INTEGRITY"));
  }
  if (in_.header.unchecked_payload && check_payloads_ && !receive_mac_) {
    protocol_error(
        str("expected a payload CRC-32C (this rank checks payloads on this link: "
            "payload_checksum on), got Data frame ",
            in_.header.seq, " without one (the peer's payload_checksum is off)"));
  }
  ++in_seq_;
  in_.has_header = true;
  in_.payload_got = 0;
  in_.crc = 0;
  in_.tag_got = 0;
  if (receive_mac_) {
    receive_mac_->begin(in_.header.seq);
    receive_mac_->update(in_.header_bytes.data(), kFrameHeaderBytes);
  }
  return LinkStep::Done;
}

void TcpLink::arm_wakeup() {
  const std::size_t tag_left = receive_mac_ ? kFrameTagBytes - in_.tag_got : 0;
  const std::size_t need = in_.has_header ? in_.header.payload_bytes - in_.payload_got + tag_left
                                          : kFrameHeaderBytes - in_.header_got;
  const std::size_t buffered = ahead_end_ - ahead_begin_;
  const int wanted = static_cast<int>(need > buffered ? need - buffered : 1);
  if (wanted == wake_bytes_) return;
  // The kernel caps the mark at half the receive buffer; a failure keeps the old mark, which is
  // never above what the step needs (it only costs wakeups).
  if (::setsockopt(socket_.fd(), SOL_SOCKET, SO_RCVLOWAT, &wanted, sizeof wanted) == 0) {
    wake_bytes_ = wanted;
  }
}

LinkStep TcpLink::read_payload(void* dst) {
  auto* out = static_cast<std::uint8_t*>(dst);
  const std::size_t n = in_.header.payload_bytes;
  while (in_.payload_got < n) {
    std::uint8_t* at = out + in_.payload_got;
    const std::size_t need = n - in_.payload_got;
    std::size_t got = take(at, need);
    if (got == 0 && need < kReadAheadBytes / 2) {  // small: through the read-ahead buffer
      const LinkStep step = fill();
      if (step != LinkStep::Done) return step;
      continue;
    }
    if (got == 0) {  // large: straight into the destination, never past this frame
      const ssize_t k = ::recv(socket_.fd(), at, need, MSG_DONTWAIT);
      if (k == 0) return LinkStep::Closed;
      if (k < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) return LinkStep::Pending;
        return LinkStep::Closed;
      }
      got = static_cast<std::size_t>(k);
      received_ += got;
    }
    if (!in_.header.unchecked_payload) in_.crc = crc32c(at, got, in_.crc);
    if (receive_mac_) receive_mac_->update(at, got);  // as it arrives: only the tag is left
    in_.payload_got += got;
  }
  if (receive_mac_) {
    const LinkStep step = read_tag();
    if (step != LinkStep::Done) return step;
  }
  if (!in_.header.unchecked_payload && in_.crc != in_.header.payload_crc) {
    protocol_error(str("payload CRC-32C mismatch in frame ", in_.header.seq, " (", n,
                       " bytes): the data was corrupted"));
  }
  in_.has_header = false;  // the header stays readable until the next read_header
  in_.header_got = 0;
  return LinkStep::Done;
}

LinkStep TcpLink::read_tag() {
  while (in_.tag_got < kFrameTagBytes) {
    in_.tag_got += take(in_.tag.data() + in_.tag_got, kFrameTagBytes - in_.tag_got);
    if (in_.tag_got == kFrameTagBytes) break;
    const LinkStep step = fill();
    if (step != LinkStep::Done) return step;
  }
  if (!frame_tags_equal(receive_mac_->finish(), in_.tag)) {
    protocol_error(str("MAC mismatch in ", frame_type_name(in_.header.type), " frame ",
                       in_.header.seq, " (", in_.header.payload_bytes,
                       " bytes): the frame was changed on the way (RUCCL_INTEGRITY=mac)"));
  }
  return LinkStep::Done;
}

}  // namespace ruccl
