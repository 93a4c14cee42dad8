#pragma once
// Tensor-parallel linear layers (Megatron-LM's ColumnParallelLinear and RowParallelLinear), built
// only from the differentiable collectives and the region ops (autodiff/collective/region_ops.h):
// their backward is what the tape derives. docs/parallelism.md draws each layer's collectives;
// docs/autodiff.md §10 derives them.
//
//   // rank r of the tensor-parallel group `tp` (a Mesh axis or a split): an MLP whose hidden
//   // layer is split over the group, with the same initial weights as the one-rank model
//   nn::ColumnParallelLinear fc1(16, 64, tp, gen);           // weight [64 / W, 16]
//   nn::RowParallelLinear fc2(64, 16, tp, gen2);             // weight [16, 64 / W], bias
//   replicated Var y = fc2(relu(fc1(x)));                               // x, y replicated [B, 16]
#include <cstdint>

#include "autodiff/nn/module.h"
#include "collective/communicator.h"
#include "tensor/random/generator.h"

namespace ruccl::nn {

/// Block `rank` of `full` along `axis` out of `world` equal blocks (a contiguous copy): how a
/// tensor-parallel layer takes its shard of the one-rank layer's initial value. ShapeError unless
/// the axis length divides by `world`; `who` names the caller in the message.
Tensor shard_along(const Tensor& full, std::int64_t axis, int rank, int world,
                   const std::string& who);

/// Options of ColumnParallelLinear (every member has a default).
struct ColumnParallelLinearOptions {
  /// Whether to learn a bias (sharded like the output features).
  bool bias = true;
  /// Gather the output shards (gather_from_region along the last dim): the output is replicated
  /// [..., out] instead of this rank's [..., out / W].
  bool gather_output = false;
  /// The input is split along `sequence_dim` over the group (sequence parallelism): it is
  /// gathered with all_gather_dim (backward reduce_scatter_sum_dim) instead of entered with
  /// copy_to_region.
  bool sequence_parallel = false;
  /// The sequence dim of the input under sequence_parallel (negative counts from the end).
  std::int64_t sequence_dim = -2;
  /// The parameters' dtype (floating).
  DType dtype = DType::F32;
};

/// y = x @ W^T + b with W [out, in] split by rows (output features) over the group: rank r holds
/// rows [r out/W, (r+1) out/W) of W and of b. Forward: copy_to_region(x) (backward: all_reduce_sum
/// of x's gradient), the local linear, and with gather_output gather_from_region. x is replicated
/// (or sequence-split, see the options). Initialised as the one-rank nn::Linear(in, out, gen):
/// the concatenation of the ranks' shards is that layer's weight and bias. Parameters "weight"
/// [out / W, in] and "bias" [out / W]. ValueError unless out divides by the group size.
class ColumnParallelLinear : public Cloneable<ColumnParallelLinear> {
 public:
  ColumnParallelLinear(std::int64_t in_features, std::int64_t out_features, Communicator comm,
                       Generator& gen, ColumnParallelLinearOptions options = {});
  /// Draws from the default generator.
  ColumnParallelLinear(std::int64_t in_features, std::int64_t out_features, Communicator comm,
                       ColumnParallelLinearOptions options = {});
  /// x [..., in] -> [..., out / W] (or [..., out] with gather_output).
  Var forward(const Var& x) override;
  Param& weight() { return param_at(weight_); }
  /// ValueError when built without a bias.
  Param& bias();
  Communicator& communicator() { return comm_; }
  /// A clone() shares the communicator: give each rank's replica its own.
  void set_communicator(Communicator comm) { comm_ = std::move(comm); }
  const ColumnParallelLinearOptions& options() const { return options_; }

 private:
  ColumnParallelLinear(std::int64_t in_features, std::int64_t out_features, Communicator comm,
                       Generator* gen, ColumnParallelLinearOptions options);
  Communicator comm_;
  ColumnParallelLinearOptions options_;
  std::int64_t in_;
  std::size_t weight_ = 0;
  std::size_t bias_ = 0;
};

/// Options of RowParallelLinear (every member has a default).
struct RowParallelLinearOptions {
  /// Whether to learn a bias (replicated: every rank holds all of it).
  bool bias = true;
  /// The input is already split along its last dim (the output of a ColumnParallelLinear without
  /// gather_output). When false it is replicated and scatter_to_region takes this rank's block.
  bool input_is_parallel = true;
  /// Leave the output split along `sequence_dim` (reduce_scatter_sum_dim, backward all_gather)
  /// instead of replicated (reduce_from_region); the bias then enters with copy_to_region.
  bool sequence_parallel = false;
  /// The sequence dim of the output under sequence_parallel (negative counts from the end).
  std::int64_t sequence_dim = -2;
  /// The parameters' dtype (floating).
  DType dtype = DType::F32;
};

/// y = x @ W^T + b with W [out, in] split by columns (input features) over the group: rank r holds
/// columns [r in/W, (r+1) in/W). Forward: the local partial product, reduce_from_region (the sum
/// over the group; backward identity), then the replicated bias, whose gradient is thereby whole
/// and the same on every rank with no all-reduce. Initialised as the one-rank
/// nn::Linear(in, out, gen). Parameters "weight" [out, in / W] and "bias" [out]. ValueError unless
/// in divides by the group size.
class RowParallelLinear : public Cloneable<RowParallelLinear> {
 public:
  RowParallelLinear(std::int64_t in_features, std::int64_t out_features, Communicator comm,
                    Generator& gen, RowParallelLinearOptions options = {});
  /// Draws from the default generator.
  RowParallelLinear(std::int64_t in_features, std::int64_t out_features, Communicator comm,
                    RowParallelLinearOptions options = {});
  /// x [..., in / W] (input_is_parallel) or [..., in] -> [..., out] (replicated, or this rank's
  /// sequence block with sequence_parallel).
  Var forward(const Var& x) override;
  Param& weight() { return param_at(weight_); }
  /// ValueError when built without a bias.
  Param& bias();
  Communicator& communicator() { return comm_; }
  void set_communicator(Communicator comm) { comm_ = std::move(comm); }
  const RowParallelLinearOptions& options() const { return options_; }

 private:
  RowParallelLinear(std::int64_t in_features, std::int64_t out_features, Communicator comm,
                    Generator* gen, RowParallelLinearOptions options);
  Communicator comm_;
  RowParallelLinearOptions options_;
  std::int64_t in_;
  std::size_t weight_ = 0;
  std::size_t bias_ = 0;
};

/// ColumnParallelLinear's forward as a function of its shards (weight [out / W, in], bias
/// [out / W] or undefined): what distributed_gradcheck checks.
Var column_parallel_linear(const Var& x, const Var& weight, const Var& bias, Communicator& comm,
                           const ColumnParallelLinearOptions& options = {});
/// RowParallelLinear's forward as a function of its shard (weight [out, in / W]) and the
/// replicated bias ([out] or undefined).
Var row_parallel_linear(const Var& x, const Var& weight, const Var& bias, Communicator& comm,
                        const RowParallelLinearOptions& options = {});

}  // namespace ruccl::nn
