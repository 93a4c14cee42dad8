#pragma once
// The options of the process transport (process/process_transport.h: TCP between processes and
// machines, shared memory between the ranks of one host): what TcpGroup::connect and from_env
// take. A header of its own so that the public collective/tcp_group.h shows user code these and
// nothing of the links, frames, control channel or rings behind them.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "collective/common/env.h"
#include "collective/common/job_secret.h"
#include "collective/common/rank_names.h"
#include "collective/transport/fault/fault_plan.h"

namespace ruccl {

/// The control channel of every pair of ranks (tcp_control.h).
struct TcpControlOptions {
  /// How often this rank sends a heartbeat on every control connection.
  std::chrono::milliseconds heartbeat_interval{std::chrono::milliseconds(100)};
  /// A peer silent this long (no frame at all) is lost.
  std::chrono::milliseconds heartbeat_timeout{std::chrono::seconds(3)};
};

/// Whether Data frames carry a CRC-32C of their payload (headers and control frames always do).
enum class PayloadChecksum : std::uint8_t {
  /// On, except on a link whose two ends are loopback addresses (127.0.0.0/8, ::1): there the
  /// bytes never leave this machine's memory, and the checksum costs much and guards nothing
  /// (docs/performance-history.md, "## Payload checksums between loopback ends").
  Auto,
  On,   ///< every Data frame, and refuse one without (a peer whose checksum is Off)
  Off,  ///< no payload checksums sent; checked ones are still verified
};

/// Whether every TCP frame carries a MAC (docs/security.md, "Integrity mode").
enum class Integrity : std::uint8_t {
  Off,  ///< frames carry CRC-32C (headers; payloads per PayloadChecksum): no defence on the path
  /// Every frame of every mesh connection carries a 16-byte AES-128-GMAC tag over its header and
  /// payload (transport/tcp/frame_mac.h), keyed per connection and direction from the job secret
  /// and the handshake's nonces: a changed, replayed, reordered or dropped frame is a PeerLost
  /// naming the sender, on every rank. Needs a secret. Not applied to shared memory (its
  /// segments are reachable by the job's own user alone).
  Mac,
};

/// Whether ranks on the same host send their records and messages through shared memory
/// (shm/shm_path.h: one copy where loopback TCP makes two; docs/performance-history.md, "## Shared
/// memory between processes of one host").
enum class SharedMemory : std::uint8_t {
  /// Every pair of ranks with the same host identity (kernel boot, network and mount namespaces,
  /// user) whose segment can be made; the others over TCP.
  Auto,
  Off,  ///< every message over TCP
};

struct TcpTransportOptions {
  /// The address this rank listens on; "" = net::default_listen_host() ($RUCCL_SOCKET_IFNAME's
  /// address, else loopback).
  std::string listen_host;
  /// The port this rank listens on; 0 = one the kernel picks (a fixed port: a firewall rule, the
  /// registered API's data_service_port). Only lower ranks listen (a rank dials every lower one):
  /// the highest rank of a group listens on nothing, so its port stays free.
  std::uint16_t listen_port = 0;
  /// Store keys are "<store_prefix>/<key>" (one store can serve several groups).
  std::string store_prefix = "ruccl/tcp";
  /// How long connecting the mesh may take (every rank must arrive within it).
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(120)};
  TcpControlOptions control;
  /// How long a wait spins before it yields or sleeps in poll(). 0: the default (WaitPolicy::
  /// process, common/wait_policy.h: 50 us when the ranks on this machine, `local_ranks`, fit its
  /// cores, else 2 us).
  std::chrono::nanoseconds spin{0};
  /// After the spin, how long a wait yields the core (sched_yield between tries) before it
  /// sleeps in poll(). Negative: the default (WaitPolicy::process: 100 us when `local_ranks`
  /// exceed the cores, else 0).
  std::chrono::nanoseconds yield{-1};
  /// The ranks on this machine (the wait policy's defaults).
  int local_ranks = 1;
  /// The send and receive buffers of every data connection (SO_SNDBUF, SO_RCVBUF;
  /// RUCCL_TCP_SOCKET_BUFFER_BYTES for from_env), set only where the kernel's caps
  /// (net.core.wmem_max, rmem_max) allow them: a capped fixed buffer would be smaller than
  /// autotuning's (net::set_buffer_bytes). 0: the kernel's autotuning always. The default, 4 MiB,
  /// is measured faster for large messages (docs/performance-history.md, "## Socket buffers").
  int socket_buffer_bytes = kDefaultSocketBufferBytes;
  static constexpr int kDefaultSocketBufferBytes = 4 << 20;
  /// Payload checksums (RUCCL_TCP_PAYLOAD_CHECKSUM=auto|on|off for from_env). Every rank of a
  /// group should use the same; a rank whose policy for a link is on refuses unchecked frames.
  /// A wire Corrupt fault (below) changes a payload byte: with checksums (or a MAC) the receiver
  /// refuses the frame, without them the changed data arrives.
  PayloadChecksum payload_checksum = PayloadChecksum::Auto;
  /// The shared-memory data path between ranks of this host (RUCCL_TCP_SHARED_MEMORY=auto|off
  /// for from_env). Every rank of a group should use the same (a pair uses it only when both
  /// sides do). Off whenever wire_faults is set: those are faults of the TCP wire.
  SharedMemory shared_memory = SharedMemory::Auto;
  /// Each direction's ring of a shared-memory pair, in kPieceBytes slots (at least 2): 2 MiB
  /// (8 slots), 4 MiB of /dev/shm per pair (RUCCL_TCP_SHARED_MEMORY_RING_BYTES for from_env).
  std::size_t shared_memory_ring_bytes = std::size_t{2} << 20;
  /// What the rings of one host may take in all: L ranks there have L(L-1) rings (a full mesh),
  /// so from 17 ranks on a host the rings shrink to fit, and beyond 32 (where 2 slots would not
  /// fit) that host's ranks send everything over TCP. Every rank should use the same.
  std::size_t shared_memory_budget_bytes = std::size_t{512} << 20;
  /// How error messages name the ranks.
  RankNames names;
  /// The job secret (RUCCL_JOB_SECRET for from_env; docs/security.md): with it, every mesh
  /// connection authenticates both ways before its Hello (net/peer_auth.h), and the
  /// shared-memory names derive from it. Every rank must hold the same, or none.
  std::optional<JobSecret> secret;
  /// RUCCL_INTEGRITY=off|mac for from_env: every rank must use the same. Mac needs `secret`.
  Integrity integrity = Integrity::Off;
  /// Tests: faults this rank injects on the wire, below the framing (fault/wire_fault_path.h,
  /// decorating every TCP path of this rank; fault_plan.h; message k =
  /// this rank's k-th isend to that peer, call k = its k-th agree()). Delay, Drop (frames never
  /// written: the receiver sees a sequence gap, or its deadline), Duplicate (a frame written
  /// twice), Corrupt (a payload byte changed after its CRC and MAC), Cut (the data connection
  /// shut down),
  /// KillRank (calls `kill`, by default SIGKILL of this process).
  FaultPlan wire_faults;
  std::function<void()> kill;
};

/// RUCCL_INTEGRITY (off or mac; not set: `unset`), for a rank that holds a secret or not
/// (`has_secret`). Throws InvalidConfig for another value, or for mac without a secret.
Integrity integrity_from_env(bool has_secret, Integrity unset = Integrity::Off,
                             const EnvLookup& env = process_env());

}  // namespace ruccl
