#include "autodiff/nn/sync_batch_norm.h"

#include <vector>

#include "autodiff/collective/collective_ops.h"
#include "autodiff/ops/elementwise.h"
#include "autodiff/ops/reduce.h"
#include "autodiff/ops/shape.h"

namespace ruccl::nn {

SyncBatchNorm::SyncBatchNorm(std::int64_t num_features, Communicator comm, BatchNormOptions options)
    : Cloneable(num_features, options, "SyncBatchNorm"), comm_(std::move(comm)) {}

Var SyncBatchNorm::forward(const Var& x) {
  check_input(x, 2, INT64_MAX, str("[N, ", num_features(), ", ...]"));
  return normalize(x);
}

BatchStatistics SyncBatchNorm::batch_statistics(const Var& x) {
  std::vector<std::int64_t> dims{0};
  std::vector<std::int64_t> per_channel(static_cast<std::size_t>(x.dim()), 1);
  per_channel[1] = num_features();
  for (std::int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
  const CallOptions label = CallOptions().with_label("SyncBatchNorm");
  // The global count per channel: exact in I64, and not differentiated.
  const Tensor local_count =
      Tensor::full(Shape{1}, x.numel() / num_features(), DType::I64, x.value().device());
  const std::int64_t count =
      comm_.all_reduce(local_count, ReduceOperation::Sum, label).item<std::int64_t>();
  RUCCL_CHECK(count > 0, ValueError, describe(),
              ": expected samples on at least one rank, got none on any of the ",
              comm_.world_size(), " ranks");
  using namespace autodiff;
  const auto n = static_cast<double>(count);
  Var mean = reshape(div(collective::all_reduce_sum(sum(x, dims), comm_), n), Shape(per_channel));
  Var centered = sub(x, mean);
  Var squares = collective::all_reduce_sum(sum(mul(centered, centered), dims), comm_);
  Var var = reshape(div(squares, n), Shape(per_channel));
  return {mean, var, count};
}

}  // namespace ruccl::nn
