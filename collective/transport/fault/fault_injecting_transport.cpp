#include "collective/transport/fault/fault_injecting_transport.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "collective/transport/receive_by_copy.h"

namespace ruccl {

namespace {

CollectiveError invalid_plan(const std::string& message) {
  return CollectiveError(CollectiveErrorKind::InvalidConfig,
                         str("FaultInjectingTransport: ", message));
}

}  // namespace

FaultInjectingTransport::FaultInjectingTransport(std::unique_ptr<Transport> inner, FaultPlan plan,
                                                 FaultHooks hooks, bool copying)
    : inner_(std::move(inner)),
      plan_(std::move(plan)),
      hooks_(std::move(hooks)),
      copying_(copying),
      sent_(static_cast<std::size_t>(inner_->world_size()), 0),
      silent_(static_cast<std::size_t>(inner_->world_size()), 0),
      staging_(static_cast<std::size_t>(inner_->world_size())) {
  for (const FaultRule& rule : plan_.rules) {
    const char* name = fault_action_name(rule.action);
    if (rule.message.has_value() == rule.call.has_value()) {
      throw invalid_plan(str("expected a ", name, " rule with exactly one of message and call"));
    }
    if (rule.call.has_value() && rule.action != FaultAction::Delay &&
        rule.action != FaultAction::Cut && rule.action != FaultAction::KillRank) {
      throw invalid_plan(str("expected a message rule for ", name, ", got a call rule"));
    }
    if (rule.action == FaultAction::KillRank && !hooks_.kill_rank) {
      throw invalid_plan("expected a kill_rank hook for a kill_rank rule, got none");
    }
    if (rule.action == FaultAction::Cut && !hooks_.cut_link) {
      throw invalid_plan("expected a cut_link hook for a cut rule, got none");
    }
    if (rule.peer < -1 || rule.peer >= inner_->world_size() || rule.peer == inner_->rank()) {
      throw invalid_plan(str("expected a rule peer in [0, ", inner_->world_size(), ") other than ",
                             inner_->rank(), " or -1, got ", rule.peer));
    }
  }
}

FaultInjectingTransport::~FaultInjectingTransport() {
  if (copying_ && !dead_.load()) {
    // Copies still in flight are this wrapper's memory: let the peers finish reading them.
    const Deadline deadline = Deadline::after(last_timeout_, "closing a copying transport");
    for (int p = 0; p < world_size() && !inner_->failed(); ++p) {
      if (p == rank() || silent_[static_cast<std::size_t>(p)]) continue;
      try {
        inner_->wait_send(p, deadline);
      } catch (...) {  // the group failed meanwhile (the inner transport withdrew the sends)
      }
    }
  }
  inner_->withdraw_sends();  // a no-op unless the group failed with copies unconsumed
}

TransportTraits FaultInjectingTransport::traits() const {
  TransportTraits traits = inner_->traits();
  if (copying_ && traits.link == LinkKind::InProcess) traits.link = LinkKind::Copying;
  return traits;
}

void FaultInjectingTransport::check_alive() const {
  if (!dead_.load(std::memory_order_acquire)) return;
  throw CollectiveError(CollectiveErrorKind::Aborted,
                        str("rank ", rank(), " is dead (killed by its fault plan)"), {rank()});
}

void FaultInjectingTransport::sleep_for(std::chrono::milliseconds delay,
                                        const Deadline& deadline) const {
  const auto until = Deadline::Clock::now() + delay;
  while (Deadline::Clock::now() < until && !inner_->failed() && !deadline.expired()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void FaultInjectingTransport::cut(int peer) {
  for (int p = 0; p < world_size(); ++p) {
    if (p == rank() || (peer >= 0 && p != peer)) continue;
    silent_[static_cast<std::size_t>(p)] = 1;
    hooks_.cut_link(p);
  }
}

void FaultInjectingTransport::die(const char* when, std::uint64_t k) {
  // Nothing a peer could still read may outlive the rank's stack: withdraw first (a reader inside
  // a message finishes it), then leave.
  inner_->withdraw_sends();
  dead_.store(true, std::memory_order_release);
  hooks_.kill_rank();
  throw CollectiveError(CollectiveErrorKind::Aborted,
                        str("rank ", rank(), " was killed by its fault plan at ", when, " ", k),
                        {rank()});
}

void FaultInjectingTransport::fail(const CollectiveError& error) noexcept {
  if (dead_.load(std::memory_order_acquire)) return;  // the dead report nothing
  inner_->fail(error);
}

void FaultInjectingTransport::start_agree(const CallRecord& mine, const Deadline& deadline) {
  check_alive();
  last_timeout_ = deadline.timeout();
  const std::uint64_t k = calls_++;
  if (const FaultRule* rule = plan_.for_call(k)) {
    switch (rule->action) {
      case FaultAction::Delay:
        sleep_for(rule->delay, deadline);
        break;
      case FaultAction::Cut:
        cut(rule->peer);
        break;
      case FaultAction::KillRank:
        die("call", k);
      default:
        break;  // refused by the constructor
    }
  }
  inner_->start_agree(mine, deadline);
}

void FaultInjectingTransport::finish_agree(const CallRecord& mine, std::span<CallRecord> all,
                                           const Deadline& deadline) {
  check_alive();
  inner_->finish_agree(mine, all, deadline);
}

void FaultInjectingTransport::isend(int peer, std::uint64_t tag, const void* data,
                                    std::size_t nbytes, const Deadline& deadline) {
  check_alive();
  const auto p = static_cast<std::size_t>(peer);
  const std::uint64_t k = sent_[p]++;
  const FaultRule* rule = plan_.for_message(peer, k);
  const FaultAction action = rule != nullptr ? rule->action : FaultAction::Delay;
  if (rule != nullptr) {
    switch (action) {
      case FaultAction::Delay:
        sleep_for(rule->delay, deadline);
        break;
      case FaultAction::Drop:
        silent_[p] = 1;
        break;
      case FaultAction::Cut:
        cut(peer);
        break;
      case FaultAction::KillRank:
        die("message", k);
      default:
        break;
    }
  }
  if (silent_[p]) return;  // never sent: the peer waits for it until its deadline
  const bool corrupt = rule != nullptr && action == FaultAction::Corrupt;
  const void* payload = data;
  if (copying_ || corrupt) {
    // The staging buffer of `peer` is free once its previous message may be reused.
    inner_->wait_send(peer, deadline);
    try {
      if (corrupt && rule->byte_offset >= nbytes) {
        throw CollectiveError(
            CollectiveErrorKind::InvalidArgument,
            str("FaultInjectingTransport: expected a corrupt offset below the ", nbytes,
                "-byte message ", k, " to rank ", peer, ", got ", rule->byte_offset));
      }
      std::vector<unsigned char>& copy = staging_[p];
      copy.resize(std::max<std::size_t>(1, nbytes));
      if (nbytes != 0) std::memcpy(copy.data(), data, nbytes);
      if (corrupt) copy[rule->byte_offset] ^= rule->xor_mask;
      payload = copy.data();
    } catch (...) {  // nothing is lent yet but earlier messages: fail and withdraw before unwinding
      inner_->fail(
          current_exception_as_collective_error(str(deadline.label(), ": rank ", rank()), rank()));
      inner_->withdraw_sends();
      throw;
    }
  }
  inner_->isend(peer, tag, payload, nbytes, deadline);
  if (rule != nullptr && action == FaultAction::Duplicate) {
    inner_->isend(peer, tag, payload, nbytes, deadline);
  }
}

void FaultInjectingTransport::wait_send(int peer, const Deadline& deadline) {
  check_alive();
  if (copying_) return;  // the caller's buffer was copied: it may be reused already
  inner_->wait_send(peer, deadline);
}

void FaultInjectingTransport::recv_with(int peer, std::uint64_t tag, std::size_t nbytes,
                                        const ConsumeFn& consume, const Deadline& deadline) {
  check_alive();
  inner_->recv_with(peer, tag, nbytes, consume, deadline);
}

void FaultInjectingTransport::recv_all_with(std::span<const int> peers, std::uint64_t tag,
                                            std::span<const std::size_t> sizes,
                                            const ConsumeManyFn& consume,
                                            const Deadline& deadline) {
  check_alive();
  if (copying_) {
    recv_all_by_copy(*this, peers, tag, sizes, consume, deadline, receive_staging_);
    return;
  }
  inner_->recv_all_with(peers, tag, sizes, consume, deadline);
}

void FaultInjectingTransport::recv_into(int peer, std::uint64_t tag, void* dst, std::size_t nbytes,
                                        const Deadline& deadline) {
  check_alive();
  inner_->recv_into(peer, tag, dst, nbytes, deadline);
}

void FaultInjectingTransport::recv_all_into(std::span<const int> peers, std::uint64_t tag,
                                            std::span<void* const> dsts,
                                            std::span<const std::size_t> sizes,
                                            const Deadline& deadline) {
  check_alive();
  if (copying_) {
    Transport::recv_all_into(peers, tag, dsts, sizes, deadline);  // one recv_into per peer
    return;
  }
  inner_->recv_all_into(peers, tag, dsts, sizes, deadline);
}

}  // namespace ruccl
