#include "autodiff/nn/parallel_linear.h"

#include "autodiff/collective/collective_ops.h"
#include "autodiff/collective/region_ops.h"
#include "autodiff/nn/linear.h"
#include "autodiff/ops/elementwise.h"
#include "autodiff/ops/linalg.h"

namespace ruccl::nn {

namespace dc = autodiff::collective;

Tensor shard_along(const Tensor& full, std::int64_t axis, int rank, int world,
                   const std::string& who) {
  const std::int64_t len = full.shape()[static_cast<std::size_t>(axis)];
  RUCCL_CHECK(world > 0 && len % world == 0, ValueError, who, ": expected a size divisible by the ",
              "group size ", world, ", got ", len, " (dim ", axis, " of ", full.shape(), ")");
  const std::int64_t block = len / world;
  return full.narrow(axis, rank * block, block).contiguous().clone();
}

namespace {

void check_input(const Var& x, std::int64_t in, DType dtype, const std::string& who) {
  RUCCL_CHECK(x.defined(), ValueError, who, ": expected a defined input");
  RUCCL_CHECK(x.dim() >= 1 && x.shape()[x.dim() - 1] == in, ShapeError, who,
              ": expected an input whose last dim is ", in, ", got ", x.shape());
  RUCCL_CHECK(x.dtype() == dtype, DTypeError, who, ": expected an input of dtype ", dtype,
              " (the parameters'), got ", x.dtype());
}

// The one-rank layer's initial weight and bias, drawn exactly as nn::Linear(in, out, gen) draws
// them, so that the shards concatenate to it.
Linear full_linear(std::int64_t in, std::int64_t out, Generator* gen, bool bias, DType dtype) {
  const LinearOptions o{.bias = bias, .dtype = dtype};
  return gen != nullptr ? Linear(in, out, *gen, o) : Linear(in, out, o);
}

Var column_forward(const Var& x, const Var& weight, const Var& bias, Communicator& comm,
                   const ColumnParallelLinearOptions& options, const std::string& who) {
  check_input(x, weight.shape()[1], weight.dtype(), who);
  const Var in = options.sequence_parallel ? dc::all_gather_dim(x, options.sequence_dim, comm)
                                           : dc::copy_to_region(x, comm);
  const Var y = autodiff::linear(in, weight, bias);
  return options.gather_output ? dc::gather_from_region(y, -1, comm) : y;
}

Var row_forward(const Var& x, const Var& weight, const Var& bias, Communicator& comm,
                const RowParallelLinearOptions& options, const std::string& who) {
  const std::int64_t local_in = weight.shape()[1];
  check_input(x, options.input_is_parallel ? local_in : local_in * comm.world_size(),
              weight.dtype(), who);
  const Var in = options.input_is_parallel ? x : dc::scatter_to_region(x, -1, comm);
  const Var partial = autodiff::linear(in, weight);
  if (options.sequence_parallel) {
    const Var y = dc::reduce_scatter_sum_dim(partial, options.sequence_dim, comm);
    // Per-rank rows: the replicated bias enters them through copy_to_region.
    return bias.defined() ? autodiff::add(y, dc::copy_to_region(bias, comm)) : y;
  }
  const Var y = dc::reduce_from_region(partial, comm);
  return bias.defined() ? autodiff::add(y, bias) : y;
}

}  // namespace

Var column_parallel_linear(const Var& x, const Var& weight, const Var& bias, Communicator& comm,
                           const ColumnParallelLinearOptions& options) {
  return column_forward(x, weight, bias, comm, options, "column_parallel_linear");
}

Var row_parallel_linear(const Var& x, const Var& weight, const Var& bias, Communicator& comm,
                        const RowParallelLinearOptions& options) {
  return row_forward(x, weight, bias, comm, options, "row_parallel_linear");
}

ColumnParallelLinear::ColumnParallelLinear(std::int64_t in_features, std::int64_t out_features,
                                           Communicator comm, Generator& gen,
                                           ColumnParallelLinearOptions options)
    : ColumnParallelLinear(in_features, out_features, std::move(comm), &gen, options) {}

ColumnParallelLinear::ColumnParallelLinear(std::int64_t in_features, std::int64_t out_features,
                                           Communicator comm, ColumnParallelLinearOptions options)
    : ColumnParallelLinear(in_features, out_features, std::move(comm), nullptr, options) {}

ColumnParallelLinear::ColumnParallelLinear(std::int64_t in_features, std::int64_t out_features,
                                           Communicator comm, Generator* gen,
                                           ColumnParallelLinearOptions options)
    : comm_(std::move(comm)), options_(options), in_(in_features) {
  const int world = comm_.world_size();
  RUCCL_CHECK(out_features > 0 && out_features % world == 0, ValueError,
              "ColumnParallelLinear: expected out_features divisible by the group size ", world,
              ", got ", out_features);
  Linear full = full_linear(in_features, out_features, gen, options.bias, options.dtype);
  const std::string who = "ColumnParallelLinear";
  weight_ = register_parameter(
      "weight", Param(shard_along(full.weight().value(), 0, comm_.rank(), world, who)));
  if (options.bias) {
    bias_ = register_parameter(
        "bias", Param(shard_along(full.bias().value(), 0, comm_.rank(), world, who)));
  }
}

Param& ColumnParallelLinear::bias() {
  RUCCL_CHECK(options_.bias, ValueError, describe(), "::bias: built without a bias");
  return param_at(bias_);
}

Var ColumnParallelLinear::forward(const Var& x) {
  return column_forward(x, weight().var(), options_.bias ? param_at(bias_).var() : Var(), comm_,
                        options_, describe());
}

RowParallelLinear::RowParallelLinear(std::int64_t in_features, std::int64_t out_features,
                                     Communicator comm, Generator& gen,
                                     RowParallelLinearOptions options)
    : RowParallelLinear(in_features, out_features, std::move(comm), &gen, options) {}

RowParallelLinear::RowParallelLinear(std::int64_t in_features, std::int64_t out_features,
                                     Communicator comm, RowParallelLinearOptions options)
    : RowParallelLinear(in_features, out_features, std::move(comm), nullptr, options) {}

RowParallelLinear::RowParallelLinear(std::int64_t in_features, std::int64_t out_features,
                                     Communicator comm, Generator* gen,
                                     RowParallelLinearOptions options)
    : comm_(std::move(comm)), options_(options), in_(in_features) {
  const int world = comm_.world_size();
  RUCCL_CHECK(in_features > 0 && in_features % world == 0, ValueError,
              "RowParallelLinear: expected in_features divisible by the group size ", world,
              ", got ", in_features);
  Linear full = full_linear(in_features, out_features, gen, options.bias, options.dtype);
  weight_ = register_parameter("weight", Param(shard_along(full.weight().value(), 1, comm_.rank(),
                                                           world, "RowParallelLinear")));
  if (options.bias) bias_ = register_parameter("bias", Param(full.bias().value().clone()));
}

Param& RowParallelLinear::bias() {
  RUCCL_CHECK(options_.bias, ValueError, describe(), "::bias: built without a bias");
  return param_at(bias_);
}

Var RowParallelLinear::forward(const Var& x) {
  return row_forward(x, weight().var(), options_.bias ? param_at(bias_).var() : Var(), comm_,
                     options_, describe());
}

}  // namespace ruccl::nn
