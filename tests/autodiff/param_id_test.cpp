// ParamIds: derived from module paths when a module first lists its parameters, so replicas built
// by the same code agree whatever thread or order built them; explicit ids and ties are kept.
#include <catch2/catch.hpp>

#include <set>
#include <thread>

#include "autodiff/autodiff.h"
#include "tensor/tensor.h"

using namespace ruccl;
using ruccl::nn::Param;
using ruccl::nn::ParamId;

namespace {

/// Linear(3 -> 4), Tanh, Linear(4 -> 2), its layers built in the order given by `reversed`.
std::shared_ptr<nn::Sequential> make_mlp(std::uint64_t seed, bool reversed = false) {
  Generator gen(seed);
  std::shared_ptr<nn::Module> first, last;
  if (reversed) {
    last = std::make_shared<nn::Linear>(4, 2, gen);
    first = std::make_shared<nn::Linear>(3, 4, gen);
  } else {
    first = std::make_shared<nn::Linear>(3, 4, gen);
    last = std::make_shared<nn::Linear>(4, 2, gen);
  }
  return std::make_shared<nn::Sequential>(
      std::vector<std::shared_ptr<nn::Module>>{first, std::make_shared<nn::Tanh>(), last});
}

std::vector<std::pair<std::string, ParamId>> ids_of(const nn::Module& m) {
  std::vector<std::pair<std::string, ParamId>> out;
  for (const auto& [path, p] : m.named_parameters()) out.emplace_back(path, p.id());
  return out;
}

}  // namespace

TEST_CASE("param_id_for_path is a fixed hash of the path with bit 63 set", "[autodiff]") {
  // Reference values from an independent implementation (FNV-1a 64, splitmix64 finaliser, bit 63
  // set): the ids in checkpoints written today must mean the same parameters in every later run.
  CHECK(nn::param_id_for_path("0.weight") == 11930125777330187236ull);
  CHECK(nn::param_id_for_path("weight") == 14840641781071396917ull);
  CHECK(nn::param_id_for_path("fc1.bias") == 10115066734925469649ull);
  CHECK(nn::param_id_for_path("") == 17665956581633026203ull);
  std::set<ParamId> ids;
  for (int layer = 0; layer < 1000; ++layer) {
    for (const char* leaf : {"weight", "bias"}) {
      const ParamId id = nn::param_id_for_path(std::to_string(layer) + "." + leaf);
      CHECK(nn::is_path_param_id(id));
      ids.insert(id);
    }
  }
  CHECK(ids.size() == 2000);
  CHECK_FALSE(nn::is_path_param_id(nn::next_param_id()));
  CHECK_FALSE(nn::is_path_param_id(nn::kNoParamId));
}

TEST_CASE("replicas built on other threads and in another order get the same ParamIds",
          "[autodiff]") {
  auto here = make_mlp(1);
  std::shared_ptr<nn::Sequential> there;
  std::thread builder([&] {
    (void)Param(Tensor::zeros({1})).id();  // a counter id taken in between changes nothing
    there = make_mlp(1, /*reversed=*/true);
  });
  builder.join();
  const auto a = ids_of(*there);  // listed first on purpose: listing order does not matter either
  const auto b = ids_of(*here);
  CHECK(a == b);
  REQUIRE(b.size() == 4);
  for (const auto& [path, id] : b) CHECK(id == nn::param_id_for_path(path));
  // A clone of a model that was never listed derives the same ids from the same paths.
  auto unlisted = make_mlp(2);
  auto replica = unlisted->clone();
  CHECK(ids_of(*replica) == b);
  CHECK(ids_of(*unlisted) == b);
}

TEST_CASE("a ParamId once given never changes and explicit ids are kept", "[autodiff]") {
  auto mlp = make_mlp(3);
  mlp->set_param("2.bias", Param(7, Tensor::zeros({2})));
  const ParamId weight = mlp->param("0.weight").id();
  CHECK(weight == nn::param_id_for_path("0.weight"));
  CHECK(mlp->param("2.bias").id() == 7);
  // Listing the model again, or from a bigger model, keeps every id.
  nn::Sequential outer({mlp});
  CHECK(outer.param("0.0.weight").id() == weight);
  CHECK(outer.param("0.2.bias").id() == 7);
  CHECK(outer.param("0.2.weight").id() == nn::param_id_for_path("2.weight"));
  mlp->param("0.weight").set_id(11);
  CHECK(outer.param("0.0.weight").id() == 11);
  mlp->assign_param_ids(100);
  CHECK(ids_of(*mlp) ==
        std::vector<std::pair<std::string, ParamId>>{
            {"0.weight", 100}, {"0.bias", 101}, {"2.weight", 102}, {"2.bias", 103}});
  CHECK_THROWS_AS(mlp->assign_param_ids(nn::kNoParamId - 3), ValueError);
  CHECK_THROWS_AS(Param(nn::kNoParamId, Tensor::zeros({1})), ValueError);
  CHECK_THROWS_AS(mlp->param("0.bias").set_id(nn::kNoParamId), ValueError);
}

TEST_CASE("a tied parameter takes the ParamId of its first path", "[autodiff]") {
  Generator gen(4);
  nn::Sequential square(
      {std::make_shared<nn::Linear>(2, 2, gen), std::make_shared<nn::Linear>(2, 2, gen)});
  // Tied through an accessor, before anything listed the model: the id is the first path's.
  square.set_param("0.weight", square.at<nn::Linear>(1).weight());
  const auto aliases = square.aliases();
  REQUIRE(aliases.size() == 1);
  CHECK(aliases[0].first == nn::param_id_for_path("0.weight"));
  CHECK(aliases[0].second == std::vector<std::string>{"0.weight", "1.weight"});
  CHECK(square.param("1.weight").id() == nn::param_id_for_path("0.weight"));
  CHECK(square.parameters().size() == 3);
  auto copy = square.clone();
  CHECK(copy->param("1.weight").same(copy->param("0.weight")));
  CHECK(copy->param("1.weight").id() == nn::param_id_for_path("0.weight"));
  // Tied after the model was listed (param() lists it): the parameter keeps the id it had.
  nn::Sequential other(
      {std::make_shared<nn::Linear>(2, 2, gen), std::make_shared<nn::Linear>(2, 2, gen)});
  other.set_param("0.weight", other.param("1.weight"));
  CHECK(other.param("0.weight").id() == nn::param_id_for_path("1.weight"));
}

TEST_CASE("a Param read before any module lists it takes a counter id and keeps it", "[autodiff]") {
  Param alone(Tensor::zeros({2}));
  CHECK_FALSE(alone.has_id());
  const ParamId id = alone.id();
  CHECK(alone.has_id());
  CHECK(id >= (ParamId{1} << 32));
  CHECK_FALSE(nn::is_path_param_id(id));
  CHECK(alone.id() == id);
  auto mlp = make_mlp(7);
  mlp->set_param("2.bias", alone);
  CHECK(mlp->param("2.bias").id() == id);
  CHECK(mlp->param("2.weight").id() == nn::param_id_for_path("2.weight"));
}

TEST_CASE("distinct parameters that would share a path-derived ParamId are reported by path",
          "[autodiff]") {
  // Each layer listed on its own first takes ids from 'weight' and 'bias': together they collide.
  Generator gen(8);
  auto a = std::make_shared<nn::Linear>(2, 2, gen);
  auto b = std::make_shared<nn::Linear>(2, 2, gen);
  (void)a->parameters();
  (void)b->parameters();
  nn::Sequential both({a, b});
  CHECK_THROWS_WITH(both.named_parameters(),
                    Catch::Contains("parameters '0.weight' and '1.weight' are distinct but both "
                                    "have ParamId") &&
                        Catch::Contains("assign_param_ids"));
  // The fix the message gives works.
  both.assign_param_ids(1);
  CHECK(ids_of(both) == std::vector<std::pair<std::string, ParamId>>{
                            {"0.weight", 1}, {"0.bias", 2}, {"1.weight", 3}, {"1.bias", 4}});
}
