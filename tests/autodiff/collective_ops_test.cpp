// Differentiable collectives: forward values and gradients in closed form, untracked inputs,
// empty, 0-d and non-contiguous inputs, inputs left unmodified, and the documented max/min
// tie rule and broadcast's zeros.
#include <catch2/catch.hpp>

#include "autodiff/autodiff.h"
#include "autodiff/collective/collective.h"
#include "tensor/tensor.h"
#include "tests/support/rank_harness.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::autodiff;
namespace dc = ruccl::autodiff::collective;
using ruccl::testing::run_group;
using ruccl::testing::TensorEqual;

namespace {

Tensor f64(const std::vector<double>& v, const Shape& s) {
  return Tensor::from_vector<double>(v, s);
}

// Rank r's [rows, cols] input: 10 * r + (row-major index). Small integers: every sum is exact.
Tensor ranked(int r, std::int64_t rows, std::int64_t cols) {
  std::vector<double> v(static_cast<std::size_t>(rows * cols));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = 10.0 * r + static_cast<double>(i);
  return f64(v, {rows, cols});
}

// Forward output and the input's gradient on one rank, for L_r = sum(out * (r + 1)).
struct Result {
  Tensor out;
  Tensor grad;
};

template <typename Op>
std::vector<testing::RankOutcome<Result>> run_op(int world, std::int64_t rows, std::int64_t cols,
                                                 Op op) {
  return run_group(world, [&](Communicator& comm) {
    Var x(ranked(comm.rank(), rows, cols), true);
    Var y = op(comm, x);
    sum(y * static_cast<double>(comm.rank() + 1)).backward();
    return Result{y.value(), x.grad()};
  });
}

}  // namespace

TEST_CASE("gather and scatter ops give the documented values and transpose gradients",
          "[autodiff][collective]") {
  // W = 3, L_r = sum(out_r * (r + 1)): every output element of rank s carries weight s + 1, and
  // sum_s (s + 1) = 6.
  auto gathered =
      run_op(3, 1, 2, [](Communicator& c, const Var& x) { return dc::all_gather(x, c); });
  auto gathered_dim =
      run_op(3, 2, 1, [](Communicator& c, const Var& x) { return dc::all_gather_dim(x, -1, c); });
  auto scattered =
      run_op(3, 3, 2, [](Communicator& c, const Var& x) { return dc::reduce_scatter_sum(x, c); });
  auto scattered_mean = run_op(
      3, 2, 3, [](Communicator& c, const Var& x) { return dc::reduce_scatter_mean_dim(x, 1, c); });
  auto routed = run_op(3, 3, 1, [](Communicator& c, const Var& x) { return dc::all_to_all(x, c); });
  for (int r = 0; r < 3; ++r) {
    INFO("rank " << r);
    const double rd = r;
    const Result& g = gathered[static_cast<std::size_t>(r)].value();
    CHECK_THAT(g.out, TensorEqual(f64({0, 1, 10, 11, 20, 21}, {3, 2})));
    CHECK_THAT(g.grad, TensorEqual(Tensor::full({1, 2}, 6.0, DType::F64)));  // sum_s (s + 1)
    const Result& gd = gathered_dim[static_cast<std::size_t>(r)].value();
    CHECK_THAT(gd.out, TensorEqual(f64({0, 10, 20, 1, 11, 21}, {2, 3})));
    CHECK_THAT(gd.grad, TensorEqual(Tensor::full({2, 1}, 6.0, DType::F64)));
    // reduce_scatter_sum of [3, 2]: rank r keeps row r of sum_s x_s = 30 + 3 * x_0.
    const Result& s = scattered[static_cast<std::size_t>(r)].value();
    CHECK_THAT(s.out, TensorEqual(f64({30 + 6 * rd, 33 + 6 * rd}, {1, 2})));
    // Backward: rank s's gradient is the gather of every rank's (r + 1).
    CHECK_THAT(s.grad, TensorEqual(f64({1, 1, 2, 2, 3, 3}, {3, 2})));
    // reduce_scatter_mean along axis 1 of [2, 3]: column r of the mean, 10 + x_0.
    const Result& sm = scattered_mean[static_cast<std::size_t>(r)].value();
    CHECK_THAT(sm.out, TensorEqual(f64({10 + rd, 13 + rd}, {2, 1})));
    CHECK_THAT(sm.grad, TensorEqual(f64({1. / 3, 2. / 3, 1, 1. / 3, 2. / 3, 1}, {2, 3})));
    // all_to_all of [3, 1]: rank r receives element r of every rank; the gradient routes back.
    const Result& a = routed[static_cast<std::size_t>(r)].value();
    CHECK_THAT(a.out, TensorEqual(f64({rd, 10 + rd, 20 + rd}, {3, 1})));
    CHECK_THAT(a.grad, TensorEqual(f64({1, 2, 3}, {3, 1})));
  }
}

TEST_CASE("reducing ops and broadcast give the documented values and transpose gradients",
          "[autodiff][collective]") {
  auto summed =
      run_op(4, 1, 2, [](Communicator& c, const Var& x) { return dc::all_reduce_sum(x, c); });
  auto meaned =
      run_op(4, 1, 2, [](Communicator& c, const Var& x) { return dc::all_reduce_mean(x, c); });
  auto maxed =
      run_op(4, 1, 2, [](Communicator& c, const Var& x) { return dc::all_reduce_max(x, c); });
  auto mined =
      run_op(4, 1, 2, [](Communicator& c, const Var& x) { return dc::all_reduce_min(x, c); });
  auto bcast =
      run_op(4, 1, 2, [](Communicator& c, const Var& x) { return dc::broadcast(x, 2, c); });
  for (int r = 0; r < 4; ++r) {
    INFO("rank " << r);
    const auto ru = static_cast<std::size_t>(r);
    // sum_s x_s = [60, 64]; sum_s (s + 1) = 10.
    CHECK_THAT(summed[ru].value().out, TensorEqual(f64({60, 64}, {1, 2})));
    CHECK_THAT(summed[ru].value().grad, TensorEqual(Tensor::full({1, 2}, 10.0, DType::F64)));
    CHECK_THAT(meaned[ru].value().out, TensorEqual(f64({15, 16}, {1, 2})));
    CHECK_THAT(meaned[ru].value().grad, TensorEqual(Tensor::full({1, 2}, 2.5, DType::F64)));
    // Rank 3 holds the maximum, rank 0 the minimum: all of the gradient goes there.
    const double mx = r == 3 ? 10.0 : 0.0;
    const double mn = r == 0 ? 10.0 : 0.0;
    CHECK_THAT(maxed[ru].value().out, TensorEqual(f64({30, 31}, {1, 2})));
    CHECK_THAT(maxed[ru].value().grad, TensorEqual(f64({mx, mx}, {1, 2})));
    CHECK_THAT(mined[ru].value().out, TensorEqual(f64({0, 1}, {1, 2})));
    CHECK_THAT(mined[ru].value().grad, TensorEqual(f64({mn, mn}, {1, 2})));
    // Broadcast from rank 2: root's gradient is the sum, the others get zeros.
    const double bg = r == 2 ? 10.0 : 0.0;
    CHECK_THAT(bcast[ru].value().out, TensorEqual(f64({20, 21}, {1, 2})));
    CHECK_THAT(bcast[ru].value().grad, TensorEqual(f64({bg, bg}, {1, 2})));
  }
}

TEST_CASE("all_reduce_max and _min send a tied element's gradient to the lowest tied rank",
          "[autodiff][collective]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto out = run_group(4, [&](Communicator& comm) {
    const int r = comm.rank();
    // Element 0: every rank ties. Element 1: ranks 1 and 3 tie at the maximum (5), ranks 0 and 2
    // tie at the minimum (1). Element 2: rank 2 alone holds NaN, so max and min are NaN.
    const std::vector<double> v = {7.0, r % 2 == 1 ? 5.0 : 1.0, r == 2 ? nan : 0.5};
    Var x(f64(v, {3}), true);
    Var y(f64(v, {3}), true);
    sum(dc::all_reduce_max(x, comm) * static_cast<double>(r + 1)).backward();
    sum(dc::all_reduce_min(y, comm) * static_cast<double>(r + 1)).backward();
    return std::pair<Tensor, Tensor>{x.grad(), y.grad()};
  });
  const std::vector<std::vector<double>> max_grads = {{10, 0, 0}, {0, 10, 0}, {0, 0, 0}, {0, 0, 0}};
  const std::vector<std::vector<double>> min_grads = {{10, 10, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
  for (int r = 0; r < 4; ++r) {
    INFO("rank " << r);
    const auto ru = static_cast<std::size_t>(r);
    CHECK_THAT(out[ru].value().first, TensorEqual(f64(max_grads[ru], {3})));
    CHECK_THAT(out[ru].value().second, TensorEqual(f64(min_grads[ru], {3})));
  }
}

TEST_CASE("an input that needs no gradient records no node but still communicates",
          "[autodiff][collective]") {
  auto out = run_group(3, [](Communicator& comm) {
    Var plain(ranked(comm.rank(), 1, 2));  // requires_grad false
    Var a = dc::all_reduce_sum(plain, comm);
    Var tracked(ranked(comm.rank(), 1, 2), true);
    Var b;
    {
      NoGradGuard no_grad;  // grad mode off on every rank: no node either
      b = dc::all_gather(tracked, comm);
    }
    return std::vector<Var>{a, b};
  });
  for (int r = 0; r < 3; ++r) {
    const std::vector<Var>& v = out[static_cast<std::size_t>(r)].value();
    CHECK_FALSE(v[0].requires_grad());
    CHECK(v[0].grad_fn() == nullptr);
    CHECK_THAT(v[0].value(), TensorEqual(f64({30, 33}, {1, 2})));
    CHECK_FALSE(v[1].requires_grad());
    CHECK(v[1].grad_fn() == nullptr);
    CHECK_THAT(v[1].value(), TensorEqual(f64({0, 1, 10, 11, 20, 21}, {3, 2})));
  }
}

TEST_CASE("empty and 0-d inputs work forward and backward", "[autodiff][collective]") {
  auto out = run_group(2, [](Communicator& comm) {
    Var e(Tensor::zeros({2, 0}, DType::F64), true);
    Var g = dc::all_gather(e, comm);           // [2, 0] on two ranks -> [4, 0]
    Var gd = dc::all_gather_dim(e, -1, comm);  // -> [2, 0]
    Var s = dc::reduce_scatter_sum(Var(Tensor::zeros({0, 3}, DType::F64), true), comm);
    Var z(Tensor::scalar(1.5 + comm.rank(), DType::F64), true);
    Var zg = dc::all_gather(z, comm);  // 0-d -> [2]
    (sum(g) + sum(gd) + sum(s) + sum(zg * zg)).backward();
    return std::vector<Tensor>{g.value(), gd.value(), s.value(), e.grad(), zg.value(), z.grad()};
  });
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r);
    const std::vector<Tensor>& v = out[static_cast<std::size_t>(r)].value();
    CHECK(v[0].shape() == Shape{4, 0});
    CHECK(v[1].shape() == Shape{2, 0});
    CHECK(v[2].shape() == Shape{0, 3});
    CHECK(v[3].shape() == Shape{2, 0});
    CHECK_THAT(v[4], TensorEqual(f64({1.5, 2.5}, {2})));
    // d/dz_r of sum_s sum(zg_s^2) = 2 * 2 * z_r (both ranks hold z_r).
    CHECK_THAT(v[5], TensorEqual(Tensor::scalar(4.0 * (1.5 + r), DType::F64)));
  }
}

TEST_CASE(
    "non-contiguous inputs give the values and gradients of their contiguous copies, gradients "
    "in the input's layout",
    "[autodiff][collective]") {
  auto run = [](bool strided) {
    return run_group(2, [strided](Communicator& comm) {
      Tensor view = ranked(comm.rank(), 2, 4).transpose(0, 1);  // [4, 2], strides [1, 4]
      Var x(strided ? view : view.contiguous(), true);
      Var a = dc::all_gather_dim(x, 1, comm);
      Var b = dc::reduce_scatter_sum_dim(x, -1, comm);
      Var c = dc::all_reduce_max(x, comm);
      Var d = dc::all_to_all(x, comm);
      (sum(a * a) + sum(b * 3.0) + sum(c * c) + sum(d * d * d)).backward();
      return std::vector<Tensor>{a.value(), b.value(), c.value(), d.value(), x.grad()};
    });
  };
  auto strided = run(true);
  auto contiguous = run(false);
  for (int r = 0; r < 2; ++r) {
    INFO("rank " << r);
    const std::vector<Tensor>& s = strided[static_cast<std::size_t>(r)].value();
    const std::vector<Tensor>& c = contiguous[static_cast<std::size_t>(r)].value();
    for (std::size_t i = 0; i < s.size(); ++i) {
      INFO("result " << i);
      CHECK_THAT(s[i], TensorEqual(c[i]));
    }
    CHECK(s[4].shape() == Shape{4, 2});    // the gradient comes back in the input's shape...
    CHECK(s[4].strides() == Shape{1, 4});  // ...and layout: the transposed input's strides
    CHECK(c[4].is_contiguous());
  }
}

TEST_CASE("no differentiable collective modifies its input", "[autodiff][collective]") {
  for (int world : {1, 2}) {
    auto out = run_group(world, [](Communicator& comm) {
      const Tensor original = ranked(comm.rank(), 2, 4);
      Var x(original.clone(), true);
      std::vector<Var> ys = {dc::all_gather(x, comm),
                             dc::all_gather_dim(x, 1, comm),
                             dc::reduce_scatter_sum(x, comm),
                             dc::reduce_scatter_mean(x, comm),
                             dc::reduce_scatter_sum_dim(x, -1, comm),
                             dc::reduce_scatter_mean_dim(x, 1, comm),
                             dc::all_reduce_sum(x, comm),
                             dc::all_reduce_mean(x, comm),
                             dc::all_reduce_max(x, comm),
                             dc::all_reduce_min(x, comm),
                             dc::broadcast(x, comm.world_size() - 1, comm),
                             dc::all_to_all(x, comm)};
      Var loss = sum(ys[0]);
      for (std::size_t i = 1; i < ys.size(); ++i) loss = loss + sum(ys[i] * ys[i]);
      // Writing into every result must not reach the input either.
      for (const Var& y : ys) Tensor(y.value()).fill_(-1.0);
      loss.backward();
      for (const Var& y : ys) Tensor(y.value()).fill_(-2.0);
      return ruccl::equal(x.value(), original);
    });
    for (int r = 0; r < world; ++r) CHECK(out[static_cast<std::size_t>(r)].value());
  }
}

TEST_CASE("broadcast accepts an undefined Var on non-roots when root's input needs no gradient",
          "[autodiff][collective]") {
  auto out = run_group(3, [](Communicator& comm) {
    Var x = comm.rank() == 1 ? Var(ranked(1, 1, 3)) : Var();
    return dc::broadcast(x, 1, comm).value();
  });
  for (int r = 0; r < 3; ++r) {
    CHECK_THAT(out[static_cast<std::size_t>(r)].value(), TensorEqual(ranked(1, 1, 3)));
  }
}
