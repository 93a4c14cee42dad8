// all_reduce, reduce and reduce_scatter: values, dtypes, reduce operations, world sizes, counts,
// algorithms, determinism, inputs left unchanged.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "collective/algorithms/algorithm.h"

#include "tests/collective/collective_test_support.h"
#include "tests/support/rank_harness.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::testing;

TEST_CASE("all_reduce gives the exact result for every dtype, op, world size, count and algorithm",
          "[collective]") {
  // Every valid (dtype, op) pair under Auto; a representative subset under each other algorithm.
  const std::vector<DTypeOp> all_cases = valid_dtype_ops();
  const std::vector<DTypeOp> subset = {
      {DType::F32, ReduceOperation::Sum},   {DType::F64, ReduceOperation::Mean},
      {DType::BF16, ReduceOperation::Prod}, {DType::F16, ReduceOperation::Min},
      {DType::I32, ReduceOperation::Max},   {DType::I64, ReduceOperation::BitXor}};
  for (const AlgorithmConfig& config : algorithm_configs()) {
    const std::vector<DTypeOp>& cases = std::string(config.name) == "auto" ? all_cases : subset;
    for (int world : kWorldSizes) {
      auto out = run_group(
          world,
          [&](Communicator& comm) {
            std::vector<Tensor> results;
            for (std::int64_t count : kCounts) {
              for (const DTypeOp& c : cases) {
                const Tensor in = rank_input(comm.rank(), count, c.dtype, c.op);
                const Tensor before = in.clone();
                results.push_back(comm.all_reduce(in, c.op));
                results.push_back(in);
                results.push_back(before);
              }
            }
            return results;
          },
          config.options);
      for (int r = 0; r < world; ++r) {
        const std::vector<Tensor>& got = out[static_cast<std::size_t>(r)].value();
        std::size_t k = 0;
        for (std::int64_t count : kCounts) {
          for (const DTypeOp& c : cases) {
            INFO(config.name << ", world " << world << ", rank " << r << ", count " << count << ", "
                             << c.dtype << " " << reduce_operation_name(c.op));
            REQUIRE_THAT(got[k], TensorEqual(expected_reduction(world, count, c.dtype, c.op)));
            REQUIRE_THAT(got[k + 1], TensorEqual(got[k + 2]));  // input unchanged
            k += 3;
          }
        }
      }
    }
  }
}

TEST_CASE("reduce gives root the exact result and the other ranks nothing", "[collective]") {
  for (const AlgorithmConfig& config : algorithm_configs()) {
    for (int world : {1, 2, 3, 5}) {
      auto out = run_group(
          world,
          [&](Communicator& comm) {
            std::vector<std::optional<Tensor>> results;
            for (int root = 0; root < world; ++root) {
              for (std::int64_t count : {std::int64_t{0}, std::int64_t{257}}) {
                for (ReduceOperation op :
                     {ReduceOperation::Sum, ReduceOperation::Mean, ReduceOperation::Max}) {
                  results.push_back(
                      comm.reduce(rank_input(comm.rank(), count, DType::F32, op), root, op));
                }
                results.push_back(
                    comm.reduce(rank_input(comm.rank(), count, DType::I64, ReduceOperation::BitXor),
                                root, ReduceOperation::BitXor));
              }
            }
            return results;
          },
          config.options);
      for (int r = 0; r < world; ++r) {
        const auto& got = out[static_cast<std::size_t>(r)].value();
        std::size_t k = 0;
        for (int root = 0; root < world; ++root) {
          for (std::int64_t count : {std::int64_t{0}, std::int64_t{257}}) {
            for (auto [dtype, op] : {DTypeOp{DType::F32, ReduceOperation::Sum},
                                     DTypeOp{DType::F32, ReduceOperation::Mean},
                                     DTypeOp{DType::F32, ReduceOperation::Max},
                                     DTypeOp{DType::I64, ReduceOperation::BitXor}}) {
              INFO(config.name << ", world " << world << ", rank " << r << ", root " << root
                               << ", count " << count << ", " << reduce_operation_name(op));
              REQUIRE(got[k].has_value() == (r == root));
              if (r == root) {
                REQUIRE_THAT(*got[k], TensorEqual(expected_reduction(world, count, dtype, op)));
              }
              ++k;
            }
          }
        }
      }
    }
  }
}

TEST_CASE("reduce_scatter gives rank r rows [r*d0/W, (r+1)*d0/W) of the reduction",
          "[collective]") {
  for (int world : kWorldSizes) {
    for (std::int64_t rows_per_rank : {0, 1, 3}) {
      const std::int64_t d0 = rows_per_rank * world;
      auto out = run_group(world, [&](Communicator& comm) {
        std::vector<Tensor> results;
        for (ReduceOperation op :
             {ReduceOperation::Sum, ReduceOperation::Mean, ReduceOperation::Min}) {
          const Tensor in = rank_input(comm.rank(), d0 * 2, DType::F64, op).reshape({d0, 2});
          results.push_back(comm.reduce_scatter(in, op));
        }
        results.push_back(comm.reduce_scatter(
            rank_input(comm.rank(), d0 * 2, DType::I32, ReduceOperation::BitOr).reshape({d0, 2}),
            ReduceOperation::BitOr));
        return results;
      });
      for (int r = 0; r < world; ++r) {
        const auto& got = out[static_cast<std::size_t>(r)].value();
        std::size_t k = 0;
        for (auto [dtype, op] :
             {DTypeOp{DType::F64, ReduceOperation::Sum}, DTypeOp{DType::F64, ReduceOperation::Mean},
              DTypeOp{DType::F64, ReduceOperation::Min},
              DTypeOp{DType::I32, ReduceOperation::BitOr}}) {
          INFO("world " << world << ", rank " << r << ", d0 " << d0 << ", "
                        << reduce_operation_name(op));
          const Tensor full = expected_reduction(world, d0 * 2, dtype, op).reshape({d0, 2});
          const Tensor shard = full.narrow(0, r * rows_per_rank, rows_per_rank).contiguous();
          REQUIRE_THAT(got[k], TensorEqual(shard));
          ++k;
        }
      }
    }
  }
}

TEST_CASE("64-bit integers keep their width through all_reduce", "[collective]") {
  const std::int64_t big = 9007199254740993;  // 2^53 + 1: not representable as a double
  auto out = run_group(3, [&](Communicator& comm) {
    const Tensor in =
        Tensor::from_vector<std::int64_t>({comm.rank() == 0 ? big : comm.rank(), -big});
    return std::vector<Tensor>{comm.all_reduce(in, ReduceOperation::Sum),
                               comm.all_reduce(in, ReduceOperation::Max)};
  });
  for (int r = 0; r < 3; ++r) {
    const auto& got = out[static_cast<std::size_t>(r)].value();
    REQUIRE(got[0].to_vector<std::int64_t>() == std::vector<std::int64_t>{big + 3, -3 * big});
    REQUIRE(got[1].to_vector<std::int64_t>() == std::vector<std::int64_t>{big, -big});
  }
}

TEST_CASE("all_reduce of non-contiguous inputs reduces the viewed elements", "[collective]") {
  auto out = run_group(3, [&](Communicator& comm) {
    const double r = comm.rank();
    // [[r, 1+r, 2+r], [3+r, 4+r, 5+r]] transposed to 3x2, and a strided narrow of it.
    const Tensor base = Tensor::from_vector<double>({r, 1 + r, 2 + r, 3 + r, 4 + r, 5 + r}, {2, 3});
    const Tensor transposed = base.transpose(0, 1);
    return std::vector<Tensor>{comm.all_reduce(transposed, ReduceOperation::Sum),
                               comm.all_reduce(transposed.narrow(1, 1, 1), ReduceOperation::Max),
                               base};
  });
  for (int r = 0; r < 3; ++r) {
    const auto& got = out[static_cast<std::size_t>(r)].value();
    REQUIRE_THAT(got[0], TensorEqual(Tensor::from_vector<double>({3, 12, 6, 15, 9, 18}, {3, 2})));
    REQUIRE_THAT(got[1], TensorEqual(Tensor::from_vector<double>({5, 6, 7}, {3, 1})));
    const double rr = r;
    REQUIRE_THAT(got[2], TensorEqual(Tensor::from_vector<double>(
                             {rr, 1 + rr, 2 + rr, 3 + rr, 4 + rr, 5 + rr}, {2, 3})));
  }
}

namespace {

// The documented fold order: chunk c of W balanced chunks folds ranks (c+1)%W, ..., c; F16/BF16
// accumulate in float and round once.
template <typename Acc>
std::vector<Acc> reference_sum(const std::vector<std::vector<Acc>>& inputs, bool mean) {
  const std::size_t w = inputs.size();
  const std::size_t n = inputs[0].size();
  std::vector<Acc> out(n);
  for (std::size_t c = 0; c < w; ++c) {
    const std::size_t begin = c * (n / w) + std::min(c, n % w);
    const std::size_t length = n / w + (c < n % w ? 1 : 0);
    for (std::size_t i = begin; i < begin + length; ++i) {
      Acc acc = inputs[(c + 1) % w][i];
      for (std::size_t k = 2; k <= w; ++k) acc = acc + inputs[(c + k) % w][i];
      out[i] = mean ? acc / static_cast<Acc>(w) : acc;
    }
  }
  return out;
}

}  // namespace

TEST_CASE("every algorithm gives bit-identical float results in the documented reduction order",
          "[collective]") {
  for (int world : {3, 5, 8}) {
    for (std::int64_t count : {std::int64_t{7}, std::int64_t{1000}}) {
      for (DType dtype : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
        // Random magnitudes make the fold order visible in the last bits.
        std::vector<std::vector<double>> raw(static_cast<std::size_t>(world));
        std::mt19937_64 gen(1234 + world * 31 + count);
        std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
        std::uniform_int_distribution<int> exponent(-20, 20);
        for (auto& v : raw) {
          for (std::int64_t i = 0; i < count; ++i)
            v.push_back(std::ldexp(mantissa(gen), exponent(gen)));
        }
        std::vector<Tensor> inputs;
        for (auto& v : raw) inputs.push_back(Tensor::from_vector<double>(v).to(dtype));
        for (bool mean : {false, true}) {
          const ReduceOperation op = mean ? ReduceOperation::Mean : ReduceOperation::Sum;
          Tensor expected;
          if (dtype == DType::F64) {
            std::vector<std::vector<double>> in;
            for (auto& t : inputs) in.push_back(t.to_vector<double>());
            expected = Tensor::from_vector<double>(reference_sum(in, mean));
          } else {
            std::vector<std::vector<float>> in;
            for (auto& t : inputs) in.push_back(t.to(DType::F32).to_vector<float>());
            expected = Tensor::from_vector<float>(reference_sum(in, mean)).to(dtype);
          }
          for (const AlgorithmConfig& config : algorithm_configs()) {
            auto out = run_group(
                world,
                [&](Communicator& comm) {
                  const Tensor& in = inputs[static_cast<std::size_t>(comm.rank())];
                  std::vector<Tensor> results{comm.all_reduce(in, op)};
                  auto reduced = comm.reduce(in, world - 1, op);
                  if (reduced) results.push_back(*reduced);
                  return results;
                },
                config.options);
            for (int r = 0; r < world; ++r) {
              INFO(config.name << ", world " << world << ", count " << count << ", " << dtype
                               << (mean ? " Mean" : " Sum") << ", rank " << r);
              const auto& got = out[static_cast<std::size_t>(r)].value();
              REQUIRE_THAT(got[0], TensorEqual(expected));
              if (r == world - 1) REQUIRE_THAT(got[1], TensorEqual(expected));
            }
          }
        }
      }
    }
  }
}

TEST_CASE("all_reduce of about a million elements is exact on every rank", "[collective][slow]") {
  const std::int64_t count = (std::int64_t{1} << 20) + 3;
  for (const AlgorithmConfig& config : algorithm_configs()) {
    const std::string name = config.name;
    if (name != "auto" && name != "ring" && name != "tree(3)") continue;
    auto out = run_group(
        4,
        [&](Communicator& comm) {
          return comm.all_reduce(rank_input(comm.rank(), count, DType::F32, ReduceOperation::Sum),
                                 ReduceOperation::Sum);
        },
        config.options);
    const Tensor expected = expected_reduction(4, count, DType::F32, ReduceOperation::Sum);
    for (int r = 0; r < 4; ++r) {
      INFO(config.name << ", rank " << r);
      REQUIRE_THAT(out[static_cast<std::size_t>(r)].value(), TensorEqual(expected));
    }
  }
}

TEST_CASE("ring chunks are balanced: the first n % W chunks get one more element", "[collective]") {
  // Returns the chunk sizes as text ("65 64 64 64"). (Compared as strings: g++ 12 -O2 miscompiled
  // several std::vector<std::size_t> initializer lists in this function into the same values.)
  auto sizes = [](std::size_t n, std::size_t w) {
    std::string out;
    std::size_t next = 0;
    for (std::size_t c = 0; c < w; ++c) {
      REQUIRE(chunk_begin(c, n, w) == next);  // chunks tile [0, n) in order
      out += (c ? " " : "") + std::to_string(chunk_size(c, n, w));
      next += chunk_size(c, n, w);
    }
    REQUIRE(next == n);
    return out;
  };
  REQUIRE(sizes(257, 4) == "65 64 64 64");
  REQUIRE(sizes(5, 4) == "2 1 1 1");
  REQUIRE(sizes(2, 4) == "1 1 0 0");
  REQUIRE(sizes(0, 3) == "0 0 0");
}

TEST_CASE("F16 and BF16 accumulate in F32 and round once", "[collective]") {
  // Chunk 0 of one element on 3 ranks folds ranks 1, 2, 0: 256 + 1 + 1. In BF16 arithmetic
  // 256 + 1 rounds back to 256 (ties to even) and the sum stays 256; in F32 it is 258, which BF16
  // represents exactly. F16 at 2048: the same with F16's 11-bit significand.
  for (auto [dtype, big] : {std::pair{DType::BF16, 256.0}, std::pair{DType::F16, 2048.0}}) {
    auto out = run_group(3, [&, big = big, dtype = dtype](Communicator& comm) {
      const double mine = comm.rank() == 1 ? big : 1.0;
      return comm.all_reduce(tensor_of({mine}, Shape{1}, dtype), ReduceOperation::Sum);
    });
    for (auto& o : out) REQUIRE_THAT(o.value(), TensorEqual(tensor_of({big + 2}, Shape{1}, dtype)));
  }
}

TEST_CASE("reduce kernels: integer wrap-around, NaN propagation, Mean divides once",
          "[collective]") {
  const ReduceKernel sum64(DType::I64, ReduceOperation::Sum);
  const std::int64_t a[2] = {INT64_MAX, -5};
  const std::int64_t b[2] = {1, 7};
  std::int64_t o[2];
  sum64.combine(o, a, b, 2);
  REQUIRE(o[0] == INT64_MIN);  // two's complement wrap, no undefined behaviour
  REQUIRE(o[1] == 2);

  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (ReduceOperation op : {ReduceOperation::Min, ReduceOperation::Max}) {
    const ReduceKernel k(DType::F32, op);
    const float x[3] = {nan, 1.0f, 2.0f};
    const float y[3] = {0.0f, nan, -1.0f};
    float out[3];
    k.combine(out, x, y, 3);
    REQUIRE(std::isnan(out[0]));
    REQUIRE(std::isnan(out[1]));
    REQUIRE(out[2] == (op == ReduceOperation::Min ? -1.0f : 2.0f));
  }

  const ReduceKernel mean(DType::F64, ReduceOperation::Mean);
  const double s0[1] = {1.0}, s1[1] = {2.0}, s2[1] = {4.0};
  const void* sources[3] = {s0, s1, s2};
  double folded[1];
  mean.fold(folded, sources, 1);
  REQUIRE(folded[0] == 7.0);  // fold is the Sum
  mean.finish(folded, 1, 3);
  REQUIRE(folded[0] == 7.0 / 3.0);
}
