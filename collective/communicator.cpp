// Communicator: the handle, and the reducing collectives (all_reduce, reduce, reduce_scatter).
// The data-movement collectives are in communicator_data_ops.cpp.
#include "collective/communicator.h"

#include "collective/core/communicator_core.h"
#include "collective/engine/algorithm_engine.h"

namespace ruccl {

namespace {

// Bytes a reduction of `t` moves per rank (in its accumulation dtype); 0 for an invalid tensor.
std::size_t accumulated_bytes(const Tensor& t) {
  if (!t.defined()) return 0;
  return static_cast<std::size_t>(t.numel()) * dtype_size(accumulation_dtype(t.dtype()));
}

}  // namespace

Communicator::Communicator(std::unique_ptr<Transport> transport, Device device,
                           CommunicatorOptions options)
    : Communicator(std::move(transport), device, std::move(options), make_algorithm_engine) {}

Communicator::Communicator(std::unique_ptr<Transport> transport, Device device,
                           CommunicatorOptions options, const EngineFactory& engine)
    : core_(std::make_shared<CommunicatorCore>(std::move(transport), device, std::move(options),
                                               engine)) {}

CommunicatorCore& Communicator::core() const {
  if (core_ == nullptr) {
    throw CollectiveError(CollectiveErrorKind::InvalidArgument,
                          "Communicator: expected a communicator made by a group (e.g. "
                          "InProcessGroup::create), got a default-constructed or moved-from one");
  }
  return *core_;
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
  abort(CollectiveError(CollectiveErrorKind::Aborted,
                        str(core_->group_label().empty() ? "" : core_->group_label() + ": ",
                            core_->options().rank_names.name(core_->rank()), " aborted: ", reason),
                        {core_->rank()}));
}

void Communicator::abort(const CollectiveError& cause) {
  // A split group fails its parents too (a view shares their transport: the same failure; a
  // native group, MPI's, has its own, so its parents' ranks learn of it through theirs).
  for (CommunicatorCore* c = core_.get(); c != nullptr; c = c->parent().get()) {
    c->transport().fail(cause);
  }
}

std::string Communicator::engine_name() const { return core().engine().name(); }

bool Communicator::has_progress_thread() const { return core().progress().started(); }

namespace {

using Issued = CommunicatorCore::Issued;

Tensor all_reduce_call(CommunicatorCore& c, const Tensor& t, ReduceOperation op,
                       const CallOptions& call, Issued issued) {
  CallScope scope = c.begin(OpKind::AllReduce, call, issued);
  c.describe_reduce_op(scope, op);
  c.describe_tensor(scope, t, "input");
  c.describe_fold_window(scope, call, t.defined() ? t.numel() : 0);
  c.choose_algorithm(scope, call, c.options().all_reduce_algorithm, accumulated_bytes(t));
  return c.execute(scope, [&](const EngineCall& e) { return c.engine().all_reduce(e, t, op); });
}

std::optional<Tensor> reduce_call(CommunicatorCore& c, const Tensor& t, int root,
                                  ReduceOperation op, const CallOptions& call, Issued issued) {
  CallScope scope = c.begin(OpKind::Reduce, call, issued);
  c.describe_reduce_op(scope, op);
  c.describe_root(scope, root);
  c.describe_tensor(scope, t, "input");
  c.describe_fold_window(scope, call, t.defined() ? t.numel() : 0);
  c.choose_algorithm(scope, call, c.options().reduce_algorithm, accumulated_bytes(t));
  return c.execute(scope, [&](const EngineCall& e) { return c.engine().reduce(e, t, root, op); });
}

Tensor reduce_scatter_call(CommunicatorCore& c, const Tensor& t, ReduceOperation op,
                           const CallOptions& call, Issued issued) {
  CallScope scope = c.begin(OpKind::ReduceScatter, call, issued);
  c.describe_reduce_op(scope, op);
  c.describe_tensor(scope, t, "input");
  if (t.defined() && (t.dim() == 0 || t.shape()[0] % c.world_size() != 0)) {
    c.reject(scope, CollectiveErrorKind::InvalidArgument,
             str("expected axis 0 of a length divisible by the world size ", c.world_size(),
                 ", got shape ", t.shape()));
  }
  return c.execute(scope, [&](const EngineCall& e) { return c.engine().reduce_scatter(e, t, op); });
}

}  // namespace

Tensor Communicator::all_reduce(const Tensor& t, ReduceOperation op, const CallOptions& call) {
  CommunicatorCore& c = core();
  return c.run(call, "all_reduce",
               [&](Issued issued) { return all_reduce_call(c, t, op, call, issued); });
}

Work Communicator::all_reduce_async(const Tensor& t, ReduceOperation op, const CallOptions& call) {
  CommunicatorCore& c = core();
  return Work(c.start({t}, call, "all_reduce", [&c, t, op, call](Issued issued) {
    return all_reduce_call(c, t, op, call, issued);
  }));
}

std::optional<Tensor> Communicator::reduce(const Tensor& t, int root, ReduceOperation op,
                                           const CallOptions& call) {
  CommunicatorCore& c = core();
  return c.run(call, "reduce",
               [&](Issued issued) { return reduce_call(c, t, root, op, call, issued); });
}

Work Communicator::reduce_async(const Tensor& t, int root, ReduceOperation op,
                                const CallOptions& call) {
  CommunicatorCore& c = core();
  return Work(c.start({t}, call, "reduce", [&c, t, root, op, call](Issued issued) {
    return reduce_call(c, t, root, op, call, issued);
  }));
}

Tensor Communicator::reduce_scatter(const Tensor& t, ReduceOperation op, const CallOptions& call) {
  CommunicatorCore& c = core();
  return c.run(call, "reduce_scatter",
               [&](Issued issued) { return reduce_scatter_call(c, t, op, call, issued); });
}

Work Communicator::reduce_scatter_async(const Tensor& t, ReduceOperation op,
                                        const CallOptions& call) {
  CommunicatorCore& c = core();
  return Work(c.start({t}, call, "reduce_scatter", [&c, t, op, call](Issued issued) {
    return reduce_scatter_call(c, t, op, call, issued);
  }));
}

}  // namespace ruccl
