// Parity of every backward: gradcheck in F64 on the GPU (analytic gradients from the CUDA backend
// against central differences evaluated on the GPU) and the same gradients as on the CPU.
#include "tests/cuda/parity_support.h"

using namespace ruccl;
using namespace ruccl::parity;
namespace ad = ruccl::autodiff;
using ad::Var;

namespace {

Tensor f64(const Shape& shape, std::uint64_t seed) { return randn(shape, DType::F64, seed); }
Tensor positive(const Shape& shape, std::uint64_t seed) { return add(abs(f64(shape, seed)), 0.5); }

}  // namespace

TEST_CASE("the backward of every unary op passes gradcheck on the GPU", "[cuda][parity][grad]") {
  require_gpu();
  using Fn = Var (*)(const Var&);
  const std::vector<std::pair<const char*, Fn>> smooth = {{"neg", &ad::neg},
                                                          {"exp", &ad::exp},
                                                          {"tanh", &ad::tanh},
                                                          {"sigmoid", &ad::sigmoid},
                                                          {"gelu", &ad::gelu}};
  for (const auto& [name, fn] : smooth) {
    require_gpu_gradcheck(name, {f64({3, 4}, 1)},
                          [fn = fn](const std::vector<Var>& in) { return fn(in[0]); });
  }
  require_gpu_gradcheck("log", {positive({3, 4}, 2)}, [](auto& in) { return ad::log(in[0]); });
  require_gpu_gradcheck("sqrt", {positive({3, 4}, 3)}, [](auto& in) { return ad::sqrt(in[0]); });
  // Away from the kinks at 0.
  require_gpu_gradcheck("abs", {add(positive({3, 4}, 4), -0.25)},
                        [](auto& in) { return ad::abs(in[0]); });
  require_gpu_gradcheck("relu", {f64({3, 4}, 5)}, [](auto& in) { return ad::relu(in[0]); });
}

TEST_CASE("the backward of every binary op passes gradcheck on the GPU with broadcasting",
          "[cuda][parity][grad]") {
  require_gpu();
  const Tensor a = f64({3, 4}, 11);
  const Tensor row = f64({1, 4}, 12);
  const Tensor p = positive({3, 4}, 13);
  require_gpu_gradcheck("add", {a, row}, [](auto& in) { return ad::add(in[0], in[1]); });
  require_gpu_gradcheck("sub", {a, row}, [](auto& in) { return ad::sub(in[0], in[1]); });
  require_gpu_gradcheck("mul", {a, row}, [](auto& in) { return ad::mul(in[0], in[1]); });
  require_gpu_gradcheck("div", {a, p}, [](auto& in) { return ad::div(in[0], in[1]); });
  require_gpu_gradcheck("pow", {p, row}, [](auto& in) { return ad::pow(in[0], in[1]); });
  require_gpu_gradcheck("pow scalar", {p}, [](auto& in) { return ad::pow(in[0], 2.5); });
  require_gpu_gradcheck("maximum", {a, f64({3, 4}, 14)},
                        [](auto& in) { return ad::maximum(in[0], in[1]); });
  require_gpu_gradcheck("minimum", {a, f64({3, 4}, 15)},
                        [](auto& in) { return ad::minimum(in[0], in[1]); });
  require_gpu_gradcheck("scalar ops", {a},
                        [](auto& in) { return ad::rdiv(ad::add(ad::mul(in[0], 3.0), 10.0), 2.0); });
  const Tensor cond = gt(f64({3, 4}, 16), 0.0);
  require_gpu_gradcheck("where", {a, row}, [cond](auto& in) {
    return ad::where(cond.to(kGpu).to(in[0].value().device()), in[0], in[1]);
  });
}

TEST_CASE("the backward of every reduction and of softmax passes gradcheck on the GPU",
          "[cuda][parity][grad]") {
  require_gpu();
  const Tensor x = f64({3, 4, 2}, 21);
  require_gpu_gradcheck("sum dims", {x}, [](auto& in) { return ad::sum(in[0], {0, 2}); });
  require_gpu_gradcheck("sum all", {x}, [](auto& in) { return ad::sum(in[0]); });
  require_gpu_gradcheck("mean dim", {x}, [](auto& in) { return ad::mean(in[0], 1, true); });
  require_gpu_gradcheck("prod dim", {positive({3, 4}, 22)},
                        [](auto& in) { return ad::prod(in[0], 1); });
  require_gpu_gradcheck("max dim", {x}, [](auto& in) { return ad::max(in[0], 1); });
  require_gpu_gradcheck("min all", {x}, [](auto& in) { return ad::min(in[0]); });
  require_gpu_gradcheck("var", {x}, [](auto& in) { return ad::var(in[0], {1}); });
  require_gpu_gradcheck("softmax", {x}, [](auto& in) { return ad::softmax(in[0], 1); });
  require_gpu_gradcheck("log_softmax", {x}, [](auto& in) { return ad::log_softmax(in[0], 2); });
}

TEST_CASE("the backward of matmul, the index ops and the losses passes gradcheck on the GPU",
          "[cuda][parity][grad]") {
  require_gpu();
  require_gpu_gradcheck("matmul", {f64({2, 3, 4}, 31), f64({4, 5}, 32)},
                        [](auto& in) { return ad::matmul(in[0], in[1]); });
  require_gpu_gradcheck("linear", {f64({3, 4}, 33), f64({2, 4}, 34), f64({2}, 35)},
                        [](auto& in) { return ad::linear(in[0], in[1], in[2]); });
  const Tensor idx = Tensor::from_vector<std::int64_t>({2, 0, 2, 1});
  require_gpu_gradcheck("index_select with repeats", {f64({3, 4}, 36)},
                        [idx](auto& in) { return ad::index_select(in[0], 0, idx.to(kGpu)); });
  const Tensor gidx = Tensor::from_vector<std::int64_t>({0, 3, 3, 1, 2, 2}, {2, 3});
  require_gpu_gradcheck("gather", {f64({2, 4}, 37)},
                        [gidx](auto& in) { return ad::gather(in[0], 1, gidx.to(kGpu)); });
  const Tensor targets = Tensor::from_vector<std::int64_t>({1, 0, 3});
  require_gpu_gradcheck("cross_entropy", {f64({3, 4}, 38)},
                        [targets](auto& in) { return ad::cross_entropy(in[0], targets.to(kGpu)); });
  require_gpu_gradcheck("mse_loss", {f64({3, 4}, 39), f64({3, 4}, 40)},
                        [](auto& in) { return ad::mse_loss(in[0], in[1]); });
  require_gpu_gradcheck("transpose then sum of squares", {f64({3, 4}, 41)}, [](auto& in) {
    const Var t = ad::transpose(in[0], 0, 1);
    return ad::sum(ad::mul(t, t), 1);
  });
}
