#include "collective/transport/tcp/tcp_mesh_accept.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "collective/common/crc32c.h"
#include "collective/net/socket_detail.h"

namespace ruccl {

void send_hello(const net::Socket& socket, const SessionId& session, int rank, int world,
                TcpChannel channel, const Deadline& deadline) {
  HelloPayload hello{};
  hello.rank = rank;
  hello.world_size = world;
  hello.channel = channel;
  hello.session = session;
  std::vector<std::uint8_t> payload;
  encode_hello_payload(hello, payload);
  FrameHeader h{};
  h.type = FrameType::Hello;
  h.payload_bytes = static_cast<std::uint32_t>(payload.size());
  h.session = session;
  h.seq = 1;
  h.payload_crc = crc32c(payload.data(), payload.size());
  std::uint8_t bytes[kFrameHeaderBytes + kHelloPayloadBytes];
  encode_frame_header(h, std::span<std::uint8_t, kFrameHeaderBytes>(bytes, kFrameHeaderBytes));
  std::copy(payload.begin(), payload.end(), bytes + kFrameHeaderBytes);
  net::write_all(socket, bytes, kFrameHeaderBytes + payload.size(), deadline);
}

std::string read_hello(const net::Socket& socket, const SessionId& session, int world,
                       const Deadline& deadline, HelloPayload& hello) {
  std::uint8_t header[kFrameHeaderBytes];
  net::read_exact(socket, header, kFrameHeaderBytes, deadline);
  FrameHeader h{};
  std::string why = decode_frame_header(
      std::span<const std::uint8_t, kFrameHeaderBytes>(header, kFrameHeaderBytes), session, 1, h);
  if (!why.empty()) return why;
  if (h.type != FrameType::Hello)
    return str("a ", frame_type_name(h.type), " frame before the Hello");
  std::uint8_t payload[kHelloPayloadBytes];
  if (h.payload_bytes != kHelloPayloadBytes) {
    return str("a Hello of ", h.payload_bytes, " bytes (expected ", kHelloPayloadBytes, ")");
  }
  net::read_exact(socket, payload, kHelloPayloadBytes, deadline);
  if (crc32c(payload, kHelloPayloadBytes) != h.payload_crc) return "Hello payload CRC mismatch";
  why = decode_hello_payload(std::span<const std::uint8_t>(payload, kHelloPayloadBytes), hello);
  if (!why.empty()) return why;
  if (hello.session != session) return "wrong session id";
  if (hello.world_size != world) {
    return str("world size ", hello.world_size, " (expected ", world, ")");
  }
  return "";
}

net::AuthPurpose auth_purpose(TcpChannel channel) {
  return channel == TcpChannel::Data ? net::AuthPurpose::MeshData : net::AuthPurpose::MeshControl;
}

namespace {

// How long an accepted connection may stay silent before it is closed, and how long the
// handshake of one that spoke may take (a real rank answers in microseconds).
constexpr std::chrono::milliseconds kSilentTimeout{5000};
constexpr std::chrono::milliseconds kStepTimeout{2000};
constexpr std::chrono::milliseconds kNoWait{0};

/// One connection's handshake, as its thread reports it.
struct Finished {
  std::uint64_t id = 0;
  std::string why;  ///< "" when it passed
  std::int32_t claimed = -1;
  AcceptedPeer peer;
};

/// The acceptor's side of one connection that spoke: authentication (with a secret), then its
/// Hello, bounded by kStepTimeout. "" when it passed.
std::string handshake(const SessionId& session, int world_size, int rank,
                      const TcpTransportOptions& options, Finished& out) {
  const Deadline step = Deadline::after(std::min(kStepTimeout, options.connect_timeout), "Hello");
  std::string why;
  net::AuthBinding proven;
  net::AuthNonces nonces;
  const net::Socket& socket = out.peer.socket;
  if (options.secret) {
    static constexpr net::AuthPurpose kMesh[] = {net::AuthPurpose::MeshControl,
                                                 net::AuthPurpose::MeshData};
    why = net::authenticate_acceptor(socket, *options.secret, kMesh, rank, session, step, proven,
                                     &nonces);
    out.claimed = proven.from_rank;
  }
  try {
    if (why.empty()) why = read_hello(socket, session, world_size, step, out.peer.hello);
  } catch (const CollectiveError& e) {
    why = e.what();
  }
  const HelloPayload& hello = out.peer.hello;
  if (why.empty() && options.secret &&
      (hello.rank != proven.from_rank || auth_purpose(hello.channel) != proven.purpose)) {
    why = str("its Hello (rank ", hello.rank, ") is not what it proved (rank ", proven.from_rank,
              ")");
  }
  if (why.empty() && options.secret)
    out.peer.keys = net::frame_keys(*options.secret, proven, nonces);
  return why;
}

std::string address_of(const net::Socket& socket) {
  try {
    return net::peer_endpoint(socket).host;
  } catch (const CollectiveError&) {
    return "?";  // already gone
  }
}

}  // namespace

bool accept_mesh_peers(const net::Socket& listener, int rank, int world_size,
                       const SessionId& session, const TcpTransportOptions& options,
                       const Deadline& deadline, std::size_t expected,
                       const std::function<bool(AcceptedPeer&)>& take,
                       std::vector<std::string>& refused) {
  struct Waiting {
    net::Socket socket;
    Deadline by;
    std::string address;
  };
  struct Running {
    std::thread thread;
    int fd = -1;
    std::string address;
  };
  std::deque<Waiting> silent;  // accepted, not yet spoken
  std::deque<Waiting> queued;  // spoke; their address's handshakes are all taken
  std::map<std::uint64_t, Running> running;
  std::map<std::string, std::size_t> silent_at, running_at;
  std::mutex mutex;
  std::vector<Finished> finished;  // under `mutex`
  net::Socket wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (wake.fd() < 0) {
    throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                          str("TcpTransport::connect: eventfd: ", net::detail::errno_text(errno)));
  }
  std::uint64_t next_id = 0;

  const auto refuse = [&](const net::Socket& socket, std::int32_t claimed, const std::string& why) {
    if (!options.secret) return;
    const std::string what = str(socket.peer(), " claiming rank ", claimed, ": ", why);
    net::count_auth_refusal(what);
    refused.push_back(what);
  };
  const auto start = [&](Waiting w) {
    const std::uint64_t id = next_id++;
    Running& r = running[id];
    r.fd = w.socket.fd();
    r.address = w.address;
    ++running_at[w.address];
    r.thread = std::thread([&, id, socket = std::move(w.socket)]() mutable {
      Finished f;
      f.id = id;
      f.peer.socket = std::move(socket);
      f.why = handshake(session, world_size, rank, options, f);
      std::lock_guard lock(mutex);
      finished.push_back(std::move(f));
      const std::uint64_t one = 1;
      [[maybe_unused]] const ssize_t k = ::write(wake.fd(), &one, sizeof one);
    });
  };
  const auto spoke = [&](Waiting w) {
    if (running_at[w.address] < kMaxHandshakesPerAddress) {
      start(std::move(w));
      return;
    }
    const auto same = [&](const Waiting& q) { return q.address == w.address; };
    if (static_cast<std::size_t>(std::count_if(queued.begin(), queued.end(), same)) >=
        kMaxSilentPerAddress) {  // as many wait as may stay silent: close that address's oldest
      const auto oldest = std::find_if(queued.begin(), queued.end(), same);
      refuse(oldest->socket, -1,
             str("one of more than ", kMaxSilentPerAddress,
                 " connections from its address waiting for a handshake"));
      queued.erase(oldest);
    }
    queued.push_back(std::move(w));
  };
  // Ends every handshake still running (their sockets shut down: their reads end at once).
  const auto stop_all = [&] {
    for (auto& [id, r] : running) ::shutdown(r.fd, SHUT_RDWR);
    for (auto& [id, r] : running) r.thread.join();
    running.clear();
  };

  std::size_t taken = 0;
  std::vector<pollfd> fds;
  try {
    while (taken < expected) {
      fds.assign({pollfd{listener.fd(), POLLIN, 0}, pollfd{wake.fd(), POLLIN, 0}});
      Deadline next = deadline;
      for (const Waiting& w : silent) {
        fds.push_back(pollfd{w.socket.fd(), POLLIN, 0});
        if (w.by.at() < next.at()) next = w.by;
      }
      if (::poll(fds.data(), fds.size(), net::detail::poll_timeout_ms(next)) < 0 &&
          errno != EINTR) {
        throw CollectiveError(CollectiveErrorKind::InvalidConfig,
                              str("TcpTransport::connect: poll: ", net::detail::errno_text(errno)));
      }
      // Handshakes that ended, in the order they ended.
      std::vector<Finished> done;
      if ((fds[1].revents & POLLIN) != 0) {
        std::uint64_t count = 0;
        [[maybe_unused]] const ssize_t k = ::read(wake.fd(), &count, sizeof count);
        std::lock_guard lock(mutex);
        done.swap(finished);
      }
      for (Finished& f : done) {
        Running& r = running[f.id];
        r.thread.join();
        const std::string address = r.address;
        running.erase(f.id);
        --running_at[address];
        for (auto it = queued.begin(); it != queued.end(); ++it) {  // the next of that address
          if (it->address == address) {
            Waiting w = std::move(*it);
            queued.erase(it);
            start(std::move(w));
            break;
          }
        }
        if (!f.why.empty()) {
          refuse(f.peer.socket, f.claimed, f.why);
        } else if (take(f.peer)) {
          ++taken;
        }
      }
      // Silent connections that spoke, or whose time is up, in the order they came.
      std::deque<Waiting> still_silent;
      for (std::size_t i = 0; i < silent.size(); ++i) {
        Waiting& w = silent[i];
        if (fds[i + 2].revents == 0 && !w.by.expired()) {
          still_silent.push_back(std::move(w));
          continue;
        }
        --silent_at[w.address];
        if (fds[i + 2].revents == 0) {
          refuse(w.socket, -1, str("said nothing within ", kSilentTimeout.count(), " ms"));
        } else {
          spoke(std::move(w));
        }
      }
      silent.swap(still_silent);
      if ((fds[0].revents & POLLIN) != 0) {
        try {  // now, or not at all: one that went away before accept is simply gone
          net::Socket socket = net::accept_tcp(listener, Deadline::after(kNoWait));
          net::set_nodelay(socket);
          std::string address = address_of(socket);
          if (++silent_at[address] > kMaxSilentPerAddress) {  // close that address's oldest
            const auto oldest = std::find_if(silent.begin(), silent.end(), [&](const Waiting& w) {
              return w.address == address;
            });
            refuse(oldest->socket, -1,
                   str("silent, one of more than ", kMaxSilentPerAddress,
                       " silent connections from its address"));
            silent.erase(oldest);
            --silent_at[address];
          }
          silent.push_back(Waiting{std::move(socket), Deadline::after(kSilentTimeout, "Hello"),
                                   std::move(address)});
        } catch (const CollectiveError& e) {
          if (e.kind() != CollectiveErrorKind::Timeout) throw;
        }
      }
      if (taken < expected && deadline.expired()) break;
    }
  } catch (...) {
    stop_all();
    throw;
  }
  stop_all();
  return taken >= expected;
}

}  // namespace ruccl
