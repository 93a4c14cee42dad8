// The two determinism modes (CommunicatorOptions::determinism): under AlgorithmIndependent every
// algorithm, RecursiveDoubling included, gives the same bits for inputs whose sums round (the
// canonical linear fold), and HalvingDoubling is refused; under PerAlgorithm HalvingDoubling gives
// every rank, every run, the same bits: the documented pairwise fold in rank order, whatever the
// element's position or the buffer's length.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstring>
#include <random>

#include "tensor/tensor.h"

#include "tests/collective/collective_test_support.h"
#include "tests/collective/group_factories.h"
#include "tests/support/rank_harness.h"

using namespace ruccl;
using namespace ruccl::testing;

namespace {

// Rank r's `count` floats in [-1, 1): their sums round, so the fold order shows in the bits.
std::vector<std::vector<float>> random_inputs(int world, std::size_t count, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<std::vector<float>> out(static_cast<std::size_t>(world));
  for (auto& v : out) {
    for (std::size_t i = 0; i < count; ++i) v.push_back(dist(gen) * 1000.0f);
  }
  return out;
}

CommunicatorOptions with(Algorithm algorithm, Determinism determinism) {
  CommunicatorOptions o;
  o.timeout = std::chrono::seconds(60);
  o.all_reduce_algorithm = algorithm;
  o.reduce_algorithm = algorithm;
  o.determinism = determinism;
  return o;
}

// Every rank's all_reduce (Sum) of `inputs` and root world-1's reduce, as raw floats.
std::vector<std::vector<float>> reduce_on(const GroupFactory& make,
                                          const std::vector<std::vector<float>>& inputs,
                                          const CommunicatorOptions& options) {
  const int world = static_cast<int>(inputs.size());
  auto out = run_group_with(
      make, world,
      [&](Communicator& comm) {
        const Tensor in = Tensor::from_vector<float>(inputs[static_cast<std::size_t>(comm.rank())]);
        std::vector<std::vector<float>> got{comm.all_reduce(in).to_vector<float>()};
        auto reduced = comm.reduce(in, world - 1);
        if (reduced) got.push_back(reduced->to_vector<float>());
        return got;
      },
      options);
  std::vector<std::vector<float>> results;
  for (int r = 0; r < world; ++r) {
    for (const auto& v : out[static_cast<std::size_t>(r)].value()) results.push_back(v);
  }
  return results;  // W all_reduce results, then root's reduce
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// HalvingDoubling's documented fold in float: the first `rem` pairs (x[2i] + x[2i+1]), then the
// virtual ranks' partials pairwise, lower block on the left (docs/collectives.md).
std::vector<float> pairwise_fold(const std::vector<std::vector<float>>& x) {
  const int world = static_cast<int>(x.size());
  int pof2 = 1;
  while (pof2 * 2 <= world) pof2 *= 2;
  const int rem = world - pof2;
  std::vector<std::vector<float>> v(static_cast<std::size_t>(pof2));
  for (int i = 0; i < pof2; ++i) {
    v[static_cast<std::size_t>(i)] =
        i < rem ? x[static_cast<std::size_t>(2 * i)] : x[static_cast<std::size_t>(i + rem)];
    if (i < rem) {
      for (std::size_t k = 0; k < v[static_cast<std::size_t>(i)].size(); ++k)
        v[static_cast<std::size_t>(i)][k] += x[static_cast<std::size_t>(2 * i + 1)][k];
    }
  }
  for (int d = 1; d < pof2; d *= 2) {
    for (int lo = 0; lo < pof2; lo += 2 * d) {
      auto& acc = v[static_cast<std::size_t>(lo)];
      const auto& hi = v[static_cast<std::size_t>(lo + d)];
      for (std::size_t k = 0; k < acc.size(); ++k) acc[k] = acc[k] + hi[k];
    }
  }
  return v[0];
}

}  // namespace

TEST_CASE("under AlgorithmIndependent every algorithm gives the same bits", "[collective]") {
  std::vector<std::pair<const char*, CommunicatorOptions>> configs;
  for (Algorithm a : {Algorithm::Direct, Algorithm::Ring, Algorithm::Tree, Algorithm::Centralized,
                      Algorithm::RecursiveDoubling}) {
    configs.emplace_back(algorithm_name(a), with(a, Determinism::AlgorithmIndependent));
  }
  configs.emplace_back("direct fold-all",
                       with(Algorithm::Direct, Determinism::AlgorithmIndependent));
  configs.back().second.direct_fold_all_bytes = std::size_t{1} << 20;
  for (int world : {3, 6, 8, 13}) {
    const auto inputs = random_inputs(world, 301, static_cast<unsigned>(world));
    const auto reference = reduce_on(InProcessCopying::make, inputs, configs[0].second);
    for (const auto& [name, options] : configs) {
      const auto got = reduce_on(InProcessCopying::make, inputs, options);
      REQUIRE(got.size() == reference.size());
      for (std::size_t k = 0; k < got.size(); ++k) {
        INFO(name << ", world " << world << ", result " << k);
        REQUIRE(same_bits(got[k], reference[0]));
      }
    }
  }
}

TEST_CASE("RecursiveDoubling honours fold windows: the pieces give the whole's bits",
          "[collective]") {
  constexpr int kWorld = 7;
  const auto inputs = random_inputs(kWorld, 50, 11);
  auto out = run_group(
      kWorld,
      [&](Communicator& comm) {
        const Tensor in = Tensor::from_vector<float>(inputs[static_cast<std::size_t>(comm.rank())]);
        const CallOptions rd = CallOptions().with_algorithm(Algorithm::RecursiveDoubling);
        const Tensor whole = comm.all_reduce(in, ReduceOperation::Sum,
                                             CallOptions().with_algorithm(Algorithm::Direct));
        std::vector<Tensor> pieces;
        for (std::int64_t offset : {0, 9, 31}) {
          const std::int64_t n = offset == 31 ? 19 : (offset == 0 ? 9 : 22);
          pieces.push_back(comm.all_reduce(in.narrow(0, offset, n), ReduceOperation::Sum,
                                           CallOptions(rd).with_fold_window(offset, 50)));
        }
        return std::pair{whole.to_vector<float>(), cat(pieces, 0).to_vector<float>()};
      },
      with(Algorithm::Auto, Determinism::AlgorithmIndependent));
  for (int r = 0; r < kWorld; ++r) {
    INFO("rank " << r);
    const auto& [whole, pieces] = out[static_cast<std::size_t>(r)].value();
    REQUIRE(same_bits(whole, pieces));
  }
}

TEMPLATE_TEST_CASE("under PerAlgorithm HalvingDoubling gives every rank the pairwise fold's bits",
                   "[collective]", InProcess, InProcessCopying) {
  for (int world : {2, 3, 5, 7, 8, 12, 13}) {
    const auto inputs = random_inputs(world, 257, static_cast<unsigned>(100 + world));
    const std::vector<float> expected = pairwise_fold(inputs);
    const CommunicatorOptions options = with(Algorithm::HalvingDoubling, Determinism::PerAlgorithm);
    const auto first = reduce_on(TestType::make, inputs, options);
    const auto second = reduce_on(TestType::make, inputs, options);  // every run
    for (std::size_t k = 0; k < first.size(); ++k) {
      INFO("world " << world << ", result " << k << " (the last: root's reduce)");
      REQUIRE(same_bits(first[k], expected));
      REQUIRE(same_bits(second[k], expected));
    }
    if (world >= 3) {  // the linear fold rounds differently somewhere: the modes are distinct
      const auto linear =
          reduce_on(TestType::make, inputs, with(Algorithm::Direct, Determinism::PerAlgorithm));
      INFO("world " << world << ": Direct's linear fold");
      REQUIRE_FALSE(same_bits(linear[0], expected));
    }
    // A piece of the buffer folds as it does inside the whole: the tree ignores positions.
    std::vector<std::vector<float>> piece;
    for (const auto& v : inputs) piece.emplace_back(v.begin() + 5, v.begin() + 40);
    const auto got = reduce_on(TestType::make, piece, options);
    const std::vector<float> slice(expected.begin() + 5, expected.begin() + 40);
    INFO("world " << world << ", elements [5, 40)");
    REQUIRE(same_bits(got[0], slice));
  }
}

TEST_CASE("HalvingDoubling without PerAlgorithm, or for a broadcast, is refused", "[collective]") {
  // Per call: InvalidArgument on every rank, with the reason.
  auto out = run_group(
      3,
      [](Communicator& comm) {
        comm.all_reduce(Tensor::ones({4}, DType::F32), ReduceOperation::Sum,
                        CallOptions().with_algorithm(Algorithm::HalvingDoubling));
      },
      short_timeout());
  for (const auto& o : out) {
    INFO(o.message());
    REQUIRE(error_kind(o) == CollectiveErrorKind::InvalidArgument);
    REQUIRE(o.message().find("expected Determinism::PerAlgorithm for halving_doubling") !=
            std::string::npos);
  }
  auto bcast = run_group(
      3,
      [](Communicator& comm) {
        comm.broadcast(Tensor::ones({4}, DType::F32), 0,
                       CallOptions().with_algorithm(Algorithm::HalvingDoubling));
      },
      with(Algorithm::Auto, Determinism::PerAlgorithm));
  for (const auto& o : bcast) {
    INFO(o.message());
    REQUIRE(error_kind(o) == CollectiveErrorKind::InvalidArgument);
    REQUIRE(o.message().find("expected an algorithm that runs broadcast, got halving_doubling") !=
            std::string::npos);
  }
  // Group options: InvalidConfig naming the field.
  auto refused = [](CommunicatorOptions o, const std::string& text) {
    INFO(text);
    try {
      InProcessGroup::create(2, {}, o);
      FAIL("expected InvalidConfig");
    } catch (const CollectiveError& e) {
      INFO(e.what());
      REQUIRE(e.kind() == CollectiveErrorKind::InvalidConfig);
      REQUIRE(std::string(e.what()).find(text) != std::string::npos);
    }
  };
  refused(with(Algorithm::HalvingDoubling, Determinism::AlgorithmIndependent),
          "expected Determinism::PerAlgorithm with HalvingDoubling");
  CommunicatorOptions bad_broadcast = with(Algorithm::Auto, Determinism::PerAlgorithm);
  bad_broadcast.broadcast_algorithm = Algorithm::HalvingDoubling;
  refused(bad_broadcast, "got HalvingDoubling (an all_reduce and reduce algorithm)");
  refused(with(Algorithm::Auto, static_cast<Determinism>(7)),
          "expected a Determinism (AlgorithmIndependent, PerAlgorithm), got Determinism(7)");
}
