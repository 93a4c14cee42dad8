// Communicator: the handle, and the reducing collectives (all_reduce, reduce, reduce_scatter).
// The data-movement collectives are in communicator_data_ops.cpp.
#include "collective/communicator.h"

#include "collective/communicator_core.h"
#include "collective/transport/in_process_transport.h"
#include "collective/transport/tcp_transport.h"

namespace ruccl {

namespace {

// A reduction's input on the host, contiguous, in its accumulation dtype.
Tensor reduction_input(const Tensor& t) {
  Tensor host = host_contiguous(t);
  const DType acc = accumulation_dtype(t.dtype());
  return acc == host.dtype() ? host : host.to(acc).contiguous();
}

// Converts a host result in the accumulation dtype back to the caller's dtype and device.
Tensor reduction_output(const Tensor& out, DType dtype, Device device) {
  Tensor result = out.dtype() == dtype ? out : out.to(dtype);
  return device.is_cpu() ? result : result.to(device);
}

// Bytes a reduction of `t` moves per rank (in its accumulation dtype); 0 for an invalid tensor.
std::size_t accumulated_bytes(const Tensor& t) {
  if (!t.defined()) return 0;
  return static_cast<std::size_t>(t.numel()) * dtype_size(accumulation_dtype(t.dtype()));
}

}  // namespace

Communicator::Communicator(std::unique_ptr<Transport> transport, Device device,
                           CommunicatorOptions options)
    : core_(std::make_shared<CommunicatorCore>(std::move(transport), device, options)) {}

CommunicatorCore& Communicator::core() const {
  if (core_ == nullptr) {
    throw CollectiveError(CollectiveErrorKind::InvalidArgument,
                          "Communicator: expected a communicator made by a group (e.g. "
                          "InProcessGroup::create), got a default-constructed or moved-from one");
  }
  return *core_;
}

std::string Communicator::engine_name() const {
  Transport& transport = core().transport();
  if (dynamic_cast<TcpTransport*>(&transport) != nullptr) return "algorithms over tcp";
  if (dynamic_cast<InProcessTransport*>(&transport) != nullptr) return "algorithms in process";
  return "algorithms over a custom transport";
}

int Communicator::rank() const { return core().rank(); }
int Communicator::world_size() const { return core().world_size(); }
Device Communicator::device() const { return core().device(); }
const CommunicatorOptions& Communicator::options() const { return core().options(); }

bool Communicator::finished() const { return core().transport().failed(); }

std::optional<CollectiveError> Communicator::failure() const {
  if (core_ == nullptr || !core_->transport().failed()) return std::nullopt;
  return core_->transport().failure();
}

void Communicator::abort(const std::string& reason) {
  if (core_ == nullptr) return;
  core_->transport().fail(CollectiveError(
      CollectiveErrorKind::Aborted,
      str(core_->options().rank_names.name(core_->rank()), " aborted: ", reason), {core_->rank()}));
}

void Communicator::abort(const CollectiveError& cause) {
  if (core_ == nullptr) return;
  core_->transport().fail(cause);
}

Tensor Communicator::all_reduce(const Tensor& t, ReduceOperation op, const CallOptions& call) {
  CommunicatorCore& c = core();
  CallScope scope = c.begin(OpKind::AllReduce, call);
  c.describe_reduce_op(scope, op);
  c.describe_tensor(scope, t, "input");
  const Algorithm algorithm =
      c.choose_algorithm(scope, call, c.options().all_reduce_algorithm, accumulated_bytes(t));
  // Direct sends its data with the record (one exchange for a small all_reduce, not two).
  const bool early = algorithm == Algorithm::Direct && c.may_send_early(scope);
  if (early) {
    c.start_agree(scope);
  } else {
    c.agree(scope);
  }
  Tensor result;
  auto body = [&](const AlgorithmContext& ctx) {
    const Tensor in = reduction_input(t);
    Tensor out = Tensor::empty(in.shape(), in.dtype());
    const ReduceKernel kernel(in.dtype(), op);
    const auto count = static_cast<std::size_t>(in.numel());
    const CommunicatorOptions& o = c.options();
    switch (algorithm) {
      case Algorithm::Ring:
        ring_all_reduce(ctx, in.data_ptr(), out.data_ptr(), count, kernel, o.segment_bytes);
        break;
      case Algorithm::Tree:
        tree_all_reduce(ctx, in.data_ptr(), out.data_ptr(), count, kernel, scope.record.tree_arity);
        break;
      case Algorithm::Centralized:
        centralized_all_reduce(ctx, in.data_ptr(), out.data_ptr(), count, kernel);
        break;
      default:
        direct_all_reduce(ctx, in.data_ptr(), out.data_ptr(), count, kernel,
                          o.direct_fold_all_bytes);
    }
    result = reduction_output(out, t.dtype(), c.device());
  };
  if (early) {
    c.run_agreeing(scope, body);
  } else {
    c.run(scope, body);
  }
  return result;
}

std::optional<Tensor> Communicator::reduce(const Tensor& t, int root, ReduceOperation op,
                                           const CallOptions& call) {
  CommunicatorCore& c = core();
  CallScope scope = c.begin(OpKind::Reduce, call);
  c.describe_reduce_op(scope, op);
  c.describe_root(scope, root);
  c.describe_tensor(scope, t, "input");
  const Algorithm algorithm =
      c.choose_algorithm(scope, call, c.options().reduce_algorithm, accumulated_bytes(t));
  c.agree(scope);
  std::optional<Tensor> result;
  c.run(scope, [&](const AlgorithmContext& ctx) {
    const Tensor in = reduction_input(t);
    const bool is_root = c.rank() == root;
    Tensor out = is_root ? Tensor::empty(in.shape(), in.dtype()) : Tensor();
    void* out_ptr = is_root ? out.data_ptr() : nullptr;
    const ReduceKernel kernel(in.dtype(), op);
    const auto count = static_cast<std::size_t>(in.numel());
    switch (algorithm) {
      case Algorithm::Ring:
        ring_reduce(ctx, in.data_ptr(), out_ptr, count, kernel, root, c.options().segment_bytes);
        break;
      case Algorithm::Tree:
        tree_reduce(ctx, in.data_ptr(), out_ptr, count, kernel, root, scope.record.tree_arity);
        break;
      default:
        direct_reduce(ctx, in.data_ptr(), out_ptr, count, kernel, root);
    }
    if (is_root) result = reduction_output(out, t.dtype(), c.device());
  });
  return result;
}

Tensor Communicator::reduce_scatter(const Tensor& t, ReduceOperation op, const CallOptions& call) {
  CommunicatorCore& c = core();
  CallScope scope = c.begin(OpKind::ReduceScatter, call);
  c.describe_reduce_op(scope, op);
  c.describe_tensor(scope, t, "input");
  if (t.defined() && (t.dim() == 0 || t.shape()[0] % c.world_size() != 0)) {
    c.reject(scope, CollectiveErrorKind::InvalidArgument,
             str("expected axis 0 of a length divisible by the world size ", c.world_size(),
                 ", got shape ", t.shape()));
  }
  c.agree(scope);
  Tensor result;
  c.run(scope, [&](const AlgorithmContext& ctx) {
    const Tensor in = reduction_input(t);
    Shape shard = in.shape();
    shard[0] = shard[0] / c.world_size();
    Tensor out = Tensor::empty(shard, in.dtype());
    const ReduceKernel kernel(in.dtype(), op);
    direct_reduce_scatter(ctx, in.data_ptr(), out.data_ptr(), static_cast<std::size_t>(in.numel()),
                          kernel);
    result = reduction_output(out, t.dtype(), c.device());
  });
  return result;
}

}  // namespace ruccl
