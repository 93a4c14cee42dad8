// fully_shard: the gather / free / re-gather / reduce-scatter step of fully_shard.h.
#include "autodiff/nn/fully_shard.h"

#include <algorithm>
#include <unordered_map>
#include <utility>
#include <vector>

#include "autodiff/node.h"
#include "autodiff/ops/shape.h"
#include "collective/common/collective_error.h"
#include "tensor/core/error.h"

namespace ruccl::nn {

namespace detail {
/// Swaps the Var a Param shows to forward computations (the gathered value during a sharded
/// module's forward, the shard otherwise), keeping the Param's identity.
struct ParamVarAccess {
  static autodiff::Var& var(Param& param) { return param.impl_->var; }
};
}  // namespace detail

namespace {

using autodiff::GradInputs;
using autodiff::Var;

// A sharded parameter: its full shape and the rows per rank.
struct ShardEntry {
  Param param;
  Shape full_shape;
  std::int64_t rows = 0;      // full dim 0 (1 for a 0-d parameter)
  std::int64_t per_rank = 0;  // k = ceil(rows / W)
};

// The bytes gathered by one call of a FullyShard's forward: released after the forward and
// after the module's backward, refilled at the start of its backward.
struct GatheredValues {
  std::vector<std::shared_ptr<Storage>> storages;
  std::vector<Tensor> shards;
  void release() {
    for (const auto& s : storages) s->release();
  }
};

}  // namespace

struct ShardedParams::Impl {
  Communicator comm;
  std::unordered_map<const void*, ShardEntry> entries;
  double local_factor = 1.0;
  double divisor = 1.0;

  explicit Impl(const Communicator& c) : comm(c) {}

  // Shards `param` unless it is already: its value becomes rows [r·k, r·k + k) of dim 0, padded.
  const ShardEntry& shard(const Param& param) {
    auto found = entries.find(param.key());
    if (found != entries.end()) return found->second;
    const std::int64_t world = comm.world_size(), rank = comm.rank();
    ShardEntry e{param, param.shape(), 0, 0};
    const Tensor full = param.value().dim() == 0 ? param.value().reshape({1}) : param.value();
    std::vector<std::int64_t> dims = full.shape().to_vector();
    e.rows = dims[0];
    e.per_rank = (e.rows + world - 1) / world;
    dims[0] = e.per_rank;
    Tensor shard = Tensor::zeros(Shape(dims), full.dtype(), full.device());
    const std::int64_t start = std::min(rank * e.per_rank, e.rows);
    const std::int64_t length = std::min(e.rows, start + e.per_rank) - start;
    if (length > 0) shard.narrow(0, 0, length).copy_(full.narrow(0, start, length));
    Param p = param;
    detail::ParamVarAccess::var(p) = Var(shard, param.trainable());
    return entries.emplace(param.key(), std::move(e)).first->second;
  }
};

std::shared_ptr<ShardedParams> ShardedParams::create(const Communicator& comm) {
  std::shared_ptr<ShardedParams> out(new ShardedParams());
  out->impl_ = std::make_shared<Impl>(comm);
  return out;
}

void ShardedParams::set_gradient_weight(double local_factor, double divisor) {
  RUCCL_CHECK(divisor > 0.0, ValueError, "ShardedParams::set_gradient_weight: expected a ",
              "positive divisor, got ", divisor);
  impl_->local_factor = local_factor;
  impl_->divisor = divisor;
}

Shape ShardedParams::full_shape(const Param& param) const {
  auto found = impl_->entries.find(param.key());
  RUCCL_CHECK(found != impl_->entries.end(), ValueError,
              "ShardedParams::full_shape: expected a parameter sharded here, got one that "
              "is not");
  return found->second.full_shape;
}

struct FullyShard::State {
  std::shared_ptr<Module> module;
  mutable Communicator comm;  // collectives are non-const calls
  std::string name;
  std::string gather_label;  // fingerprint labels (kept alive: CallOptions holds the pointer)
  std::string scatter_label;
  std::string regather_label;
  std::int64_t name_word = 0;
  std::shared_ptr<ShardedParams> shards;
  std::vector<Param> params;  // the wrapped module's distinct parameters, visit order

  // Runs one of the module's collectives; a CollectiveError (raised on every rank alike: another
  // module's call, a missing rank) is rethrown naming this rank's module.
  template <typename Fn>
  Tensor named(Fn&& fn) const {
    try {
      return fn();
    } catch (const CollectiveError& e) {
      throw CollectiveError(e.kind(), str("fully_shard(", name, "): ", e.what()), e.ranks());
    }
  }

  CallOptions options(const std::string& label, std::int64_t phase, std::size_t index) const {
    CallOptions call;
    call.with_label(label.c_str())
        .with_word("fully_shard module", name_word)
        .with_word("fully_shard phase", phase)
        .with_word("fully_shard param", static_cast<std::int64_t>(index));
    return call;
  }

  // all_gather of parameter `index`'s shard as a tape node (backward: the weighted
  // reduce_scatter_sum), narrowed and reshaped to the full value; `gathered` keeps its bytes.
  Var gather(std::size_t index, GatheredValues& gathered,
             const std::shared_ptr<State>& self) const {
    const ShardEntry& e = shards->impl().shard(params[index]);
    const Tensor shard = e.param.value();
    Tensor all = named([&] { return comm.all_gather(shard, options(gather_label, 0, index)); });
    gathered.storages.push_back(all.storage());
    gathered.shards.push_back(shard);
    auto weights = shards;
    Var g = autodiff::make_var(
        all, "fully_shard_all_gather", {e.param.var()},
        [self, weights, index](const Tensor& grad, GradInputs& grads) {
          const ShardedParams::Impl& w = weights->impl();
          Tensor local = grad;
          if (w.local_factor != 1.0) {  // in place on a copy, as DataParallel::reduce
            local = grad.clone();
            local.mul_(w.local_factor);
          }
          Tensor mine = self->named([&] {
            return self->comm.reduce_scatter(local, ReduceOperation::Sum,
                                             self->options(self->scatter_label, 1, index));
          });
          if (w.divisor != 1.0) mine.div_(w.divisor);
          grads[0] = mine;
        });
    Var full = autodiff::reshape(autodiff::narrow(g, 0, 0, e.rows), e.full_shape);
    // After the module's last backward node that reads the full value: free its bytes again.
    std::shared_ptr<Storage> storage = all.storage();
    return autodiff::make_var(full.value(), "fully_shard_free", {full},
                              [storage](const Tensor& grad, GradInputs& grads) {
                                storage->release();
                                grads[0] = grad;
                              });
  }

  // Backward's first step for the module: gathers every shard again into the released bytes.
  void regather(GatheredValues& gathered) const {
    for (std::size_t i = 0; i < gathered.storages.size(); ++i) {
      Tensor again =
          named([&] { return comm.all_gather(gathered.shards[i], options(regather_label, 2, i)); });
      RUCCL_ASSERT(gathered.storages[i]->adopt(*again.storage()), "fully_shard(", name,
                   "): the re-gathered value does not fit its storage");
    }
  }
};

FullyShard::FullyShard(std::shared_ptr<Module> module, const Communicator& comm, std::string name,
                       std::shared_ptr<ShardedParams> shards)
    : state_(std::make_shared<State>()) {
  RUCCL_CHECK(module != nullptr, ValueError, "fully_shard: expected a module, got null");
  State& s = *state_;
  s.module = std::move(module);
  s.comm = comm;
  s.name = std::move(name);
  s.gather_label = "fully_shard(" + s.name + ") all_gather";
  s.scatter_label = "fully_shard(" + s.name + ") reduce_scatter_sum";
  s.regather_label = "fully_shard(" + s.name + ") re-gather";
  s.name_word = static_cast<std::int64_t>(param_id_for_path(s.name) & ~(std::uint64_t{1} << 63));
  s.shards = shards ? std::move(shards) : ShardedParams::create(comm);
  s.params = s.module->parameters();  // gives ids from the module's own paths first
  for (const Param& p : s.params) s.shards->impl().shard(p);
  for (const auto& [path, p] : s.module->named_parameters(true)) {
    if (path.find('.') == std::string::npos) register_parameter(path, p);
  }
  for (const auto& [child_name, child] : s.module->named_children()) {
    register_module(child_name, child);
  }
}

Var FullyShard::forward(const Var& x) {
  State& s = *state_;
  auto gathered = std::make_shared<GatheredValues>();
  std::vector<Var> full;
  full.reserve(s.params.size());
  for (std::size_t i = 0; i < s.params.size(); ++i) full.push_back(s.gather(i, *gathered, state_));
  // Show the full values to the wrapped module; put the shards back whatever happens.
  std::vector<Var> shard_vars;
  for (std::size_t i = 0; i < s.params.size(); ++i) {
    Var& slot = detail::ParamVarAccess::var(s.params[i]);
    shard_vars.push_back(slot);
    slot = full[i];
  }
  Var out;
  try {
    out = s.module->forward(x);
  } catch (...) {
    for (std::size_t i = 0; i < s.params.size(); ++i)
      detail::ParamVarAccess::var(s.params[i]) = shard_vars[i];
    gathered->release();
    throw;
  }
  for (std::size_t i = 0; i < s.params.size(); ++i)
    detail::ParamVarAccess::var(s.params[i]) = shard_vars[i];
  full.clear();
  gathered->release();
  // The module's first backward step: refill the bytes its nodes saved views of.
  std::shared_ptr<State> self = state_;
  return autodiff::make_var(out.value(), "fully_shard_regather", {out},
                            [self, gathered](const Tensor& grad, GradInputs& grads) {
                              self->regather(*gathered);
                              grads[0] = grad;
                            });
}

const std::string& FullyShard::name() const { return state_->name; }
const std::shared_ptr<Module>& FullyShard::module() const { return state_->module; }
const std::shared_ptr<ShardedParams>& FullyShard::shards() const { return state_->shards; }

std::shared_ptr<Module> FullyShard::shallow_copy() const {
  throw ValueError(str("fully_shard(", state_->name,
                       ").clone: expected an unsharded module, got a sharded one (clone the ",
                       "model before sharding it)"));
}

std::shared_ptr<FullyShard> fully_shard(std::shared_ptr<Module> module, const Communicator& comm,
                                        std::string name, std::shared_ptr<ShardedParams> shards) {
  return std::make_shared<FullyShard>(std::move(module), comm, std::move(name), std::move(shards));
}

}  // namespace ruccl::nn
