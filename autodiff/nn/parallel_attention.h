#pragma once
// Multi-head self-attention with its heads split over a tensor-parallel group (Megatron-LM's
// ParallelAttention): the q, k, v projections are column-parallel (rank r computes the heads
// [r H/W, (r+1) H/W)), attention runs on the local heads only, and the output projection is
// row-parallel. One collective in forward (reduce_from_region, or reduce_scatter_sum_dim under
// sequence parallelism) and one in backward (copy_to_region's all_reduce_sum, or all_gather_dim's
// reduce_scatter), as docs/parallelism.md draws.
#include <cstdint>

#include "autodiff/nn/module.h"
#include "autodiff/nn/parallel_dropout.h"
#include "autodiff/nn/parallel_linear.h"
#include "collective/communicator.h"
#include "tensor/random/generator.h"

namespace ruccl::nn {

/// Options of ParallelMultiheadAttention (every member has a default).
struct ParallelMultiheadAttentionOptions {
  /// Whether the input and output projections learn biases.
  bool bias = true;
  /// Dropout probability on the attention weights (training mode; the heads are sharded, so each
  /// rank draws its own masks: RngRegion::Sharded).
  double dropout = 0.0;
  /// Inputs [B, T, E] when true, [T, B, E] (PyTorch's default) when false.
  bool batch_first = false;
  /// The input and output are this rank's block of the sequence (sequence parallelism): the input
  /// is gathered with all_gather_dim and the output reduce-scattered along the sequence.
  bool sequence_parallel = false;
  /// The parameters' dtype (floating).
  DType dtype = DType::F32;
};

/// Self-attention with nn::MultiheadAttention's parameters split by heads over the group `comm`
/// (num_heads must divide by its size): "in_proj_weight" [3 E / W, E] holds this rank's rows of
/// the q, k and v projections (in that order), "in_proj_bias" [3 E / W], and "out_proj" a
/// RowParallelLinear(E, E) ("out_proj.weight" [E, E / W], "out_proj.bias" [E] replicated).
/// Initialised as nn::MultiheadAttention(E, H, gen): the shards concatenate to its parameters,
/// so the outputs and gradients equal it on one rank.
///
///   nn::ParallelMultiheadAttention attn(64, 8, tp, gen, {.batch_first = true});
///   Var y = attn.forward(x, {}, /*is_causal=*/true);   // x, y [B, T, 64], replicated
class ParallelMultiheadAttention : public Cloneable<ParallelMultiheadAttention> {
 public:
  /// ValueError unless embed_dim divides by num_heads, num_heads by the group size, and
  /// 0 <= dropout < 1.
  ParallelMultiheadAttention(std::int64_t embed_dim, std::int64_t num_heads, Communicator comm,
                             Generator& gen, ParallelMultiheadAttentionOptions options = {});
  /// Draws from the default generator.
  ParallelMultiheadAttention(std::int64_t embed_dim, std::int64_t num_heads, Communicator comm,
                             ParallelMultiheadAttentionOptions options = {});
  /// Self-attention without a mask.
  Var forward(const Var& x) override;
  /// `attn_mask` [T, T] as nn::MultiheadAttention's (Bool true = masked out, floating added);
  /// `is_causal` masks keys after each query (not with attn_mask).
  Var forward(const Var& x, const Tensor& attn_mask, bool is_causal = false);
  Param& in_proj_weight() { return param_at(in_weight_); }
  /// ValueError when built without biases.
  Param& in_proj_bias();
  ModuleHandle<RowParallelLinear>& out_proj() { return out_proj_; }
  Generator& generator() { return generator_at(gen_); }
  Communicator& communicator() { return comm_; }
  /// Sets this module's and its out_proj's communicator (a clone() shares them).
  void set_communicator(Communicator comm);
  std::int64_t local_heads() const { return local_heads_; }

 private:
  ParallelMultiheadAttention(std::int64_t embed_dim, std::int64_t num_heads, Communicator comm,
                             Generator* gen, ParallelMultiheadAttentionOptions options);
  Communicator comm_;
  ParallelMultiheadAttentionOptions options_;
  std::int64_t embed_dim_;
  std::int64_t local_heads_;
  std::size_t in_weight_ = 0;
  std::size_t in_bias_ = 0;
  std::size_t gen_ = 0;
  ModuleHandle<RowParallelLinear> out_proj_;
};

}  // namespace ruccl::nn
