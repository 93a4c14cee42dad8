#pragma once
// Inputs with closed-form reductions, shared by the collective tests.
#include <chrono>
#include <cstdint>
#include <vector>

#include "collective/collective.h"
#include "tensor/core/tensor.h"

namespace ruccl::testing {

/// Options whose deadline fails a test that would hang (10 s by default) instead of waiting 300 s.
inline CommunicatorOptions short_timeout(std::chrono::milliseconds t = std::chrono::seconds(10)) {
  CommunicatorOptions o;
  o.timeout = t;
  return o;
}

inline const std::vector<int> kWorldSizes = {1, 2, 3, 4, 5, 8};
inline const std::vector<std::int64_t> kCounts = {0, 1, 3, 257};
inline const std::vector<DType> kReduceDTypes = {DType::F16, DType::BF16, DType::F32,
                                                 DType::F64, DType::I32,  DType::I64};
inline const std::vector<ReduceOperation> kAllOps = {
    ReduceOperation::Sum, ReduceOperation::Mean,   ReduceOperation::Prod,  ReduceOperation::Min,
    ReduceOperation::Max, ReduceOperation::BitAnd, ReduceOperation::BitOr, ReduceOperation::BitXor};

/// Rank r's element i for `op`: small integers, so every reduction is exact in every dtype
/// (products stay <= 3^8; sums <= 8 * 13).
inline std::int64_t input_value(int rank, std::int64_t i, ReduceOperation op) {
  switch (op) {
    case ReduceOperation::Prod:
      return 1 + (i + rank) % 3;
    case ReduceOperation::BitAnd:
    case ReduceOperation::BitOr:
    case ReduceOperation::BitXor:
      return (std::int64_t{1} << ((i + rank) % 5)) | (i % 4) | rank;
    default:
      return (i * 5) % 7 + rank - 3;  // negative values too
  }
}

/// The exact reduction over ranks 0..world-1 of input_value (Mean as a double).
inline double expected_value(int world, std::int64_t i, ReduceOperation op) {
  std::int64_t acc = input_value(0, i, op);
  for (int r = 1; r < world; ++r) {
    const std::int64_t x = input_value(r, i, op);
    switch (op) {
      case ReduceOperation::Sum:
      case ReduceOperation::Mean:
        acc += x;
        break;
      case ReduceOperation::Prod:
        acc *= x;
        break;
      case ReduceOperation::Min:
        acc = std::min(acc, x);
        break;
      case ReduceOperation::Max:
        acc = std::max(acc, x);
        break;
      case ReduceOperation::BitAnd:
        acc &= x;
        break;
      case ReduceOperation::BitOr:
        acc |= x;
        break;
      case ReduceOperation::BitXor:
        acc ^= x;
        break;
    }
  }
  return op == ReduceOperation::Mean ? static_cast<double>(acc) / world : static_cast<double>(acc);
}

/// A tensor of `dtype` holding `values` (exact for the small values used here).
inline Tensor tensor_of(const std::vector<double>& values, const Shape& shape, DType dtype) {
  return Tensor::from_vector<double>(values, shape).to(dtype);
}

/// Rank r's input of `count` elements for `op`, shape [count].
inline Tensor rank_input(int rank, std::int64_t count, DType dtype, ReduceOperation op) {
  std::vector<double> v(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i)
    v[static_cast<std::size_t>(i)] = static_cast<double>(input_value(rank, i, op));
  return tensor_of(v, Shape{count}, dtype);
}

/// The expected all-reduce of rank_input over `world` ranks.
inline Tensor expected_reduction(int world, std::int64_t count, DType dtype, ReduceOperation op) {
  std::vector<double> v(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i)
    v[static_cast<std::size_t>(i)] = expected_value(world, i, op);
  return tensor_of(v, Shape{count}, dtype);
}

/// Every (dtype, op) pair that is valid.
struct DTypeOp {
  DType dtype;
  ReduceOperation op;
};
inline std::vector<DTypeOp> valid_dtype_ops() {
  std::vector<DTypeOp> out;
  for (DType d : kReduceDTypes) {
    for (ReduceOperation op : kAllOps) {
      if (reduce_operation_supports(op, d)) out.push_back({d, op});
    }
  }
  return out;
}

/// The algorithm configurations every reducing collective is checked under.
struct AlgorithmConfig {
  const char* name;
  CommunicatorOptions options;
};
inline std::vector<AlgorithmConfig> algorithm_configs() {
  std::vector<AlgorithmConfig> out;
  auto with = [](Algorithm a, int arity, std::size_t fold_all) {
    CommunicatorOptions o;
    o.all_reduce_algorithm = a;
    o.reduce_algorithm = a;
    o.broadcast_algorithm = a;
    o.tree_arity = arity;
    o.direct_fold_all_bytes = fold_all;
    o.timeout = std::chrono::seconds(60);
    return o;
  };
  out.push_back({"auto", with(Algorithm::Auto, 2, std::size_t{64} << 10)});
  out.push_back({"direct reduce-scatter/all-gather", with(Algorithm::Direct, 2, 0)});
  out.push_back({"ring", with(Algorithm::Ring, 2, 0)});
  // Segments far smaller than the chunks, so the pipelined paths run with small inputs: 64 bytes
  // (one F64 segment = 8 elements: chunk boundaries fall inside segments, smaller chunks end in an
  // empty segment) and 192 bytes (not a power of two; the last segment of a chunk is short).
  auto segmented = [&](std::size_t bytes) {
    CommunicatorOptions o = with(Algorithm::Ring, 2, 0);
    o.segment_bytes = bytes;
    return o;
  };
  out.push_back({"ring in 64-byte segments", segmented(64)});
  out.push_back({"ring in 192-byte segments", segmented(192)});
  out.push_back({"tree(2)", with(Algorithm::Tree, 2, 0)});
  out.push_back({"tree(3)", with(Algorithm::Tree, 3, 0)});
  out.push_back({"centralized", with(Algorithm::Centralized, 2, 0)});
  out.push_back({"recursive doubling", with(Algorithm::RecursiveDoubling, 2, 0)});
  return out;
}

}  // namespace ruccl::testing
