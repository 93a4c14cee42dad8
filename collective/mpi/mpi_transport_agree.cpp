// MpiTransport: the agreement exchange. start_agree encodes this rank's record; it goes out with
// the call's first message (isend, or send_record_with: the record with the data behind it, one
// message per peer, or several where one would pass MPI's eager limit) or from finish_agree.
// finish_agree probes each peer's next message (MPI_Improbe), so a message of any size is
// received whole (MPI_Imrecv at its probed size: no truncation), and only a record is accepted
// where one belongs; a message sent in pieces (kRecordHead, kRecordMore..., kRecordLast: a
// sender's messages stay in order) is reassembled in the peer's buffer before it is decoded.
#include <algorithm>
#include <climits>
#include <cstring>

#include "collective/mpi/mpi_runtime.h"
#include "collective/mpi/mpi_transport.h"
#include "collective/mpi/mpi_transport_drive.h"
#include "collective/protocol/call_record_codec.h"

namespace ruccl {

namespace {

enum AgreeState : std::uint8_t {
  kProbing,        // for the peer's record (its message, or the first piece of it)
  kReceiving,      // the last piece (or the whole message)
  kReceivingMore,  // a piece with more behind it
  kProbingMore,    // for the next piece
  kDone,
};

/// Where a payload begins behind a record of `record_bytes`: aligned for every dtype's elements.
std::size_t payload_offset(std::size_t record_bytes) {
  return (record_bytes + 15) & ~std::size_t{15};
}

}  // namespace

void MpiTransport::start_agree(const CallRecord& mine, const Deadline&) {
  poll_notice();
  if (failed()) throw_failure();
  reap_sends();
  encoded_.clear();
  encode_call_record(mine, encoded_);
  record_pending_ = true;
  calls_seen_[static_cast<std::size_t>(rank_)] = mine.seq;
  for (int p = 0; p < world_; ++p) {
    record_end_[static_cast<std::size_t>(p)] = 0;
    message_bytes_[static_cast<std::size_t>(p)] = 0;
  }
}

void MpiTransport::send_record_with(const void* data, std::size_t nbytes) {
  RUCCL_ASSERT(record_pending_);
  RUCCL_ASSERT(encoded_.size() + 16 + nbytes <= static_cast<std::size_t>(INT_MAX));
  record_pending_ = false;
  const std::size_t offset = nbytes == 0 ? encoded_.size() : payload_offset(encoded_.size());
  auto buffer = send_buffer(offset + nbytes);
  std::memcpy(buffer->data(), encoded_.data(), encoded_.size());
  std::memset(buffer->data() + encoded_.size(), 0, offset - encoded_.size());
  if (nbytes != 0) std::memcpy(buffer->data() + offset, data, nbytes);
  for (int p = 0; p < world_; ++p) {
    if (p == rank_) continue;
    const std::size_t piece = piece_bytes_[static_cast<std::size_t>(p)];
    for (std::size_t at = 0; at == 0 || at < buffer->size(); at += piece) {
      const std::size_t n = std::min(piece, buffer->size() - at);
      const bool last = at + n == buffer->size();
      const int tag = at == 0 ? (last ? mpi_tags::kRecord : mpi_tags::kRecordHead)
                              : (last ? mpi_tags::kRecordLast : mpi_tags::kRecordMore);
      MPI_Request r = MPI_REQUEST_NULL;
      const int code =
          MPI_Isend(buffer->data() + at, static_cast<int>(n), MPI_BYTE, p, tag, data_, &r);
      if (code != MPI_SUCCESS) {
        fail_and_throw(CollectiveError(
            CollectiveErrorKind::PeerLost,
            str(options_.names.name(rank_), " could not send its record to ",
                options_.names.name(p), ": MPI_Isend failed: ", mpi::error_string(code)),
            {p}));
      }
      sends_.push_back(PendingSend{r, buffer});
    }
  }
}

void MpiTransport::flush_record() {
  if (!record_pending_) return;
  send_record_with(nullptr, 0);
}

std::span<const std::uint8_t> MpiTransport::agreed_payload(int peer) const {
  const auto p = static_cast<std::size_t>(peer);
  if (peer == rank_) return {};
  return std::span<const std::uint8_t>(messages_[p]->data() + record_end_[p],
                                       message_bytes_[p] - record_end_[p]);
}

void MpiTransport::expect_payloads(std::size_t nbytes) {
  for (int p = 0; p < world_; ++p) {
    if (p == rank_ || agreed_payload(p).size() == nbytes) continue;
    fail_and_throw(
        CollectiveError(CollectiveErrorKind::PeerLost,
                        str(options_.names.name(rank_), " got a malformed message from ",
                            options_.names.name(p), ": ", agreed_payload(p).size(),
                            " bytes of data behind its agreed record (expected ", nbytes,
                            "; every rank of the group must run the same ruCCL with the same "
                            "MpiTransportOptions::fused_all_reduce_bytes)"),
                        {p}));
  }
}

std::string MpiTransport::calls_reached(const Deadline& deadline,
                                        const std::vector<int>& absent) const {
  return calls_reached_from_records(calls_seen_, agreeing_seq_, absent, deadline.transport_seq(),
                                    options_.names);
}

std::string MpiTransport::decode_message(int p, CallRecord& record) {
  const auto q = static_cast<std::size_t>(p);
  const std::uint8_t* bytes = messages_[q]->data();
  const std::size_t n = message_bytes_[q];
  // The record's own length field (offset 2) says where the payload begins.
  const std::size_t end = n < 4 ? n : 4 + (std::size_t{bytes[2]} | std::size_t{bytes[3]} << 8);
  if (end > n) return str("truncated: a record of ", end, " bytes in a message of ", n);
  // A payload begins at the next aligned offset.
  record_end_[q] = end == n ? end : payload_offset(end);
  if (record_end_[q] > n) return str("truncated: ", n - end, " bytes behind a record");
  return decode_call_record(std::span<const std::uint8_t>(bytes, end), record);
}

void MpiTransport::finish_agree(const CallRecord& mine, std::span<CallRecord> all,
                                const Deadline& deadline) {
  RUCCL_ASSERT(static_cast<int>(all.size()) == world_);
  flush_record();
  std::vector<MPI_Request>& requests = agree_requests_;
  std::vector<std::uint8_t>& states = agree_states_;
  requests.assign(static_cast<std::size_t>(world_), MPI_REQUEST_NULL);
  states.assign(static_cast<std::size_t>(world_), kProbing);
  states[static_cast<std::size_t>(rank_)] = kDone;
  auto lost = [&](int p, const char* what, int code) {
    return CollectiveError(
        CollectiveErrorKind::PeerLost,
        str(options_.names.name(rank_), " could not receive the record of ", options_.names.name(p),
            ": ", what, " failed: ", mpi::error_string(code)),
        {p});
  };
  // Peer p's next message is not a record: take it, then say why.
  // Takes peer p's probed message into a buffer MPI keeps (it is not a record of this call).
  auto drop = [&](int p, MPI_Message& message, int count) {
    auto junk = std::make_shared<std::vector<std::uint8_t>>(static_cast<std::size_t>(count) + 1);
    MPI_Request r = MPI_REQUEST_NULL;
    MPI_Imrecv(junk->data(), count, MPI_BYTE, &message, &r);
    mpi::orphan_request(r, junk);
    states[static_cast<std::size_t>(p)] = kDone;
  };
  auto refuse = [&](int p, MPI_Message& message, const MPI_Status& status, int count) {
    drop(p, message, count);
    if (status.MPI_TAG == mpi_tags::kGoodbye) {
      throw CollectiveError(CollectiveErrorKind::PeerLost,
                            str(options_.names.name(rank_), " lost ", options_.names.name(p),
                                ": it left the group (its communicator was destroyed)"),
                            {p});
    }
    // A message of a send or collective where the record of a collective was expected.
    throw CollectiveError(
        CollectiveErrorKind::CollectiveKindMismatch,
        str(options_.names.name(rank_), " expected the agreement record of a collective from ",
            options_.names.name(p), ", got a message of a send or collective (", count,
            " bytes): the calls can never match"),
        {std::min(rank_, p), std::max(rank_, p)});
  };
  // Peer p's message came in pieces, and its next message is not the next piece.
  auto no_piece = [&](int p, MPI_Message& message, const MPI_Status& status, int count) {
    if (status.MPI_TAG == mpi_tags::kGoodbye) refuse(p, message, status, count);
    drop(p, message, count);
    throw CollectiveError(
        CollectiveErrorKind::PeerLost,
        str(options_.names.name(rank_), " got a malformed message from ", options_.names.name(p),
            ": after ", message_bytes_[static_cast<std::size_t>(p)],
            " bytes of its record in pieces, its next message had MPI tag ", status.MPI_TAG, " (",
            count, " bytes; expected the next piece, tag ", mpi_tags::kRecordMore, " or ",
            mpi_tags::kRecordLast, ")"),
        {p});
  };
  // Probes peer p's next message; when it came, posts its receive behind the bytes of p's
  // message received so far (none: a new message) and returns its tag, else -1.
  auto take = [&](int p) {
    const auto q = static_cast<std::size_t>(p);
    int found = 0;
    MPI_Message message = MPI_MESSAGE_NULL;
    MPI_Status status;
    const int code = MPI_Improbe(p, MPI_ANY_TAG, data_, &found, &message, &status);
    if (code != MPI_SUCCESS) throw lost(p, "MPI_Improbe", code);
    if (!found) return -1;
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    const int tag = status.MPI_TAG;
    if (states[q] == kProbing && tag != mpi_tags::kRecord && tag != mpi_tags::kRecordHead) {
      refuse(p, message, status, count);
    }
    if (states[q] == kProbingMore && tag != mpi_tags::kRecordMore && tag != mpi_tags::kRecordLast) {
      no_piece(p, message, status, count);
    }
    const std::size_t behind = states[q] == kProbing ? 0 : message_bytes_[q];
    AlignedBytes& buffer = *messages_[q];
    const std::size_t end = behind + static_cast<std::size_t>(count);
    if (buffer.size() < end) buffer.resize(end);
    message_bytes_[q] = end;
    const int started = MPI_Imrecv(buffer.data() + behind, count, MPI_BYTE, &message, &requests[q]);
    if (started != MPI_SUCCESS) throw lost(p, "MPI_Imrecv", started);
    return tag;
  };
  auto received = [&](int p) {
    int done = 0;
    MPI_Request& request = requests[static_cast<std::size_t>(p)];
    const int code = MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (code != MPI_SUCCESS) {
      request = MPI_REQUEST_NULL;
      throw lost(p, "MPI_Test", code);
    }
    return done != 0;
  };
  auto step = [&] {
    bool all_done = true;
    for (int p = 0; p < world_; ++p) {
      std::uint8_t& state = states[static_cast<std::size_t>(p)];
      // A piece that came is taken at once, and so is the next one behind it.
      while (state != kDone) {
        if (state == kProbing || state == kProbingMore) {
          const int tag = take(p);
          if (tag < 0) break;
          const bool more = tag == mpi_tags::kRecordHead || tag == mpi_tags::kRecordMore;
          state = more ? kReceivingMore : kReceiving;
        }
        if (!received(p)) break;
        state = state == kReceivingMore ? kProbingMore : kDone;
      }
      all_done = all_done && state == kDone;
    }
    return all_done;
  };
  auto missing = [&] {
    std::vector<int> absent;
    for (int p = 0; p < world_; ++p) {
      if (states[static_cast<std::size_t>(p)] == kProbing) absent.push_back(p);
    }
    return absent;
  };
  agreeing_seq_ = mine.seq;
  try {
    drive(step, missing, deadline, "the call");
  } catch (...) {
    agreeing_seq_ = 0;
    // A message being received lands in the transport's own buffer: MPI keeps it alive.
    for (int p = 0; p < world_; ++p) {
      const auto q = static_cast<std::size_t>(p);
      if (requests[q] != MPI_REQUEST_NULL) mpi::orphan_request(requests[q], messages_[q]);
    }
    throw;
  }
  agreeing_seq_ = 0;
  all[static_cast<std::size_t>(rank_)] = mine;
  for (int p = 0; p < world_; ++p) {
    if (p == rank_) continue;
    CallRecord& record = all[static_cast<std::size_t>(p)];
    const std::string why = decode_message(p, record);
    if (!why.empty() || record.seq != mine.seq) {
      fail_and_throw(CollectiveError(
          CollectiveErrorKind::PeerLost,
          str(options_.names.name(rank_), " got a malformed agreement record from ",
              options_.names.name(p), ": ",
              why.empty()
                  ? str("the record of call #", record.seq, " (expected call #", mine.seq, ")")
                  : why),
          {p}));
    }
    calls_seen_[static_cast<std::size_t>(p)] = record.seq;
  }
}

}  // namespace ruccl
