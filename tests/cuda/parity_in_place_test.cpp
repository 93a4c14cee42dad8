// Parity of the in-place scalar ops (Tensor::add_, sub_, mul_, div_): CUDA against CPU, bit for
// bit (one correctly rounded operation per element on both), every supported dtype, on the
// tensor itself and on views that write through (transposed, narrowed, a misaligned start that
// leaves the vectorised path), and a large buffer.
#include "tests/cuda/parity_support.h"

using namespace ruccl;
using namespace ruccl::parity;

namespace {

struct InPlace {
  Op op;
  Tensor& (Tensor::*apply)(Scalar);
};

const InPlace kOps[] = {{Op::AddInPlace, &Tensor::add_},
                        {Op::SubInPlace, &Tensor::sub_},
                        {Op::MulInPlace, &Tensor::mul_},
                        {Op::DivInPlace, &Tensor::div_}};

/// Values of `shape` as dtype: normal samples, x20 and truncated for integers.
Tensor values(const Shape& shape, DType dtype, std::uint64_t seed) {
  Tensor x = randn(shape, DType::F64, seed);
  if (!is_floating(dtype)) return mul(x, 20.0).to(dtype);
  return x.to(dtype);
}

/// The views an in-place op writes through: the whole tensor, transposed, narrowed, and one
/// starting one element in (not aligned for vector access).
std::vector<std::pair<const char*, Tensor (*)(const Tensor&)>> views() {
  return {{"whole", [](const Tensor& t) { return t; }},
          {"transposed", [](const Tensor& t) { return t.transpose(0, 1); }},
          {"narrowed", [](const Tensor& t) { return t.narrow(1, 3, 41); }},
          {"misaligned", [](const Tensor& t) { return t.view({33 * 70}).narrow(0, 1, 2000); }}};
}

}  // namespace

TEST_CASE("in-place scalar ops match the CPU bit for bit on every dtype and view",
          "[cuda][parity]") {
  require_gpu();
  for (const InPlace& op : kOps) {
    for (const DType dt : dtypes_for(op.op)) {
      for (const auto& [name, view] : views()) {
        const Scalar s = is_floating(dt) ? Scalar(0.375) : Scalar(3);
        const Tensor base = values({33, 70}, dt, 7);
        Tensor cpu = base.clone();
        Tensor gpu = base.to(kGpu);
        Tensor cv = view(cpu);
        Tensor gv = view(gpu);
        (cv.*op.apply)(s);
        (gv.*op.apply)(s);
        // The whole base: the view's elements changed, the others not.
        require_match(cpu, gpu, str(op_name(op.op), " ", dt, " ", name), 0.0);
      }
    }
  }
}

TEST_CASE("in-place scalar ops on a large buffer match the CPU and keep the storage",
          "[cuda][parity]") {
  require_gpu();
  const Tensor base = values({(1 << 22) + 3}, DType::F32, 9);
  for (const InPlace& op : kOps) {
    Tensor cpu = base.clone();
    Tensor gpu = base.to(kGpu);
    const void* before = gpu.data_ptr();
    (cpu.*op.apply)(1.0 / 3.0);
    (gpu.*op.apply)(1.0 / 3.0);
    REQUIRE(gpu.data_ptr() == before);
    require_match(cpu, gpu, str(op_name(op.op), " 4M + 3 F32"), 0.0);
  }
}

TEST_CASE("in-place scalar ops on the GPU refuse what the CPU refuses", "[cuda][parity]") {
  require_gpu();
  Tensor i = Tensor::from_vector<std::int64_t>({1, 2}).to(kGpu);
  REQUIRE_THROWS_AS(i.div_(2), DTypeError);
  REQUIRE_THROWS_AS(i.mul_(0.5), DTypeError);
  Tensor expanded = Tensor::ones({1, 3}, DType::F32, kGpu).expand({4, 3});
  REQUIRE_THROWS_AS(expanded.add_(1), ValueError);
}
