#include "collective/transport/tcp/tcp_path.h"

#include <algorithm>

#include "collective/protocol/call_record_codec.h"

namespace ruccl {

namespace {

PathStep path_step(LinkStep step) {
  switch (step) {
    case LinkStep::Done:
      return PathStep::Done;
    case LinkStep::Pending:
      return PathStep::Pending;
    case LinkStep::Closed:
      return PathStep::Closed;
  }
  return PathStep::Closed;
}

}  // namespace

PathStep TcpPath::post_send(std::uint64_t tag, const void* data, std::size_t nbytes,
                            WireFault fault) {
  // Queued behind the records (the link's own copies) and written as far as the socket takes,
  // in one sendmsg with them.
  link_.queue_data(tag, data, nbytes, fault);
  return path_step(link_.flush());
}

PathStep TcpPath::progress_sends() {
  if (link_.drained()) return PathStep::Done;
  return path_step(link_.flush());
}

void TcpPath::check_frame(const PathReceive& r, const FrameHeader& h) const {
  const FrameType expected_type = r.record ? FrameType::Record : FrameType::Data;
  if (h.type != expected_type) {
    throw path_kind_mismatch(names_, rank_, r, h.type == FrameType::Record);
  }
  if (r.record) {
    if (h.tag != r.tag) {
      link_.protocol_error(str("the record of call #", h.tag, " (expected call #", r.tag, ")"));
    }
    if (h.payload_bytes > kMaxEncodedCallRecordBytes) {
      link_.protocol_error(str("a record of ", h.payload_bytes, " bytes (at most ",
                               kMaxEncodedCallRecordBytes, ")"));
    }
    return;
  }
  if (h.tag != r.tag || h.message_bytes != r.nbytes) {
    throw path_message_mismatch(names_, rank_, r, h.tag, h.message_bytes);
  }
  const std::size_t expected = std::min(kPieceBytes, r.nbytes - r.got);
  if (h.payload_bytes != expected) {
    link_.protocol_error(str("frame of ", h.payload_bytes, " bytes at offset ", r.got, " of a ",
                             r.nbytes, "-byte message (expected ", expected, ")"));
  }
}

PathStep TcpPath::advance(PathReceive& r) {
  for (;;) {
    LinkStep step = link_.read_header();
    if (step != LinkStep::Done) return path_step(step);
    const FrameHeader& h = link_.incoming().header;
    check_frame(r, h);  // again after a partial payload: the checks depend only on r and h
    step = link_.read_payload(r.dst + (r.got - r.dst_offset));
    if (step != LinkStep::Done) return path_step(step);
    r.got += h.payload_bytes;
    if (r.record) r.nbytes = h.payload_bytes;
    if (r.record || r.got >= r.until) {
      r.done = true;
      return PathStep::Done;
    }
  }
}

void TcpPath::arm(PollSet& set, bool reading) {
  if (reading) {
    link_.arm_wakeup();
    set.add(link_.fd(), POLLIN);
  }
  if (!link_.drained()) set.add(link_.fd(), POLLOUT);
}

}  // namespace ruccl
