// Parity of issue 30's element-wise math on the GPU: CUDA against CPU on the same inputs, every
// supported dtype and layout (contiguous, transposed, narrowed), NaN and infinities for the Bool
// tests; GPU gradchecks of their backward and of the masking ops (composed of where and
// comparisons, which the CUDA backend has); cumsum and sort say not implemented there.
#include <limits>

#include "tests/cuda/parity_support.h"

using namespace ruccl;
using namespace ruccl::parity;
namespace ad = ruccl::autodiff;
using ad::Var;

namespace {

/// A contiguous [33, 70] tensor, a transposed view [70, 33] and a narrowed view [33, 41]
/// (positive values for rsqrt and log1p's domain).
std::vector<Tensor> layouts(DType dtype, std::uint64_t seed, bool positive) {
  Tensor x = randn({33, 70}, DType::F64, seed);
  Tensor t = randn({70, 33}, DType::F64, seed + 100);
  if (positive) {
    x = add(abs(x), 0.125);
    t = add(abs(t), 0.125);
  }
  x = is_floating(dtype) ? x.to(dtype) : mul(x, 20.0).to(dtype);
  t = is_floating(dtype) ? t.to(dtype) : mul(t, 20.0).to(dtype);
  return {x, t.transpose(0, 1), x.narrow(1, 3, 41)};
}

}  // namespace

TEST_CASE("the new unary ops match the CPU on every supported dtype and layout", "[cuda][parity]") {
  require_gpu();
  using Fn = std::function<Tensor(const Tensor&)>;
  const std::vector<std::pair<Op, Fn>> ops = {
      {Op::Sin, [](const Tensor& x) { return sin(x); }},
      {Op::Cos, [](const Tensor& x) { return cos(x); }},
      {Op::Silu, [](const Tensor& x) { return silu(x); }},
      {Op::Rsqrt, [](const Tensor& x) { return rsqrt(x); }},
      {Op::Erf, [](const Tensor& x) { return erf(x); }},
      {Op::Log1p, [](const Tensor& x) { return log1p(x); }},
      {Op::Expm1, [](const Tensor& x) { return expm1(x); }},
      {Op::IsNan, [](const Tensor& x) { return isnan(x); }},
      {Op::IsFinite, [](const Tensor& x) { return isfinite(x); }},
      {Op::LeakyRelu, [](const Tensor& x) { return leaky_relu(x, 0.2); }},
      {Op::Elu, [](const Tensor& x) { return elu(x, 0.5); }},
      {Op::Softplus, [](const Tensor& x) { return softplus(x, 2.0, 1.0); }}};
  for (const auto& [op, fn] : ops) {
    REQUIRE_FALSE(dtypes_for(op).empty());
    for (DType dt : dtypes_for(op)) {
      const bool positive = op == Op::Rsqrt || op == Op::Log1p;
      for (const Tensor& x : layouts(dt, 17, positive)) {
        check_op(str(op_name(op), " ", dt, " ", x.shape(), " strides ", x.strides()), {x},
                 [fn = fn](const std::vector<Tensor>& in) { return fn(in[0]); });
      }
    }
  }
  const float inf = std::numeric_limits<float>::infinity();
  const Tensor special =
      Tensor::from_vector<float>({1.0f, std::numeric_limits<float>::quiet_NaN(), inf, -inf});
  for (DType dt : {DType::F16, DType::BF16, DType::F32, DType::F64}) {
    check_op(str("isnan/isfinite ", dt), {special.to(dt)}, [](const std::vector<Tensor>& in) {
      return logical_or(isnan(in[0]), logical_not(isfinite(in[0])));
    });
  }
}

TEST_CASE("cumsum and sort are not implemented on the CUDA backend yet", "[cuda][parity]") {
  require_gpu();
  const Tensor x = randn({4, 5}).to(kGpu);
  CHECK_FALSE(backend_for(kGpu).supports(Op::Cumsum, DType::F32));
  CHECK_FALSE(backend_for(kGpu).supports(Op::Sort, DType::F32));
  CHECK_THROWS_AS(cumsum(x, 1), NotImplementedError);
  CHECK_THROWS_AS(sort(x, 1), NotImplementedError);
  CHECK_THROWS_AS(topk(x, 2), NotImplementedError);
}

TEST_CASE("the backward of the new element-wise and masking ops passes gradcheck on the GPU",
          "[cuda][parity][grad]") {
  require_gpu();
  const Tensor x = randn({3, 4}, DType::F64, 31);
  const Tensor p = add(abs(randn({3, 4}, DType::F64, 32)), 0.5);
  using Fn = std::function<Var(const std::vector<Var>&)>;
  const std::vector<std::pair<const char*, Fn>> smooth = {
      {"sin", [](auto& in) { return ad::sin(in[0]); }},
      {"cos", [](auto& in) { return ad::cos(in[0]); }},
      {"silu", [](auto& in) { return ad::silu(in[0]); }},
      {"erf", [](auto& in) { return ad::erf(in[0]); }},
      {"expm1", [](auto& in) { return ad::expm1(in[0]); }},
      {"softplus", [](auto& in) { return ad::softplus(in[0], 2.0, 20.0); }},
      {"leaky_relu", [](auto& in) { return ad::leaky_relu(in[0], 0.2); }},
      {"elu", [](auto& in) { return ad::elu(in[0], 0.5); }},
      {"clamp", [](auto& in) { return ad::clamp(in[0], -0.5, 0.75); }},
      {"tril", [](auto& in) { return ad::tril(in[0], 1); }},
      {"triu", [](auto& in) { return ad::triu(in[0], -1); }}};
  for (const auto& [name, fn] : smooth) require_gpu_gradcheck(name, {x}, fn);
  require_gpu_gradcheck("rsqrt", {p}, [](auto& in) { return ad::rsqrt(in[0]); });
  require_gpu_gradcheck("log1p", {p}, [](auto& in) { return ad::log1p(in[0]); });
  require_gpu_gradcheck("masked_fill", {x}, [](auto& in) {
    const Tensor mask = gt(in[0].value(), 0.0);  // on the input's device
    return ad::masked_fill(in[0], mask, -3.0);
  });
}
