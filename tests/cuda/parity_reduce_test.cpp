// Parity of the reductions and softmax: CUDA against CPU over any set of dims, every supported
// dtype, strided inputs; and the CUDA results are bit-identical run after run (no atomics).
#include "tests/cuda/parity_support.h"

using namespace ruccl;
using namespace ruccl::parity;

namespace {

Tensor values(const Shape& shape, DType dtype, std::uint64_t seed) {
  Tensor x = randn(shape, DType::F64, seed);
  if (dtype == DType::Bool) return gt(x, 0.3);
  if (!is_floating(dtype)) return mul(x, 9.0).to(dtype);
  return x.to(dtype);
}

/// Bits of a tensor's values (exact comparison of two GPU results).
std::vector<double> host_values(const Tensor& t) {
  return t.to(Device::cpu()).to(DType::F64).to_vector<double>();
}

}  // namespace

TEST_CASE("sum, mean, prod, max and min match the CPU over every set of dims", "[cuda][parity]") {
  require_gpu();
  const std::vector<std::vector<std::int64_t>> dim_sets = {{0},    {1},    {2},      {0, 1},
                                                           {0, 2}, {1, 2}, {0, 1, 2}};
  for (Op op : {Op::Sum, Op::Mean, Op::Prod, Op::Max, Op::Min}) {
    for (DType dt : dtypes_for(op)) {
      // Prod over many values under/overflows: keep its inputs near 1 and few.
      Tensor x = op == Op::Prod ? add(mul(values({6, 5, 7}, DType::F64, 61), 0.1), 1.0).to(dt)
                                : values({17, 33, 65}, dt, 61);
      if (dt == DType::Bool || (op == Op::Prod && !is_floating(dt))) x = values({6, 5, 7}, dt, 62);
      for (const Tensor& v : {x, x.permute({2, 0, 1})}) {
        for (const auto& dims : dim_sets) {
          const std::string name = str(op_name(op), " ", dt, " ", v.shape(), " over ", Shape(dims));
          check_op(name, {v}, [op, dims](auto& in) {
            switch (op) {
              case Op::Sum:
                return sum(in[0], dims);
              case Op::Mean:
                return mean(in[0], dims);
              case Op::Prod:
                return dims.size() == 1 ? prod(in[0], dims[0]) : prod(in[0]);
              case Op::Max:
                return dims.size() == 1 ? max(in[0], dims[0]) : max(in[0]);
              default:
                return dims.size() == 1 ? min(in[0], dims[0]) : min(in[0]);
            }
          });
        }
      }
    }
  }
}

TEST_CASE("argmax and argmin match the CPU, ties and NaN included", "[cuda][parity]") {
  require_gpu();
  for (DType dt : dtypes_for(Op::Argmax)) {
    // Small integers give many ties: the first index must win on both devices.
    Tensor x = is_floating(dt) ? values({23, 300}, dt, 71) : values({23, 300}, dt, 71);
    for (std::int64_t dim : {0, 1}) {
      check_op(str("argmax ", dt, " dim ", dim), {x},
               [dim](auto& in) { return argmax(in[0], dim); });
      check_op(str("argmin ", dt, " dim ", dim), {x},
               [dim](auto& in) { return argmin(in[0], dim); });
    }
    check_op(str("argmax full ", dt), {x}, [](auto& in) { return argmax(in[0]); });
  }
  std::vector<float> v(100, 1.0f);
  v[40] = std::nanf("");
  v[70] = std::nanf("");
  v[10] = 5.0f;
  const Tensor with_nan = Tensor::from_vector(v);
  check_op("argmax takes the first NaN", {with_nan}, [](auto& in) { return argmax(in[0], 0); });
  check_op("max propagates NaN", {with_nan}, [](auto& in) { return max(in[0]); });
}

TEST_CASE("a large sum matches the CPU and is bit-identical run after run", "[cuda][parity]") {
  require_gpu();
  const Tensor x = randn({(1 << 24) + 17}, DType::F32, 81);
  check_op(
      "full sum of 2^24 + 17 floats", {x}, [](auto& in) { return sum(in[0]); }, 1e-6);
  const Tensor m = randn({4096, 1000}, DType::F32, 82);
  check_op(
      "sum over dim 0 of [4096, 1000]", {m}, [](auto& in) { return sum(in[0], 0); }, 1e-6);
  check_op(
      "sum over dim 1 of [4096, 1000]", {m}, [](auto& in) { return sum(in[0], 1); }, 1e-6);
  const Tensor g = x.to(kGpu);
  const auto first = host_values(sum(g));
  for (int run = 0; run < 5; ++run) REQUIRE(host_values(sum(g)) == first);
  const Tensor mg = m.to(kGpu);
  const auto cols = host_values(sum(mg, 0));
  for (int run = 0; run < 3; ++run) REQUIRE(host_values(sum(mg, 0)) == cols);
}

TEST_CASE("softmax and log_softmax match the CPU along every dim", "[cuda][parity]") {
  require_gpu();
  for (DType dt : dtypes_for(Op::Softmax)) {
    const Tensor x = mul(values({9, 130, 17}, DType::F64, 91), 4.0).to(dt);
    for (std::int64_t dim : {0, 1, 2}) {
      check_op(str("softmax ", dt, " dim ", dim), {x},
               [dim](auto& in) { return softmax(in[0], dim); });
      check_op(str("log_softmax ", dt, " dim ", dim), {x},
               [dim](auto& in) { return log_softmax(in[0], dim); });
    }
    check_op(str("softmax of a transposed view ", dt), {x},
             [](auto& in) { return softmax(in[0].transpose(0, 2), 2); });
  }
}
