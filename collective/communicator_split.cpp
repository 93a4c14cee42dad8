// Communicator::split: groups of a group, with MPI_Comm_split's meaning (docs/collectives.md,
// "Groups"). The colors and keys travel in one all_gather of the parent (agreed like every call);
// then every rank builds its group from them alone: a view of the parent's transport
// (transport/group/group_transport.h) unless the transport splits natively (MPI), with the
// engine the parent's engine says (NCCL splits its communicator), else the parent's factory's.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "collective/common/hash.h"
#include "collective/communicator.h"
#include "collective/core/communicator_core.h"
#include "collective/transport/group/group_transport.h"

namespace ruccl {

namespace {

// The parent ranks of `color`'s group, by key, ties by parent rank. `pairs`: (color, key) by rank.
std::vector<int> members_of(const std::vector<std::int64_t>& pairs, int color) {
  std::vector<int> members;
  for (std::size_t r = 0; 2 * r < pairs.size(); ++r) {
    if (pairs[2 * r] == color) members.push_back(static_cast<int>(r));
  }
  std::stable_sort(members.begin(), members.end(), [&](int a, int b) {
    return pairs[2 * static_cast<std::size_t>(a) + 1] < pairs[2 * static_cast<std::size_t>(b) + 1];
  });
  return members;
}

// The group's ranks named as the parent names them.
RankNames group_names(const RankNames& parent, const std::vector<int>& members) {
  std::vector<std::uint64_t> ids;
  for (int p : members) {
    ids.push_back(parent.ids().empty() ? static_cast<std::uint64_t>(p)
                                       : parent.ids()[static_cast<std::size_t>(p)]);
  }
  return RankNames(parent.noun(), std::move(ids));
}

// The group's tag space: bits 48..61, never 0 (the parent's), the same on every member.
std::uint64_t group_salt(const std::string& parent_label, std::uint64_t split, int color) {
  const std::uint64_t h = mix64(fnv1a64(parent_label) ^ (split * 0x9E3779B97F4A7C15ULL) ^
                                static_cast<std::uint32_t>(color));
  const std::uint64_t salt = (h & 0x3FFFULL) << 48;
  return salt != 0 ? salt : std::uint64_t{1} << 48;
}

}  // namespace

std::optional<Communicator> Communicator::split(int color, int key, const std::string& name,
                                                const CallOptions& call) {
  CommunicatorCore& c = core();
  CallOptions labelled = call;
  if (labelled.label == nullptr) labelled.label = "split";
  const Tensor mine = Tensor::from_vector<std::int64_t>({color, key}, Shape{2}).to(c.device());
  const std::vector<std::int64_t> pairs =
      all_gather(mine, labelled).to(Device::cpu()).to_vector<std::int64_t>();
  // The rest reads only the agreed pairs; it runs in its own turn, as the parent's next call.
  const RankTurn turn(c.turns(), c.turns().take());
  const std::uint64_t split = c.next_split();
  try {
    c.throw_if_finished(labelled.label);
    const Deadline deadline =
        Deadline::after(call.timeout.value_or(c.options().timeout), labelled.label);
    std::vector<int> members;
    std::string label;
    if (color >= 0) {
      members = members_of(pairs, color);
      label = str("group ", name.empty() ? str("split #", split, " color ", color) : name, " of ",
                  c.options().rank_names.list(members));
    }
    // Every rank, in the same order, whatever its color: a native split is a collective.
    EngineFactory engine = c.engine().split_engine(color, key);
    if (!engine) engine = c.engine_factory();
    std::unique_ptr<Transport> transport;
    if (c.transport().splits_natively()) {
      transport = c.transport().split_natively(color, key, deadline);
    } else if (color >= 0) {
      transport = std::make_unique<GroupTransport>(
          c.transport(), members, group_salt(c.group_label(), split, color), label);
    }
    if (color < 0) return std::nullopt;
    CommunicatorOptions options = c.options();
    options.rank_names = group_names(c.options().rank_names, members);
    return Communicator(std::make_shared<CommunicatorCore>(std::move(transport), c.device(),
                                                           std::move(options), engine,
                                                           GroupOf{core_, std::move(label)}));
  } catch (...) {
    c.fail_group_from_current_exception(labelled.label);
    throw;
  }
}

}  // namespace ruccl
