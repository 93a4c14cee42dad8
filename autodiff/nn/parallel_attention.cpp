#include "autodiff/nn/parallel_attention.h"

#include "autodiff/collective/collective_ops.h"
#include "autodiff/collective/region_ops.h"
#include "autodiff/nn/attention.h"
#include "autodiff/ops/attention.h"
#include "autodiff/ops/linalg.h"
#include "autodiff/ops/shape.h"
#include "tensor/ops/elementwise.h"
#include "tensor/ops/shape_ops.h"

namespace ruccl::nn {

namespace dc = autodiff::collective;

ParallelMultiheadAttention::ParallelMultiheadAttention(std::int64_t embed_dim,
                                                       std::int64_t num_heads, Communicator comm,
                                                       Generator& gen,
                                                       ParallelMultiheadAttentionOptions options)
    : ParallelMultiheadAttention(embed_dim, num_heads, std::move(comm), &gen, options) {}

ParallelMultiheadAttention::ParallelMultiheadAttention(std::int64_t embed_dim,
                                                       std::int64_t num_heads, Communicator comm,
                                                       ParallelMultiheadAttentionOptions options)
    : ParallelMultiheadAttention(embed_dim, num_heads, std::move(comm), nullptr, options) {}

ParallelMultiheadAttention::ParallelMultiheadAttention(std::int64_t embed_dim,
                                                       std::int64_t num_heads, Communicator comm,
                                                       Generator* gen,
                                                       ParallelMultiheadAttentionOptions options)
    : comm_(std::move(comm)), options_(options), embed_dim_(embed_dim) {
  const int world = comm_.world_size();
  const int rank = comm_.rank();
  RUCCL_CHECK(num_heads > 0 && num_heads % world == 0, ValueError,
              "ParallelMultiheadAttention: expected num_heads divisible by the group size ", world,
              ", got ", num_heads);
  // The one-rank module checks the other arguments and draws the initial values.
  const MultiheadAttentionOptions full_options{.bias = options.bias,
                                               .dropout = options.dropout,
                                               .batch_first = options.batch_first,
                                               .dtype = options.dtype};
  MultiheadAttention full = gen != nullptr
                                ? MultiheadAttention(embed_dim, num_heads, *gen, full_options)
                                : MultiheadAttention(embed_dim, num_heads, full_options);
  local_heads_ = num_heads / world;
  const std::int64_t e = embed_dim / world;  // this rank's features of each of q, k, v
  auto rows = [&](const Tensor& t) {         // this rank's rows of q, then k, then v
    std::vector<Tensor> parts;
    for (std::int64_t part = 0; part < 3; ++part) {
      parts.push_back(t.narrow(0, part * embed_dim + rank * e, e));
    }
    return ruccl::cat(parts, 0).contiguous();
  };
  in_weight_ = register_parameter("in_proj_weight", Param(rows(full.in_proj_weight().value())));
  if (options.bias) {
    in_bias_ = register_parameter("in_proj_bias", Param(rows(full.in_proj_bias().value())));
  }
  // The output projection's shard of the one-rank out_proj (its own draws are replaced).
  Generator unused(0);
  RowParallelLinear out(embed_dim, embed_dim, comm_, unused,
                        {.bias = options.bias,
                         .input_is_parallel = true,
                         .sequence_parallel = options.sequence_parallel,
                         .dtype = options.dtype});
  out.weight().set_value(
      shard_along(full.out_proj()->weight().value(), 1, rank, world, "ParallelMultiheadAttention"));
  if (options.bias) out.bias().set_value(full.out_proj()->bias().value());
  out_proj_ = register_module("out_proj", std::move(out));
  // The heads are sharded: each rank drops its own heads' weights with a stream of its own.
  gen_ = register_generator("generator", Generator(tensor_parallel_seed(full.generator().seed(),
                                                                        rank, RngRegion::Sharded)));
}

Param& ParallelMultiheadAttention::in_proj_bias() {
  RUCCL_CHECK(options_.bias, ValueError, describe(), "::in_proj_bias: built without biases");
  return param_at(in_bias_);
}

void ParallelMultiheadAttention::set_communicator(Communicator comm) {
  out_proj_->set_communicator(comm);
  comm_ = std::move(comm);
}

Var ParallelMultiheadAttention::forward(const Var& x) { return forward(x, Tensor(), false); }

Var ParallelMultiheadAttention::forward(const Var& x, const Tensor& attn_mask, bool is_causal) {
  const std::int64_t e = embed_dim_;
  const DType dtype = in_proj_weight().dtype();
  RUCCL_CHECK(x.defined() && x.dim() == 3 && x.shape()[2] == e, ShapeError, describe(),
              ": expected an input of shape ", options_.batch_first ? "[B, T, E]" : "[T, B, E]",
              " with E = ", e, ", got ", x.defined() ? str(x.shape()) : std::string("none"));
  RUCCL_CHECK(x.dtype() == dtype, DTypeError, describe(), ": expected an input of dtype ", dtype,
              " (the parameters'), got ", x.dtype());
  const std::int64_t seq_dim = options_.batch_first ? 1 : 0;
  const Var in = options_.sequence_parallel ? dc::all_gather_dim(x, seq_dim, comm_)
                                            : dc::copy_to_region(x, comm_);
  const Var xb = options_.batch_first ? in : autodiff::transpose(in, 0, 1);  // [B, T, E]
  const std::int64_t b = xb.shape()[0];
  const std::int64_t t = xb.shape()[1];
  const std::int64_t local = in_proj_weight().shape()[0] / 3;
  const std::int64_t dh = local / local_heads_;
  const Var qkv = autodiff::linear(xb, in_proj_weight().var(),
                                   options_.bias ? param_at(in_bias_).var() : Var());
  auto heads = [&](std::int64_t part) {  // [B, T, 3 e] -> [B, h, T, dh]
    const Var y = autodiff::narrow(qkv, 2, part * local, local);
    return autodiff::transpose(autodiff::reshape(y, Shape{b, t, local_heads_, dh}), 1, 2);
  };
  Tensor mask;
  if (attn_mask.defined()) {
    RUCCL_CHECK(attn_mask.shape() == (Shape{t, t}), ShapeError, describe(),
                ": expected an attn_mask of shape [", t, ", ", t, "], got ", attn_mask.shape());
    // MultiheadAttention's Bool masks say true = masked out; SDPA's say true = attend.
    mask = attn_mask.dtype() == DType::Bool ? ruccl::logical_not(attn_mask) : attn_mask;
  }
  const double p = is_training() ? options_.dropout : 0.0;
  const Var o = autodiff::scaled_dot_product_attention(
      heads(0), heads(1), heads(2), mask, is_causal, p, p > 0.0 ? &generator() : nullptr);
  const Var merged = autodiff::reshape(autodiff::transpose(o, 1, 2), Shape{b, t, local});
  const Var out = out_proj_->forward(merged);  // [B, T, E], or this rank's block of T
  return options_.batch_first ? out : autodiff::transpose(out, 0, 1);
}

}  // namespace ruccl::nn
