#pragma once
// TcpLink: one rank's data connection to one peer, driven without blocking by the rank's own
// thread. Outgoing messages are queued and written as frames (collective/transport/tcp/tcp_frame.h)
// straight from the caller's buffer with sendmsg (header and payload in one call); incoming frames
// are parsed header first, every field checked before its payload is read (never an allocation
// sized by the peer), the payload read into the destination the receiver names and its CRC-32C
// checked before anyone sees it.
//
// Every call does what the socket allows now and returns; the transport decides when to wait.
//
// System calls per message are what a small collective costs: a flush writes every queued frame
// it can in one sendmsg (a call's record and its first data travel together), and reads go
// through a 16 KiB read-ahead buffer, so one recv takes in a record, a small message and the next
// frame's header; a payload larger than half of it goes straight into the destination.
#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "collective/common/collective_error.h"
#include "collective/net/socket.h"
#include "collective/transport/tcp/frame_mac.h"
#include "collective/transport/tcp/tcp_frame.h"

namespace ruccl {

/// The outcome of a non-blocking step on a link.
enum class LinkStep : unsigned char {
  Done,     ///< the frame / message is complete
  Pending,  ///< the socket had nothing more for now
  Closed,   ///< the peer closed the connection (EOF) or reset it
};

/// A frame being received: its header once complete, and how much of the payload has arrived.
struct IncomingFrame {
  std::array<std::uint8_t, kFrameHeaderBytes> header_bytes{};
  std::size_t header_got = 0;
  bool has_header = false;
  FrameHeader header{};
  std::size_t payload_got = 0;
  std::uint32_t crc = 0;
  FrameTag tag{};  ///< the MAC tag after the payload (RUCCL_INTEGRITY=mac)
  std::size_t tag_got = 0;
};

/// Faults a test injects into one message on the wire (TcpTransportOptions::wire_faults): below
/// the framing, so the receiver's checks are what is tested.
struct WireFault {
  bool drop = false;       ///< its frames are never written, their sequence numbers used up
  bool duplicate = false;  ///< its first frame is written twice (same sequence number)
  /// Byte `corrupt_offset` of the message is XORed with `corrupt_mask` on the wire, after its
  /// frame's CRC and MAC were computed: what a flipped bit or an attacker on the path does. With
  /// a payload CRC or a MAC the receiver refuses the frame; with neither the change arrives.
  bool corrupt = false;
  std::size_t corrupt_offset = 0;
  std::uint8_t corrupt_mask = 0x01;
};

class TcpLink {
 public:
  /// `check_payloads`: Data frames carry and must carry a payload CRC-32C (false: this link
  /// sends them unchecked and accepts both; TcpTransportOptions::payload_checksum).
  /// `handshake_frames`: frames already exchanged each way on `socket` (the Hello), so sequence
  /// numbers continue after them.
  TcpLink(net::Socket socket, SessionId session, int peer, std::string peer_name,
          bool check_payloads = true, std::uint64_t handshake_frames = 1);
  TcpLink(TcpLink&&) noexcept = default;

  /// RUCCL_INTEGRITY=mac: every frame from now on carries a MAC tag under `send` (frame_mac.h), and
  /// every frame received must carry one under `receive`; Data payloads then carry no CRC (the MAC
  /// covers them). Both ends must turn it on before their first frame after the Hello.
  void enable_mac(const FrameKey& send, const FrameKey& receive);
  bool mac() const { return send_mac_ != nullptr; }

  const std::string& peer_name() const { return peer_name_; }
  int fd() const { return socket_.fd(); }

  // ---- sending --------------------------------------------------------------------------------
  /// Queues a Data message (`nbytes` at `data`, which must stay valid until the queue drains or
  /// is dropped), sent as frames of at most kPieceBytes. Writes what the socket takes now.
  void queue_data(std::uint64_t tag, const void* data, std::size_t nbytes, WireFault fault = {});
  /// Queues one frame of `type` whose payload the link keeps a copy of (records, small control).
  void queue_owned(FrameType type, std::uint64_t tag, std::vector<std::uint8_t> payload);
  /// Writes as much of the queue as the socket takes now. Returns Closed when the peer is gone.
  LinkStep flush();
  /// Whether everything queued has been written to the socket.
  bool drained() const { return sends_.empty(); }
  /// Bytes written to and read from the socket so far (a wait spins on while this moves). Two
  /// counts: the control channel sends and receives on one link from two threads.
  std::uint64_t bytes_moved() const { return sent_ + received_; }
  /// Whether a queued message still reads a caller's buffer (Data; owned frames do not).
  bool borrows() const {
    for (const Send& s : sends_) {
      if (s.owned.empty() && s.nbytes != 0) return true;
    }
    return false;
  }
  /// Forgets every queued message (the group failed; their buffers may be released now). The
  /// stream is then unusable: the link must not send again.
  void drop_sends() noexcept { sends_.clear(); }

  // ---- receiving ------------------------------------------------------------------------------
  /// Reads the next frame's header (if not complete yet). On Done, incoming().header is valid and
  /// checked (magic, version, CRC, session, sequence, caps); a malformed header throws
  /// CollectiveError(PeerLost) naming the peer and what was wrong.
  LinkStep read_header();
  /// Reads the payload of the current frame into `dst` (header().payload_bytes bytes), verifying
  /// its CRC when complete (mismatch: CollectiveError(PeerLost) naming the peer). On Done the
  /// frame is finished (its header stays readable) and the next read_header starts the next.
  LinkStep read_payload(void* dst);
  const IncomingFrame& incoming() const { return in_; }
  /// Before the transport sleeps in poll() on this link: asks the kernel (SO_RCVLOWAT) to report
  /// it readable, and to wake the sleeper, only once the bytes the next read step cannot do
  /// without have arrived: the rest of the current frame's payload, or the rest of a header. A
  /// frame's bytes follow its header on the wire, so that much always comes (or the connection
  /// ends, which wakes poll() whatever the mark). One wakeup per frame and its header instead of
  /// one per arriving packet: on a loopback the sender runs the receive path, and every early
  /// wakeup is a context switch taken from it.
  void arm_wakeup();
  /// CollectiveError(PeerLost, ranks {peer}) "<peer> sent a malformed frame: <why>; ...".
  CollectiveError malformed(const std::string& why) const;
  /// Throws malformed(why).
  [[noreturn]] void protocol_error(const std::string& why) const { throw malformed(why); }

 private:
  struct Send {
    FrameType type;
    std::uint64_t tag;
    const std::uint8_t* data;  // the caller's (Data) or `owned`
    std::size_t nbytes;
    std::vector<std::uint8_t> owned;
    std::size_t frame_begin = 0;  // offset of the current frame's payload in the message
    std::array<std::uint8_t, kFrameHeaderBytes> header{};
    std::size_t header_sent = kFrameHeaderBytes;  // == kFrameHeaderBytes: no frame started
    std::size_t payload_sent = 0;                 // of the current frame
    FrameTag mac{};                               // the current frame's MAC tag (mac links)
    std::size_t mac_bytes = 0;                    // kFrameTagBytes on a mac link, else 0
    std::size_t mac_sent = 0;
    std::vector<std::uint8_t> changed;  // the current frame's payload as a Corrupt fault sends it
    bool started = false;
    WireFault fault{};
    std::uint64_t skip_frames = 0;  // a dropped message: sequence numbers used up in its place
  };
  /// Starts the next frame of `s` (header with its payload CRC). Returns false when done.
  bool start_frame(Send& s);
  static std::size_t frame_length(const Send& s);
  /// The bytes of the current frame's payload as written (the caller's, or a faulted copy).
  static const std::uint8_t* frame_payload(const Send& s);
  /// Whether the current frame of `s` is written (header and payload).
  static bool frame_written(const Send& s);
  /// Whether all of `s` is written (its last frame, and the repeat a Duplicate fault asks for).
  static bool finished(const Send& s);
  /// Receives what the socket has into the (empty) read-ahead buffer.
  LinkStep fill();
  /// Moves up to `n` read-ahead bytes to `dst`; returns how many.
  std::size_t take(std::uint8_t* dst, std::size_t n);

  static constexpr std::size_t kReadAheadBytes = 16 * 1024;
  static constexpr std::size_t kBatchSends = 8;  // queued messages one sendmsg may carry
  /// Reads the current frame's MAC tag and checks it (a mismatch: protocol_error).
  LinkStep read_tag();

  net::Socket socket_;
  bool check_payloads_;
  SessionId session_;
  int peer_;
  std::string peer_name_;
  std::deque<Send> sends_;
  std::uint64_t out_seq_ = 0;
  std::uint64_t in_seq_ = 0;
  IncomingFrame in_;
  std::unique_ptr<std::uint8_t[]> ahead_;  // bytes received but not yet parsed: [begin, end)
  std::size_t ahead_begin_ = 0;
  std::size_t ahead_end_ = 0;
  int wake_bytes_ = 1;                     // the socket's SO_RCVLOWAT (the kernel's default is 1)
  std::uint64_t sent_ = 0;                 // written by the sending side only
  std::uint64_t received_ = 0;             // written by the receiving side only
  std::unique_ptr<FrameMac> send_mac_;     // RUCCL_INTEGRITY=mac: the sending direction's key
  std::unique_ptr<FrameMac> receive_mac_;  // and the receiving one's
};

}  // namespace ruccl
