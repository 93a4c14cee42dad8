// Parity of the elementwise ops, copies and fills: CUDA against CPU on the same inputs, every
// supported dtype, contiguous, strided (transposed, narrowed) and broadcast operands.
#include "tests/cuda/parity_support.h"

using namespace ruccl;
using namespace ruccl::parity;

namespace {

/// Values of `shape` as dtype: normal samples (shifted positive when `positive`), x20 and
/// truncated for integers, > 0 for Bool.
Tensor values(const Shape& shape, DType dtype, std::uint64_t seed, bool positive = false) {
  Tensor x = randn(shape, DType::F64, seed);
  if (positive) x = add(abs(x), 0.125);
  if (dtype == DType::Bool) return gt(x, 0.0);
  if (!is_floating(dtype)) return mul(x, 20.0).to(dtype);
  return x.to(dtype);
}

/// A contiguous [33, 70] tensor, a transposed view [70, 33] and a narrowed view [33, 41].
std::vector<Tensor> layouts(DType dtype, std::uint64_t seed, bool positive = false) {
  const Tensor x = values({33, 70}, dtype, seed, positive);
  const Tensor t = values({70, 33}, dtype, seed + 100, positive).transpose(0, 1);
  return {x, t, x.narrow(1, 3, 41)};
}

using Binary = Tensor (*)(const Tensor&, const Tensor&);

const std::vector<std::pair<Op, Binary>>& binary_ops() {
  static const std::vector<std::pair<Op, Binary>> ops = {{Op::Add, &add},
                                                         {Op::Sub, &sub},
                                                         {Op::Mul, &mul},
                                                         {Op::Div, &div},
                                                         {Op::Pow, &pow},
                                                         {Op::Maximum, &maximum},
                                                         {Op::Minimum, &minimum},
                                                         {Op::Eq, &eq},
                                                         {Op::Ne, &ne},
                                                         {Op::Lt, &lt},
                                                         {Op::Le, &le},
                                                         {Op::Gt, &gt},
                                                         {Op::Ge, &ge},
                                                         {Op::LogicalAnd, &logical_and},
                                                         {Op::LogicalOr, &logical_or}};
  return ops;
}

}  // namespace

TEST_CASE("every unary op matches the CPU on every supported dtype and layout", "[cuda][parity]") {
  require_gpu();
  const std::vector<std::pair<Op, Tensor (*)(const Tensor&)>> ops = {
      {Op::Neg, &neg},
      {Op::Exp, &exp},
      {Op::Log, &log},
      {Op::Sqrt, &sqrt},
      {Op::Abs, &abs},
      {Op::Tanh, &tanh},
      {Op::Sigmoid, &sigmoid},
      {Op::Relu, &relu},
      {Op::Gelu, &gelu},
      {Op::Sign, &sign},
      {Op::LogicalNot, &logical_not}};
  for (const auto& [op, fn] : ops) {
    REQUIRE_FALSE(dtypes_for(op).empty());
    for (DType dt : dtypes_for(op)) {
      const bool positive = op == Op::Log || op == Op::Sqrt;
      for (const Tensor& x : layouts(dt, 7, positive)) {
        check_op(str(op_name(op), " ", dt, " ", x.shape(), " strides ", x.strides()), {x},
                 [fn](const std::vector<Tensor>& in) { return fn(in[0]); });
      }
    }
  }
}

TEST_CASE("every binary op matches the CPU with strides and broadcasting on either side",
          "[cuda][parity]") {
  require_gpu();
  for (const auto& [op, fn] : binary_ops()) {
    REQUIRE_FALSE(dtypes_for(op).empty());
    for (DType dt : dtypes_for(op)) {
      const bool positive = op == Op::Pow;
      const std::vector<Tensor> a = layouts(dt, 11, positive);
      const std::vector<Tensor> b = layouts(dt, 12, positive);
      const auto call = [fn = fn](const std::vector<Tensor>& in) { return fn(in[0], in[1]); };
      const std::string name = str(op_name(op), " ", dt);
      for (std::size_t k = 0; k < a.size(); ++k) {
        check_op(name + str(" layout ", k), {a[k], b[k]}, call);
      }
      const Tensor row = b[0].narrow(0, 5, 1);     // [1, 70]: broadcast down the rows
      const Tensor column = b[0].narrow(1, 9, 1);  // [33, 1]: broadcast along the columns
      check_op(name + " row broadcast", {a[0], row}, call);
      check_op(name + " column broadcast on the left", {column, a[0]}, call);
      check_op(name + " 0-d operand", {a[1], b[0].select(0, 2).select(0, 4)}, call);
    }
  }
}

TEST_CASE("tensor-scalar ops match the CPU with the scalar on either side", "[cuda][parity]") {
  require_gpu();
  for (DType dt : {DType::F16, DType::BF16, DType::F32, DType::F64, DType::I32, DType::I64}) {
    const Tensor x = values({129, 65}, dt, 21, true);
    const std::string name = str(dt);
    check_op(name + " x + 3", {x}, [](auto& in) { return add(in[0], 3); });
    check_op(name + " x - 2.5", {x}, [](auto& in) { return sub(in[0], 2.5); });
    check_op(name + " x * -4", {x}, [](auto& in) { return mul(in[0], -4); });
    check_op(name + " 7 - x", {x}, [](auto& in) { return 7 - in[0]; });
    check_op(name + " x > 0.5", {x}, [](auto& in) { return gt(in[0], 0.5); });
    check_op(name + " x == 1", {x}, [](auto& in) { return eq(in[0], 1); });
    if (is_floating(dt)) {
      check_op(name + " x / 3", {x}, [](auto& in) { return div(in[0], 3.0); });
      check_op(name + " 2 / x", {x}, [](auto& in) { return 2.0 / in[0]; });
      check_op(name + " x ^ 1.5", {x}, [](auto& in) { return pow(in[0], 1.5); });
    }
  }
}

TEST_CASE("where matches the CPU with broadcast branches and a strided mask", "[cuda][parity]") {
  require_gpu();
  for (DType dt : dtypes_for(Op::Where)) {
    const Tensor cond = values({40, 50}, DType::Bool, 31).transpose(0, 1);  // [50, 40] strided
    const Tensor a = values({50, 40}, dt, 32);
    const Tensor b = values({1, 40}, dt, 33);
    check_op(str("where ", dt), {cond, a, b}, [](auto& in) { return where(in[0], in[1], in[2]); });
    check_op(str("where ", dt, " scalar branch"), {cond, a}, [](auto& in) {
      return where(in[0], in[1], Tensor::zeros({}, in[1].dtype(), in[1].device()));
    });
  }
}

TEST_CASE("copies convert between every pair of dtypes and any strides as the CPU does",
          "[cuda][parity]") {
  require_gpu();
  const std::vector<DType> all = {DType::F16, DType::BF16, DType::F32, DType::F64,
                                  DType::I32, DType::I64,  DType::Bool};
  for (DType from : all) {
    const Tensor x = values({37, 19}, from, 41);
    for (DType to : all) {
      check_op(str("copy ", from, " -> ", to), {x}, [to](auto& in) { return in[0].to(to); });
      check_op(str("strided copy ", from, " -> ", to), {x},
               [to](auto& in) { return in[0].transpose(0, 1).to(to).contiguous(); });
    }
    // copy_ into a strided destination with a broadcast source.
    check_op(str("copy_ broadcast ", from), {x}, [](auto& in) {
      Tensor dst = Tensor::zeros({19, 37}, in[0].dtype(), in[0].device()).transpose(0, 1);
      dst.copy_(in[0].narrow(1, 0, 1));
      return dst.contiguous();
    });
  }
}

TEST_CASE("fill writes every dtype, contiguous and strided, as the CPU does", "[cuda][parity]") {
  require_gpu();
  for (DType dt :
       {DType::F16, DType::BF16, DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool}) {
    require_match(Tensor::full({1001}, 3, dt), Tensor::full({1001}, 3, dt, kGpu), str("full ", dt));
    const Tensor cpu = Tensor::zeros({8, 9}, dt);
    Tensor gpu = cpu.to(kGpu);
    Tensor cpu_copy = cpu.clone();
    cpu_copy.narrow(1, 2, 5).fill_(1.5);
    gpu.narrow(1, 2, 5).fill_(1.5);
    require_match(cpu_copy, gpu, str("strided fill ", dt));
  }
}

TEST_CASE("a large contiguous add takes the vectorised path and matches exactly",
          "[cuda][parity]") {
  require_gpu();
  // 2^22 + 3 elements: whole vectors and a tail; one offset by 1 element defeats the vector path.
  const Tensor a = randn({(1 << 22) + 3}, DType::F32, 51);
  const Tensor b = randn({(1 << 22) + 3}, DType::F32, 52);
  check_op(
      "add large", {a, b}, [](auto& in) { return add(in[0], in[1]); }, 0.0);
  check_op(
      "add large misaligned", {a, b},
      [](auto& in) { return add(in[0].narrow(0, 1, 1 << 22), in[1].narrow(0, 0, 1 << 22)); }, 0.0);
}
