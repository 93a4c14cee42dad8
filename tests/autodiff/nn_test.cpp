// ruccl::nn: parameters, visit order, ties, frozen parameters, replicas, modules, initialisers.
#include <catch2/catch.hpp>

#include <cmath>

#include "autodiff/autodiff.h"
#include "tensor/tensor.h"
#include "tests/support/tensor_matchers.h"

using namespace ruccl;
using namespace ruccl::autodiff;
using ruccl::nn::Param;
using ruccl::testing::TensorEqual;
using ruccl::testing::TensorNear;

namespace {

Tensor f64(std::vector<double> v) { return Tensor::from_vector<double>(v); }
Tensor f64(std::vector<double> v, const Shape& s) { return Tensor::from_vector<double>(v, s); }

std::shared_ptr<nn::Sequential> make_mlp(Generator& gen, DType dtype = DType::F64) {
  return std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(3, 4, gen, nn::LinearOptions{.dtype = dtype}),
      std::make_shared<nn::Tanh>(),
      std::make_shared<nn::Linear>(4, 2, gen, nn::LinearOptions{.dtype = dtype})});
}

std::vector<std::string> paths(const std::vector<std::pair<std::string, Param>>& named) {
  std::vector<std::string> out;
  for (const auto& [p, param] : named) out.push_back(p);
  return out;
}

void check(const std::function<Var(const std::vector<Var>&)>& fn, const std::vector<Var>& in) {
  GradcheckReport r = gradcheck(fn, in);
  INFO(r.message);
  CHECK(r.ok);
}

}  // namespace

TEST_CASE("Linear computes x W^T + b with torch's [out, in] layout and exact set values",
          "[autodiff]") {
  Generator gen(0);
  nn::Linear fc(2, 1, gen);
  REQUIRE(fc.weight().shape() == Shape{1, 2});
  fc.weight().set_value(Tensor::from_vector<float>({0.5f, -0.25f}, {1, 2}));
  fc.bias().set_value(Tensor::from_vector<float>({0.25f}));
  Var x(Tensor::from_vector<float>({1, 2}, {1, 2}));
  Var loss = mse_loss(fc.forward(x), Var(Tensor::from_vector<float>({1}, {1, 1})));
  loss.backward();
  // pred = 0.5 - 0.5 + 0.25 = 0.25; d loss / d pred = 2 (0.25 - 1) = -1.5.
  CHECK_THAT(loss.value(), TensorEqual(Tensor::scalar(0.5625f)));
  CHECK_THAT(fc.weight().grad(), TensorEqual(Tensor::from_vector<float>({-1.5f, -3.0f}, {1, 2})));
  CHECK_THAT(fc.bias().grad(), TensorEqual(Tensor::from_vector<float>({-1.5f})));
  CHECK_THROWS_AS(fc.weight().set_value(Tensor::zeros({2, 1})), ShapeError);
  CHECK_THROWS_AS(fc.weight().set_value(Tensor::zeros({1, 2}, DType::F64)), DTypeError);
}

TEST_CASE("Linear initialises like torch: U(-1/sqrt(in), 1/sqrt(in)), reproducible by seed",
          "[autodiff]") {
  Generator g1(42), g2(42);
  nn::Linear a(16, 8, g1), b(16, 8, g2);
  CHECK_THAT(a.weight().value(), TensorEqual(b.weight().value()));
  CHECK_THAT(a.bias().value(), TensorEqual(b.bias().value()));
  for (float v : a.weight().value().to_vector<float>()) CHECK(std::fabs(v) <= 0.25f);
  CHECK(a.weight().id() != b.weight().id());
}

TEST_CASE("named_parameters lists own parameters then sub-modules' in registration order",
          "[autodiff]") {
  Generator gen(1);
  auto mlp = make_mlp(gen);
  CHECK(paths(mlp->named_parameters()) ==
        std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"});
  CHECK(mlp->parameters().size() == 4);
  CHECK(mlp->param("2.bias").same(mlp->at<nn::Linear>(2).bias()));
  CHECK_THROWS_AS(mlp->param("1.weight"), ValueError);
  CHECK_THROWS_AS(mlp->child("7"), ValueError);
}

TEST_CASE("a tied parameter is listed once and receives the sum of both uses' gradients",
          "[autodiff]") {
  Generator gen(2);
  auto tied = std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(3, 3, gen, nn::LinearOptions{.dtype = DType::F64}),
      std::make_shared<nn::Linear>(3, 3, gen, nn::LinearOptions{.dtype = DType::F64})});
  auto untied = tied->clone_as<nn::Sequential>();
  tied->set_param("1.weight", tied->param("0.weight"));
  untied->param("1.weight").set_value(untied->param("0.weight").value().clone());

  CHECK(paths(tied->named_parameters()) ==
        std::vector<std::string>{"0.weight", "0.bias", "1.bias"});
  CHECK(paths(tied->named_parameters(true)) ==
        std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias"});
  auto aliases = tied->aliases();
  REQUIRE(aliases.size() == 1);
  CHECK(aliases[0].first == tied->param("0.weight").id());
  CHECK(aliases[0].second == std::vector<std::string>{"0.weight", "1.weight"});

  Var x(f64({0.5, -1, 2, 1, 0.25, -0.5}, {2, 3}));
  sum(tanh(tied->forward(x))).backward();
  sum(tanh(untied->forward(x))).backward();
  Tensor expected = ruccl::add(untied->param("0.weight").grad(), untied->param("1.weight").grad());
  CHECK_THAT(tied->param("0.weight").grad(), TensorNear(expected, 1e-12, 1e-14));
  CHECK_THROWS_AS(tied->set_param("1.bias", tied->param("0.weight")), ShapeError);
}

TEST_CASE("a frozen parameter gets no gradient while the others do", "[autodiff]") {
  Generator gen(3);
  auto mlp = make_mlp(gen);
  mlp->param("0.bias").set_trainable(false);
  sum(mlp->forward(Var(f64({1, 2, 3}, {1, 3})))).backward();
  CHECK_FALSE(mlp->param("0.bias").grad().defined());
  CHECK(mlp->param("0.weight").grad().defined());
  CHECK(mlp->param("2.bias").grad().defined());
  mlp->set_trainable(false);
  CHECK_THROWS_AS(sum(mlp->forward(Var(f64({1, 2, 3}, {1, 3})))).backward(), AutodiffError);
}

TEST_CASE("clone makes an independent replica with the same ids, values and ties", "[autodiff]") {
  Generator gen(4);
  auto mlp = make_mlp(gen);
  mlp->set_param("2.bias", Param(7, Tensor::zeros({2}, DType::F64)));
  auto replica = mlp->clone_as<nn::Sequential>();
  auto a = mlp->named_parameters();
  auto b = replica->named_parameters();
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].first == b[i].first);
    CHECK(a[i].second.id() == b[i].second.id());
    CHECK_FALSE(a[i].second.same(b[i].second));
    CHECK_THAT(b[i].second.value(), TensorEqual(a[i].second.value()));
    CHECK(b[i].second.value().storage() != a[i].second.value().storage());
  }
  CHECK(replica->param("2.bias").id() == 7);
  // Training the replica leaves the original alone.
  sum(replica->forward(Var(f64({1, 2, 3}, {1, 3})))).backward();
  CHECK_FALSE(mlp->param("0.weight").grad().defined());
  replica->param("0.bias").set_value(Tensor::ones({4}, DType::F64));
  CHECK_FALSE(ruccl::equal(mlp->param("0.bias").value(), Tensor::ones({4}, DType::F64)));
  // Ties survive cloning.
  auto tied = std::make_shared<nn::Sequential>(std::vector<std::shared_ptr<nn::Module>>{
      std::make_shared<nn::Linear>(2, 2, gen), std::make_shared<nn::Linear>(2, 2, gen)});
  tied->set_param("1.weight", tied->param("0.weight"));
  auto tied_copy = tied->clone();
  CHECK(tied_copy->param("1.weight").same(tied_copy->param("0.weight")));
  CHECK_FALSE(tied_copy->param("0.weight").same(tied->param("0.weight")));
  CHECK_THROWS_AS(tied->clone_as<nn::Linear>(), ValueError);
}

TEST_CASE("assign_param_ids numbers distinct parameters in visit order", "[autodiff]") {
  Generator gen(5);
  auto mlp = make_mlp(gen);
  mlp->set_param("2.bias", Param(Tensor::zeros({2}, DType::F64)));
  mlp->assign_param_ids(1);
  std::vector<nn::ParamId> ids;
  for (const Param& p : mlp->parameters()) ids.push_back(p.id());
  CHECK(ids == std::vector<nn::ParamId>{1, 2, 3, 4});
  CHECK(nn::next_param_id() >= (nn::ParamId{1} << 32));
}

TEST_CASE("modules pass gradcheck with respect to inputs and parameters", "[autodiff]") {
  Generator gen(6);
  auto mlp = make_mlp(gen);
  Var x(Tensor::randn({2, 3}, gen, DType::F64), true);
  // Parameters enter as inputs: swap them into the module for each evaluation.
  std::vector<Param> params = mlp->parameters();
  std::vector<Var> inputs{x};
  for (const Param& p : params) inputs.push_back(p.var());
  // Each evaluation runs a replica whose parameters are gradcheck's leaves.
  check(
      [&](const std::vector<Var>& v) {
        auto m = mlp->clone_as<nn::Sequential>();
        auto named = m->named_parameters();
        for (std::size_t i = 0; i < named.size(); ++i) {
          m->set_param(named[i].first, Param(named[i].second.id(), v[i + 1]));
        }
        return m->forward(v[0]);
      },
      inputs);
  // LayerNorm with respect to its input, weight and bias (non-trivial values: not ones and zeros).
  nn::LayerNorm ln(std::vector<std::int64_t>{2, 3}, {.dtype = DType::F64});
  ln.weight().set_value(Tensor::randn({2, 3}, gen, DType::F64));
  ln.bias().set_value(Tensor::randn({2, 3}, gen, DType::F64));
  check(
      [&](const std::vector<Var>& v) {
        nn::LayerNorm m = ln;
        m.set_param("weight", Param(1, v[1]));
        m.set_param("bias", Param(2, v[2]));
        return m.forward(v[0]);
      },
      {Var(Tensor::randn({2, 2, 3}, gen, DType::F64), true), ln.weight().var(), ln.bias().var()});
  // Embedding with respect to its weight (repeated indices), Dropout with the same mask each call.
  nn::Embedding emb(4, 3, gen, {.dtype = DType::F64});
  Tensor idx = Tensor::from_vector<std::int64_t>({2, 0, 2}, {3});
  check(
      [&](const std::vector<Var>& v) {
        nn::Embedding e = emb;
        e.set_param("weight", Param(1, v[0]));
        return e.forward(idx);
      },
      {emb.weight().var()});
  nn::Dropout drop(0.5, 3);
  check(
      [&](const std::vector<Var>& v) {
        drop.set_seed(3);
        return drop.forward(v[0]);
      },
      {Var(Tensor::randn({8}, gen, DType::F64), true)});
  nn::GELU gelu_m;
  nn::Sigmoid sig;
  nn::ReLU relu_m;
  check([&](const std::vector<Var>& v) { return gelu_m(sig(v[0])); },
        {Var(Tensor::randn({5}, gen, DType::F64), true)});
  check([&](const std::vector<Var>& v) { return relu_m(v[0]); }, {Var(f64({-1, 0.5, 2}), true)});
}

TEST_CASE("LayerNorm normalises the trailing dims and its parameters get gradients", "[autodiff]") {
  nn::LayerNorm ln(4, {.eps = 0.0, .dtype = DType::F64});
  Var x(f64({1, 2, 3, 4, -2, 0, 2, 4}, {2, 4}), true);
  Var y = ln.forward(x);
  CHECK_THAT(mean(y, 1).value(), TensorNear(f64({0, 0}), 0, 1e-12));
  CHECK_THAT(var(y, {1}, 0).value(), TensorNear(f64({1, 1}), 1e-12, 0));
  sum(mul(y, Var(f64({1, 2, 3, 4, 1, 2, 3, 4}, {2, 4})))).backward();
  CHECK_THAT(ln.bias().grad(), TensorEqual(f64({2, 4, 6, 8})));
  CHECK(ln.weight().grad().defined());
  CHECK_THROWS_AS(ln.forward(Var(Tensor::zeros({2, 3}, DType::F64))), ShapeError);
}

TEST_CASE("Embedding looks up rows and accumulates gradients of repeated indices", "[autodiff]") {
  Generator gen(7);
  nn::Embedding emb(5, 2, gen, {.dtype = DType::F64});
  emb.weight().set_value(f64({0, 1, 10, 11, 20, 21, 30, 31, 40, 41}, {5, 2}));
  Tensor idx = Tensor::from_vector<std::int64_t>({3, 1, 3}, {1, 3});
  Var y = emb.forward(idx);
  CHECK_THAT(y.value(), TensorEqual(f64({30, 31, 10, 11, 30, 31}, {1, 3, 2})));
  sum(y).backward();
  CHECK_THAT(emb.weight().grad(), TensorEqual(f64({0, 0, 1, 1, 0, 0, 2, 2, 0, 0}, {5, 2})));
  CHECK_THROWS_AS(emb.forward(f64({1})), DTypeError);
}

TEST_CASE("Dropout zeroes with probability p, scales by 1/(1-p), and is off in eval mode",
          "[autodiff]") {
  nn::Dropout drop(0.25, 11);
  Var x(Tensor::ones({4000}, DType::F64), true);
  Var y = drop.forward(x);
  const std::vector<double> v = y.value().to_vector<double>();
  std::size_t zeros = 0;
  for (double e : v) {
    if (e == 0.0)
      ++zeros;
    else
      CHECK(e == Approx(1.0 / 0.75));
  }
  CHECK(zeros > 850);  // 1000 expected; 850..1150 is more than 5 standard deviations wide
  CHECK(zeros < 1150);
  sum(y).backward();
  CHECK_THAT(x.grad(), TensorEqual(y.value()));
  nn::Dropout same_seed(0.25, 11);
  CHECK_THAT(same_seed.forward(x).value(), TensorEqual(y.value()));
  drop.eval();
  CHECK(drop.forward(x).same(x));
  CHECK_THROWS_AS(nn::Dropout(1.0), ValueError);
}

TEST_CASE("named_generators lists every module's generator by path; clone copies their state",
          "[autodiff]") {
  Generator gen(8);
  auto seq = std::make_shared<nn::Sequential>();
  seq->push_back(std::make_shared<nn::Dropout>(0.5, 1));
  seq->push_back(std::make_shared<nn::Linear>(2, 2, gen));
  seq->push_back(std::make_shared<nn::Dropout>(0.5, 2));
  const auto named = seq->named_generators();
  REQUIRE(named.size() == 2);
  CHECK(named[0].first == "0.generator");
  CHECK(named[1].first == "2.generator");
  Var x(Tensor::ones({64}, DType::F64));
  (void)seq->child("0")->forward(x);  // advances the first generator only
  auto copy = seq->clone();
  const auto copied = copy->named_generators();
  REQUIRE(copied.size() == 2);
  CHECK(copied[0].second->state() == named[0].second->state());
  CHECK(copied[1].second->state() == named[1].second->state());
  CHECK(copied[0].second != named[0].second);  // the copy owns its own
  CHECK_FALSE(named[0].second->state() == nn::Dropout(0.5, 1).generator().state());
}

TEST_CASE("Sequential train/eval reaches every sub-module", "[autodiff]") {
  Generator gen(8);
  auto seq = std::make_shared<nn::Sequential>();
  seq->push_back(std::make_shared<nn::Linear>(2, 2, gen));
  seq->push_back(std::make_shared<nn::Dropout>(0.5));
  seq->eval();
  CHECK_FALSE((*seq)[1].is_training());
  seq->train();
  CHECK((*seq)[1].is_training());
}

TEST_CASE("initialisers draw within their documented bounds and spreads", "[autodiff]") {
  Generator gen(9);
  Param w(Tensor::zeros({200, 300}, DType::F64));
  nn::init::xavier_uniform_(w, gen);
  const double a = std::sqrt(6.0 / 500.0);
  double sq = 0.0;
  for (double v : w.value().to_vector<double>()) {
    CHECK(std::fabs(v) <= a);
    sq += v * v;
  }
  // Variance of U(-a, a) is a^2 / 3; 60,000 samples pin it within 2%.
  CHECK(sq / 60000.0 == Approx(a * a / 3.0).epsilon(0.02));
  nn::init::kaiming_normal_(w, gen, 0.0, nn::init::FanMode::FanIn, nn::init::Nonlinearity::Relu);
  sq = 0.0;
  for (double v : w.value().to_vector<double>()) sq += v * v;
  CHECK(sq / 60000.0 == Approx(2.0 / 300.0).epsilon(0.02));
  nn::init::constant_(w, 0.5);
  CHECK_THAT(w.value(), TensorEqual(Tensor::full({200, 300}, 0.5, DType::F64)));
  CHECK(nn::init::calculate_gain(nn::init::Nonlinearity::Tanh) == Approx(5.0 / 3.0));
  CHECK(nn::init::fan_in_out({8, 4, 3, 3}) == std::pair<std::int64_t, std::int64_t>{36, 72});
  CHECK_THROWS_AS(nn::init::fan_in_out({}), ValueError);
}

namespace {

// Sample mean and (population) variance of a tensor's values.
std::pair<double, double> moments(const Tensor& t) {
  const std::vector<double> v = t.to_vector<double>();
  double sum = 0.0;
  for (double e : v) sum += e;
  const double mean = sum / static_cast<double>(v.size());
  double sq = 0.0;
  for (double e : v) sq += (e - mean) * (e - mean);
  return {mean, sq / static_cast<double>(v.size())};
}

}  // namespace

TEST_CASE("xavier_normal_ and kaiming_uniform_ follow their formulas and are reproducible by seed",
          "[autodiff]") {
  // n = 60,000 samples of a [200, 300] weight: fan_in 300, fan_out 200. Tolerances are 5 standard
  // errors: the sample mean's is sd / sqrt(n); the sample variance's, relative to the variance,
  // is sqrt(2 / n) = 0.58% for a normal and sqrt(4/5 / n) = 0.37% for a uniform.
  const double n = 60000.0;
  auto draw = [](std::uint64_t seed, auto init) {
    Generator gen(seed);
    Param w(Tensor::zeros({200, 300}, DType::F64));
    init(w, gen);
    return w.value();
  };
  auto xavier = [](Param& w, Generator& g) { nn::init::xavier_normal_(w, g, 0.5); };
  const Tensor xn = draw(21, xavier);
  CHECK_THAT(draw(21, xavier), TensorEqual(xn));
  CHECK_FALSE(ruccl::equal(draw(22, xavier), xn));
  const double sd = 0.5 * std::sqrt(2.0 / 500.0);  // gain * sqrt(2 / (fan_in + fan_out))
  std::pair<double, double> m = moments(xn);
  CHECK(std::fabs(m.first) < 5.0 * sd / std::sqrt(n));
  CHECK(m.second == Approx(sd * sd).epsilon(5.0 * std::sqrt(2.0 / n)));

  // Defaults (a = 0, fan_in, leaky_relu): gain sqrt(2), bound sqrt(3) * gain / sqrt(fan_in).
  auto kaiming = [](Param& w, Generator& g) { nn::init::kaiming_uniform_(w, g); };
  const Tensor ku = draw(23, kaiming);
  CHECK_THAT(draw(23, kaiming), TensorEqual(ku));
  CHECK_FALSE(ruccl::equal(draw(24, kaiming), ku));
  const double bound = std::sqrt(6.0 / 300.0);
  m = moments(ku);
  CHECK(ruccl::max(ruccl::abs(ku)).item<double>() <= bound);
  // P(all 60,000 |samples| < 0.999 bound) = 0.999^60000 < 1e-26.
  CHECK(ruccl::max(ruccl::abs(ku)).item<double>() > 0.999 * bound);
  CHECK(std::fabs(m.first) < 5.0 * bound / std::sqrt(3.0 * n));
  CHECK(m.second == Approx(bound * bound / 3.0).epsilon(5.0 * std::sqrt(0.8 / n)));

  // a = sqrt(5) (torch's Linear) and fan_out: gain sqrt(2 / 6), bound 1 / sqrt(fan_out).
  const Tensor kf = draw(25, [](Param& w, Generator& g) {
    nn::init::kaiming_uniform_(w, g, std::sqrt(5.0), nn::init::FanMode::FanOut);
  });
  const double bound_out = 1.0 / std::sqrt(200.0);
  CHECK(ruccl::max(ruccl::abs(kf)).item<double>() <= bound_out);
  CHECK(ruccl::max(ruccl::abs(kf)).item<double>() > 0.999 * bound_out);
  CHECK(moments(kf).second ==
        Approx(bound_out * bound_out / 3.0).epsilon(5.0 * std::sqrt(0.8 / n)));
}
