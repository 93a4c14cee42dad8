// The registered session API's collectives over nodes (see node_level.h). Each runs in three
// steps on every local peer:
//   1. the local peers agree on the session call (collective, reduce operation, root, who sends):
//      one in-process all_gather of four integers, so a peer calling all_reduce while another
//      calls reduce is CollectiveKindMismatch, not a confusing mismatch of some inner step;
//   2. local reduce to the leader (local rank 0), the leaders' collective over TCP (its own
//      agreement checks shape, dtype, operation and root between nodes);
//   3. the leader hands the result back locally (broadcast, send, or a barrier that only says
//      "the nodes are done"), so no peer returns before every node succeeded.
// Mean: Sum at both levels, then one division by the total number of peers on the leader.
#include <sstream>

#include "collective/registered/node_level.h"
#include "tensor/ops/elementwise.h"

namespace ruccl::session_detail {

std::string encode_error(const CollectiveError& e) {
  return str(static_cast<int>(e.kind()), '\n', e.what());
}

std::optional<CollectiveError> decode_error(const StoreValue& bytes) {
  const std::string text(bytes.begin(), bytes.end());
  const std::size_t nl = text.find('\n');
  int kind = -1;
  if (nl == std::string::npos || nl == 0 || nl > 3) return std::nullopt;
  try {
    kind = std::stoi(text.substr(0, nl));
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (kind < 0 || kind > static_cast<int>(CollectiveErrorKind::Unsupported)) return std::nullopt;
  return CollectiveError(static_cast<CollectiveErrorKind>(kind), text.substr(nl + 1));
}

namespace {

enum SessionOp : std::int64_t { kAllReduce = 1, kReduce = 2, kBroadcast = 3 };

const char* session_op_name(std::int64_t code) {
  switch (code) {
    case kAllReduce:
      return "all_reduce";
    case kReduce:
      return "reduce";
    case kBroadcast:
      return "broadcast";
  }
  return "?";
}

CallOptions call_with(const Strategy& s, const char* label) {
  CallOptions call;
  call.with_algorithm(s.algorithm(), s.kind() == Strategy::Kind::Tree ? s.arity() : 0);
  return call.with_label(label);
}

// The leaders' call carries the session's reduce operation as a word: Mean travels as Sum, so
// without it Mean on one node and Sum on another would agree.
constexpr const char* kOpWord = "session reduce op";  // < CallRecord::kWordNameBytes

// Turns the word's ArgumentMismatch back into the kind the caller expects.
CollectiveError mean_aware(const CollectiveError& e) {
  const std::string what = e.what();
  if (e.kind() == CollectiveErrorKind::ArgumentMismatch &&
      what.find(kOpWord) != std::string::npos) {
    return CollectiveError(CollectiveErrorKind::ReduceOperationMismatch, what, e.ranks());
  }
  return e;
}

// Mean travels as Sum; an op Mean does not support (integers) stays Mean, so the local step
// rejects it on every peer with the usual message.
ReduceOperation wire_op(ReduceOperation op, DType dtype) {
  return op == ReduceOperation::Mean && reduce_operation_supports(op, dtype) ? ReduceOperation::Sum
                                                                             : op;
}

}  // namespace

CollectiveError NodeLevel::on_error(Communicator& local, const CollectiveError& e) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (failure_) return e.kind() == CollectiveErrorKind::Aborted ? *failure_ : e;
  if (local.rank() != 0) return e;  // a local agreement error: every local peer has it already
  CollectiveError resolved = mean_aware(e);
  if (resolved.kind() == CollectiveErrorKind::Aborted) {
    // A call that began after the global group failed says Aborted: the first failure (a lost
    // node, another node's mismatch) has the kind every peer must see.
    if (auto first = global_.failure(); first && first->kind() != CollectiveErrorKind::Aborted) {
      resolved = mean_aware(*first);
    }
  }
  const std::string key = prefix_ + "error";
  try {
    // The first error published wins, on every node (an Abort frame may have cut its message).
    const std::string mine = encode_error(resolved);
    const StoreValue stored =
        store_->compare_set(key, StoreValue{}, StoreValue(mine.begin(), mine.end()));
    if (auto first = decode_error(stored)) resolved = *first;
  } catch (const CollectiveError&) {
    // The store is gone with its node: the error we have is the best there is.
  }
  failure_ = resolved;
  global_.abort(resolved);  // the other leaders raise it with its own kind
  local.abort(resolved);    // so do the local peers waiting for this leader
  return resolved;
}

template <typename Body>
auto NodeLevel::guarded(Communicator& local, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const CollectiveError& e) {
    throw on_error(local, e);
  }
}

std::vector<std::int64_t> NodeLevel::agree_locally(Communicator& local, const char* op_name,
                                                   std::int64_t code, std::int64_t reduce_op,
                                                   std::int64_t root, bool has_tensor) {
  const Tensor mine = Tensor::from_vector<std::int64_t>({code, reduce_op, root, has_tensor ? 1 : 0},
                                                        Shape{4}, local.device());
  const std::vector<std::int64_t> all =
      local.all_gather(mine, CallOptions().with_label(op_name)).to_vector<std::int64_t>();
  const auto& peers = nodes_[static_cast<std::size_t>(node_rank_)].peers;
  auto differ = [&](int field, CollectiveErrorKind kind, const char* what, auto describe) {
    for (std::size_t p = 1; p < peers.size(); ++p) {
      if (all[4 * p + field] != all[field]) {
        throw CollectiveError(
            kind, str(op_name, " on ", node_name(node_rank_), ": peers disagree on the ", what,
                      ": expected ", describe(all[field]), " (peer ", peers[0], "), got ",
                      describe(all[4 * p + field]), " (peer ", peers[p], ")"));
      }
    }
  };
  differ(0, CollectiveErrorKind::CollectiveKindMismatch, "collective",
         [](std::int64_t v) { return session_op_name(v); });
  differ(1, CollectiveErrorKind::ReduceOperationMismatch, "reduce operation", [](std::int64_t v) {
    return std::string(reduce_operation_name(static_cast<ReduceOperation>(v)));
  });
  differ(2, CollectiveErrorKind::RootMismatch, "root",
         [](std::int64_t v) { return str("PeerId ", v); });
  return all;
}

Tensor NodeLevel::all_reduce(Communicator& local, const Tensor& t, ReduceOperation op) {
  return guarded(local, [&] {
    agree_locally(local, "all_reduce", kAllReduce, static_cast<std::int64_t>(op), -1, true);
    const ReduceOperation wire = t.defined() ? wire_op(op, t.dtype()) : op;
    const Strategy& strategy = config_.local_all_reduce_strategy;
    std::optional<Tensor> partial = local.reduce(t, 0, wire, call_with(strategy, "all_reduce"));
    Tensor result;
    if (local.rank() == 0) {
      result = global_.all_reduce(*partial, wire,
                                  call_with(config_.global_all_reduce_strategy, "all_reduce")
                                      .with_word(kOpWord, static_cast<std::int64_t>(op)));
      if (op == ReduceOperation::Mean && wire == ReduceOperation::Sum) {
        result = div(result, Scalar(static_cast<double>(total_peers_)));
      }
    }
    return local.broadcast(result, 0, call_with(strategy, "all_reduce"));
  });
}

std::optional<Tensor> NodeLevel::reduce(Communicator& local, const Tensor& t, ReduceOperation op,
                                        PeerId root) {
  return guarded(local, [&]() -> std::optional<Tensor> {
    agree_locally(local, "reduce", kReduce, static_cast<std::int64_t>(op), root.value, true);
    const std::optional<PeerPlace> place = locate(root);
    if (!place) {
      // Every node knows every PeerId: every peer of every node raises this, together.
      throw CollectiveError(CollectiveErrorKind::InvalidArgument,
                            str("reduce: expected the root to be a registered peer, got ", root,
                                " (", total_peers_, " peers on ", nodes_.size(), " nodes)"));
    }
    const ReduceOperation wire = t.defined() ? wire_op(op, t.dtype()) : op;
    const Strategy& strategy = config_.local_reduce_strategy;
    std::optional<Tensor> partial = local.reduce(t, 0, wire, call_with(strategy, "reduce"));
    std::optional<Tensor> result;
    if (local.rank() == 0) {
      result = global_.reduce(*partial, place->node, wire,
                              call_with(config_.global_reduce_strategy, "reduce")
                                  .with_word(kOpWord, static_cast<std::int64_t>(op)));
      if (result && op == ReduceOperation::Mean && wire == ReduceOperation::Sum) {
        result = div(*result, Scalar(static_cast<double>(total_peers_)));
      }
    }
    local.barrier(CallOptions().with_label("reduce"));  // every node is done (or failed)
    if (place->node != node_rank_) return std::nullopt;
    if (place->local == 0) return local.rank() == 0 ? result : std::nullopt;
    if (local.rank() == 0) local.send(*result, place->local);
    if (local.rank() == place->local) return local.recv(0);
    return std::nullopt;
  });
}

Tensor NodeLevel::broadcast(Communicator& local, const std::optional<Tensor>& t) {
  return guarded(local, [&] {
    const std::vector<std::int64_t> all =
        agree_locally(local, "broadcast", kBroadcast, -1, -1, t.has_value());
    int senders = 0;
    for (std::size_t p = 0; p < all.size() / 4; ++p) senders += static_cast<int>(all[4 * p + 3]);
    const Strategy& strategy = config_.local_broadcast_strategy;
    Tensor value;
    if (senders >= 1) {
      // One local sender: every local peer gets it now. Several: SeveralBroadcastSenders here,
      // which the leader publishes to every node.
      value = local.broadcast_from_sender(t, call_with(strategy, "broadcast"));
    }
    if (local.rank() == 0) {
      // Exactly one sender over all nodes, checked by the leaders' agreement.
      value =
          global_.broadcast_from_sender(senders == 1 ? std::optional<Tensor>(value) : std::nullopt,
                                        call_with(config_.global_broadcast_strategy, "broadcast"));
    }
    if (senders == 1) {
      local.barrier(CallOptions().with_label("broadcast"));
      return value;
    }
    return local.broadcast(value, 0, call_with(strategy, "broadcast"));
  });
}

}  // namespace ruccl::session_detail
