#include "collective/host_hierarchy.h"

#include <algorithm>
#include <cstdint>

#include "tensor/core/dtype.h"
#include "tensor/core/error.h"
#include "tensor/ops/elementwise.h"

namespace ruccl {

namespace {

CollectiveError invalid(const std::string& message) {
  return CollectiveError(CollectiveErrorKind::InvalidArgument, message);
}

CallOptions labelled(const char* label) { return CallOptions{}.with_label(label); }

}  // namespace

HostHierarchy::HostHierarchy(Communicator comm, int host_id) : world_(std::move(comm)) {
  // Every rank learns every rank's host id first, so every check below fails on every rank.
  const std::vector<std::int64_t> ids =
      world_.all_gather(Tensor::from_vector<std::int64_t>({host_id}), labelled("HostHierarchy"))
          .to(Device::cpu())
          .to_vector<std::int64_t>();
  if (world_.options().determinism != Determinism::PerAlgorithm) {
    throw invalid(
        "HostHierarchy: expected a communicator made with Determinism::PerAlgorithm (its fold "
        "is host by host, not the canonical linear fold), got Determinism::AlgorithmIndependent");
  }
  for (std::size_t r = 0; r < ids.size(); ++r) {
    if (ids[r] < 0) {
      throw invalid(str("HostHierarchy: expected a non-negative host id on every rank, got ",
                        ids[r], " on rank ", r));
    }
  }
  // Hosts are numbered by their lowest rank; a rank's local rank counts the lower ranks of its
  // host.
  const int world = world_.world_size();
  host_index_.assign(static_cast<std::size_t>(world), -1);
  local_rank_.assign(static_cast<std::size_t>(world), 0);
  for (int r = 0; r < world; ++r) {
    const auto ru = static_cast<std::size_t>(r);
    for (int q = 0; q < r; ++q) {
      const auto qu = static_cast<std::size_t>(q);
      if (ids[qu] != ids[ru]) continue;
      if (local_rank_[ru] == 0) host_index_[ru] = host_index_[qu];
      ++local_rank_[ru];
    }
    if (host_index_[ru] < 0) host_index_[ru] = num_hosts_++;
  }
  const int me = world_.rank();
  // Split colors are ints: the host index stands for the (64-bit) id.
  host_ = *world_.split(host_index_[static_cast<std::size_t>(me)], me, "host");
  leaders_ = world_.split(host_.rank() == 0 ? 0 : -1, me, "host leaders");
}

int HostHierarchy::host_of(int world_rank) const {
  if (world_rank < 0 || world_rank >= world_.world_size()) {
    throw invalid(str("HostHierarchy::host_of: expected a rank in [0, ", world_.world_size(),
                      "), got ", world_rank));
  }
  return host_index_[static_cast<std::size_t>(world_rank)];
}

Tensor HostHierarchy::all_reduce(const Tensor& t, ReduceOperation op) {
  const bool mean = op == ReduceOperation::Mean;
  // Mean of integers: the flat all_reduce raises its usual error, one group's, on every rank (the
  // host groups would each raise theirs and fail the family under one another).
  if (mean && !is_floating(t.dtype())) return world_.all_reduce(t, op);
  const ReduceOperation fold = mean ? ReduceOperation::Sum : op;
  std::optional<Tensor> partial = host_.reduce(t, 0, fold, labelled("hierarchical all_reduce"));
  Tensor result = t;
  if (leaders_) result = leaders_->all_reduce(*partial, fold, labelled("hierarchical all_reduce"));
  result = host_.broadcast(result, 0, labelled("hierarchical all_reduce"));
  return mean ? div(result, Scalar(static_cast<double>(world_.world_size()))) : result;
}

Tensor HostHierarchy::broadcast(const Tensor& t, int root) {
  const int root_host = host_of(root);
  const int root_local = local_rank_[static_cast<std::size_t>(root)];
  const int my_host = host_index_[static_cast<std::size_t>(world_.rank())];
  Tensor value = t;
  if (my_host == root_host && root_local != 0) {
    value = host_.broadcast(value, root_local, labelled("hierarchical broadcast"));
  }
  // The leaders' group ranks hosts by their leader's rank: host index h is leaders' rank h.
  if (leaders_) value = leaders_->broadcast(value, root_host, labelled("hierarchical broadcast"));
  // Every host from its leader, but root's host when root already broadcast there.
  if (my_host != root_host || root_local == 0) {
    value = host_.broadcast(value, 0, labelled("hierarchical broadcast"));
  }
  return value;
}

std::optional<Tensor> HostHierarchy::reduce(const Tensor& t, int root, ReduceOperation op) {
  const bool mean = op == ReduceOperation::Mean;
  if (mean && !is_floating(t.dtype())) return world_.reduce(t, root, op);
  const int root_host = host_of(root);
  const int root_local = local_rank_[static_cast<std::size_t>(root)];
  const ReduceOperation fold = mean ? ReduceOperation::Sum : op;
  std::optional<Tensor> value = host_.reduce(t, 0, fold, labelled("hierarchical reduce"));
  if (leaders_) value = leaders_->reduce(*value, root_host, fold, labelled("hierarchical reduce"));
  if (root_local != 0 && host_index_[static_cast<std::size_t>(world_.rank())] == root_host) {
    if (host_.rank() == 0) host_.send(*value, root_local, labelled("hierarchical reduce"));
    if (host_.rank() == root_local) value = host_.recv(0, labelled("hierarchical reduce"));
    if (host_.rank() == 0) value.reset();
  }
  if (world_.rank() != root) return std::nullopt;
  return mean ? div(*value, Scalar(static_cast<double>(world_.world_size()))) : *value;
}

}  // namespace ruccl
