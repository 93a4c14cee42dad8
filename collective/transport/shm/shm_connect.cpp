#include "collective/transport/shm/shm_connect.h"

#include <algorithm>
#include <cstdio>

namespace ruccl {

namespace {

constexpr const char* kReady = "ready";

/// What a rank publishes as its host identity when a name of its set-up is taken: its peers
/// fail with the message that follows, as it does.
constexpr std::string_view kTaken = "taken: ";

std::string pair_key(const TcpTransportOptions& options, int low, int high, const char* what) {
  return str(options.store_prefix, "/shm/", low, "-", high, "/", what);
}

/// Waits for `key`, turning a timeout into one that names `peer`.
std::string await(Store& store, const std::string& key, int peer,
                  const TcpTransportOptions& options, int rank, const Deadline& deadline) {
  try {
    return store.get_string(key, deadline);
  } catch (const CollectiveError& e) {
    if (e.kind() != CollectiveErrorKind::Timeout) throw;
    throw CollectiveError(
        CollectiveErrorKind::Timeout,
        str("TcpTransport::connect: ", options.names.name(rank), ": ", options.names.name(peer),
            " never set up its shared memory: ", e.what()),
        {peer});
  }
}

/// Throws on a peer's "taken: " outcome or identity: the whole group fails the set-up.
void fail_if_taken(const std::string& outcome, int peer, const TcpTransportOptions& options,
                   int rank) {
  if (outcome.rfind(kTaken, 0) != 0) return;
  throw CollectiveError(
      CollectiveErrorKind::InvalidConfig,
      str("TcpTransport::connect: ", options.names.name(rank), ": ", options.names.name(peer),
          " could not set up shared memory: ", outcome.substr(kTaken.size())),
      {peer});
}

}  // namespace

std::string shared_memory_group_name(const SessionId& session, const TcpTransportOptions& options) {
  return derived_name(options.secret, session, str("shm ", options.store_prefix));
}

std::unique_ptr<PeerPath> SharedMemoryPaths::path_to(int peer, TcpLink& quiet,
                                                     const RankNames& names) {
  auto& channel = channels_[static_cast<std::size_t>(peer)];
  if (!channel) return nullptr;
  return std::make_unique<ShmPath>(std::move(channel), bell_, quiet, rank_, peer, names);
}

SharedMemoryPaths connect_shared_memory(Store& store, int rank, int world_size,
                                        const SessionId& session,
                                        const TcpTransportOptions& options, bool enabled,
                                        const Deadline& deadline) {
  const std::string group = shared_memory_group_name(session, options);
  SharedMemoryPaths peers;
  peers.rank_ = rank;
  peers.channels_.resize(static_cast<std::size_t>(world_size));
  std::string identity;  // "": shares memory with nobody
  if (enabled) {
    try {
      peers.bell_ = std::make_shared<LocalBell>(group, rank);
      identity = shared_memory_host_identity();
    } catch (const ShmNameTaken& e) {
      store.set(str(options.store_prefix, "/host/", rank), str(kTaken, e.what()));
      throw;
    } catch (const CollectiveError&) {
      identity.clear();
    }
  }
  store.set(str(options.store_prefix, "/host/", rank), identity);
  std::vector<bool> local(static_cast<std::size_t>(world_size), false);
  for (int p = 0; p < world_size; ++p) {
    if (p == rank || identity.empty()) continue;
    const std::string theirs =
        await(store, str(options.store_prefix, "/host/", p), p, options, rank, deadline);
    fail_if_taken(theirs, p, options, rank);
    local[static_cast<std::size_t>(p)] = theirs == identity;
  }
  // The rings of this host's L ranks (L(L-1), every rank computing the same from the same
  // identities) must fit the budget: smaller rings first, none under 2 slots.
  const std::size_t here =
      1 + static_cast<std::size_t>(std::count(local.begin(), local.end(), true));
  std::size_t ring = options.shared_memory_ring_bytes;
  if (here > 1) {
    const std::size_t fit =
        options.shared_memory_budget_bytes / (here * (here - 1)) / kPieceBytes * kPieceBytes;
    ring = std::min(ring, fit);
    if (fit < 2 * kPieceBytes) std::fill(local.begin(), local.end(), false);
  }
  auto segment = [&](int low, int high) { return str("/ruccl-", group, "-", low, "-", high); };
  // Makes or opens the channel with `peer`: kReady, or why it could not.
  auto attach = [&](int peer, auto&& make) -> std::string {
    try {
      peers.channels_[static_cast<std::size_t>(peer)] = make();
      return kReady;
    } catch (const ShmNameTaken& e) {
      return str(kTaken, e.what());
    } catch (const CollectiveError& e) {
      return e.what();
    }
  };
  // 1. Create the segments with every higher local rank (no waiting).
  for (int q = rank + 1; q < world_size; ++q) {
    if (!local[static_cast<std::size_t>(q)]) continue;
    const std::string outcome =
        attach(q, [&] { return ShmChannel::create(segment(rank, q), session, rank, q, ring); });
    store.set(pair_key(options, rank, q, "created"), outcome);
    fail_if_taken(outcome, rank, options, rank);
  }
  // 2. Open the segments every lower local rank created (each waits only on step 1).
  for (int p = 0; p < rank; ++p) {
    if (!local[static_cast<std::size_t>(p)]) continue;
    std::string outcome =
        await(store, pair_key(options, p, rank, "created"), p, options, rank, deadline);
    fail_if_taken(outcome, p, options, rank);
    if (outcome == kReady) {
      outcome =
          attach(p, [&] { return ShmChannel::open(segment(p, rank), session, rank, p, ring); });
    }
    store.set(pair_key(options, p, rank, "opened"), outcome);
  }
  // 3. Unlink once the higher rank had its turn; keep the channel only where it opened it.
  for (int q = rank + 1; q < world_size; ++q) {
    if (!peers.channels_[static_cast<std::size_t>(q)]) continue;
    std::string outcome;
    try {
      outcome = await(store, pair_key(options, rank, q, "opened"), q, options, rank, deadline);
    } catch (...) {
      ShmChannel::unlink(segment(rank, q));
      throw;
    }
    ShmChannel::unlink(segment(rank, q));
    if (outcome != kReady) peers.channels_[static_cast<std::size_t>(q)].reset();
  }
  // 4. Whether every pair shares memory (Algorithm::Auto's thresholds): every rank says whether
  // all of its pairs do, and reads what the others said, so all ranks agree.
  bool mine = true, any = false;
  for (int p = 0; p < world_size; ++p) {
    const bool shared = peers.channels_[static_cast<std::size_t>(p)] != nullptr;
    if (p != rank) mine = mine && shared;
    any = any || shared;
  }
  store.set(str(options.store_prefix, "/shm/everywhere/", rank), mine ? "1" : "0");
  peers.everywhere_ = mine;
  for (int p = 0; p < world_size && peers.everywhere_; ++p) {
    if (p == rank) continue;
    peers.everywhere_ = await(store, str(options.store_prefix, "/shm/everywhere/", p), p, options,
                              rank, deadline) == "1";
  }
  if (!any) peers.bell_.reset();
  return peers;
}

}  // namespace ruccl
