// SimWorld: the baton, the virtual clocks and the messages (see sim_world.h).
#include "collective/transport/sim/sim_world.h"

#include <algorithm>
#include <cstring>

namespace ruccl {

SimWorld::SimWorld(int world_size, LinkModel model, SimMode mode, RankNames names)
    : world_(world_size),
      model_(model),
      mode_(mode),
      names_(std::move(names)),
      state_(static_cast<std::size_t>(world_size), State::Fresh),
      clock_(static_cast<std::size_t>(world_size), 0.0),
      waiting_(static_cast<std::size_t>(world_size), nullptr),
      awaiting_(static_cast<std::size_t>(world_size), 0),
      wakeup_(new std::condition_variable[static_cast<std::size_t>(world_size)]),
      fresh_(world_size),
      lanes_(static_cast<std::size_t>(world_size) * static_cast<std::size_t>(world_size)),
      port_out_(static_cast<std::size_t>(world_size), 0.0),
      port_in_(static_cast<std::size_t>(world_size)),
      nic_out_(static_cast<std::size_t>(model.host_of(world_size - 1) + 1)),
      nic_in_(nic_out_.size()),
      records_(static_cast<std::size_t>(world_size) * 2) {
  for (std::size_t h = 0; h < nic_out_.size(); ++h) {
    cpu_scale_.push_back(model_.cpu_scale(world_size, static_cast<int>(h)));
  }
}

double SimWorld::clock(int rank) const {
  std::lock_guard<std::mutex> lock(mu_);
  return clock_[static_cast<std::size_t>(rank)];
}

// ---- the baton ----------------------------------------------------------------------------------

void SimWorld::acquire(int rank, Lock& lock, const Deadline& deadline) {
  // Once the group failed there is no schedule left to keep: every rank runs freely (still under
  // mu_), and each call completes if what it needs is there, else throws the failure, as the
  // in-process transport's waits do.
  const auto r = static_cast<std::size_t>(rank);
  if (failed() || state_[r] == State::Holding) return;
  RUCCL_ASSERT(state_[r] == State::Fresh, "SimWorld: a rank's transport used from two threads");
  --fresh_;
  state_[r] = State::Ready;
  ready_.insert({clock_[r], rank});
  schedule();
  while (state_[r] != State::Holding) {
    if (failed()) return;
    if (wakeup_[r].wait_until(lock, deadline.at()) == std::cv_status::timeout &&
        state_[r] != State::Holding) {
      std::vector<int> late;  // the ranks that hold the world up: not arrived, or the holder
      for (int q = 0; q < world_; ++q) {
        const State s = state_[static_cast<std::size_t>(q)];
        if (s == State::Fresh || s == State::Holding) late.push_back(q);
      }
      check_wait(rank, late, "the call", deadline, true);
    }
  }
}

void SimWorld::schedule() {
  if (holder_ >= 0 || fresh_ > 0 || failed()) return;
  if (!ready_.empty()) {
    const int next = ready_.begin()->second;
    ready_.erase(ready_.begin());
    holder_ = next;
    state_[static_cast<std::size_t>(next)] = State::Holding;
    wakeup_[static_cast<std::size_t>(next)].notify_one();
    return;
  }
  // Nobody can move: every live rank waits for something no rank will ever send.
  for (int q = 0; q < world_; ++q) {
    const auto i = static_cast<std::size_t>(q);
    if (state_[i] != State::Blocked || waiting_[i] == nullptr) continue;
    const std::vector<int> missing = waiting_[i]->missing();
    if (!fail_if_lost(q, missing, waiting_[i]->what, "")) {
      fail_locked(
          CollectiveError(CollectiveErrorKind::Timeout,
                          str("the simulated world can never move again: ", names_.name(q),
                              " waits for ", waiting_[i]->what, " from ", names_.list(missing),
                              " that never arrived (every live rank waits)"),
                          missing));
    }
    return;
  }
}

void SimWorld::block(int rank, const Waiter& waiter, Lock& lock, const Deadline& deadline) {
  const auto r = static_cast<std::size_t>(rank);
  if (const std::optional<double> at = waiter.ready()) {
    clock_[r] = std::max(clock_[r], *at);
    return;
  }
  if (failed()) throw *failure_;
  state_[r] = State::Blocked;
  waiting_[r] = &waiter;
  holder_ = -1;
  schedule();
  while (state_[r] != State::Holding) {
    bool expired = false;
    if (!failed()) {
      expired = wakeup_[r].wait_until(lock, deadline.at()) == std::cv_status::timeout;
    }
    if (state_[r] == State::Holding) break;
    if (failed() || expired) {
      const std::vector<int> missing = waiter.missing();
      try {
        check_wait(rank, missing, waiter.what, deadline, expired);
      } catch (...) {
        waiting_[r] = nullptr;
        state_[r] = State::Holding;  // the group failed: no schedule any more, the rank runs on
        throw;
      }
    }
  }
  waiting_[r] = nullptr;
}

void SimWorld::wake(int rank) {
  const auto r = static_cast<std::size_t>(rank);
  if (state_[r] != State::Blocked) return;
  const std::optional<double> at = waiting_[r]->ready();
  if (!at) return;
  clock_[r] = std::max(clock_[r], *at);
  state_[r] = State::Ready;
  ready_.insert({clock_[r], rank});
}

bool SimWorld::fail_if_lost(int rank, const std::vector<int>& missing, const char* what,
                            const std::string& prefix) {
  std::vector<int> gone;
  for (int m : missing) {
    if (state_[static_cast<std::size_t>(m)] == State::Gone) gone.push_back(m);
  }
  if (gone.empty()) return false;
  fail_locked(CollectiveError(CollectiveErrorKind::PeerLost,
                              str(prefix, names_.name(rank), " lost ", names_.list(gone),
                                  " (their communicator was destroyed) while waiting for ", what),
                              gone));
  return true;
}

void SimWorld::check_wait(int rank, const std::vector<int>& missing, const char* what,
                          const Deadline& deadline, bool expired) {
  if (failed()) throw *failure_;
  if (fail_if_lost(rank, missing, what, deadline.call_name() + ": ")) throw *failure_;
  if (!expired || !deadline.expired()) return;
  fail_locked(
      CollectiveError(CollectiveErrorKind::Timeout,
                      str(deadline.call_name(), ": ", names_.name(rank), " timed out after ",
                          deadline.timeout().count(), " ms waiting for ", what, " from ",
                          names_.list(missing), " that never arrived"),
                      missing));
  throw *failure_;
}

// ---- failure and leaving --------------------------------------------------------------------

void SimWorld::notify_waiters() {
  for (int q = 0; q < world_; ++q) {
    const State s = state_[static_cast<std::size_t>(q)];
    if (s == State::Blocked || s == State::Ready) wakeup_[static_cast<std::size_t>(q)].notify_all();
  }
}

void SimWorld::fail_locked(const CollectiveError& error) {
  if (!failure_) {
    failure_.emplace(error);
    failed_.store(true, std::memory_order_release);
  }
  notify_waiters();
}

void SimWorld::fail(const CollectiveError& error) noexcept {
  try {
    std::lock_guard<std::mutex> lock(mu_);
    fail_locked(error);
  } catch (...) {  // copying the error failed (no memory): a failure all the same
    failed_.store(true, std::memory_order_release);
  }
}

CollectiveError SimWorld::failure() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!failure_) return CollectiveError(CollectiveErrorKind::Aborted, "collective group failed");
  return *failure_;
}

void SimWorld::leave(int rank) noexcept {
  std::lock_guard<std::mutex> lock(mu_);
  const auto r = static_cast<std::size_t>(rank);
  if (state_[r] == State::Fresh) --fresh_;
  if (state_[r] == State::Ready) ready_.erase({clock_[r], rank});
  if (holder_ == rank) holder_ = -1;
  state_[r] = State::Gone;
  // A wait for this rank fails with PeerLost once nothing else can run (schedule()): the ranks
  // still busy with work it left them (its messages are still delivered) finish it first, on
  // every run alike.
  schedule();
}

// ---- agreement ----------------------------------------------------------------------------------

void SimWorld::publish(int rank, const CallRecord& record, const Deadline& deadline) {
  Lock lock(mu_);
  acquire(rank, lock, deadline);
  if (failed()) throw *failure_;
  const auto r = static_cast<std::size_t>(rank);
  const std::size_t parity = record.seq & 1;
  records_[r * 2 + parity] = RecordSlot{record.seq, record};
  Arrivals& a = arrivals_[parity];
  if (a.seq != record.seq) a = Arrivals{record.seq, 0, 0.0};
  ++a.count;
  a.last = std::max(a.last, clock_[r]);
  clock_[r] +=
      model_.message_overhead_s * cpu_scale_[static_cast<std::size_t>(model_.host_of(rank))];
  if (a.count == world_) {
    for (int q = 0; q < world_; ++q) wake(q);
  }
}

void SimWorld::collect(int rank, const CallRecord& mine, std::span<CallRecord> all,
                       const Deadline& deadline) {
  Lock lock(mu_);
  acquire(rank, lock, deadline);
  const std::size_t parity = mine.seq & 1;
  auto ready = [&]() -> std::optional<double> {
    const Arrivals& a = arrivals_[parity];
    if (a.seq != mine.seq || a.count != world_) return std::nullopt;
    return a.last + model_.agreement_seconds(world_);
  };
  auto missing = [&] {
    std::vector<int> out;
    for (int q = 0; q < world_; ++q) {
      if (records_[static_cast<std::size_t>(q) * 2 + parity].seq != mine.seq) out.push_back(q);
    }
    return out;
  };
  const Waiter waiter{ready, missing, "the call"};
  block(rank, waiter, lock, deadline);
  for (int q = 0; q < world_; ++q) {
    all[static_cast<std::size_t>(q)] = records_[static_cast<std::size_t>(q) * 2 + parity].record;
  }
}

// ---- messages -----------------------------------------------------------------------------------

void SimWorld::post(int rank, int peer, std::uint64_t tag, const void* data, std::size_t nbytes,
                    const Deadline& deadline) {
  RUCCL_ASSERT(peer != rank && peer >= 0 && peer < world_, "SimWorld::post: bad peer ", peer);
  SimMessage message{tag, nbytes, 0.0, {}};
  if (mode_ == SimMode::Checking && nbytes > 0) {  // copied before the lock: it reads our memory
    message.bytes.resize(nbytes);
    std::memcpy(message.bytes.data(), data, nbytes);
  }
  Lock lock(mu_);
  acquire(rank, lock, deadline);
  const auto r = static_cast<std::size_t>(rank);
  const auto p = static_cast<std::size_t>(peer);
  const SimLink& link = model_.link(rank, peer);
  const auto n = static_cast<double>(nbytes);
  const bool crosses = model_.crosses_hosts(rank, peer);
  const auto from_host = static_cast<std::size_t>(model_.host_of(rank));
  const auto to_host = static_cast<std::size_t>(model_.host_of(peer));
  const double cpu = cpu_scale_[from_host];
  // Within a host the copy is CPU work (shared cores slow it); between hosts the NIC moves it.
  const double serialize = n / link.bytes_per_s * (crosses ? 1.0 : cpu);
  const double on_nic = n / model_.nic_bytes_per_s;
  clock_[r] += model_.message_overhead_s * cpu;
  // The send port takes this rank's messages in its own order (its clock only grows); the NICs
  // and the receive port are shared, booked first fit (busy_calendar.h).
  double start = std::max(clock_[r], port_out_[r]);
  if (crosses) start = nic_out_[from_host].reserve(start, on_nic);
  port_out_[r] = start + serialize;
  const double head = start + link.alpha_s;  // the first byte reaches the receiver
  double arrival = port_in_[p].reserve(head, serialize) + serialize;
  if (crosses) arrival = std::max(arrival, nic_in_[to_host].reserve(head, on_nic) + on_nic);
  message.arrival = arrival;
  Lane& l = lane(rank, peer);
  l.send_end = start + serialize;
  l.queue.push_back(std::move(message));
  // Only the post that fills the receiver's last awaited lane wakes it: a rank waiting for
  // 1,023 messages is rechecked once, not 1,023 times.
  if (l.awaited) {
    l.awaited = false;
    if (--awaiting_[p] == 0) wake(peer);
  }
}

void SimWorld::sent(int rank, int peer, const Deadline& deadline) {
  Lock lock(mu_);
  acquire(rank, lock, deadline);
  double& c = clock_[static_cast<std::size_t>(rank)];
  c = std::max(c, lane(rank, peer).send_end);
}

std::vector<SimMessage> SimWorld::take(int rank, std::span<const int> peers, std::uint64_t tag,
                                       std::span<const std::size_t> sizes, bool fold,
                                       const Deadline& deadline) {
  Lock lock(mu_);
  acquire(rank, lock, deadline);
  int& awaiting = awaiting_[static_cast<std::size_t>(rank)];
  awaiting = 0;
  for (int p : peers) {
    Lane& l = lane(p, rank);
    l.awaited = l.head == l.queue.size();
    awaiting += l.awaited ? 1 : 0;
  }
  auto ready = [&]() -> std::optional<double> {
    if (awaiting > 0) return std::nullopt;
    double at = 0;
    for (int p : peers) {
      const Lane& l = lane(p, rank);
      at = std::max(at, l.queue[l.head].arrival);
    }
    return at;
  };
  auto missing = [&] {
    std::vector<int> out;
    for (int p : peers) {
      const Lane& l = lane(p, rank);
      if (l.head == l.queue.size()) out.push_back(p);
    }
    return out;
  };
  const Waiter waiter{ready, missing, "a message"};
  block(rank, waiter, lock, deadline);
  std::vector<SimMessage> out;
  out.reserve(peers.size());
  double bytes = 0;
  for (std::size_t i = 0; i < peers.size(); ++i) {
    Lane& l = lane(peers[i], rank);
    SimMessage& m = l.queue[l.head];
    if (m.tag != tag || m.nbytes != sizes[i]) {  // agreement makes this a protocol bug
      fail_locked(CollectiveError(
          CollectiveErrorKind::CollectiveKindMismatch,
          str(names_.name(rank), " expected message tag ", tag, " (", sizes[i], " bytes) from ",
              names_.name(peers[i]), ", got tag ", m.tag, " (", m.nbytes, " bytes)"),
          {std::min(rank, peers[i]), std::max(rank, peers[i])}));
      throw *failure_;
    }
    bytes += static_cast<double>(m.nbytes);
    out.push_back(std::move(m));
    if (++l.head == l.queue.size()) {
      l.queue.clear();
      l.head = 0;
    }
  }
  double& c = clock_[static_cast<std::size_t>(rank)];
  c += (static_cast<double>(peers.size()) * model_.message_overhead_s +
        (fold ? bytes * model_.fold_s_per_byte : 0.0)) *
       cpu_scale_[static_cast<std::size_t>(model_.host_of(rank))];
  return out;
}

}  // namespace ruccl
