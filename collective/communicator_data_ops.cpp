// Communicator: the data-movement collectives (checked and agreed here, run by the engine) and
// point-to-point send/recv.
#include "collective/communicator.h"
#include "collective/core/communicator_core.h"
#include "collective/engine/algorithm_engine.h"
#include "collective/protocol/p2p_header.h"

namespace ruccl {

namespace {

// A tensor on the root, or undefined/matching elsewhere (broadcast, scatter).
void describe_root_tensor(CommunicatorCore& c, CallScope& scope, const Tensor& t, int root) {
  c.describe_root(scope, root);
  if (c.rank() == root || t.defined()) c.describe_tensor(scope, t, "input");
}

// Publishes a point-to-point call for the transport's deadlock check while it lives.
class PointToPointScope {
 public:
  PointToPointScope(Transport& transport, int peer, bool sending) : transport_(transport) {
    transport_.begin_point_to_point(peer, sending);
  }
  ~PointToPointScope() { transport_.end_point_to_point(); }
  PointToPointScope(const PointToPointScope&) = delete;
  PointToPointScope& operator=(const PointToPointScope&) = delete;

 private:
  Transport& transport_;
};

void check_peer(CommunicatorCore& c, int peer, const char* label) {
  if (peer >= 0 && peer < c.world_size() && peer != c.rank()) return;
  CollectiveError error(
      CollectiveErrorKind::InvalidArgument,
      str(label, " on ", c.options().rank_names.name(c.rank()), ": expected a peer rank in [0, ",
          c.world_size(), ") other than ", c.rank(), ", got ", peer),
      {c.rank()});
  c.transport().fail(error);
  throw error;
}

using Issued = CommunicatorCore::Issued;

Tensor broadcast_call(CommunicatorCore& c, const Tensor& t, int root, const CallOptions& call,
                      Issued issued) {
  CallScope scope = c.begin(OpKind::Broadcast, call, issued);
  describe_root_tensor(c, scope, t, root);
  // The size is unknown on non-roots until agreement: Auto is resolved after it (from root's
  // record, the same on every rank).
  c.choose_algorithm(scope, call, c.options().broadcast_algorithm, std::nullopt);
  return c.execute(scope, [&](const EngineCall& e) { return c.engine().broadcast(e, t, root); });
}

Tensor broadcast_from_sender_call(CommunicatorCore& c, const std::optional<Tensor>& t,
                                  const CallOptions& call, Issued issued) {
  CallScope scope = c.begin(OpKind::BroadcastFromSender, call, issued);
  if (t.has_value()) c.describe_tensor(scope, *t, "input");
  c.choose_algorithm(scope, call, c.options().broadcast_algorithm, std::nullopt);
  return c.execute(scope, [&](const EngineCall& e) {
    int root = 0;  // the one sender (agreement checked there is exactly one)
    for (int r = 0; r < c.world_size(); ++r) {
      if (e.records[static_cast<std::size_t>(r)].has_tensor) root = r;
    }
    return c.engine().broadcast(e, t.has_value() ? *t : Tensor(), root);
  });
}

Tensor all_gather_call(CommunicatorCore& c, const Tensor& t, const CallOptions& call,
                       Issued issued) {
  CallScope scope = c.begin(OpKind::AllGather, call, issued);
  c.describe_tensor(scope, t, "input");
  // An all_gather runs the algorithm a call names (RecursiveDoubling, Direct); Auto stays Auto in
  // the record and the engine resolves it from the agreed shape. Before RecursiveDoubling the
  // option was ignored here, so the other algorithms still are.
  if (call.algorithm == Algorithm::RecursiveDoubling || call.algorithm == Algorithm::Direct) {
    c.choose_algorithm(scope, call, Algorithm::Auto, std::nullopt);
  }
  return c.execute(scope, [&](const EngineCall& e) { return c.engine().all_gather(e, t); });
}

std::optional<Tensor> gather_call(CommunicatorCore& c, const Tensor& t, int root,
                                  const CallOptions& call, Issued issued) {
  CallScope scope = c.begin(OpKind::Gather, call, issued);
  c.describe_root(scope, root);
  c.describe_tensor(scope, t, "input");
  return c.execute(scope, [&](const EngineCall& e) { return c.engine().gather(e, t, root); });
}

Tensor scatter_call(CommunicatorCore& c, const Tensor& t, int root, const CallOptions& call,
                    Issued issued) {
  CallScope scope = c.begin(OpKind::Scatter, call, issued);
  describe_root_tensor(c, scope, t, root);
  if (c.rank() == root && t.defined() && (t.dim() == 0 || t.shape()[0] % c.world_size() != 0)) {
    c.reject(scope, CollectiveErrorKind::InvalidArgument,
             str("expected root's axis 0 of a length divisible by the world size ", c.world_size(),
                 ", got shape ", t.shape()));
  }
  return c.execute(scope, [&](const EngineCall& e) { return c.engine().scatter(e, t, root); });
}

Tensor all_to_all_call(CommunicatorCore& c, const Tensor& t, const CallOptions& call,
                       Issued issued) {
  CallScope scope = c.begin(OpKind::AllToAll, call, issued);
  c.describe_tensor(scope, t, "input");
  if (t.defined() && (t.dim() == 0 || t.shape()[0] % c.world_size() != 0)) {
    c.reject(scope, CollectiveErrorKind::InvalidArgument,
             str("expected axis 0 of a length divisible by the world size ", c.world_size(),
                 ", got shape ", t.shape()));
  }
  return c.execute(scope, [&](const EngineCall& e) { return c.engine().all_to_all(e, t); });
}

AllToAllVResult all_to_all_v_call(CommunicatorCore& c, const Tensor& t,
                                  std::span<const std::int64_t> send_counts,
                                  const CallOptions& call, Issued issued) {
  CallScope scope = c.begin(OpKind::AllToAllV, call, issued);
  c.describe_tensor(scope, t, "input");
  if (t.defined()) {
    if (t.dim() == 0) {
      c.reject(scope, CollectiveErrorKind::InvalidArgument,
               "expected a tensor with at least 1 dimension, got a 0-d tensor");
    } else if (static_cast<int>(send_counts.size()) != c.world_size()) {
      c.reject(scope, CollectiveErrorKind::InvalidArgument,
               str("expected ", c.world_size(), " send counts (one per rank), got ",
                   send_counts.size()));
    } else {
      std::int64_t total = 0;
      bool negative = false;
      for (std::int64_t n : send_counts) {
        negative = negative || n < 0;
        total += n;
      }
      if (negative || total != t.shape()[0]) {
        c.reject(scope, CollectiveErrorKind::InvalidArgument,
                 str("expected non-negative send counts summing to axis 0 (", t.shape()[0],
                     "), got a sum of ", total, negative ? " with a negative count" : ""));
      }
    }
  }
  return c.execute(scope,
                   [&](const EngineCall& e) { return c.engine().all_to_all_v(e, t, send_counts); });
}

bool barrier_call(CommunicatorCore& c, const CallOptions& call, Issued issued) {
  CallScope scope = c.begin(OpKind::Barrier, call, issued);
  return c.execute(scope, [](const EngineCall&) { return true; });  // the agreement is the barrier
}

bool send_call(CommunicatorCore& c, const Tensor& t, int dst, const CallOptions& call,
               Issued issued) {
  const char* label = call.label != nullptr ? call.label : "send";
  c.throw_if_finished(label);
  check_peer(c, dst, label);
  if (!t.defined() || t.device() != c.device()) {
    CollectiveError error(CollectiveErrorKind::InvalidArgument,
                          str(label, " on ", c.options().rank_names.name(c.rank()),
                              ": expected a defined tensor on ", c.device().to_string(), ", got ",
                              t.defined() ? t.device().to_string() : "an undefined tensor"),
                          {c.rank()});
    c.transport().fail(error);
    throw error;
  }
  const Deadline deadline = c.p2p_deadline(call, label, issued);
  const std::uint64_t tag = c.next_p2p_tag(dst, true);
  const std::int64_t start = c.observer().start();
  try {
    const PointToPointScope scope(c.transport(), dst, true);
    const Tensor in = host_contiguous(t);
    const P2PHeaderBytes header = encode_p2p_header(in.dtype(), in.shape());
    c.transport().isend(dst, tag, header.data(), header.size(), deadline);
    c.transport().isend(dst, tag | 1, in.data_ptr(), in.nbytes(), deadline);
    c.transport().wait_send(dst, deadline);
    c.observer().finish_point_to_point(true, dst, label, in.nbytes(), start, true);
    return true;
  } catch (...) {
    c.fail_group_from_current_exception(label);
    c.observer().warn_current_exception();
    c.observer().finish_point_to_point(true, dst, label, 0, start, false);
    throw;
  }
}

Tensor recv_call(CommunicatorCore& c, int src, const CallOptions& call, Issued issued) {
  const char* label = call.label != nullptr ? call.label : "recv";
  c.throw_if_finished(label);
  check_peer(c, src, label);
  const Deadline deadline = c.p2p_deadline(call, label, issued);
  const std::uint64_t tag = c.next_p2p_tag(src, false);
  const std::int64_t start = c.observer().start();
  try {
    const PointToPointScope scope(c.transport(), src, false);
    P2PHeaderBytes header{};
    c.transport().recv_into(src, tag, header.data(), header.size(), deadline);
    // The header comes from another rank (another process, over a network transport): checked
    // before anything is sized from it.
    DType dtype = DType::F32;
    Shape shape;
    if (const std::string why = decode_p2p_header(header, dtype, shape); !why.empty()) {
      throw CollectiveError(CollectiveErrorKind::InvalidArgument,
                            str(label, " on ", c.options().rank_names.name(c.rank()),
                                ": expected a tensor header (version ", int{kP2PHeaderVersion},
                                ", a dtype, up to ", Shape::kMaxDims, " non-negative dims) from ",
                                c.options().rank_names.name(src), ", got one whose ", why),
                            {src});
    }
    Tensor out = Tensor::empty(shape, dtype);
    c.transport().recv_into(src, tag | 1, out.data_ptr(), out.nbytes(), deadline);
    c.observer().finish_point_to_point(false, src, label, out.nbytes(), start, true);
    return c.device().is_cpu() ? out : out.to(c.device());
  } catch (...) {
    c.fail_group_from_current_exception(label);
    c.observer().warn_current_exception();
    c.observer().finish_point_to_point(false, src, label, 0, start, false);
    throw;
  }
}

}  // namespace

Tensor Communicator::broadcast(const Tensor& t, int root, const CallOptions& call) {
  CommunicatorCore& c = core();
  return c.run(call, "broadcast",
               [&](Issued issued) { return broadcast_call(c, t, root, call, issued); });
}

Work Communicator::broadcast_async(const Tensor& t, int root, const CallOptions& call) {
  CommunicatorCore& c = core();
  return Work(c.start({t}, call, "broadcast", [&c, t, root, call](Issued issued) {
    return broadcast_call(c, t, root, call, issued);
  }));
}

Tensor Communicator::broadcast_from_sender(const std::optional<Tensor>& t,
                                           const CallOptions& call) {
  CommunicatorCore& c = core();
  return c.run(call, "broadcast_from_sender",
               [&](Issued issued) { return broadcast_from_sender_call(c, t, call, issued); });
}

Work Communicator::broadcast_from_sender_async(const std::optional<Tensor>& t,
                                               const CallOptions& call) {
  CommunicatorCore& c = core();
  return Work(c.start(
      {t.value_or(Tensor())}, call, "broadcast_from_sender",
      [&c, t, call](Issued issued) { return broadcast_from_sender_call(c, t, call, issued); }));
}

Tensor Communicator::all_gather(const Tensor& t, const CallOptions& call) {
  CommunicatorCore& c = core();
  return c.run(call, "all_gather",
               [&](Issued issued) { return all_gather_call(c, t, call, issued); });
}

Work Communicator::all_gather_async(const Tensor& t, const CallOptions& call) {
  CommunicatorCore& c = core();
  return Work(c.start({t}, call, "all_gather", [&c, t, call](Issued issued) {
    return all_gather_call(c, t, call, issued);
  }));
}

std::optional<Tensor> Communicator::gather(const Tensor& t, int root, const CallOptions& call) {
  CommunicatorCore& c = core();
  return c.run(call, "gather",
               [&](Issued issued) { return gather_call(c, t, root, call, issued); });
}

Work Communicator::gather_async(const Tensor& t, int root, const CallOptions& call) {
  CommunicatorCore& c = core();
  return Work(c.start({t}, call, "gather", [&c, t, root, call](Issued issued) {
    return gather_call(c, t, root, call, issued);
  }));
}

Tensor Communicator::scatter(const Tensor& t, int root, const CallOptions& call) {
  CommunicatorCore& c = core();
  return c.run(call, "scatter",
               [&](Issued issued) { return scatter_call(c, t, root, call, issued); });
}

Work Communicator::scatter_async(const Tensor& t, int root, const CallOptions& call) {
  CommunicatorCore& c = core();
  return Work(c.start({t}, call, "scatter", [&c, t, root, call](Issued issued) {
    return scatter_call(c, t, root, call, issued);
  }));
}

Tensor Communicator::all_to_all(const Tensor& t, const CallOptions& call) {
  CommunicatorCore& c = core();
  return c.run(call, "all_to_all",
               [&](Issued issued) { return all_to_all_call(c, t, call, issued); });
}

Work Communicator::all_to_all_async(const Tensor& t, const CallOptions& call) {
  CommunicatorCore& c = core();
  return Work(c.start({t}, call, "all_to_all", [&c, t, call](Issued issued) {
    return all_to_all_call(c, t, call, issued);
  }));
}

AllToAllVResult Communicator::all_to_all_v(const Tensor& t,
                                           std::span<const std::int64_t> send_counts,
                                           const CallOptions& call) {
  CommunicatorCore& c = core();
  return c.run(call, "all_to_all_v",
               [&](Issued issued) { return all_to_all_v_call(c, t, send_counts, call, issued); });
}

Work Communicator::all_to_all_v_async(const Tensor& t, std::span<const std::int64_t> send_counts,
                                      const CallOptions& call) {
  CommunicatorCore& c = core();
  return Work(
      c.start({t}, call, "all_to_all_v",
              [&c, t, counts = std::vector<std::int64_t>(send_counts.begin(), send_counts.end()),
               call](Issued issued) { return all_to_all_v_call(c, t, counts, call, issued); }));
}

void Communicator::barrier(const CallOptions& call) {
  CommunicatorCore& c = core();
  c.run(call, "barrier", [&](Issued issued) { return barrier_call(c, call, issued); });
}

Work Communicator::barrier_async(const CallOptions& call) {
  CommunicatorCore& c = core();
  return Work(c.start({}, call, "barrier",
                      [&c, call](Issued issued) { return barrier_call(c, call, issued); }));
}

void Communicator::send(const Tensor& t, int dst, const CallOptions& call) {
  CommunicatorCore& c = core();
  c.run(call, "send", [&](Issued issued) { return send_call(c, t, dst, call, issued); });
}

Work Communicator::send_async(const Tensor& t, int dst, const CallOptions& call) {
  CommunicatorCore& c = core();
  return Work(c.start({t}, call, "send", [&c, t, dst, call](Issued issued) {
    return send_call(c, t, dst, call, issued);
  }));
}

Tensor Communicator::recv(int src, const CallOptions& call) {
  CommunicatorCore& c = core();
  return c.run(call, "recv", [&](Issued issued) { return recv_call(c, src, call, issued); });
}

Work Communicator::recv_async(int src, const CallOptions& call) {
  CommunicatorCore& c = core();
  return Work(c.start({}, call, "recv",
                      [&c, src, call](Issued issued) { return recv_call(c, src, call, issued); }));
}

}  // namespace ruccl
