// Float64 finite-difference checks of convolution, pooling and padding (input, weight, bias), and
// their argument errors (typed, naming the op, "expected X, got Y").
#include <catch2/catch.hpp>

#include "autodiff/autodiff.h"
#include "tensor/backend/cpu/cpu_backend.h"
#include "tensor/tensor.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::autodiff;
using Catch::Matchers::Contains;

namespace {

Var leaf(const Shape& shape, Generator& gen) {
  return Var(Tensor::randn(shape, gen, DType::F64), true);
}

void check(const GradcheckFn& fn, const std::vector<Var>& inputs) {
  const GradcheckReport r = gradcheck(fn, inputs);
  INFO(r.message);
  CHECK(r.ok);
}

}  // namespace

TEST_CASE("conv2d passes gradcheck for input, weight and bias", "[autodiff]") {
  Generator gen(7);
  SECTION("stride, padding, non-square kernel") {
    check(
        [](const std::vector<Var>& v) {
          return conv2d(v[0], v[1], v[2], {2, {1, 0}});
        },
        {leaf({2, 2, 5, 4}, gen), leaf({3, 2, 3, 2}, gen), leaf({3}, gen)});
  }
  SECTION("dilation and groups, no bias") {
    check(
        [](const std::vector<Var>& v) {
          return conv2d(v[0], v[1], Var(), {.padding = 1, .dilation = {1, 2}, .groups = 2});
        },
        {leaf({1, 4, 4, 5}, gen), leaf({2, 2, 2, 2}, gen)});
  }
  SECTION("a constant weight gets no gradient; the input still does") {
    check([](const std::vector<Var>& v) { return conv2d(v[0], v[1], v[2], {.padding = 1}); },
          {leaf({1, 1, 3, 3}, gen), Var(Tensor::randn({2, 1, 2, 2}, gen, DType::F64)),
           leaf({2}, gen)});
  }
}

TEST_CASE("conv1d passes gradcheck", "[autodiff]") {
  Generator gen(8);
  check(
      [](const std::vector<Var>& v) {
        return conv1d(v[0], v[1], v[2], {.stride = 2, .padding = 2, .dilation = 2, .groups = 2});
      },
      {leaf({2, 2, 7}, gen), leaf({4, 1, 3}, gen), leaf({4}, gen)});
}

TEST_CASE("pooling, pad and unflatten pass gradcheck", "[autodiff]") {
  Generator gen(9);
  // randn values are distinct almost surely: no ties, so max pooling is differentiable here.
  Var x = leaf({2, 2, 5, 6}, gen);
  check([](const std::vector<Var>& v) { return max_pool2d(v[0], {.kernel = 2}); }, {x});
  check(
      [](const std::vector<Var>& v) {
        return max_pool2d(v[0],
                          {.kernel = 3, .stride = Size2d{2, 1}, .padding = 1, .dilation = {1, 2}});
      },
      {x});
  check(
      [](const std::vector<Var>& v) {
        return avg_pool2d(v[0], {.kernel = 3, .stride = 2, .padding = 1});
      },
      {x});
  check(
      [](const std::vector<Var>& v) {
        return avg_pool2d(v[0], {.kernel = {2, 3}, .padding = {1, 1}, .count_include_pad = false});
      },
      {x});
  check([](const std::vector<Var>& v) { return adaptive_avg_pool2d(v[0], {3, 4}); }, {x});
  check(
      [](const std::vector<Var>& v) {
        return pad(v[0], {1, 2, 3, 0}, PadMode::Constant, 2.0);
      },
      {x});
  check([](const std::vector<Var>& v) { return pad(v[0], {2, 3, 1, 4}, PadMode::Reflect); }, {x});
  check([](const std::vector<Var>& v) { return pad(v[0], {3, 1, 0, 2}, PadMode::Replicate); }, {x});
  check([](const std::vector<Var>& v) { return unflatten(flatten(v[0], 1), 1, {-1, 5}); }, {x});
}

TEST_CASE("conv2d refuses bad arguments with typed errors that say expected and got",
          "[autodiff]") {
  const Tensor x = Tensor::zeros({1, 4, 5, 5});
  const Tensor w = Tensor::zeros({2, 4, 3, 3});
  CHECK_THROWS_WITH(conv2d(Tensor::zeros({4, 5, 5}), w),
                    Contains("conv2d: expected a 4-d input [N, C, H, W], got [4, 5, 5]"));
  CHECK_THROWS_AS(conv2d(Tensor::zeros({4, 5, 5}), w), ShapeError);
  CHECK_THROWS_WITH(conv2d(x, Tensor::zeros({2, 3, 3, 3})),
                    Contains("expected 4 input channels = weight.shape[1] (3) x groups (1)"));
  CHECK_THROWS_AS(conv2d(x, Tensor::zeros({2, 3, 3, 3})), ShapeError);
  CHECK_THROWS_WITH(conv2d(x, Tensor::zeros({2, 1, 3, 3}), Tensor(), {.groups = 3}),
                    Contains("expected groups (3) to divide the input's 4 channels, got a "
                             "remainder of 1"));
  CHECK_THROWS_AS(conv2d(x, Tensor::zeros({3, 2, 3, 3}), Tensor(), {.groups = 2}), ValueError);
  CHECK_THROWS_WITH(conv2d(x, Tensor::zeros({2, 4, 7, 3})),
                    Contains("expected a padded input height of at least the dilated kernel's 7 "
                             "(output size >= 1), got 5"));
  CHECK_THROWS_AS(conv2d(x, w, Tensor(), {.dilation = 3}), ShapeError);  // 3 x 2 + 1 > 5
  CHECK_NOTHROW(conv2d(x, Tensor::zeros({2, 4, 7, 3}), Tensor(), {.padding = 1}));
  CHECK_THROWS_WITH(conv2d(x, w, Tensor::zeros({3})),
                    Contains("conv2d: expected a bias of shape [2], got [3]"));
  CHECK_THROWS_WITH(conv2d(x, w.to(DType::F64)),
                    Contains("conv2d: expected a weight of dtype F32 (the input's), got F64"));
  CHECK_THROWS_AS(conv2d(x.to(DType::I64), w.to(DType::I64)), DTypeError);
  CHECK_THROWS_WITH(conv2d(x, w, Tensor(), {.stride = 0}),
                    Contains("conv2d: expected strides >= 1, got (0, 0)"));
  CHECK_THROWS_AS(conv2d(x, w, Tensor(), {.padding = -1}), ValueError);
  CHECK_THROWS_WITH(conv1d(Tensor::zeros({1, 4, 5, 5}), Tensor::zeros({2, 4, 3})),
                    Contains("conv1d: expected a 3-d input [N, C, L], got [1, 4, 5, 5]"));
  CHECK_THROWS_WITH(conv1d(Tensor::zeros({1, 4, 2}), Tensor::zeros({2, 4, 3})),
                    Contains("conv1d: expected a padded input width of at least the dilated "
                             "kernel's 3"));
}

TEST_CASE("pooling, pad and unflatten refuse bad arguments", "[autodiff]") {
  const Tensor x = Tensor::zeros({1, 2, 4, 4});
  CHECK_THROWS_WITH(max_pool2d(Tensor::zeros({2, 4, 4}), {.kernel = 2}),
                    Contains("max_pool2d: expected a 4-d input [N, C, H, W], got [2, 4, 4]"));
  CHECK_THROWS_WITH(max_pool2d(x, {.kernel = 2, .padding = 2}),
                    Contains("max_pool2d: expected paddings between 0 and half the kernel (2, "
                             "2), got (2, 2)"));
  CHECK_THROWS_WITH(avg_pool2d(x, {.kernel = 5}),
                    Contains("avg_pool2d: expected a padded input height of at least the dilated "
                             "kernel's 5 (output size >= 1), got 4"));
  CHECK_THROWS_AS(avg_pool2d(x, {.kernel = 2, .stride = Size2d{0}}), ValueError);
  CHECK_THROWS_WITH(adaptive_avg_pool2d(x, {0, 1}),
                    Contains("adaptive_avg_pool2d: expected an output size of at least (1, 1), "
                             "got (0, 1)"));
  CHECK_THROWS_WITH(
      pad(x, {1, 2, 3}),
      Contains("pad: expected an even number of pads ((before, after) pairs), got 3"));
  CHECK_THROWS_WITH(pad(x, {4, 0}, PadMode::Reflect),
                    Contains("pad: expected reflect pads smaller than the dim's size 4 (dim 3), "
                             "got (4, 0)"));
  CHECK_THROWS_AS(pad(x, {-1, 0}), ValueError);
  CHECK_THROWS_WITH(unflatten(x, 1, {3, -1}),
                    Contains("unflatten: expected sizes whose product is dim 1's size 2, got [3, "
                             "-1]"));
  CHECK_THROWS_AS(unflatten(x, 1, {3, -1}), ShapeError);
}

TEST_CASE("conv2d's weight gradient over a long N oh ow (cut into pieces) matches the direct sum",
          "[autodiff]") {
  // N oh ow = 4 x 32 x 32 = 4096 with a 54-element weight: the gradient is computed in pieces
  // (tensor/ops/conv.cpp, weight_grad_pieces); here dW[:, :, i, j] = sum over n, y, x of
  // g[n, :, y, x] * x_padded[n, :, y + i, x + j], one matmul per kernel offset.
  Generator gen(11);
  const Tensor x = Tensor::randn({4, 2, 32, 32}, gen, DType::F64);
  Var w(Tensor::randn({3, 2, 3, 3}, gen, DType::F64), true);
  const Tensor g = Tensor::randn({4, 3, 32, 32}, gen, DType::F64);
  conv2d(Var(x), w, Var(), {.padding = 1}).backward(g);
  const Tensor padded = ruccl::pad(x, {1, 1, 1, 1});
  const Tensor g_rows = g.permute({1, 0, 2, 3}).reshape({3, 4 * 32 * 32});
  Tensor expected = Tensor::zeros({3, 2, 3, 3}, DType::F64);
  for (std::int64_t i = 0; i < 3; ++i) {
    for (std::int64_t j = 0; j < 3; ++j) {
      const Tensor shifted = padded.narrow(2, i, 32).narrow(3, j, 32);
      const Tensor x_rows = shifted.permute({1, 0, 2, 3}).reshape({2, 4 * 32 * 32});
      expected.select(2, i).select(2, j).copy_(ruccl::matmul(g_rows, x_rows.transpose(0, 1)));
    }
  }
  CHECK_THAT(w.grad(), ruccl::testing::TensorNear(expected, 1e-12, 1e-10));
}

TEST_CASE("conv2d in F32 on the large-product path matches F64 image by image, on 1 and 2 threads",
          "[autodiff]") {
  // 16 x 144 x 1024 multiply-adds per image: the forward's per-image products (weight @ the
  // image's cols block, written straight into NCHW, bias added in place) and the backward run on
  // the F32 GEMM (cpu::sgemm where the CPU has AVX-512); an image's grad cols (144 x 1024) is
  // above conv2d_input_grad's chunk, so dx runs one chunk per image into the channel-major
  // col2im. The reference is F64, one image at a time (one chunk, nothing to misplace),
  // concatenated (value, d input) and summed (d weight, d bias).
  Generator gen(13);
  const Tensor x = Tensor::randn({3, 16, 32, 32}, gen, DType::F64);
  const Tensor w = Tensor::randn({16, 16, 3, 3}, gen, DType::F64);
  const Tensor b = Tensor::randn({16}, gen, DType::F64);
  const Tensor g = Tensor::randn({3, 16, 32, 32}, gen, DType::F64);
  const auto run = [&](const Tensor& xs, const Tensor& gs, DType dtype, int threads) {
    const int saved = cpu::num_threads();
    cpu::set_num_threads(threads);
    Var xv(xs.to(dtype), true);
    Var wv(w.to(dtype), true);
    Var bv(b.to(dtype), true);
    Var y = conv2d(xv, wv, bv, {.padding = 1});
    y.backward(gs.to(dtype));
    cpu::set_num_threads(saved);
    return std::vector<Tensor>{y.value(), xv.grad(), wv.grad(), bv.grad()};
  };
  std::vector<std::vector<Tensor>> images;
  for (std::int64_t n = 0; n < 3; ++n) {
    images.push_back(run(x.narrow(0, n, 1), g.narrow(0, n, 1), DType::F64, 1));
  }
  std::vector<Tensor> exact;
  for (std::size_t i = 0; i < 4; ++i) {
    if (i < 2) {
      exact.push_back(ruccl::cat({images[0][i], images[1][i], images[2][i]}, 0));
    } else {
      exact.push_back(ruccl::add(ruccl::add(images[0][i], images[1][i]), images[2][i]));
    }
  }
  const std::vector<Tensor> one = run(x, g, DType::F32, 1);
  const std::vector<Tensor> two = run(x, g, DType::F32, 2);
  // F32 sums of up to 144 (forward, dx) and 3072 (dW, db) products of unit-variance terms.
  const std::vector<double> atol = {1e-4, 1e-4, 1e-3, 1e-3};
  for (std::size_t i = 0; i < exact.size(); ++i) {
    INFO("output " << i << " (value, d input, d weight, d bias)");
    CHECK_THAT(one[i].to(DType::F64), ruccl::testing::TensorNear(exact[i], 1e-4, atol[i]));
    CHECK_THAT(two[i], ruccl::testing::TensorEqual(one[i]));
  }
}
