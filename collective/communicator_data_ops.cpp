// Communicator: the data-movement collectives (no arithmetic; any dtype, bytes moved as they are)
// and point-to-point send/recv.
#include <numeric>

#include "collective/communicator.h"
#include "collective/communicator_core.h"
#include "collective/p2p_header.h"

namespace ruccl {

namespace {

Tensor to_device(const Tensor& host, Device device) {
  return device.is_cpu() ? host : host.to(device);
}

// all_gather/gather treat a 0-d tensor as shape [1].
Shape gathered_shape(const Shape& shape, int world) {
  Shape out = shape.empty() ? Shape{1} : shape;
  out[0] = out[0] * world;
  return out;
}

// Root's tensor, as agreed: dtype and shape from root's record.
Tensor empty_like_record(const CallRecord& rec) {
  return Tensor::empty(rec.shape(), static_cast<DType>(rec.dtype));
}

void broadcast_bytes(const CommunicatorCore& c, const CallScope& scope, const AlgorithmContext& ctx,
                     void* buf, std::size_t nbytes, int root) {
  switch (c.agreed_algorithm(scope, nbytes)) {
    case Algorithm::Ring:
      ring_broadcast(ctx, buf, nbytes, root, c.options().segment_bytes);
      break;
    case Algorithm::Tree:
      tree_broadcast(ctx, buf, nbytes, root, scope.record.tree_arity);
      break;
    default:
      direct_broadcast(ctx, buf, nbytes, root);
  }
}

// Shared body of broadcast and broadcast_from_sender once the root is known.
Tensor run_broadcast(CommunicatorCore& c, CallScope& scope, const Tensor& t, int root) {
  Tensor result;
  c.run(scope, [&](const AlgorithmContext& ctx) {
    if (c.rank() == root) {
      // Peers read `in` in place (the root never writes its buffer in any broadcast algorithm),
      // and the root's own result is a copy made afterwards: so an abort during the transfer
      // fails the root at once instead of after copying the whole tensor first.
      const Tensor in = host_contiguous(t);
      broadcast_bytes(c, scope, ctx, const_cast<void*>(in.data_ptr()), in.nbytes(), root);
      Tensor out =
          Tensor::empty(in.shape(), in.dtype());  // a new tensor: never the caller's memory
      copy_bytes(out.data_ptr(), in.data_ptr(), in.nbytes());
      result = to_device(out, c.device());
    } else {
      Tensor out = empty_like_record(c.records()[static_cast<std::size_t>(root)]);
      broadcast_bytes(c, scope, ctx, out.data_ptr(), out.nbytes(), root);
      result = to_device(out, c.device());
    }
  });
  return result;
}

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

}  // namespace

Tensor Communicator::broadcast(const Tensor& t, int root, const CallOptions& call) {
  CommunicatorCore& c = core();
  CallScope scope = c.begin(OpKind::Broadcast, call);
  describe_root_tensor(c, scope, t, root);
  // The size is unknown on non-roots until agreement: Auto is resolved after it (from root's
  // record, the same on every rank).
  c.choose_algorithm(scope, call, c.options().broadcast_algorithm, std::nullopt);
  c.agree(scope);
  return run_broadcast(c, scope, t, root);
}

Tensor Communicator::broadcast_from_sender(const std::optional<Tensor>& t,
                                           const CallOptions& call) {
  CommunicatorCore& c = core();
  CallScope scope = c.begin(OpKind::BroadcastFromSender, call);
  if (t.has_value()) c.describe_tensor(scope, *t, "input");
  c.choose_algorithm(scope, call, c.options().broadcast_algorithm, std::nullopt);
  c.agree(scope);
  int root = 0;
  for (int r = 0; r < c.world_size(); ++r) {
    if (c.records()[static_cast<std::size_t>(r)].has_tensor) root = r;
  }
  return run_broadcast(c, scope, t.has_value() ? *t : Tensor(), root);
}

Tensor Communicator::all_gather(const Tensor& t, const CallOptions& call) {
  CommunicatorCore& c = core();
  CallScope scope = c.begin(OpKind::AllGather, call);
  c.describe_tensor(scope, t, "input");
  c.agree(scope);
  Tensor result;
  c.run(scope, [&](const AlgorithmContext& ctx) {
    const Tensor in = host_contiguous(t);
    Tensor out = Tensor::empty(gathered_shape(in.shape(), c.world_size()), in.dtype());
    direct_all_gather(ctx, in.data_ptr(), out.data_ptr(), in.nbytes());
    result = to_device(out, c.device());
  });
  return result;
}

std::optional<Tensor> Communicator::gather(const Tensor& t, int root, const CallOptions& call) {
  CommunicatorCore& c = core();
  CallScope scope = c.begin(OpKind::Gather, call);
  c.describe_root(scope, root);
  c.describe_tensor(scope, t, "input");
  c.agree(scope);
  std::optional<Tensor> result;
  c.run(scope, [&](const AlgorithmContext& ctx) {
    const Tensor in = host_contiguous(t);
    const bool is_root = c.rank() == root;
    Tensor out =
        is_root ? Tensor::empty(gathered_shape(in.shape(), c.world_size()), in.dtype()) : Tensor();
    direct_gather(ctx, in.data_ptr(), is_root ? out.data_ptr() : nullptr, in.nbytes(), root);
    if (is_root) result = to_device(out, c.device());
  });
  return result;
}

Tensor Communicator::scatter(const Tensor& t, int root, const CallOptions& call) {
  CommunicatorCore& c = core();
  CallScope scope = c.begin(OpKind::Scatter, call);
  describe_root_tensor(c, scope, t, root);
  if (c.rank() == root && t.defined() && (t.dim() == 0 || t.shape()[0] % c.world_size() != 0)) {
    c.reject(scope, CollectiveErrorKind::InvalidArgument,
             str("expected root's axis 0 of a length divisible by the world size ", c.world_size(),
                 ", got shape ", t.shape()));
  }
  c.agree(scope);
  Tensor result;
  c.run(scope, [&](const AlgorithmContext& ctx) {
    const CallRecord& rec = c.records()[static_cast<std::size_t>(root)];
    Shape block = rec.shape();
    block[0] = block[0] / c.world_size();
    Tensor out = Tensor::empty(block, static_cast<DType>(rec.dtype));
    Tensor in = c.rank() == root ? host_contiguous(t) : Tensor();
    direct_scatter(ctx, in.defined() ? in.data_ptr() : nullptr, out.data_ptr(), out.nbytes(), root);
    result = to_device(out, c.device());
  });
  return result;
}

Tensor Communicator::all_to_all(const Tensor& t, const CallOptions& call) {
  CommunicatorCore& c = core();
  CallScope scope = c.begin(OpKind::AllToAll, call);
  c.describe_tensor(scope, t, "input");
  if (t.defined() && (t.dim() == 0 || t.shape()[0] % c.world_size() != 0)) {
    c.reject(scope, CollectiveErrorKind::InvalidArgument,
             str("expected axis 0 of a length divisible by the world size ", c.world_size(),
                 ", got shape ", t.shape()));
  }
  c.agree(scope);
  Tensor result;
  c.run(scope, [&](const AlgorithmContext& ctx) {
    const Tensor in = host_contiguous(t);
    Tensor out = Tensor::empty(in.shape(), in.dtype());
    direct_all_to_all(ctx, in.data_ptr(), out.data_ptr(),
                      in.nbytes() / static_cast<std::size_t>(c.world_size()));
    result = to_device(out, c.device());
  });
  return result;
}

AllToAllVResult Communicator::all_to_all_v(const Tensor& t,
                                           std::span<const std::int64_t> send_counts,
                                           const CallOptions& call) {
  CommunicatorCore& c = core();
  CallScope scope = c.begin(OpKind::AllToAllV, call);
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
  c.agree(scope);
  AllToAllVResult result;
  c.run(scope, [&](const AlgorithmContext& ctx) {
    const auto w = static_cast<std::size_t>(c.world_size());
    std::vector<std::int64_t> recv_counts(w);
    exchange_counts(ctx, send_counts, recv_counts);
    const Tensor in = host_contiguous(t);
    Shape out_shape = in.shape();
    out_shape[0] = std::accumulate(recv_counts.begin(), recv_counts.end(), std::int64_t{0});
    Tensor out = Tensor::empty(out_shape, in.dtype());
    std::size_t row_bytes = dtype_size(in.dtype());
    for (std::int64_t d = 1; d < in.dim(); ++d)
      row_bytes *= static_cast<std::size_t>(in.shape()[d]);
    std::vector<std::size_t> send_off(w), send_bytes(w), recv_off(w), recv_bytes(w);
    std::size_t s = 0, r = 0;
    for (std::size_t j = 0; j < w; ++j) {
      send_off[j] = s;
      send_bytes[j] = static_cast<std::size_t>(send_counts[j]) * row_bytes;
      s += send_bytes[j];
      recv_off[j] = r;
      recv_bytes[j] = static_cast<std::size_t>(recv_counts[j]) * row_bytes;
      r += recv_bytes[j];
    }
    const AlgorithmContext data_ctx{ctx.transport, ctx.tag + 1, ctx.deadline};
    direct_all_to_all_v(data_ctx, in.data_ptr(), send_off, send_bytes, out.data_ptr(), recv_off,
                        recv_bytes);
    result.output = to_device(out, c.device());
    result.recv_counts = std::move(recv_counts);
  });
  return result;
}

void Communicator::barrier(const CallOptions& call) {
  CommunicatorCore& c = core();
  CallScope scope = c.begin(OpKind::Barrier, call);
  c.agree(scope);
}

void Communicator::send(const Tensor& t, int dst, const CallOptions& call) {
  CommunicatorCore& c = core();
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
  const Deadline deadline = c.p2p_deadline(call, label);
  const std::uint64_t tag = c.next_p2p_tag(dst, true);
  try {
    const PointToPointScope scope(c.transport(), dst, true);
    const Tensor in = host_contiguous(t);
    const P2PHeaderBytes header = encode_p2p_header(in.dtype(), in.shape());
    c.transport().isend(dst, tag, header.data(), header.size(), deadline);
    c.transport().isend(dst, tag | 1, in.data_ptr(), in.nbytes(), deadline);
    c.transport().wait_send(dst, deadline);
  } catch (...) {
    c.fail_group_from_current_exception(label);
    throw;
  }
}

Tensor Communicator::recv(int src, const CallOptions& call) {
  CommunicatorCore& c = core();
  const char* label = call.label != nullptr ? call.label : "recv";
  c.throw_if_finished(label);
  check_peer(c, src, label);
  const Deadline deadline = c.p2p_deadline(call, label);
  const std::uint64_t tag = c.next_p2p_tag(src, false);
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
    return to_device(out, c.device());
  } catch (...) {
    c.fail_group_from_current_exception(label);
    throw;
  }
}

}  // namespace ruccl
