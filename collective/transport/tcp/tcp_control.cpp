#include "collective/transport/tcp/tcp_control.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "collective/transport/tcp/tcp_frame.h"
#include "collective/transport/tcp/tcp_frame_payloads.h"

namespace ruccl {

// ---- failure state ------------------------------------------------------------------------------

TcpFailureState::TcpFailureState(int world_size)
    : gone_(new std::atomic<bool>[static_cast<std::size_t>(world_size)]),
      wake_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  for (int r = 0; r < world_size; ++r) gone_[static_cast<std::size_t>(r)].store(false);
  RUCCL_CHECK(wake_fd_ >= 0, InternalError, "TcpTransport: eventfd failed: ", std::strerror(errno));
}

TcpFailureState::~TcpFailureState() {
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

bool TcpFailureState::record(const CollectiveError& error) noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failure_.has_value()) return false;
    try {
      failure_.emplace(error);
    } catch (...) {
      failure_.emplace(CollectiveErrorKind::Aborted, "collective group failed");
    }
    failed_.store(true, std::memory_order_release);
  }
  wake();
  return true;
}

CollectiveError TcpFailureState::failure() const {
  std::lock_guard<std::mutex> lock(mutex_);
  RUCCL_ASSERT(failure_.has_value(), "failure() called on a group that has not failed");
  return *failure_;
}

void TcpFailureState::mark_gone(int rank) noexcept {
  gone_[static_cast<std::size_t>(rank)].store(true, std::memory_order_release);
  anyone_gone_.store(true, std::memory_order_release);
  wake();
}

bool TcpFailureState::gone(int rank) const noexcept {
  return gone_[static_cast<std::size_t>(rank)].load(std::memory_order_acquire);
}

void TcpFailureState::wake() noexcept {
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t k = ::write(wake_fd_, &one, sizeof one);
}

void TcpFailureState::drain_wake() noexcept {
  std::uint64_t count = 0;
  [[maybe_unused]] const ssize_t k = ::read(wake_fd_, &count, sizeof count);
}

// ---- control connections ------------------------------------------------------------------------

TcpControl::TcpControl(std::vector<std::optional<TcpLink>> links, int rank, RankNames names,
                       TcpControlOptions options, TcpFailureState& state)
    : links_(std::move(links)),
      last_heard_(links_.size(), std::chrono::steady_clock::now()),
      open_(links_.size(), false),
      closed_(links_.size(), false),
      payload_(kMaxAbortFramePayload),
      rank_(rank),
      names_(std::move(names)),
      options_(options),
      state_(state),
      stop_fd_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  RUCCL_CHECK(stop_fd_ >= 0, InternalError, "TcpTransport: eventfd failed: ", std::strerror(errno));
  for (std::size_t p = 0; p < links_.size(); ++p) open_[p] = links_[p].has_value();
  watcher_ = std::thread([this] { run(); });
}

TcpControl::~TcpControl() {
  leaving_.store(true, std::memory_order_release);
  broadcast(FrameType::Goodbye, {});  // also after a failure: peers then close at once
  stopping_.store(true, std::memory_order_release);
  const std::uint64_t one = 1;
  [[maybe_unused]] const ssize_t k = ::write(stop_fd_, &one, sizeof one);
  watcher_.join();
  // Half-close, then give each peer a moment to read the Goodbye before the sockets close: a
  // close with unread heartbeats in the receive queue would send a reset that can overtake it.
  for (auto& link : links_) {
    if (link) ::shutdown(link->fd(), SHUT_WR);
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  for (auto& link : links_) {
    if (!link) continue;
    char sink[4096];
    for (;;) {
      pollfd pfd{link->fd(), POLLIN, 0};
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          until - std::chrono::steady_clock::now());
      if (left.count() <= 0 || ::poll(&pfd, 1, static_cast<int>(left.count())) <= 0) break;
      if (::recv(link->fd(), sink, sizeof sink, MSG_DONTWAIT) <= 0) break;  // EOF: peer closed
    }
  }
  ::close(stop_fd_);
}

void TcpControl::fail(const CollectiveError& error) noexcept {
  if (!state_.record(error)) return;
  try {
    std::vector<std::uint8_t> payload;
    encode_abort_payload(error, payload);
    broadcast(FrameType::Abort, payload);
  } catch (...) {
  }
}

void TcpControl::sever() noexcept {
  leaving_.store(true, std::memory_order_release);
  std::lock_guard<std::mutex> lock(send_mutex_);
  for (std::size_t p = 0; p < links_.size(); ++p) {
    if (!links_[p]) continue;
    links_[p]->drop_sends();
    ::shutdown(links_[p]->fd(), SHUT_RDWR);
    closed_[p] = true;
  }
}

void TcpControl::broadcast(FrameType type, const std::vector<std::uint8_t>& payload) noexcept {
  std::lock_guard<std::mutex> lock(send_mutex_);
  for (std::size_t p = 0; p < links_.size(); ++p) {
    auto& link = links_[p];
    if (!link || closed_[p]) continue;
    try {
      link->queue_owned(type, 0, payload);
      link->flush();  // the watcher writes the rest when the socket has room
    } catch (...) {
    }
  }
}

void TcpControl::lose(int p, const std::string& why) noexcept {
  open_[static_cast<std::size_t>(p)] = false;
  try {
    fail(CollectiveError(CollectiveErrorKind::PeerLost,
                         str(names_.name(rank_), " lost ", names_.name(p), ": ", why), {p}));
  } catch (...) {
    fail(CollectiveError(CollectiveErrorKind::PeerLost, "a peer was lost", {p}));
  }
  state_.mark_gone(p);
}

bool TcpControl::serve(int p, std::chrono::steady_clock::time_point now) {
  TcpLink& link = *links_[static_cast<std::size_t>(p)];
  for (;;) {
    LinkStep step = link.read_header();
    if (step == LinkStep::Done) {
      const FrameHeader& h = link.incoming().header;
      if (h.type != FrameType::Heartbeat && h.type != FrameType::Abort &&
          h.type != FrameType::Goodbye) {
        link.protocol_error(str("a ", frame_type_name(h.type), " frame on the control connection"));
      }
      step = link.read_payload(payload_.data());
    }
    if (step == LinkStep::Pending) return true;
    if (step == LinkStep::Closed) {
      // A peer answers this rank's Goodbye by closing: expected once this rank is leaving.
      if (!state_.gone(p) && !leaving_.load(std::memory_order_acquire)) {
        lose(p, "its connection closed without a goodbye (the process died)");
      }
      return false;
    }
    last_heard_[static_cast<std::size_t>(p)] = now;
    const FrameHeader& h = link.incoming().header;
    if (h.type == FrameType::Goodbye) {
      state_.mark_gone(p);
      // Answer with our own end of stream, so the leaving peer's close waits for nothing.
      std::lock_guard<std::mutex> lock(send_mutex_);
      link.drop_sends();
      ::shutdown(link.fd(), SHUT_WR);
      closed_[static_cast<std::size_t>(p)] = true;
    } else if (h.type == FrameType::Abort) {
      AbortPayload abort;
      const std::string why =
          decode_abort_payload(std::span<const std::uint8_t>(payload_.data(), h.payload_bytes),
                               static_cast<int>(links_.size()), abort);
      if (!why.empty()) link.protocol_error(why);
      state_.record(abort.error());  // every peer hears it from the one that failed: no relay
    }
  }
}

void TcpControl::run() noexcept {
  using Clock = std::chrono::steady_clock;
  std::vector<pollfd> fds;
  std::vector<int> who;
  auto next_beat = Clock::now();
  while (!stopping_.load(std::memory_order_acquire)) {
    const auto now = Clock::now();
    if (now >= next_beat) {
      if (!state_.failed()) broadcast(FrameType::Heartbeat, {});
      next_beat = now + options_.heartbeat_interval;
    }
    fds.assign(1, pollfd{stop_fd_, POLLIN, 0});
    who.assign(1, -1);
    {
      std::lock_guard<std::mutex> lock(send_mutex_);
      for (std::size_t p = 0; p < links_.size(); ++p) {
        if (!links_[p] || !open_[p]) continue;
        if (!closed_[p]) links_[p]->flush();
        const short events = static_cast<short>(POLLIN | (links_[p]->drained() ? 0 : POLLOUT));
        fds.push_back(pollfd{links_[p]->fd(), events, 0});
        who.push_back(static_cast<int>(p));
      }
    }
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_beat - now);
    const int ready =
        ::poll(fds.data(), fds.size(), static_cast<int>(std::max<long long>(1, wait.count())));
    if (ready < 0 && errno != EINTR) break;
    const auto after = Clock::now();
    for (std::size_t i = 1; i < fds.size(); ++i) {
      const int p = who[i];
      if ((fds[i].revents & (POLLIN | POLLHUP | POLLERR)) == 0) continue;
      try {
        if (!serve(p, after)) open_[static_cast<std::size_t>(p)] = false;
      } catch (const CollectiveError& e) {  // a malformed frame: drop the peer, fail the group
        open_[static_cast<std::size_t>(p)] = false;
        fail(e);
        state_.mark_gone(p);
      } catch (...) {
        lose(p, "its control connection failed");
      }
    }
    // Heartbeats only matter while the group lives and this rank stays in it.
    if (state_.failed() || leaving_.load(std::memory_order_acquire)) continue;
    for (std::size_t p = 0; p < links_.size(); ++p) {
      if (!links_[p] || !open_[p] || state_.gone(static_cast<int>(p))) continue;
      const auto silent = after - last_heard_[p];
      if (silent > options_.heartbeat_timeout) {
        lose(static_cast<int>(p),
             str("no heartbeat for ",
                 std::chrono::duration_cast<std::chrono::milliseconds>(silent).count(),
                 " ms (heartbeat_timeout ", options_.heartbeat_timeout.count(),
                 " ms): its process is stopped or its host unreachable"));
      }
    }
  }
}

}  // namespace ruccl
